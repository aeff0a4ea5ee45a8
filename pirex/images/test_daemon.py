import socket
import sys

import pytest

from pirex.errors import PirexError
from pirex.images.daemon import Daemon


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_started_daemon_is_stopped_on_exit(tmp_path):
    port = free_port()
    d = Daemon(
        "http",
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        tmp_path / "log",
        ready=lambda: accepts(port),
        start_timeout=30,
    )
    with d:
        assert accepts(port)
        pid = d.proc.pid
    assert not accepts(port)
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


def test_daemon_left_by_a_killed_pirex_is_adopted_and_stopped(tmp_path):
    port = free_port()
    args = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    first = Daemon("http", args, tmp_path / "log", ready=lambda: accepts(port), start_timeout=30)
    first.__enter__()
    first.proc = None  # as if pirex had been SIGKILLed: no cleanup ran
    with Daemon("http", args, tmp_path / "log", ready=lambda: accepts(port)) as second:
        assert second.proc is not None
    assert not accepts(port)
    assert not (tmp_path / "log.pid").exists()


def test_running_service_is_used_and_left_alone(tmp_path):
    d = Daemon("already", ["false"], tmp_path / "log", ready=lambda: True)
    with d:
        assert d.proc is None  # nothing started, so nothing to stop


def test_daemon_that_dies_at_start_shows_its_log(tmp_path):
    d = Daemon(
        "broken",
        ["sh", "-c", "echo 'bad config line 3' >&2; exit 1"],
        tmp_path / "log",
        ready=lambda: False,
        start_timeout=10,
    )
    with pytest.raises(PirexError, match="(?s)broken exited at start.*bad config line 3"):
        d.__enter__()
