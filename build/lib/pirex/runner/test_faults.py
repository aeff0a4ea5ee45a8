"""Faults mid-run as the user reads them: the Docker daemon gone (a real docker client against a
socket nobody serves), a full disk, a file where the results directory should be."""

from __future__ import annotations

import errno
import os

import pytest

from pirex.core import proc
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.runner import faults


@pytest.fixture
def bundle(tmp_path):
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["docker"], [("docker", 0)], {}, {"version": "t", "commit": "0"})
    yield b
    b.close()


@pytest.mark.skipif(proc.which("docker") is None, reason="no docker client")
def test_the_docker_daemon_gone_says_start_it_and_resume(bundle, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nobody.sock")
    with pytest.raises(proc.CommandFailed) as failed:
        proc.run(["docker", "run", "--rm", "busybox", "true"], timeout=60)
    e = faults.explained(failed.value, bundle)
    assert isinstance(e, PirexError) and "Docker daemon stopped answering" in str(e)
    assert f"pirex run --resume {bundle.path}" in str(e) and "\n" not in str(e)
    assert faults.docker_down(failed.value.result.stderr)


def test_a_full_disk_says_free_space_and_resume(bundle):
    e = faults.explained(OSError(errno.ENOSPC, "No space left on device", str(bundle.path / "x")), bundle)
    assert str(e).startswith(f"no space left on the file system of {bundle.path / 'x'}: free some space")
    assert str(e).endswith(f"`pirex run --resume {bundle.path}` finishes the run")
    other = ValueError("a bug")
    assert faults.explained(other, bundle) is other


def test_settle_keeps_a_consistent_bundle_when_the_disk_refuses(bundle, monkeypatch):
    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pirex.core.bundle._write_atomic", full)
    assert faults.settle(bundle, "failed") is None
    monkeypatch.undo()  # space again
    reopened = Bundle.resume(bundle.path)  # the lock was released; the last whole manifest stands
    assert reopened.status == "running" and reopened.remaining_steps() == [{"variant": "docker", "repetition": 0}]
    reopened.close()


def test_results_dir_must_be_a_writable_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(PirexError, match="is a file, not a directory"):
        faults.check_results_dir(f)
    with pytest.raises(PirexError, match=f"{f} is a file, not a directory"):
        faults.check_results_dir(f / "below")
    faults.check_results_dir(tmp_path / "new" / "results")  # made when the run starts
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(PirexError, match="not writable"):
            faults.check_results_dir(ro / "results")


def test_a_container_killed_from_outside_is_named():
    assert "killed from outside" in faults.container_end(137, False)
    assert "OOM killer" in faults.container_end(137, True)
    assert faults.container_end(1, False) is None
