"""`pirex fleet run` across three hosts: network namespaces on a bridge that this machine (the
controller) reaches, each with its own sshd and Docker daemon, sharing this machine's disk and
hostname (so hostnames collide, as Pis called raspberrypi do). The playbook copies this checkout's
commit to each, installs the runner, loads jmh from an archive (a lab without registry), runs a
tiny jmh on all three at once, fetches and verifies each bundle; the table has a column per device.
One host's sshd stopped mid-run gives two bundles and that host named with the reason, and
--resume completes the third. Afterwards nothing is left: sshd, daemons, namespaces, mounts (the
lab: tests/fleet_lab.py)."""

from __future__ import annotations

import contextlib
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
from .makefile import recipe_line, recipe_lines, script

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
TINY_BENCH = [  # bench-fleet's smallest setting: TINY as --set, in Docker (the script's own variant)
    "repetitions=1",
    "warmup_iterations=1",
    "iterations=2",
    "benchmarks=RecursionBenchmark.b1_default",
]


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


def test_bench_fleet_smoke_run_three_hosts_at_once_then_one_after_another(lab, images_archive, tmp_path):
    """make bench-fleet at its smallest setting (one round of each mode, a tiny jmh in Docker), its measuring on this
    module's lab rather than on a lab of its own. The run all at once prepares the hosts; it gives three verified
    bundles, each recording its device, and a table with a column per device."""
    smallest = "--rounds 1 " + " ".join(f"--set {s}" for s in TINY_BENCH)
    cmd = recipe_line("bench-fleet", "scripts/bench_fleet.py", smallest)
    bench_fleet = script("bench_fleet")
    a = bench_fleet.parser().parse_args(cmd[2:])
    assert a.rounds == 1 and a.sets == TINY_BENCH, cmd
    report, runs = bench_fleet.bench(lab, images_archive, TEST_TAG, a.rounds, a.sets, tmp_path, prepare=False)
    print(report)
    assert "| parallel | 1 |" in report and "| serial | 1 |" in report, report
    assert "(serial / parallel = " in report and "1 rounds each, jmh quick, docker" in report, report

    [at_once] = [r for r in runs if r["mode"] == "parallel"]
    run, out = at_once["dir"], at_once["stdout"]
    doc = json.loads((run / "fleet.json").read_text())
    assert {h: s["state"] for h, s in doc["hosts"].items()} == dict.fromkeys(NAMES, "verified")
    hostname = os.uname().nodename
    for n in NAMES:  # each bundle fetched into <fleet-run>/<host>, intact, and recording its device's name
        assert bundle.verify(run / n) == []
        before = json.loads((run / n / "machine.json").read_text())["before"]
        assert before["device"] == {"name": n, "labels": {"site": "namespace"}} and before["hostname"] == hostname
        assert before["docker"], "the host's own daemon"
    columns = device_columns(out)
    assert len(columns) == 3 and all(c.startswith(f"{n} (") for c, n in zip(columns, NAMES, strict=True)), columns
    assert "3 of 3 hosts verified (all hosts at once" in out
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
    scope: three hosts of one kind, in network namespaces of one machine
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
    scope: any machine with a JVM
    experiment: jmh
    variants: [native]
    ratio: {numerator: {metric: B1, variant: native}, denominator: {metric: B3, variant: native}}
    published: {direction: greater}
    rule: direction
"""
EVEN_SHARE = 0.6  # of a CPU, for each of the three hosts at once
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
    return r, state_of(results)


def state_of(results: Path) -> dict:
    """The state.json of the latest reproduction under results."""
    [state] = sorted(results.glob("reproduce/*/state.json"), key=lambda p: p.stat().st_mtime)[-1:]
    return json.loads(state.read_text())


def test_reproduce_across_the_fleet_judges_the_devices_and_names_a_throttled_one(lab, images_archive, tmp_path):
    claims_file = tmp_path / "claims.yaml"
    claims_file.write_text(LAB_CLAIMS)
    run = ("--inventory", str(lab.inventory), "--images-archive", str(images_archive), *JMH_SETS)
    # three identical devices at once: each host cut to EVEN_SHARE of a CPU, so that the three fit in this machine's
    # two and none measures how the CPUs were shared out (one at a time, with --serial, took three times as long)
    with contextlib.ExitStack() as even:
        for name in NAMES:
            even.enter_context(fleet_lab.throttled(lab.sshds[name], EVEN_SHARE))
        r, state = pirex_reproduce(claims_file, tmp_path / "even", *run)
    # three namespaces of one machine with the same share: alike, but how alike is a measurement, not a given
    assert state["verdicts"]["lab:devices-agree"] in ("holds", "inconclusive"), r.stdout[-3000:]
    print(r.stdout[-1500:])  # the verdicts, for the log
    per_device = {k: v for k, v in state["verdicts"].items() if k.startswith("lab:b1-runs@")}
    assert sorted(k.split("@")[1].split(" ")[0] for k in per_device) == NAMES  # a verdict per device
    assert set(per_device.values()) <= {"holds", "inconclusive", "differs"}, per_device  # judged on each
    [fleet_dir] = state["fleets"].values()

    # the same verdicts from the fleet run's bundles given by hand (nothing runs)
    _, again = pirex_reproduce(claims_file, tmp_path / "given", "--bundles", fleet_dir)
    assert again["verdicts"] == state["verdicts"]

    # pi-c at a quarter of a CPU, the others sharing two: all at once, so that it takes the time of one. Through
    # make lab-reproduce's script (its smoke run): its own throttling and reproduce command, on this module's lab
    args = f"--throttle pi-c --share 0.25 --results-dir {tmp_path / 'throttled'}"
    [cmd] = recipe_lines("lab-reproduce", "scripts/lab_reproduce.py", f"PAPER={claims_file}", f"ARGS={args}")
    lab_reproduce = script("lab_reproduce")
    a, more = lab_reproduce.split(cmd[2:])
    assert (a.throttle, a.share, more) == ("pi-c", 0.25, ["--level", "kick-the-tires"]), cmd
    r = lab_reproduce.reproduce(lab, images_archive, a, TEST_TAG, more + JMH_SETS, capture=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    state = state_of(tmp_path / "throttled")
    assert state["verdicts"]["lab:devices-agree"] == "differs", r.stdout[-3000:]
    report = next((tmp_path / "throttled" / "reproduce").glob("*/REPORT.md")).read_text()
    [line] = [ln for ln in report.splitlines() if ln.startswith("| lab:devices-agree")]
    # the devices in every pair found outside the margin: pi-c alone when both its pairs are decided, pi-c and one
    # other when only one is (a loaded machine widens the intervals); never the two that run at full speed
    named = line.split("DIFFERS |")[1].split(" differ")[0]
    assert "pi-c (" in named and not ("pi-a (" in named and "pi-b (" in named), line
