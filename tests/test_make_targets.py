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

from pirex import paths

# Targets without a smoke run in the suite yet, and why: each needs the image set or a lab for minutes.
NOT_YET = {
    "bench-soak": "jpa-rest under load in Docker for SOAK (minutes even at SOAK=1m)",
    "bench-driver": "jpa-rest, PostgreSQL, Locust and wrk in Docker (installs wrk)",
    "bench-fleet": "three namespace hosts with sshd and dockerd each; tests/test_fleet.py runs the same lab",
    "lab-reproduce": "a paper's reproduction on three namespace hosts; tests/test_fleet.py reproduces on the lab",
    "bench-fresh-machine": "a whole make run on a fresh machine, 15+ min; tests/test_fresh_machine.py runs its set-up",
    "bench-resolution": "jmh in Docker and natively per allocation; tests/test_bench_resolution.py checks its output",
}
SMOKED = {"bench-analysis"}


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
