"""pirex run killed (SIGKILL) or hit by a fault mid-run, then resumed: the bundle stays consistent,
the message says what happened and what to do, `pirex run --resume` reaps what the killed run left
(its sink container, its step container, its native processes and the chroot's mounts) and finishes
a bundle `pirex verify` accepts, with nothing left over. A second run meanwhile is refused, naming
the first. jmh cut down to one benchmark, one 100 ms iteration, one repetition per variant."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pirex.core import proc
from pirex.core.bundle import Bundle, verify
from pirex.runner import leftovers

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SMALL = {
    "repetitions": 1,
    "forks": 1,
    "warmup_iterations": 0,
    "iterations": 1,
    "time": "100ms",
    "warmup_time": "100ms",
    "benchmarks": "RecursionBenchmark.b1_default",
}
TINY = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
LONGER = ["--set", "time=3s"]  # a step long enough to be caught running on a loaded machine
DEADLINE = 240  # seconds for any one wait below; a run of TINY takes well under a minute

# A pirex that dies (SIGKILL, no cleanup) in the middle of writing the manifest that records the first step.
KILL_IN_MANIFEST = """
import os, signal, sys
from pirex.core import bundle
from pirex.cli.main import main
save = bundle.Bundle._save
def dying_save(self):
    if self.manifest["completed"] and self.manifest["status"] == "running":
        half = bundle._dump(self.path / "manifest.json", self.manifest)[:200]
        (self.path / ".manifest.json.killed").write_text(half)
        os.kill(os.getpid(), signal.SIGKILL)
    save(self)
