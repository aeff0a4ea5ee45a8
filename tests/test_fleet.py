"""`pirex fleet run` across three hosts: network namespaces on a bridge that this machine (the
controller) reaches, each with its own sshd and Docker daemon, sharing this machine's disk and
hostname (so hostnames collide, as Pis called raspberrypi do). The playbook copies this checkout's
commit to each, installs the runner, loads jmh from an archive (a lab without registry), runs a
tiny jmh on all three at once, fetches and verifies each bundle; the table has a column per device.
One host's sshd stopped mid-run gives two bundles and that host named with the reason, and
--resume completes the third. Afterwards nothing is left: sshd, daemons, namespaces, mounts (the
lab: tests/fleet_lab.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pirex.core import bundle, proc

from . import fleet_lab
from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

TINY = [
    "--variants",
    "docker",
    "--set",
    "repetitions=1",
    "--set",
    "warmup_iterations=1",
    "--set",
    "iterations=2",
    "--set",
    "benchmarks=RecursionBenchmark.b1_default",
]
NAMES = fleet_lab.NAMES


@pytest.fixture(scope="module")
def images_archive(built, tmp_path_factory) -> Path:
    return fleet_lab.export_images(tmp_path_factory.mktemp("images") / "images.tar", TEST_TAG)


@pytest.fixture(scope="module")
def lab(images_archive, tmp_path_factory):
    if fleet_lab.missing():
        pytest.fail(f"the fleet test needs {', '.join(fleet_lab.missing())}")
    with fleet_lab.lab(tmp_path_factory.mktemp("fleet")) as the_lab:
        yield the_lab
    assert not fleet_lab.leftovers(), fleet_lab.leftovers()


def fleet_command(inventory: Path, results: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pirex",
        "fleet",
        "run",
        "--inventory",
        str(inventory),
        "--results-dir",
        str(results),
        "--tag",
        TEST_TAG,
        *args,
    ]


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
    r = pirex_fleet(lab.inventory, tmp_path, "jmh", "--images-archive", str(images_archive), *TINY)
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
    r = proc.run(
        [sys.executable, "-m", "pirex", "table", "jmh", str(run), "--out", str(tmp_path / "t")],
        timeout=300,
        check=False,
    )
    assert r.returncode == 0 and len(device_columns(r.stdout)) == 3, r.stderr


def test_a_host_lost_mid_run_is_named_and_resume_completes_it(lab, images_archive, tmp_path):
    sshds, inventory, checkouts = lab.sshds, lab.inventory, lab.checkouts
    results = tmp_path / "results"
    bundles_of_c = lambda: set((checkouts["pi-c"] / "results" / "fleet").glob("*/jmh/*/manifest.json"))  # noqa: E731
    earlier = bundles_of_c()  # the first test's fleet run
    with open(tmp_path / "out", "w") as o, open(tmp_path / "err", "w") as e:
        running = subprocess.Popen(
            fleet_command(inventory, results, "jmh", "--images-archive", str(images_archive), *TINY),
            stdout=o,
            stderr=e,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 900
        while not bundles_of_c() - earlier:
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
    assert why.startswith("unreachable at 'run the experiment (waiting for its end)': "), why
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


# --- pirex reproduce across the fleet: a claim across devices judged over the three hosts

LAB_CLAIMS = """
paper: lab
title: The fleet lab's devices
claims:
  - id: devices-agree
    where: section 1, three identical hosts
    says: identical devices give the same B1 throughput (within 50 %, wide for three hosts sharing two CPUs)
    experiment: jmh
    variants: [native]
    across: devices
    metrics: [B1]
    rule: equivalent
    margin: 0.5
    needs: [devices:3]
  - id: b1-runs
    where: section 1, each host
    says: B1 is faster than B3 on every host
    experiment: jmh
    variants: [native]
    ratio: {numerator: {metric: B1, variant: native}, denominator: {metric: B3, variant: native}}
    published: {direction: greater}
    rule: direction
"""
JMH_SETS = [
    "--set",
    "jmh.warmup_iterations=3",
    "--set",
    "jmh.iterations=3",
    "--set",
    "jmh.benchmarks=RecursionBenchmark.b[13]_",
]


def pirex_reproduce(claims: Path, results: Path, *args: str) -> tuple[proc.Result, dict]:
    r = proc.run(
        [sys.executable, "-m", "pirex", "reproduce", str(claims), "--results-dir", str(results), "--tag", TEST_TAG]
        + list(args),
        timeout=1800,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    [state] = sorted(results.glob("reproduce/*/state.json"), key=lambda p: p.stat().st_mtime)[-1:]
    return r, json.loads(state.read_text())


def test_reproduce_across_the_fleet_judges_the_devices_and_names_a_throttled_one(lab, images_archive, tmp_path):
    claims_file = tmp_path / "claims.yaml"
    claims_file.write_text(LAB_CLAIMS)
    # one host at a time: three at once on this machine's two CPUs would measure how the CPUs were shared out
    run = ("--inventory", str(lab.inventory), "--images-archive", str(images_archive), *JMH_SETS)
    r, state = pirex_reproduce(claims_file, tmp_path / "even", "--serial", *run)
    # three namespaces of one machine, one after another: alike, but how alike is a measurement, not a given
    assert state["verdicts"]["lab:devices-agree"] in ("holds", "inconclusive"), r.stdout[-3000:]
    print(r.stdout[-1500:])  # the verdicts, for the log
    per_device = {k: v for k, v in state["verdicts"].items() if k.startswith("lab:b1-runs@")}
    assert sorted(k.split("@")[1].split(" ")[0] for k in per_device) == NAMES  # a verdict per device
    assert set(per_device.values()) <= {"holds", "inconclusive", "differs"}, per_device  # judged on each
    [fleet_dir] = state["fleets"].values()

    # the same verdicts from the fleet run's bundles given by hand (nothing runs)
    _, again = pirex_reproduce(claims_file, tmp_path / "given", "--bundles", fleet_dir)
    assert again["verdicts"] == state["verdicts"]

    # pi-c at a quarter of a CPU, the others sharing two: all at once, so that it takes the time of one
    with fleet_lab.throttled(lab.sshds["pi-c"], 0.25):
        r, state = pirex_reproduce(claims_file, tmp_path / "throttled", *run)
    assert state["verdicts"]["lab:devices-agree"] == "differs", r.stdout[-3000:]
    report = next((tmp_path / "throttled" / "reproduce").glob("*/REPORT.md")).read_text()
    [line] = [ln for ln in report.splitlines() if ln.startswith("| lab:devices-agree")]
    assert "pi-c (" in line.split("differs")[0] and "pi-a (" not in line.split("differs")[0], line
