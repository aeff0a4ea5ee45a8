"""`pirex fleet run` across three hosts: network namespaces on a bridge that this machine (the
controller) reaches, each with its own sshd and Docker daemon, sharing this machine's disk and
hostname (so hostnames collide, as Pis called raspberrypi do). The playbook copies this checkout's
commit to each, installs the runner, loads jmh from an archive (a lab without registry), runs a
tiny jmh on all three at once, fetches and verifies each bundle; the table has a column per device.
One host's sshd stopped mid-run gives two bundles and that host named with the reason, and
--resume completes the third. Afterwards nothing is left: sshd, daemons, namespaces, mounts.

Each host's own disk is a directory keyed by its name (its checkout, and PIREX_CACHE: its local
registry's storage); the hosts have no route out, so pip takes the runner's few packages from a
directory (PIP_FIND_LINKS), as a lab's package mirror."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pirex import bundle, paths, proc
from pirex.images import archive, localregistry
from pirex.images import platforms as plat

from . import netns
from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SITE = 3  # its own bridge, subnet and namespaces (the split test is site 0, swarm 2)
NAMES = ["pi-a", "pi-b", "pi-c"]
TINY = ["--variants", "docker", "--set", "repetitions=1", "--set", "warmup_iterations=1", "--set", "iterations=2",
        "--set", "benchmarks=RecursionBenchmark.b1_default"]  # fmt: skip
RUNNER_WHEELS = ["click==8.5.1", "PyYAML==6.0.3", "setuptools>=68", "wheel"]  # pyproject's dependencies, its build


def wheelhouse() -> Path:
    """The runner's packages and its build backend as files, for hosts without a route out."""
    d = paths.cache_dir() / "fleet-hosts" / "wheels"
    if not list(d.glob("click-*.whl")):
        proc.retry(lambda: proc.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(d), *RUNNER_WHEELS],
                                    timeout=600), attempts=3, what="pip download")  # fmt: skip
    return d


def kill_namespace_processes(hosts: dict[str, netns.Host], spare: set[int]) -> None:
    """What the sessions left running in the hosts' namespaces (a run the test abandoned), but the daemons."""
    inodes = {os.stat(f"/run/netns/{h.netns}").st_ino for h in hosts.values()}
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if p.name.isdigit() and int(p.name) not in spare and os.stat(p / "ns" / "net").st_ino in inodes:
                os.kill(int(p.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def images_archive(built, tmp_path_factory) -> Path:
    """jmh for this machine's platform in one file, as `pirex images export` writes it."""
    file = tmp_path_factory.mktemp("images") / "images.tar"
    with localregistry.local_registry():
        archive.export(file, ["jmh"], TEST_TAG, [plat.host()], None)
    return file


@pytest.fixture(scope="module")
def lab(images_archive, tmp_path_factory):
    """(hosts, their sshds, the inventory, each host's checkout folder); torn down on every exit path."""
    tools = ("ip", "nsenter", "iptables", "dockerd", "docker-registry", "ssh", "ssh-keygen", "git")
    missing = [t for t in tools if not shutil.which(t)] + ([] if Path("/usr/sbin/sshd").exists() else ["sshd"])
    if os.geteuid() != 0 or missing:
        pytest.fail(f"the fleet test needs root and {', '.join(missing) or 'nothing else'}")
    tmp = tmp_path_factory.mktemp("fleet")
    key = tmp / "id_ed25519"
    proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], timeout=60)
    wheels = wheelhouse()
    disks = {n: paths.cache_dir() / "fleet-hosts" / n for n in NAMES}  # each host's own disk: kept for the next run
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(netns.hosts(NAMES, site=SITE, controller=True, docker_bridge=True))
        daemons = {int(Path(f"{netns.RUN}{SITE}/{n}/dockerd.pid").read_text()) for n in NAMES}
        stack.callback(kill_namespace_processes, hosts, daemons)
        sshds = {}
        for n, h in hosts.items():
            shutil.rmtree(disks[n] / "pirex" / "results", ignore_errors=True)  # an earlier session's fleet runs
            env = {"DOCKER_HOST": f"unix://{h.socket}", "PIREX_CACHE": str(disks[n] / "cache"),
                   "PIREX_LOCK_DIR": os.environ.get("PIREX_LOCK_DIR", "/run/pirex"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(wheels)}  # fmt: skip
            sshds[n] = netns.Sshd(h, tmp / f"sshd-{n}", key.with_suffix(".pub"), env)
            sshds[n].start()
            stack.callback(sshds[n].stop)
        inventory = tmp / "hosts.yml"
        inventory.write_text(yaml.safe_dump({"all": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                     "ansible_ssh_common_args": f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                                f"-o ControlPath={tmp}/cp-%C",
                     "ansible_python_interpreter": "/usr/bin/python3", "pirex_host_setup": False},
            "hosts": {n: {"ansible_host": h.address, "pirex_dir": str(disks[n] / "pirex"),
                          "pirex_device_labels": {"site": "namespace"}} for n, h in hosts.items()},
        }}))  # fmt: skip
        yield hosts, sshds, inventory, {n: disks[n] / "pirex" for n in NAMES}
    assert not leftovers(), leftovers()


