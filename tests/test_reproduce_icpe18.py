"""`pirex reproduce icpe18 --level kick-the-tires` end to end on this machine's engine, with the
counts cut down by --set (every claim's code path, not its numbers): killed with SIGKILL once its
first run is complete and its second under way, then `--resume` finishes the reproduction without
rerunning the complete bundle, every claim gets a verdict or a reason, and the report renders in
a real browser (headless Chromium)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pirex import machine, proc
from pirex.bundle import verify
from pirex.reproduce import claims, plan
from pirex.reproduce.verdict import NOT_RUN

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

# Small counts for every experiment the claims need; five repetitions stay (an interval needs them).
SETS = [
    "jmh.warmup_iterations=1",
    "jmh.iterations=2",
    "jmh.warmup_time=100ms",
    "jmh.time=100ms",
    "moobench.calls=1000",
    "moobench.sleep=0",
    "jpa-rest.customers=300",
    "jpa-rest.requests_per_operation=60",
]


def pirex(*args: str, results: Path) -> list[str]:
    return [sys.executable, "-m", "pirex", "reproduce", *args, "--results-dir", str(results), "--tag", TEST_TAG]


def status(manifest: Path) -> str | None:
    try:
        return json.loads(manifest.read_text()).get("status")
    except (OSError, ValueError):  # being written
        return None


def wait_for(check, timeout: float, what: str, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    pytest.fail(f"no {what} after {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def test_icpe18_kick_the_tires_killed_then_resumed(built, tmp_path):
    results, log = tmp_path / "results", tmp_path / "first.log"
    args = [a for s in SETS for a in ("--set", s)]
    with open(log, "w") as out:
        first = subprocess.Popen(
            pirex("icpe18", "--level", "kick-the-tires", *args, results=results),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: [m for m in results.glob("jmh/*/manifest.json") if status(m) == "complete"],
            900,
            "complete jmh bundle",
            log,
        )
        wait_for(lambda: list(results.glob("moobench/*/*/*/step.json")), 300, "moobench step", log)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the reproduction and its runner, mid-step
        first.wait(timeout=30)
    (jmh_bundle,) = [m.parent for m in results.glob("jmh/*/manifest.json")]
    (out_dir,) = results.glob("reproduce/icpe18-*")
    assert (out_dir / "state.json").is_file() and not (out_dir / "REPORT.md").exists()

    r = proc.run(pirex("--resume", str(out_dir), results=results), timeout=1500)
    lines = r.stdout.splitlines()
    assert "jmh@quick" in lines[0] or "jmh@quick" in r.stdout
    assert "done: 1 bundle(s) of this commit and machine" in r.stdout  # jmh: reused, not rerun
    assert [m.parent for m in results.glob("jmh/*/manifest.json")] == [jmh_bundle]
    moobench = [m.parent for m in results.glob("moobench/*/manifest.json")]
    plain = [b for b in moobench if not (json.loads((b / "run.json").read_text()).get("matrix"))]
    assert len(plain) == 1 and json.loads((plain[0] / "manifest.json").read_text())["resumed"]  # finished, not new
    for b in [jmh_bundle, *moobench, *[m.parent for m in results.glob("jpa-rest/*/manifest.json")]]:
        assert verify(b) == [] and status(b / "manifest.json") == "complete"
    for b in moobench:  # the killed step's container was reaped by the resume
        label = f"label=pirex.run={b.name}"
        assert proc.run(["docker", "ps", "-aq", "--filter", label], timeout=60).stdout.split() == []

    state = json.loads((out_dir / "state.json").read_text())
    assert set(state["verdicts"]) == {f"icpe18:{c.id}" for c in claims.load("icpe18").claims}
    # no cpufreq, swap or SPASS-meter in most VMs: what this machine's record says, as the reproduction read it
    missing = plan.missing(machine.record(Path("."), docker=False), claims.load("icpe18").needs)
    judged = [c.id for c in claims.load("icpe18").claims if c.experiment and c.judged and not plan.blocked(c, missing)]
    assert {"t1-b1-docker", "t3-read-docker", "t5-depth-1"} <= set(judged)
    not_judged = {k for k in judged if state["verdicts"][f"icpe18:{k}"] == NOT_RUN}
    assert not not_judged, r.stdout  # every claim this machine can judge was run and judged
    summary = r.stdout[r.stdout.rindex("\n\n") + 2 :]
    assert len(summary.splitlines()) <= 25 and "report:" in summary
    report = (out_dir / "REPORT.md").read_text()
    assert "verdicts are indicative" in report and "jmh with warmup_iterations=1" in report
    assert "| Run | Estimated | Took |" in report  # what the resumed part took against its estimate

    # the report in a real browser: the DOM has the verdict table, the screenshot is not blank
    chromium = proc.which("chromium")
    assert chromium, "chromium is missing: make test installs it (scripts/host-setup.sh)"
    html = out_dir / "report.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
    dom = proc.run([chromium, *flags, "--dump-dom", html.as_uri()], timeout=120).stdout
    assert "<h2>Verdicts</h2>" in dom and "icpe18:t1-b1-docker" in dom and 'src="data:image/png;base64,' in dom
    shot = tmp_path / "report.png"
    proc.run([chromium, *flags, "--window-size=1280,1600", f"--screenshot={shot}", html.as_uri()], timeout=120)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05  # text, table and figure: far from a blank page
    a4 = tmp_path / "report-a4.png"  # A4's width at 96 dpi (210 mm): the page as it prints
    proc.run([chromium, *flags, "--window-size=794,1123", f"--screenshot={a4}", html.as_uri()], timeout=120)
    pixels = matplotlib.image.imread(a4)
    assert pixels.shape[1] == 794 and pixels.std() > 0.05
