"""A build whose local registry or buildkitd dies fails with a message that says so, and the next
command recovers: no stale pidfile, socket or lock stops a fresh daemon. Real daemons, on a port
and a cache of the test's own (the shared ones are never touched)."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import builder, localregistry


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not (proc.which("docker-registry") or proc.which("registry")), reason="no registry program")
def test_a_registry_that_dies_mid_command_is_named_and_the_next_starts_fresh(tmp_path):
    addr = f"127.0.0.1:{free_port()}"
    d = localregistry.registry_daemon(tmp_path, addr)
    with pytest.raises(PirexError) as e, d:
        pid = d.pid
        os.kill(pid, signal.SIGKILL)
        proc.run(["curl", "-sf", f"http://{addr}/v2/"], timeout=30, what="pushing to the local registry")
    assert f"registry {addr} (pid {pid}) died during the command" in str(e.value)
    assert not d.pidfile.exists()
    with localregistry.registry_daemon(tmp_path, addr) as again:
        assert again.pid != pid and localregistry.answers(addr)


@pytest.mark.skipif(os.geteuid() != 0 or not proc.which("buildkitd"), reason="buildkitd as root")
def test_a_buildkitd_that_dies_mid_build_is_named_and_the_next_build_recovers(tmp_path, monkeypatch):
    if not proc.run(["docker", "buildx", "version"], timeout=30, check=False).ok:
        pytest.skip("no docker buildx")
    monkeypatch.setenv("PIREX_CACHE", str(tmp_path))  # its own state, socket and builder list
    monkeypatch.delenv("PIREX_BUILDER", raising=False)
    pidfile = tmp_path / "buildkit" / "buildkitd.pid"
    with pytest.raises(PirexError) as e, builder.builder() as name:
        pid = int(pidfile.read_text().split()[0])
        os.killpg(pid, signal.SIGKILL)
        builder.buildx("inspect", "--bootstrap", name, timeout=10)  # fails (or times out): the daemon is gone
    assert f"buildkitd (pid {pid}) died during the command" in str(e.value)
    assert not pidfile.exists() and (tmp_path / "buildkit" / "buildkitd.sock").exists()  # the stale socket stays
    with builder.builder() as name:  # and does not stop a fresh buildkitd
        assert builder.buildx("inspect", name, timeout=60).ok
