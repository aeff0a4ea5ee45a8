"""The README's first step on a fresh Debian 12 machine (tests/fresh_machine.py: no Docker engine, no pirex
caches, no network) as a user without sudo: `git clone`, then `make run` stops at once with the one command
to run as root, and nothing else happens (no virtualenv, no image, no results).

The whole path as root (the set-up, then the run) takes 15 minutes or more: `make bench-fresh-machine`
times it (scripts/bench_fresh_machine.py)."""

from __future__ import annotations

import pytest

from pirex.core import paths

from . import fresh_machine


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    if why := fresh_machine.have_tools():
        pytest.fail(f"the fresh machine cannot be made here: {why}")
    with fresh_machine.Machine.create(paths.REPO, tmp_path_factory.mktemp("fresh"), fresh_machine.USER) as m:
        yield m


def test_make_run_as_a_user_without_sudo_stops_with_the_one_command(machine):
    u = fresh_machine.USER
    r = machine.run(f"cd ~ && git clone -q {machine.REMOTE} pirex && cd pirex && make run", user=u, timeout=300)
    assert r.returncode != 0, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[host-setup]")]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("[host-setup] missing: Debian packages: ")
    assert lines[0].endswith(f"Run this once as root, then make again: /home/{u}/pirex/scripts/host-setup.sh")
    assert "docker.io" in lines[0] and "sudo" not in lines[0]
    left = machine.root / "home" / u / "pirex"
    assert not (left / ".venv").exists() and not (left / "results").exists()
    assert not (machine.root / "var/cache/pirex").exists()
