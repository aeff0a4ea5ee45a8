"""Every documented `make bench-*` and `lab-*` target either runs here at its smallest setting, or is named with
the reason it does not yet (issue 40): a target added to `make help` fails this module until it is one or the other.

The smoke runs take the command the Makefile runs (`make -n`), not a copy of it, and run it with the virtualenv's
Python: what the target installs first (bench-analysis: the bench extra) is in the dev extra already."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pirex.core import paths
from pirex.core.bundle import Bundle

from .makefile import make, recipe_line, recipe_lines

# Targets without a smoke run in the suite yet, and why.
NOT_YET = {
    "bench-fresh-machine": "a whole make run on a fresh machine, 15+ min; tests/test_fresh_machine.py runs its set-up",
}
# Targets smoked, and the module where: the fleet's two on the lab tests/test_fleet.py makes anyway.
SMOKED = {
    "bench-analysis": "tests/test_make_targets.py",
    "bench-budget": "tests/test_make_targets.py",
    "bench-resolution": "tests/test_make_targets.py",
    "bench-calibration": "tests/test_make_targets.py",
    "bench-soak": "tests/test_make_targets.py",
    "bench-driver": "tests/test_make_targets.py",
    "bench-fleet": "tests/test_fleet.py",
    "lab-reproduce": "tests/test_fleet.py",
}


def documented_targets() -> set[str]:
    return {m[1] for m in re.finditer(r"^  ((?:bench|lab)-[a-z-]+)\s", make("help"), re.M)}


def test_every_bench_and_lab_target_of_make_help_is_smoked_or_named_with_its_reason():
    documented = documented_targets()
    assert documented, "make help lists no bench-* or lab-* target: its format changed?"
    known = set(SMOKED) | set(NOT_YET)
    assert documented == known, (
        f"smoke-test or name with a reason: {sorted(documented - known)}; "
        f"no longer in make help: {sorted(known - documented)}"
    )
    for target, module in SMOKED.items():  # each smoke run takes its target's recipe: recipe_line(s)("target", ...)
        text = (paths.REPO / module).read_text()
        assert re.search(rf'recipe_lines?\(\s*"{target}",', text), f"{module} runs no recipe of {target}"


def test_bench_analysis_smoke_run_agrees_with_pandas():
    """make bench-analysis ARGS="--calls 20000 --loops 3" (the Makefile's smoke setting), one run of each side: its
    generated bundle has every parameter the MooBench tables read (it once lacked recursion_depth: a traceback)."""
    pytest.importorskip("pandas", reason="the dev extra installs pandas (pyproject.toml): make .venv/.dev-installed")
    cmd = recipe_line("bench-analysis", "scripts/bench_analysis.py", "--calls 20000 --loops 3")
    assert cmd[0].endswith("/bin/python") or cmd[0].endswith("python"), cmd
    r = subprocess.run(
        [sys.executable, *cmd[1:], "--repeat", "1"], cwd=paths.REPO, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "300,000 rows (3 loops x 20,000 calls x 5 configurations)" in r.stdout
    assert "statistics: identical (rel. 1e-9)" in r.stdout


def test_bench_budget_smoke_run_prints_the_design_beside_the_even_split_and_the_oracle():
    """make bench-budget ARGS="--draws 20 --edge-draws 100 --minutes 15" (its smoke setting, make help says)."""
    cmd = recipe_line("bench-budget", "scripts/bench_budget.py", "--draws 20 --edge-draws 100 --minutes 15")
    r = subprocess.run([sys.executable, *cmd[1:]], cwd=paths.REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    row = r"^\| 15 min \| [\d.]+ / [\d.]+ \([\d.]+ min\) \| [\d.]+ / [\d.]+ \| [\d.]+ \| \d+ % \|"
    assert re.search(row, r.stdout, re.M), r.stdout
    assert r.stdout.count("| within (0.9 ± 5 %) |") == 2  # both edges, each reproduction's wrong holds / differs


@pytest.mark.docker
def test_bench_resolution_smoke_run_reports_a_half_width(built, tmp_path):
    """make bench-resolution ARGS="--allocations small" (its smoke setting, the Makefile's help says), on this
    session's images: one jmh run of the small allocation, natively and in Docker, and its report."""
    cmd = recipe_line(
        "bench-resolution", "scripts/bench_resolution.py", f"--allocations small --results-dir {tmp_path}"
    )
    r = subprocess.run(
        [sys.executable, *cmd[1:], "--tag", built.tag], cwd=paths.REPO, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "bench-resolution: small: " in r.stdout and "time spent: " in r.stdout, r.stdout
    assert "per-variant mean over repetitions (95 %, modified Cox):" in r.stdout, r.stdout
    assert list(tmp_path.glob("*-small/jmh/*/manifest.json")), "no bundle where --results-dir says"


CALIBRATION_SMOKE = (
    "--repetitions 10 --design interleaved --set benchmarks=RecursionBenchmark.b1_default --set iterations=2 "
    "--set warmup_iterations=1"
)


@pytest.mark.docker
def test_bench_calibration_smoke_run_writes_a_verified_calibration_that_reproduce_reads(built, tmp_path):
    """make bench-calibration at its smoke setting (make help's): a 10-repetition A/A run of jmh's B1 natively
    (native, native-aa interleaved), its resampled table, and a calibration bundle that pirex verify passes and
    pirex reproduce's reader takes for this machine's device; run again, the complete A/A run is reused."""
    from pirex.reproduce import calibrate

    cmd = recipe_line("bench-calibration", "pirex calibrate", f"{CALIBRATION_SMOKE} --results-dir {tmp_path}")
    run = [*cmd, "--tag", built.tag]
    r = subprocess.run(run, cwd=paths.REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "| interleaved | B1 | t-log | 5 |" in r.stdout, r.stdout
    assert "| interleaved | t1-b1-docker | direction-at-most | B1 | 5 |" in r.stdout, r.stdout
    [found] = sorted((tmp_path / "calibration" / "jmh").glob("*/calibration.json"))
    v = subprocess.run(
        [cmd[0], "verify", str(found.parent)], cwd=paths.REPO, capture_output=True, text=True, timeout=120
    )
    assert v.returncode == 0, v.stdout + v.stderr
    c = calibrate.read(found.parent)
    assert calibrate.newest(tmp_path, "jmh", c.device) == c and c.coverage("t-log", 5, "interleaved")
    again = subprocess.run(run, cwd=paths.REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "reusing the complete A/A run" in again.stdout, again.stdout[-2000:]


@pytest.mark.docker
def test_bench_soak_smoke_run_holds_the_load_for_a_duration(built, tmp_path):
    """make bench-soak SOAK=20s ARGS="--set customers=1000" (a soak's smallest setting is a short duration), on this
    session's images: the service under load until the clock stops it, its memory sampled, then the table."""
    lines = recipe_lines(
        "bench-soak",
        "bin/pirex ",
        "SOAK=20s",
        f"TAG={built.tag}",
        f"SOAK_RESULTS={tmp_path}",
        "ARGS=--set customers=1000",
    )
    assert [cmd[1] for cmd in lines] == ["run", "table"], lines
    for cmd in lines:  # this interpreter's pirex: the one make's .venv/bin/pirex is in CI
        r = subprocess.run([sys.executable, "-m", "pirex", *cmd[1:]], capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"{cmd}: {r.stdout[-3000:]}{r.stderr[-3000:]}"
    [manifest] = tmp_path.glob("jpa-rest/*/manifest.json")
    run = json.loads((manifest.parent / "run.json").read_text())
    assert run["soak"]["duration"] == "20s"
    d = Bundle.open(manifest.parent).step_dir("docker", 0)
    summary = json.loads((d / "summary.json").read_text())
    assert summary["complete"] is False and summary["requests"] > 0, "stopped by the clock, not by a count"
    assert len((d / "web-memory.csv").read_text().splitlines()) >= 4  # a header and three samples at least
    assert "a soak of 20s" in r.stdout, r.stdout[-2000:]  # the table names the setup


@pytest.mark.docker
def test_bench_driver_smoke_run_compares_locust_with_wrk(built):
    """make bench-driver ARGS="--requests 300 --customers 300 --min-seconds 2" (its smallest setting), on this
    session's images: every endpoint driven by Locust and by wrk, the table and a line per endpoint. wrk is
    installed by make test's host set-up (the target's first line installs it for a user)."""
    cmd = recipe_line("bench-driver", "scripts/bench_driver.py", "--requests 300 --customers 300 --min-seconds 2")
    r = subprocess.run(
        [sys.executable, *cmd[1:], "--tag", built.tag], cwd=paths.REPO, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for op in ("create-random", "read", "change-name"):
        assert f"| {op} | Locust |" in r.stdout and f"| {op} | wrk |" in r.stdout, r.stdout
        assert f"{op}: Locust reaches " in r.stdout and "failures 0" in r.stdout, r.stdout
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "name=pirex-bench-driver"], capture_output=True, text=True, timeout=60
    )
    assert left.stdout.split() == [], "the script's containers are removed"
