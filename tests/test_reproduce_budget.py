"""`pirex reproduce --budget` on this machine's engine (issue 37): jmh's claims with a budget of about two minutes
(the counts cut down by --set), killed with SIGKILL once a round extends the run (or when it ends), then resumed
with a new budget: the looks and the alpha they spent are carried over and counted once, every bundle it judged is
complete, and the report names the design and each verdict's look. The rounds' logic, the kill between any two
steps and the error rates are unit tests (pirex/reproduce/test_budgeted.py, test_budget.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pirex.core import proc
from pirex.core.bundle import verify
from pirex.reproduce import budget

from .test_reproduce_icpe18 import pirex, status

pytestmark = pytest.mark.docker

SETS = ["jmh.warmup_iterations=1", "jmh.iterations=2", "jmh.warmup_time=100ms", "jmh.time=100ms"]


def test_a_budgeted_reproduction_killed_in_a_round_resumes_with_a_new_budget(built, tmp_path):
    results, log = tmp_path / "results", tmp_path / "first.log"
    args = ["icpe18", "--experiment", "jmh", *[a for s in SETS for a in ("--set", s)]]
    with open(log, "w") as out:
        first = subprocess.Popen(
            pirex(*args, "--budget", "2m", "--whole-pilot", results=results),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline, extended = time.monotonic() + 900, False
    try:  # until a round's extension is under way (a second jmh bundle), or the reproduction ends without one
        while time.monotonic() < deadline and first.poll() is None:
            if len(list(results.glob("jmh/*/manifest.json"))) >= 2:
                extended = True
                break
            time.sleep(0.2)
        else:
            assert first.poll() is not None, f"neither a round nor an end after 900 s:\n{log.read_text()[-3000:]}"
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)  # the reproduction and its runner, mid-round
        first.wait(timeout=30)
    (out_dir,) = results.glob("reproduce/icpe18-*")
    saved = json.loads((out_dir / "state.json").read_text())["budget"]
    assert saved["given"] == [120.0] and saved["design"]["claims"], log.read_text()[-3000:]
    if extended:
        assert saved["rounds"] >= 1 and "budget round 1:" in log.read_text()
    looks_before = {k: v["looks"] for k, v in saved["design"]["claims"].items()}

    r = proc.run(pirex("--resume", str(out_dir), "--budget", "1m", results=results), timeout=900)
    state = json.loads((out_dir / "state.json").read_text())
    entry = state["budget"]
    assert entry["given"] == [120.0, 60.0]
    design = budget.Design.from_json(json.dumps(entry["design"]))  # its looks in order, each once
    for k, v in entry["design"]["claims"].items():
        before = saved["design"]["claims"].get(k, {"looks": [], "levels": []})
        assert v["looks"][: len(looks_before.get(k, []))] == looks_before.get(k, [])
        assert v["levels"][: len(before["levels"])] == before["levels"]  # read again at the levels saved
        assert v["alpha_spent"] <= design.alpha + 1e-12
    judged = [Path(b) for b in state["bundles"]["jmh@quick"]]  # what was judged: complete, verified, and all
    for b in judged:
        assert verify(b) == [] and status(b / "manifest.json") == "complete"
    complete = {m.parent for m in results.glob("jmh/*/manifest.json") if status(m) == "complete"}
    assert complete == set(judged)
    report = (out_dir / "REPORT.md").read_text()
    assert "group-sequential test" in report and "Read at look 1 at" in report
    assert "budget:" in r.stdout and "report:" in r.stdout
    for b in complete:  # the killed step's container was reaped
        label = f"label=pirex.run={b.name}"
        assert proc.run(["docker", "ps", "-aq", "--filter", label], timeout=60).stdout.split() == []
