"""pirex run jpa-rest, end to end: the database and the service started per step natively, in
containers on a network of their own and on the host network; the customer table loaded once and
shared; every request answered; the service's memory sampled; nothing left behind. And the
database unreachable at start: a clear error after a bounded wait, from the loader, the runner's
wait and the web host's compose file."""

from __future__ import annotations

import csv
import json
import os
import time

import pytest

from pirex.analysis import jpa
from pirex.core import proc
from pirex.core.bundle import Bundle, verify
from pirex.core.paths import REPO
from pirex.images import localregistry, publish
from pirex.images import platforms as plat
from pirex.runner import deployment
from pirex.runner import run as runner

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SMALL = {"repetitions": 1, "customers": 3000, "requests_per_operation": 300}
VARIANTS = ("native", "docker", "docker-host-network")
UNREACHABLE = "192.0.2.1"  # TEST-NET-1 (RFC 5737): routed nowhere, so a connection hangs until its timeout


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def native_servers() -> list[str]:
    """PostgreSQL or the service still running chroot-ed into a native export (not a build that
    merely names postgres on another agent's machine, nor a container: those are checked apart)."""
    found = []
    for line in proc.run(["pgrep", "-af", "postgres|jpa-rest.jar"], timeout=30, check=False).stdout.splitlines():
        try:
            root = os.readlink(f"/proc/{line.split()[0]}/root")
        except OSError:
            continue  # gone meanwhile
        if "/native/" in root:
            found.append(line)
    return found


def leftovers(run_id: str) -> list[str]:
    """Containers and networks of the run, processes of its native roles, mounts under the native exports."""
    out = proc.run(["docker", "ps", "-aq", "--filter", f"name=pirex-{run_id}"], timeout=60).stdout.split()
    out += proc.run(["docker", "network", "ls", "-q", "--filter", f"name=pirex-{run_id}"], timeout=60).stdout.split()
    out += native_servers()
    with open("/proc/self/mountinfo") as f:
        out += [ln.split()[4] for ln in f if "/native/" in ln.split()[4]]
    return out


def test_native_docker_and_host_network_share_one_loaded_table(built, tmp_path):
    path = runner.run(
        runner.Options("jpa-rest", "quick", ",".join(VARIANTS), "interleaved", 5, tmp_path, TEST_TAG, SMALL)
    )
    assert verify(path) == []
    b = Bundle.open(path)
    assert b.manifest["status"] == "complete"
    assert set(b.manifest["images"]) == {"locust", "postgres", "jpa-rest"}
    loads = json.loads((path / "db-load.json").read_text())["loads"]
    assert len(loads) == 1, "loaded once per run"
    assert loads[0]["status"] == "loaded" and loads[0]["rows"] == "3000" and float(loads[0]["rows_per_s"]) > 0
    assert loads[0]["server_version"].startswith("15."), "the PostgreSQL that ran is recorded"
    assert loads[0]["shared_by"] == list(VARIANTS)
    for v in VARIANTS:
        d = b.step_dir(v, 0)
        rows = read(d / "requests.csv")
        assert len(rows) == 3 * 300 and all(r["ok"] == "1" for r in rows), f"{v}: every request answered"
        assert all(r["service_time_ns"] for r in rows), "the service times every request"
        how = json.loads((d / "deployment.json").read_text())
        assert how["variant"] == v and set(how) == {"variant", "db", "web"}
        memory = read(d / "web-memory.csv")
        assert memory and all(int(m["rss_bytes"]) > 0 and float(m["heap_used_bytes"]) > 0 for m in memory)
        assert "ready to accept connections" in (d / "db.log").read_text()
        assert "Started JpaRestApplication" in (d / "web.log").read_text()
    native, docker, host = (json.loads((b.step_dir(v, 0) / "deployment.json").read_text()) for v in VARIANTS)
    assert native["db"]["runs"].startswith("chroot") and native["db"]["listens"].startswith("127.0.0.1:")
    assert "--network-alias" in docker["web"]["docker_args"] and "-p" in docker["web"]["docker_args"]
    assert host["web"]["docker_args"][host["web"]["docker_args"].index("--network") + 1] == "host"
    results = jpa.analyse(jpa.runs_from_bundle(path))
    assert {r.configuration for r in results} == set(VARIANTS)
    assert not leftovers(b.run_id)
    assert not (path.parent / f".{b.run_id}-work").exists(), "the data directory goes with the run"


