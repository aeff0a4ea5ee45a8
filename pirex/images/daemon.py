"""A background service pirex starts for the length of one command and always stops again
(the local registry, buildkitd). A service that was already running is used and left alone,
except one that a killed pirex left behind: that one is adopted and stopped."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from pirex.core import proc
from pirex.core.errors import PirexError

log = logging.getLogger(__name__)


def alive(pid: int) -> bool:
    """True while any thread of pid has not exited (a zombie main thread may still hold sockets)."""
    return proc.a_thread_runs(pid)


class Daemon:
    def __init__(
        self, name: str, args: Sequence[str], logfile: Path, ready: Callable[[], bool], start_timeout: float = 60
    ):
        self.name, self.args, self.logfile, self.ready = name, [str(a) for a in args], logfile, ready
        self.start_timeout = start_timeout
        self.pid: int | None = None  # set while this object owns a running daemon

    @property
    def pidfile(self) -> Path:
        """'<daemon pid> <owner pid>': who started it, and for which pirex process."""
        return self.logfile.with_suffix(".pid")

    def _orphan(self) -> int | None:
        """Our daemon whose owning pirex is gone (SIGKILL leaves no cleanup), else None."""
        try:
            pid, owner = map(int, self.pidfile.read_text().split())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        except (OSError, ValueError):
            return None
        ours = [a.decode(errors="replace") for a in cmdline] == self.args
        return pid if ours and not alive(owner) else None

    def __enter__(self) -> Daemon:
        if self.ready():
            if (pid := self._orphan()) is not None:
                log.info("%s: adopting pid %d, left running by a pirex that was killed", self.name, pid)
                self._own(pid)
            else:
                log.info("%s: using the one already running", self.name)
            return self
        self.logfile.parent.mkdir(parents=True, exist_ok=True)
        with open(self.logfile, "ab") as out:
            started = proc.start(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._own(started.pid)
        try:
            self._wait_ready(started)
        except BaseException:  # also Ctrl-C and SIGTERM while waiting: never leak the daemon
            self.stop()
            raise
        return self

    def _own(self, pid: int) -> None:
        self.pid = pid
        self.pidfile.write_text(f"{pid} {os.getpid()}\n")

    def _wait_ready(self, started: subprocess.Popen) -> None:
        def ready() -> bool:
            if started.poll() is not None:
                tail = self.logfile.read_text(errors="replace").splitlines()[-10:]
                raise PirexError(f"{self.name} exited at start; its log ({self.logfile}) ends:\n" + "\n".join(tail))
            return self.ready()

        why = f"{self.name} did not become ready within {self.start_timeout:.0f} s; see {self.logfile}"
        proc.wait_until(ready, self.start_timeout, 0.2, why)
        log.info("%s started (pid %d, log %s)", self.name, started.pid, self.logfile)

    def __exit__(self, exc_type, exc, tb) -> None:
        """Stopped; when the command failed because the daemon died under it (killed, crashed), the
        error says so: the stale pidfile is gone and the next command starts a fresh one."""
        pid, owned = self.pid, self.pid is not None
        died = alive(pid) is False if owned else not self.ready()
        self.stop()
        if died and exc_type is not None and issubclass(exc_type, Exception):
            tail = self.logfile.read_text(errors="replace").splitlines()[-5:] if self.logfile.exists() else []
            who = f"{self.name} (pid {pid})" if owned else f"the {self.name} that was already running"
            raise PirexError(
                f"{who} died during the command, which failed for that reason; run the command again "
                f"and a fresh one is started. Its log ({self.logfile}) ends:\n" + "\n".join(tail)
            ) from exc

    def stop(self) -> None:
        if self.pid is None:
            return
        proc.terminate_group(self.pid, 20, kill_grace=10)
        log.info("%s stopped", self.name)
        self.pid = None
        self.pidfile.unlink(missing_ok=True)