bundle.Bundle._save = dying_save
sys.argv = ["pirex", *sys.argv[1:]]
main()
"""


def _start(results: Path, variants: str, *extra: str, script: str | None = None) -> subprocess.Popen:
    head = [sys.executable, "-c", script] if script else [sys.executable, "-m", "pirex"]
    cmd = [
        *head,
        "run",
        "jmh",
        "--profile",
        "quick",
        "--variants",
        variants,
        "--order",
        "sequential",
        "--results-dir",
        str(results),
        "--tag",
        TEST_TAG,
        "--force",
        *TINY,
        *extra,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _pirex(*args: str, timeout: float = DEADLINE) -> proc.Result:
    return proc.run([sys.executable, "-m", "pirex", *args], timeout=timeout, check=False)


def _bundle(results: Path) -> Path | None:
    found = [p for p in (results / "jmh").glob("*") if (p / "manifest.json").exists()] if results.exists() else []
    return found[0] if found else None


def _wait(what: str, check, p: subprocess.Popen | None = None):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if value := check():
            return value
        if p is not None and p.poll() is not None:
            pytest.fail(f"the run ended before {what}:\n{p.stdout.read()}")
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _resources(bundle: Path) -> list[dict]:
    return leftovers.read_resources(bundle)


def _running(name: str) -> bool:
    r = proc.run(["docker", "inspect", "-f", "{{.State.Running}}", name], timeout=60, check=False)
    return r.stdout.strip() == "true"


def _kill(p: subprocess.Popen) -> None:
    os.kill(p.pid, signal.SIGKILL)  # pirex alone: what it started runs on, as after a real kill
    p.wait(timeout=60)


def _nothing_left(bundle: Path) -> None:
    run_id = bundle.name
    r = proc.run(["docker", "ps", "-a", "--filter", f"label=pirex.run={run_id}", "--format", "{{.Names}}"], timeout=60)
    assert r.stdout.split() == [], f"containers left: {r.stdout}"
    r = proc.run(["docker", "ps", "-a", "--filter", f"name=pirex-{run_id}", "--format", "{{.Names}}"], timeout=60)
    assert r.stdout.split() == [], f"containers left: {r.stdout}"
    for e in _resources(bundle):
        if e["kind"] == "mount":
            assert not leftovers._mounts_under(Path(e["root"])), f"mounts left under {e['root']}"
        if e["kind"] == "process":
            assert not proc.same_process(e["pid"], e.get("start")), f"process left: {e}"
    assert leftovers.find(run_id, bundle) == []
    assert not (leftovers.runs_dir() / f"{run_id}.json").exists()


def _resume_to_complete(bundle: Path) -> str:
    r = _pirex("run", "--resume", str(bundle))
    assert r.returncode == 0, r.stdout + r.stderr
    assert verify(bundle) == [], verify(bundle)
    b = Bundle.open(bundle)
    assert b.status == "complete" and b.manifest["resumed"]
    _nothing_left(bundle)
    return r.stdout + r.stderr


@pytest.fixture
def results(built, tmp_path):
    yield tmp_path / "results"
    b = _bundle(tmp_path / "results")
    if b is not None:  # a failed test leaves nothing running either
        leftovers.reap(leftovers.find(b.name, b))


def test_killed_in_a_docker_step_while_the_sink_runs_a_second_run_is_refused_and_resume_finishes(results):
    p = _start(results, "docker", *LONGER)
    bundle = _wait("the bundle", lambda: _bundle(results), p)
    step = f"pirex-{bundle.name}-docker-0"
    _wait("the docker step's container", lambda: _running(step), p)
    assert _running(f"pirex-{bundle.name}-sink")

    second = _pirex("run", "jmh", "--results-dir", str(results), "--tag", TEST_TAG, *TINY, timeout=120)
    assert second.returncode == 1
    assert f"run {bundle.name} (pid {p.pid}" in second.stderr and "--allow-concurrent" in second.stderr, second.stderr
    assert len(list((results / "jmh").iterdir())) == 1, "the refused run wrote nothing"

    _kill(p)
    assert _running(f"pirex-{bundle.name}-sink"), "a SIGKILLed run leaves its sink: what resume must reap"
    doctor = _pirex("doctor")
    assert f"container pirex-{bundle.name}-sink (run {bundle.name})" in doctor.stdout
    said = _resume_to_complete(bundle)
    assert "left" in said and f"container pirex-{bundle.name}-sink" in said


def test_killed_in_a_native_step_resume_unmounts_and_finishes(results):
    if os.geteuid() != 0:
        pytest.skip("the native variant needs root")
    p = _start(results, "native,docker", *LONGER)
    bundle = _wait("the bundle", lambda: _bundle(results), p)

    def native_java():
        procs = [e for e in _resources(bundle) if e["kind"] == "process" and e["what"] == "native native"]
        return procs and proc.same_process(procs[-1]["pid"], procs[-1]["start"])

    _wait("the native step's process", native_java, p)
    _kill(p)
    mounts = [Path(e["root"]) for e in _resources(bundle) if e["kind"] == "mount"]
    assert mounts and leftovers._mounts_under(mounts[0]), "the killed native step leaves its chroot's mounts"
    said = _resume_to_complete(bundle)
    assert f"mount {mounts[0]}" in said and "process" in said


def test_killed_while_the_manifest_is_written_resume_redoes_the_unrecorded_step(results):
    p = _start(results, "docker", script=KILL_IN_MANIFEST)
    out = p.communicate(timeout=DEADLINE)[0]
    assert p.returncode == -signal.SIGKILL, out
    bundle = _bundle(results)
    b = Bundle.open(bundle)  # the last manifest written whole: the step renamed into place, never recorded
    assert b.status == "running" and b.manifest["completed"] == [] and (bundle / "docker" / "0").is_dir()
    _resume_to_complete(bundle)
    assert not list(bundle.glob(".manifest.json.*"))


def test_a_full_results_disk_fails_clearly_and_resumes_once_there_is_space(built, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if proc.run(["mount", "-t", "tmpfs", "-o", "size=4m", "pirex-test-full", mnt], timeout=30, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        results = mnt / "results"
        p = _start(results, "docker", "--set", "repetitions=2")
        bundle = _wait("the bundle", lambda: _bundle(results), p)
        _wait("the first step", lambda: Bundle.open(bundle).manifest["completed"], p)
        filler = mnt / "filler"
        proc.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], timeout=60, check=False)  # until ENOSPC
        out = p.communicate(timeout=DEADLINE)[0]
        assert p.returncode == 1
        last = out.strip().splitlines()[-1]
        assert last.startswith("pirex: error: no space left on the file system of ") and "--resume" in last, out
        b = Bundle.open(bundle)  # consistent: the first step recorded, the second never half-recorded
        assert len(b.manifest["completed"]) == 1 and not list(bundle.rglob("*.tmp-*"))
        filler.unlink()
        _resume_to_complete(bundle)
    finally:
        b = _bundle(mnt / "results")
        if b is not None:
            leftovers.reap(leftovers.find(b.name, b))
        proc.run(["umount", mnt], timeout=60, check=False)


def test_the_measured_container_killed_from_outside_fails_clearly_and_resumes(results):
    p = _start(results, "docker", *LONGER)
    bundle = _wait("the bundle", lambda: _bundle(results), p)
    step = f"pirex-{bundle.name}-docker-0"
    _wait("the step's container", lambda: _running(step), p)
    proc.run(["docker", "kill", step], timeout=60)
    out = p.communicate(timeout=DEADLINE)[0]
    assert p.returncode == 1 and "docker repetition 0 exited 137" in out
    assert "killed from outside the run" in out
    assert Bundle.open(bundle).status == "failed"
    _nothing_left(bundle)  # a failed run stops its sink and removes its step container
    _resume_to_complete(bundle)
