"""ICPE'18 Experiment 3 on one machine through docker compose: the quick run without a failed
request into Table 3, and the database restarted in the middle of a run: requests fail during
the outage, are recorded, and the service recovers without a restart."""

from __future__ import annotations

import csv
import json
import subprocess
import time

import pytest

from pirex.analysis import jpa
from pirex.analysis import tables as T
from pirex.core import bundle, experiment, proc
from pirex.core.bundle import Bundle
from pirex.images import localregistry, publish, settings
from pirex.images import platforms as plat
from pirex.runner import compose

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker


def requests(out):
    with open(out / "requests.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_quick_run_has_no_failed_request_and_gives_table3(built, tmp_path):
    out = compose.run("jpa-rest", TEST_TAG, tmp_path, "quick", ("customers=2000",))
    assert Bundle.open(out).status == "complete" and bundle.verify(out) == [], "a bundle, as every run writes"
    rows = requests(out / "compose" / "0")
    assert len(rows) == 3 * 2000 and all(r["ok"] == "1" for r in rows)
    assert {r["operation"] for r in rows} == {"create-random", "read", "change-name"}
    assert all(int(r["service_time_ns"]) > 0 for r in rows), "the service reports its own time"
    record = json.loads((out / "compose.json").read_text())
    assert set(record["images"]) == {"postgres", "jpa-rest", "locust"}
    results = jpa.analyse(jpa.runs_from_bundle(out))
    assert sorted(r.operation for r in results) == ["change-name", "create-random", "read"]
    assert all(r.summary.n == 1000 and r.failed == 0 for r in results)  # the first half is warm-up
    assert "Change customer name" in T.markdown(jpa.table3(results))
    assert not proc.run(["docker", "ps", "-q", "--filter", "name=pirex-jpa-rest"], timeout=60).stdout.strip()


def test_database_restart_mid_run_is_recorded_and_survived(built, tmp_path):
    with localregistry.local_registry():
        for name in compose.images("jpa-rest"):
            publish.load_local(name, TEST_TAG, plat.host())
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    project = f"pirex-jpa-rest-test-{int(time.time())}"
    # the compose file's numbers, as `pirex compose` passes them (experiment.yaml's quick profile)
    env = {
        **settings.of(experiment.load("jpa-rest"), "quick"),
        "PIREX_TAG": TEST_TAG,
        "CUSTOMERS": "2000",
        "RESULTS_DIR": str(out),
    }
    base = ["docker", "compose", "-p", project, "-f", str(compose.one_host_file("jpa-rest"))]
    try:
        proc.run([*base, "up", "-d", "--wait", "db", "loader", "web"], timeout=600, env=env)
        web = json.loads(proc.run([*base, "ps", "--format", "json", "web"], timeout=60, env=env).stdout.splitlines()[0])
        started = proc.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", web["ID"]], timeout=60).stdout
        driver = subprocess.Popen(  # a longer, interleaved load, on the compose network
            [
                "docker",
                "run",
                "--rm",
                "--name",
                f"{project}-driver",
                "--network",
                f"{project}_default",
                "-v",
                f"{out}:/results",
                publish.local_ref("locust", TEST_TAG),
                "quick",
                "--host",
                "http://web:8080",
                "--customers",
                "2000",
                "--requests-per-operation",
                "6000",
                "--mix",
                "interleaved",
                "--output",
                "/results",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            time.sleep(6)
            proc.run([*base, "restart", "db"], timeout=300, env=env)
            output, _ = driver.communicate(timeout=900)
        finally:
            if driver.poll() is None:
                driver.kill()
            proc.run(["docker", "rm", "-f", f"{project}-driver"], timeout=60, check=False)
        assert driver.returncode == 0, output  # failures are recorded, not fatal (no --fail-on-error)
        rows = requests(out)
        failed = [i for i, r in enumerate(rows) if r["ok"] != "1"]
        assert failed, "the outage must show as failed requests"
        assert all(r["error"] for r in (rows[i] for i in failed))
        assert failed[-1] < len(rows) - 100 and all(r["ok"] == "1" for r in rows[failed[-1] + 1 :]), (
            "the service recovers by itself"
        )
        after = proc.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", web["ID"]], timeout=60).stdout
        assert after == started, "the service was not restarted"
        results = jpa.analyse(jpa.runs_from_dirs({"docker": out}))  # Table 3 counts them apart, every one
        assert sum(r.failed + r.warmup_failed for r in results) == len(failed)
    finally:
        proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, check=False, env=env)
