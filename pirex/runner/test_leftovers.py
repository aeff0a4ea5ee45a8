"""What a killed run leaves is found from its records and removed: its process group, the mounts
under a native export, a machine setting it changed. Real processes, mounts and files; Docker's
part (labelled containers) is in tests/test_reliability.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pirex.core import proc
from pirex.runner import leftovers, lock

RUN_ID = "20261124T000000Z-0bad00"
KILLED_RUN = """
import subprocess, sys, time
from pathlib import Path
from pirex.runner import leftovers
bundle, native, setting = map(Path, sys.argv[1:4])
with leftovers.Owner(sys.argv[4], bundle):
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    leftovers.note_process(p.pid, "sleep")
    (native / "proc").mkdir(parents=True)
    leftovers.note("mount", root=str(native))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "pirex-test", str(native / "proc")], check=True)
    leftovers.note("setting", path=str(setting), was=setting.read_text().strip())
    setting.write_text("powersave\\n")
    print(p.pid, flush=True)
    time.sleep(300)
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


@pytest.fixture
def killed_run(tmp_path, monkeypatch):
    """A run SIGKILLed after starting a process, mounting under its native export and setting a "governor"."""
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path / "run")
    monkeypatch.setenv("PIREX_CACHE", str(tmp_path / "cache"))
    bundle, native, setting = tmp_path / "bundle", tmp_path / "cache" / "native" / "abc", tmp_path / "governor"
    bundle.mkdir()
    setting.write_text("ondemand\n")
    env = {**os.environ, "PIREX_LOCK_DIR": str(tmp_path / "run"), "PIREX_CACHE": str(tmp_path / "cache")}
    p = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, bundle, native, setting, RUN_ID], stdout=subprocess.PIPE, text=True, env=env
    )
    child = int(p.stdout.readline())
    p.kill()
    p.wait(timeout=30)
    yield bundle, native, setting, child
    leftovers.unmount_under(native)
    try:
        os.killpg(child, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ours() -> list[leftovers.Leftover]:
    """What find() reports of this test's run: a real run measuring on this host at the same time
    is not in the test's lock directory, so its containers look left over here; never touch them."""
    return [x for x in leftovers.find() if x.run_id == RUN_ID]


def test_doctor_finds_and_reaps_what_a_killed_run_left(killed_run):
    bundle, native, setting, child = killed_run
    found = _ours()
    assert {(x.kind, x.run_id) for x in found} == {("process", RUN_ID), ("mount", RUN_ID), ("setting", RUN_ID)}
    assert leftovers.reap(found) == []
    assert _ours() == []
    assert not leftovers._mounts_under(native)
    assert setting.read_text().strip() == "ondemand"
    time.sleep(0.1)
    assert not proc.group_alive(child)


def test_resume_reaps_by_the_bundles_record_alone(killed_run):
    bundle, native, setting, child = killed_run
    (leftovers.runs_dir() / f"{RUN_ID}.json").unlink()  # /run cleared: the bundle's record still says it all
    kinds = [json.loads(line)["kind"] for line in (bundle / leftovers.RESOURCES).read_text().splitlines()]
    assert kinds == ["process", "mount", "setting"]
    said = []
    found = leftovers.reap_run(RUN_ID, bundle, said.append)
    assert {x.kind for x in found} == {"process", "mount", "setting"}
    assert said[0].startswith("the interrupted run left 3 thing(s) behind")
    assert leftovers.find(RUN_ID, bundle) == [] and setting.read_text().strip() == "ondemand"


def test_a_live_runs_things_are_not_leftovers(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path / "run")
    monkeypatch.setenv("PIREX_CACHE", str(tmp_path / "cache"))
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        with leftovers.Owner(RUN_ID, None):
            leftovers.note_process(p.pid, "sleep")
            assert RUN_ID in leftovers.live_runs() and _ours() == []
        assert not (leftovers.runs_dir() / f"{RUN_ID}.json").exists()  # ended by itself: no record left
    finally:
        p.kill()
        p.wait()


def test_a_removal_that_fails_once_is_tried_again_and_one_gone_meanwhile_is_no_failure(tmp_path, monkeypatch):
    """A leftover may be ending by itself while it is removed (a process whose threads exit as they are counted):
    an error is a failure only when the thing is still there after a second try."""
    setting = tmp_path / "scaling_governor"
    left = leftovers.Leftover(
        "r1", "setting", str(setting), {"kind": "setting", "path": str(setting), "was": "ondemand"}
    )
    real, calls = leftovers._reap_one, []

    def flaky(x):
        calls.append(x)
        if len(calls) == 1:
            raise OSError(2, "No such file or directory", "/proc/15664/task")
        real(x)

    setting.write_text("performance\n")
    monkeypatch.setattr(leftovers, "_reap_one", flaky)
    assert leftovers.reap([left]) == [] and len(calls) == 2 and setting.read_text() == "ondemand\n"

    def gone_meanwhile(x):
        setting.write_text("ondemand\n")
        raise OSError("raced")

    setting.write_text("performance\n")
    monkeypatch.setattr(leftovers, "_reap_one", gone_meanwhile)
    assert leftovers.reap([left]) == []

    def stuck(x):
        raise OSError("read-only file system")

    setting.write_text("performance\n")
    monkeypatch.setattr(leftovers, "_reap_one", stuck)
    assert leftovers.reap([left]) == [f"{left}: read-only file system"]
