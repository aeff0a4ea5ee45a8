"""One measuring run per host: a second run is refused naming the first; a run in another network
namespace (a simulated host) is not; a killed holder leaves no stale lock."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from pirex.core.errors import PirexError
from pirex.runner import lock

HOLD = """
import sys, time
from pirex.runner import lock
with lock.measuring():
    lock.describe(run_id="20261124T000000Z-abcdef", bundle="/results/jmh/20261124T000000Z-abcdef")
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path)
    monkeypatch.setenv("PIREX_LOCK_DIR", str(tmp_path))
    return tmp_path


def _holder(prefix: list[str] = ()) -> subprocess.Popen:
    p = subprocess.Popen(
        [*prefix, sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert p.stdout.readline().strip() == "held"
    return p


def _end(p: subprocess.Popen) -> None:
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)


def test_a_second_run_is_refused_naming_the_first(lock_dir):
    first = _holder()
    try:
        with pytest.raises(PirexError) as e, lock.measuring():
            pass
        msg = str(e.value)
        assert "20261124T000000Z-abcdef" in msg and f"pid {first.pid}" in msg and "--allow-concurrent" in msg
        assert lock.holder()["run_id"] == "20261124T000000Z-abcdef"
        with lock.measuring(allow_concurrent=True):  # for those who mean it
            pass
    finally:
        _end(first)
    assert lock.holder() is None  # SIGKILL released it: no stale lock
    with lock.measuring():
        assert lock.holder()["pid"] == os.getpid()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a network namespace needs root")
def test_a_host_in_another_network_namespace_is_not_blocked(lock_dir):
    other = _holder(["unshare", "--net"])
    try:
        with lock.measuring():  # this host's lock is free: the other one is another host's
            pass
    finally:
        _end(other)


def test_the_host_identity_is_the_network_namespace_and_the_hostname():
    ident = lock.host_identity()
    assert ident.split("-", 1)[0] == str(os.stat("/proc/self/ns/net").st_ino)
    assert ident.endswith(os.uname().nodename)
