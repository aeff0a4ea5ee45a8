"""A background service pirex starts for the length of one command and always stops again
(the local registry, buildkitd). A service that was already running is used and left alone."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pirex.errors import PirexError

log = logging.getLogger(__name__)


class Daemon:
    def __init__(
        self, name: str, args: Sequence[str], logfile: Path, ready: Callable[[], bool], start_timeout: float = 60
    ):
        self.name, self.args, self.logfile, self.ready = name, [str(a) for a in args], logfile, ready
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    @property
    def pidfile(self) -> Path:
        return self.logfile.with_suffix(".pid")

    def _orphan(self) -> int | None:
        """A daemon of ours left behind by a pirex that was killed (SIGKILL leaves no cleanup)."""
        try:
            pid = int(self.pidfile.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        except (OSError, ValueError):
            return None
        return pid if [a.decode(errors="replace") for a in cmdline] == self.args else None

    def __enter__(self) -> Daemon:
        if self.ready():
            if (pid := self._orphan()) is not None:
                log.info("%s: adopting pid %d, left running by an interrupted pirex", self.name, pid)
                self.proc = _Adopted(pid)
            else:
                log.info("%s: using the one already running", self.name)
            return self
        self.logfile.parent.mkdir(parents=True, exist_ok=True)
        with open(self.logfile, "ab") as out:
            self.proc = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self.pidfile.write_text(str(self.proc.pid))
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.logfile.read_text(errors="replace").splitlines()[-10:]
                self.proc = None
                raise PirexError(f"{self.name} exited at start; its log ({self.logfile}) ends:\n" + "\n".join(tail))
            if self.ready():
                log.info("%s started (pid %d, log %s)", self.name, self.proc.pid, self.logfile)
                return self
            time.sleep(0.2)
        self.stop()
        raise PirexError(f"{self.name} did not become ready within {self.start_timeout:.0f} s; see {self.logfile}")

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        log.info("%s stopped", self.name)
        self.proc = None
        self.pidfile.unlink(missing_ok=True)


class _Adopted:
    """Enough of Popen to stop a process this one did not start."""

    def __init__(self, pid: int):
        self.pid = pid

    def poll(self) -> int | None:
        try:  # a zombie (state Z) has exited too
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return 0
        return 0 if state == "Z" else None

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.1)
        return 0
