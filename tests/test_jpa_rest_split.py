"""The real topology of ICPE'18 Experiment 3 on one machine: three hosts as network namespaces
on a bridge (own addresses, no shared loopback), each with its own Docker daemon, started with
the per-role compose files and one .env file: the database on pi-b, the service on pi-a, the
driver on the laptop, over host networking as the paper recommends."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from pirex.analysis import jpa
from pirex.core import proc
from pirex.core.paths import REPO
from pirex.runner import compose

from .conftest import ROLES, TEST_TAG
from .test_run_jpa_rest import native_servers

pytestmark = pytest.mark.docker


def test_db_web_and_driver_on_three_hosts(three_hosts, tmp_path):
    h = three_hosts
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o777)
    env_file = tmp_path / "pair.env"
    env_file.write_text(
        f"PIREX_TAG={TEST_TAG}\nDB_HOST={h['pi-b'].address}\nWEB_HOST={h['pi-a'].address}\nNETWORK_MODE=host\n"
        f"DB_PASSWORD=split-test\nCUSTOMERS=2000\nPROFILE=quick\nRESULTS_DIR={results}\n"
    )

    def compose_on(host: str, *args: str, timeout: float = 600):  # with the numbers pirex compose adds
        env = compose.split_env("jpa-rest", compose.read_env_file(env_file))
        return h[host].docker(
            "compose",
            "-f",
            str(REPO / "compose" / ROLES[host][0]),
            "--env-file",
            str(env_file),
            *args,
            timeout=timeout,
            check=False,
            env=env,
        )

    def pirex_role(host: str, role: str):  # what a user types on each host: one command
        return proc.run(
            [sys.executable, "-m", "pirex", "compose", "jpa-rest", "--role", role, "--env-file", str(env_file)],
            timeout=900,
            check=False,
            env=h[host].env,
        )

    try:
        for host, role in (("pi-b", "db"), ("pi-a", "web"), ("laptop", "driver")):  # database, service, driver
            r = pirex_role(host, role)
            assert r.returncode == 0, r.stdout + r.stderr
        with open(results / "requests.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 3 * 2000 and all(r["ok"] == "1" for r in rows)
        # the service answered from pi-a and read pi-b's table: reads found the loaded customers
        assert all(r["status"] == "200" for r in rows if r["operation"] == "read")
        for role in ("db", "web", "driver"):  # each host wrote its own record of itself and what it ran
            record = json.loads((results / f"machine-{role}.json").read_text())
            assert record["role"] == role and record["before"]["docker"], role
            ran = json.loads((results / f"compose-{role}.json").read_text())
            assert ran["exit_code"] == 0 and ran["environment"]["DB_PASSWORD"] == "(set)" and ran["images"]
        assert "after" in json.loads((results / "machine-driver.json").read_text())
        label = jpa.placement(results)
        assert label.startswith("web ") and ", db " in label and label.endswith("docker (host network)")
        assert {r.configuration for r in jpa.analyse(jpa.runs_from_dirs({label: results}))} == {label}
    finally:
        for host in ROLES:
            compose_on(host, "down", "-v", "--timeout", "30", timeout=300)


def leftovers() -> list[str]:
    """Native servers still running, and mounts still under the native exports."""
    out = native_servers()
    with open("/proc/self/mountinfo") as f:
        out += [ln.split()[4] for ln in f if "/native/" in ln.split()[4]]
    return out


def test_native_db_and_web_on_two_hosts_with_the_driver_on_a_third(three_hosts, tmp_path):
    """The paper's configuration 1: both servers natively, each on its own host, the driver on the laptop."""
    h = three_hosts
    results = tmp_path / "results"
    env_file = tmp_path / "native.env"
    env_file.write_text(
        f"PIREX_TAG={TEST_TAG}\nDB_HOST={h['pi-b'].address}\nWEB_HOST={h['pi-a'].address}\nNETWORK_MODE=host\n"
        f"DB_PASSWORD=split-native\nCUSTOMERS=2000\nPROFILE=quick\nRESULTS_DIR={results}\n"
        f"DB_DATA_DIR={tmp_path / 'db-data'}\n"
    )

    def pirex_role(host: str, role: str, *args: str):  # run on the host: in its network namespace
        return proc.run(
            [
                "nsenter",
                f"--net=/run/netns/pirex-{host}",
                sys.executable,
                "-m",
                "pirex",
                "compose",
                "jpa-rest",
                "--role",
                role,
                "--env-file",
                str(env_file),
                *args,
            ],
            timeout=900,
            check=False,
            env=h[host].env,
        )

    try:
        for host, role, args in (("pi-b", "db", ["--native"]), ("pi-a", "web", ["--native"]), ("laptop", "driver", [])):
            r = pirex_role(host, role, *args)
            assert r.returncode == 0, r.stdout + r.stderr
        rows = list(csv.DictReader((results / "requests.csv").read_text().splitlines()))
        assert len(rows) == 3 * 2000 and all(r["ok"] == "1" for r in rows)
        assert all(r["status"] == "200" for r in rows if r["operation"] == "read"), "pi-b's table, read from pi-a"
        db = json.loads((results / "native-db.json").read_text())
        assert db["state"] == "serving" and db["load"]["rows"] == "2000" and db["environment"]["DB_PASSWORD"] == "(set)"
        assert db["load"]["server_version"].startswith("15.") and db["images"]["db"]["image_id"].startswith("sha256:")
        web = json.loads((results / "native-web.json").read_text())
        assert web["state"] == "serving" and web["listens"] == "*:8080"
        assert len((results / "web-memory.csv").read_text().splitlines()) >= 2, "the service's memory, sampled"
        assert "Table 3" in r.stdout or "create-random" in r.stdout, "the driver's role prints the table"
        assert jpa.placement(results).endswith(", native")
        # a second start of a running role is refused; --down stops it and undoes everything
        again = pirex_role("pi-b", "db", "--native")
        assert again.returncode != 0 and "already runs here" in again.stderr
    finally:
        downs = [pirex_role(host, role, "--down") for host, role in (("pi-a", "web"), ("pi-b", "db"))]
    for r in downs:
        assert r.returncode == 0 and "native role stopped" in r.stdout, r.stdout + r.stderr
    assert json.loads((results / "native-db.json").read_text())["state"] == "stopped"
    assert not leftovers()
