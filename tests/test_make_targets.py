"""Every documented `make bench-*` and `lab-*` target either runs here at its smallest setting, or is named with
the reason it does not yet (issue 40): a target added to `make help` fails this module until it is one or the other.

The smoke runs take the command the Makefile runs (`make -n`), not a copy of it, and run it with the virtualenv's
Python: what the target installs first (bench-analysis: the bench extra) is in the dev extra already."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from pirex.core import paths

# Targets without a smoke run in the suite yet, and why: each needs the image set or a lab for minutes.
NOT_YET = {
    "bench-soak": "jpa-rest under load in Docker for SOAK (minutes even at SOAK=1m)",
    "bench-driver": "jpa-rest, PostgreSQL, Locust and wrk in Docker (installs wrk)",
    "bench-fleet": "three namespace hosts with sshd and dockerd each; tests/test_fleet.py runs the same lab",
    "lab-reproduce": "a paper's reproduction on three namespace hosts; tests/test_fleet.py reproduces on the lab",
    "bench-fresh-machine": "a whole make run on a fresh machine, 15+ min; tests/test_fresh_machine.py runs its set-up",
}
SMOKED = {"bench-analysis", "bench-resolution"}


def make(*args: str) -> str:
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=paths.REPO, capture_output=True, text=True)
    assert r.returncode == 0, f"make {' '.join(args)}: {r.stderr}"
    return r.stdout


def documented_targets() -> set[str]:
    return {m[1] for m in re.finditer(r"^  ((?:bench|lab)-[a-z-]+)\s", make("help"), re.M)}


def recipe_line(target: str, script: str, args: str) -> list[str]:
    """The command of target's recipe that runs script, as make would run it with ARGS=args."""
    lines = [line for line in make("-n", target, f"ARGS={args}").splitlines() if script in line]
    assert len(lines) == 1, f"make -n {target}: expected one line running {script}, got {lines}"
    return shlex.split(lines[0])


def test_every_bench_and_lab_target_of_make_help_is_smoked_or_named_with_its_reason():
    documented = documented_targets()
    assert documented, "make help lists no bench-* or lab-* target: its format changed?"
    assert documented == SMOKED | set(NOT_YET), (
        f"smoke-test or name with a reason: {sorted(documented - SMOKED - set(NOT_YET))}; "
        f"no longer in make help: {sorted((SMOKED | set(NOT_YET)) - documented)}"
    )


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