def test_soak_is_only_for_a_service(tmp_path):
    from pirex.core.errors import PirexError

    with pytest.raises(PirexError, match="--soak holds a service under load"):
        runner.run(runner.Options("fork", "quick", "docker", results_dir=tmp_path, tag=TEST_TAG, soak="1m"))


def image(built, name):
    with localregistry.local_registry():
        return publish.pull_local(name, TEST_TAG, plat.host())


def test_loader_gives_up_on_an_unreachable_database_after_its_wait(built):
    started = time.monotonic()
    r = proc.run(
        [
            "docker",
            "run",
            "--rm",
            "-e",
            f"DB_URL=jdbc:postgresql://{UNREACHABLE}:5432/pirex",
            "-e",
            "DB_USER=pirex",
            "-e",
            "DB_PASSWORD=x",
            image(built, "jpa-rest"),
            "pirex-load-customers",
            "--rows",
            "10",
            "--wait",
            "8",
        ],
        timeout=120,
        check=False,
    )
    assert r.returncode == 1
    assert "the database did not answer within 8 s" in r.stderr
    assert time.monotonic() - started < 60, "bounded by --wait and the 5 s connect timeout"


def test_service_reports_down_and_the_wait_ends(built):
    """The service starts without its database and says so on /actuator/health; the runner's wait ends."""
    name = "pirex-test-web-no-db"
    port = deployment.free_port()
    proc.run(["docker", "rm", "-f", name], timeout=60, check=False)
    try:
        proc.run(
            [
                "docker",
                "run",
                "-d",
                "--name",
                name,
                "-p",
                f"127.0.0.1:{port}:8080",
                "-e",
                f"DB_URL=jdbc:postgresql://{UNREACHABLE}:5432/pirex",
                "-e",
                "DB_USER=pirex",
                "-e",
                "DB_PASSWORD=x",
                "-e",
                "DB_CONNECTION_TIMEOUT_MS=2000",
                image(built, "jpa-rest"),
            ],
            timeout=120,
        )
        url = f"http://127.0.0.1:{port}/actuator/health"
        deadline = time.monotonic() + 180  # until the service has started and answers (not a timing assertion)
        while '"DOWN"' not in (last := deployment.wait_healthy(url, 2) or "UP") and time.monotonic() < deadline:
            time.sleep(1)
        assert '"DOWN"' in last, last  # the runner's wait ends with the service's own answer, not UP
    finally:
        proc.run(["docker", "rm", "-f", name], timeout=60, check=False)


def test_web_host_role_fails_clearly_without_its_database_and_is_taken_down(built, tmp_path):
    from pirex.core.errors import PirexError
    from pirex.runner import compose

    env_file = tmp_path / "web.env"
    with localregistry.local_registry():
        publish.load_local("jpa-rest", TEST_TAG, plat.host())
    env_file.write_text(
        f"PIREX_TAG={TEST_TAG}\nPIREX_IMAGES={localregistry.HOST}/{publish.LOCAL_NAMESPACE}\n"
        f"DB_HOST={UNREACHABLE}\nDB_PASSWORD=x\nWEB_PORT={deployment.free_port()}\n"
        f"WEB_HEALTH_RETRIES=15\nRESULTS_DIR={tmp_path / 'out'}\n"
    )
    base = ["docker", "compose", "-f", str(REPO / "compose" / "web.yml"), "--env-file", str(env_file)]
    env = compose.split_env("jpa-rest", compose.read_env_file(env_file))  # the numbers pirex compose adds
    try:
        with pytest.raises(PirexError, match=r"(?s)the web role failed .* taken down.*unhealthy"):
            compose.role("jpa-rest", "web", env_file, timeout=600)
        assert not proc.run([*base, "ps", "-a", "-q"], timeout=60, env=env).stdout.split(), "nothing left running"
        services = (tmp_path / "out" / "compose-web-services.log").read_text()
        assert "connect" in services.lower(), "the service's own log says why"
        assert json.loads((tmp_path / "out" / "compose-web.json").read_text())["environment"]["DB_PASSWORD"] == "(set)"
    finally:
        proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, check=False, env=env)


def test_driver_gives_up_on_a_service_that_is_not_there(built):
    started = time.monotonic()
    url = f"http://127.0.0.1:{deployment.free_port()}"  # nothing listens: refused at once, every second
    r = proc.run(
        ["docker", "run", "--rm", "--network", "host", image(built, "locust"), "quick", "--host", url, "--wait", "4"],
        timeout=120,
        check=False,
    )
    assert r.returncode == 2
    assert f"{url}/actuator/health did not report healthy within 4 s" in r.stderr
    assert time.monotonic() - started < 60
