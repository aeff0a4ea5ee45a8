import socket
import subprocess
import sys
import time

import pytest

from pirex.core.errors import PirexError
from pirex.images.daemon import Daemon, alive


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
        pid = d.pid
    assert not accepts(port)
    assert not alive(pid)


def test_daemon_left_by_a_killed_pirex_is_adopted_and_stopped(tmp_path):
    port = free_port()
    args = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    # A pirex (here: a short-lived shell, its pid written as owner) started the daemon and was killed.
    dead_owner = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    daemon = subprocess.Popen(args, start_new_session=True, stderr=subprocess.DEVNULL)
    (tmp_path / "log.pid").write_text(f"{daemon.pid} {dead_owner}\n")
    for _ in range(100):
        if accepts(port):
            break
        time.sleep(0.1)
    with Daemon("http", args, tmp_path / "log", ready=lambda: accepts(port)) as second:
        assert second.pid == daemon.pid
    assert daemon.wait(timeout=10) is not None
    assert not accepts(port)
    assert not (tmp_path / "log.pid").exists()


def test_daemon_of_a_running_pirex_is_left_alone(tmp_path):
    port = free_port()
    args = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    with Daemon("http", args, tmp_path / "log", ready=lambda: accepts(port), start_timeout=30) as first:
        with Daemon("http", args, tmp_path / "log", ready=lambda: accepts(port)) as second:
            assert second.pid is None  # the first one's owner (this process) is alive
        assert accepts(port), "the nested use stopped the daemon it did not own"
        assert first.pid is not None


def test_running_service_is_used_and_left_alone(tmp_path):
    d = Daemon("already", ["false"], tmp_path / "log", ready=lambda: True)
    with d:
        assert d.pid is None  # nothing started, so nothing to stop


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
