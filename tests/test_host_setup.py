"""The first step of `make run` and `make test`: scripts/host-setup.sh --ensure checks the host and
sets up only what is missing, as root, through sudo, or stops with the one command to run.

A package that does not exist stands in for "something is missing" (PIREX_EXTRA_APT_PACKAGES), and
a stand-in sudo records how it was called; the set-up itself is never started by these tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pirex.core import paths

SCRIPT = paths.REPO / "scripts" / "host-setup.sh"
MISSING = {"PIREX_EXTRA_APT_PACKAGES": "pirex-no-such-package"}
NOBODY = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def open_dir():
    """A directory another user can enter (pytest's tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(prefix="pirex-host-setup-") as d:
        Path(d).chmod(0o755)
        yield Path(d)


def ensure(tmp_path: Path, env: dict[str, str], user: list[str] | None = None) -> subprocess.CompletedProcess:
    # a copy anyone can read: the checkout may be private to root
    script = tmp_path / "scripts" / "host-setup.sh"
    if not script.exists():
        script.parent.mkdir(mode=0o755)
        shutil.copy(SCRIPT, script)
    argv = [*(user or []), shutil.which("bash") or "bash", str(script), "--ensure"]
    return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian host")
def test_a_user_without_sudo_is_told_the_one_command(open_dir):
    tmp_path = open_dir
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    bare = tmp_path / "bin"  # no sudo on this user's PATH
    bare.mkdir()
    for tool in ("bash", "dpkg-query", "grep", "tr", "id", "realpath", "dirname", "basename", "cat", "docker"):
        if found := shutil.which(tool):
            (bare / tool).symlink_to(found)
    r = ensure(tmp_path, {**MISSING, "PATH": str(bare)}, NOBODY)
    assert r.returncode == 1, r.stderr
    assert "missing: Debian packages: pirex-no-such-package" in r.stderr
    assert f"Run this once as root, then make again: {tmp_path / 'scripts' / 'host-setup.sh'}" in r.stderr


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian host")
def test_a_sudo_user_is_told_in_one_line_then_sudo_runs_the_set_up(open_dir):
    tmp_path = open_dir
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "sudo-calls"
    (bin_ / "sudo").write_text(f'#!/bin/sh\n[ "$1" = -n ] && exit 0\necho "$@" >> {calls}\n')
    (bin_ / "sudo").chmod(0o755)
    tmp_path.chmod(0o777)  # the stand-in writes its record here
    r = ensure(tmp_path, {**MISSING, "PATH": f"{bin_}:{os.environ['PATH']}"}, NOBODY)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "[host-setup] missing: Debian packages: pirex-no-such-package; setting up this host with: sudo "
        f"{tmp_path / 'scripts' / 'host-setup.sh'}"
    ]
    assert calls.read_text().split() == [str(tmp_path / "scripts" / "host-setup.sh")]


@pytest.mark.docker
def test_a_set_up_host_passes_at_once_and_changes_nothing(tmp_path, docker):
    # make test's own first step set this host up (CI: from nothing); now nothing is missing
    r = ensure(tmp_path, {})
    assert r.returncode == 0 and r.stderr == "", r.stderr
