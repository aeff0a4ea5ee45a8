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

from pirex.artifact.rerun import JUDGED
from pirex.core import machine, proc
from pirex.core.bundle import verify
from pirex.reproduce import claims, plan
from pirex.reproduce.verdict import NOT_RUN

from . import fleet_lab, netns
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


@pytest.fixture(scope="module")
def reproduced(built, tmp_path_factory) -> tuple[Path, Path, Path, proc.Result]:
    """The reproduction killed with SIGKILL mid-run, then resumed: (results, its folder, the jmh bundle complete
    before the kill, the resume's output). Shared: the artifact test below packs it."""
    tmp_path = tmp_path_factory.mktemp("icpe18")
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

    return results, out_dir, jmh_bundle, proc.run(pirex("--resume", str(out_dir), results=results), timeout=1500)


def test_icpe18_kick_the_tires_killed_then_resumed(reproduced, tmp_path):
    results, out_dir, jmh_bundle, r = reproduced
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


def test_its_artifact_reruns_offline_on_a_second_machine(reproduced, tmp_path):
    """`pirex artifact icpe18 --reproduction ... --images host` here, then `pirex reproduce icpe18 --artifact` on a
    second machine: a network namespace with a Docker daemon of its own whose images were removed, no route out (no
    registry, no mirror) and an empty pirex cache (no local registry, no exported trees). jmh's claims only (the
    quickest), at the sets of the reproduction inside, which the rerun takes from it."""
    results, out_dir, jmh_bundle, _ = reproduced
    art = tmp_path / "icpe18-artifact.tar"
    made = proc.run(
        [sys.executable, "-m", "pirex", "artifact", "icpe18", str(art), "--reproduction", str(out_dir)]
        + ["--images", "host", "--tag", TEST_TAG],
        timeout=900,
    )
    assert made.stdout.startswith(f"wrote {art} (")
    check = proc.run([sys.executable, "-m", "pirex", "artifact", "--check", str(art)], timeout=300, check=False)
    assert check.returncode == 0, check.stdout + check.stderr

    with netns.hosts(["committee"], site=fleet_lab.SITE, docker_bridge=True) as hosts:
        h = hosts["committee"]
        daemon = {int(Path(h.socket).with_name("dockerd.pid").read_text())}
        h.docker("system", "prune", "-af", timeout=300)
        assert h.docker("images", "-q").stdout.split() == []  # a clean machine: no image at all
        assert "default" not in proc.run(["ip", "-n", h.netns, "route"], timeout=30).stdout  # and no way out
        env = {**h.env, "PIREX_CACHE": str(tmp_path / "committee-cache")}
        rerun = tmp_path / "rerun"
        cmd = [sys.executable, "-m", "pirex", "reproduce", "icpe18", "--artifact", str(art), "--experiment", "jmh"]
        try:
            r = proc.run(
                ["nsenter", f"--net=/run/netns/{h.netns}", *cmd, "--results-dir", str(rerun)], timeout=1500, env=env
            )
        finally:  # whatever the rerun left in the namespace (its registry, if it was killed), the daemon aside
            fleet_lab.kill_namespace_processes(hosts, spare=daemon)
    assert "checksums match (icpe18)" in r.stdout and "images: loaded from the artifact" in r.stdout, r.stdout
    assert "as the reproduction inside: " in r.stdout  # its sets, so that the two are comparable

    (mine,) = rerun.glob("reproduce/icpe18-*")
    assert (mine / "artifact" / "REPORT.md").read_bytes() == (out_dir / "REPORT.md").read_bytes()
    inside = json.loads((out_dir / "state.json").read_text())["verdicts"]
    here = json.loads((mine / "state.json").read_text())["verdicts"]
    jmh_claims = [f"icpe18:{c.id}" for c in claims.load("icpe18").claims if c.experiment == "jmh"]
    jmh_claims = [k for k in jmh_claims if inside[k] in JUDGED]  # not those this machine cannot judge (devices)
    # every jmh claim one machine judges: B1's two, B2, B3, B4 and B6 (B5 under Docker needs a Pi on a USB disk)
    assert len(jmh_claims) >= 6
    comparison = (mine / "COMPARISON.md").read_text()
    for key in jmh_claims:  # each judged on both sides: the same verdict, or the row says why not
        row = next(line for line in comparison.splitlines() if line.startswith(f"| {key} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:3] == [inside[key], here[key]] and cells[3] in ("yes", "no"), row
        assert (cells[3] == "yes") == (inside[key] == here[key]) and (cells[3] == "yes" or cells[4]), row
    assert r.stdout.strip().splitlines()[-1].startswith(f"{sum(inside[k] == here[k] for k in jmh_claims)} of ")

    # the very images inside the artifact ran, imported, not built: the inside jmh bundle's image, by digest
    (theirs,) = [json.loads((jmh_bundle / "manifest.json").read_text())["images"]["jmh"]]
    (bundle,) = rerun.glob("jmh/*/manifest.json")
    ours = json.loads(bundle.read_text())["images"]["jmh"]
    assert ours["digest"] == theirs["digest"] and ours["origin"]["kind"] == "imported", ours