def leftovers() -> list[str]:
    out = [ns for ns in proc.run(["ip", "netns", "list"], timeout=30).stdout.split() if ns.startswith(f"pirex{SITE}-")]
    if proc.run(["ip", "link", "show", f"pirexbr{SITE}"], timeout=30, check=False).ok:
        out.append(f"bridge pirexbr{SITE}")
    out += [r for r in proc.run(["iptables", "-S", "FORWARD"], timeout=30).stdout.splitlines() if f"pirexbr{SITE}" in r]
    with open("/proc/self/mountinfo") as f:
        out += [ln.split()[4] for ln in f if f"/run/pirex-netns{SITE}/" in ln.split()[4]]
    for p in Path("/proc").iterdir():  # the hosts' sshds (another sshd on this machine is none of ours)
        with contextlib.suppress(OSError):
            if p.name.isdigit() and b"/sshd-pi-" in (p / "cmdline").read_bytes():
                out.append(f"sshd {p.name}")
    return out


def fleet_command(inventory: Path, results: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pirex", "fleet", "run", "--inventory", str(inventory), "--results-dir", str(results),
            "--tag", TEST_TAG, *args]  # fmt: skip


def pirex_fleet(inventory: Path, results: Path, *args: str) -> proc.Result:
    return proc.run(fleet_command(inventory, results, *args), timeout=1500, check=False)


def fleet_run_of(results: Path) -> tuple[Path, dict]:
    [f] = results.glob("jmh/fleet-*/fleet.json")
    return f.parent, json.loads(f.read_text())


def device_columns(stdout: str) -> list[str]:
    """The device columns of the per-device table pirex printed."""
    lines = stdout.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("**Per device"))
    return [c.strip() for c in lines[i + 2].strip("|").split("|")][2:]


def test_three_hosts_at_once_three_verified_bundles_and_a_column_per_device(lab, images_archive, tmp_path):
    hosts, _, inventory, _ = lab
    r = pirex_fleet(inventory, tmp_path, "jmh", "--images-archive", str(images_archive), *TINY)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    run, doc = fleet_run_of(tmp_path)
    assert {h: s["state"] for h, s in doc["hosts"].items()} == dict.fromkeys(NAMES, "verified")
    hostname = os.uname().nodename
    for n in NAMES:  # each bundle fetched into <fleet-run>/<host>, intact, and recording its device's name
        assert bundle.verify(run / n) == []
        before = json.loads((run / n / "machine.json").read_text())["before"]
        assert before["device"] == {"name": n, "labels": {"site": "namespace"}} and before["hostname"] == hostname
        assert before["docker"], "the host's own daemon"
    columns = device_columns(r.stdout)
    assert len(columns) == 3 and all(c.startswith(f"{n} (") for c, n in zip(columns, NAMES, strict=True)), columns
    assert "3 of 3 hosts verified (all hosts at once" in r.stdout
    assert (run / "tables" / "devices.md").is_file()
    r = proc.run([sys.executable, "-m", "pirex", "table", "jmh", str(run), "--out", str(tmp_path / "t")], timeout=300,
                 check=False)  # fmt: skip
    assert r.returncode == 0 and len(device_columns(r.stdout)) == 3, r.stderr


def test_a_host_lost_mid_run_is_named_and_resume_completes_it(lab, images_archive, tmp_path):
    _, sshds, inventory, checkouts = lab
    results = tmp_path / "results"
    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        running = subprocess.Popen(fleet_command(inventory, results, "jmh", "--images-archive", str(images_archive),
                                                 *TINY), stdout=o, stderr=e, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 900
        while not list((checkouts["pi-c"] / "results" / "fleet").glob("*/jmh/*/manifest.json")):
            assert running.poll() is None and time.monotonic() < deadline, "pi-c's run never started"
            time.sleep(0.5)
        sshds["pi-c"].stop()  # pi-c drops off the network while its run goes on
        running.wait(timeout=900)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
            running.wait()
        if sshds["pi-c"].proc is None:
            sshds["pi-c"].start()
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    assert running.returncode == 1, out[-3000:] + err[-3000:]
    run, doc = fleet_run_of(results)
    states = {h: s["state"] for h, s in doc["hosts"].items()}
    assert states == {"pi-a": "verified", "pi-b": "verified", "pi-c": "unreachable"}, doc["hosts"]
    why = doc["hosts"]["pi-c"]["why"]
    assert why.startswith("unreachable at 'run the experiment': "), why
    assert sorted(p.name for p in run.iterdir() if (p / "manifest.json").exists()) == ["pi-a", "pi-b"]
    [line] = [ln for ln in err.splitlines() if ln.startswith("pirex: error:")]
    assert "pi-c (unreachable)" in line and "--resume" in line, line
    assert "pi-c" in out and why in out, "the summary names the host and why"

    r = pirex_fleet(inventory, results, "--resume", str(run))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    doc = json.loads((run / "fleet.json").read_text())
    assert {h: s["state"] for h, s in doc["hosts"].items()} == dict.fromkeys(NAMES, "verified")
    assert [a["hosts"] for a in doc["attempts"]] == [NAMES, ["pi-c"]]
    assert bundle.verify(run / "pi-c") == [] and len(device_columns(r.stdout)) == 3
    assert bundle.Bundle.open(run / "pi-c").manifest["resumed"] == [], "the first attempt's run, completed there"
