"""Running external processes: always under a timeout, always cleaned up, with retries for
network steps. Every docker, buildx, mmdebstrap or daemon call of pirex goes through here.

Process groups, threads and start times are read from Linux's /proc here, not with psutil: the runner's own
dependencies are pure Python (click, jsonschema below 4.18, PyYAML), so that it installs on a 32-bit Pi from PyPI
without a compiler or from Debian's packages alone (scripts/venv.sh), and PyPI has no armv7 wheel of psutil. The
retry is one loop for the one policy pirex has (PirexError, linear back-off), not a fourth dependency (tenacity)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import threading
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pirex.core.errors import PirexError

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    stdout_times: list[float] | None = None  # run(stamp_lines=True): when each line of stdout arrived (epoch s)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandFailed(PirexError):
    def __init__(self, result: Result, what: str | None = None):
        self.result = result
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        super().__init__(
            f"{what or ' '.join(result.args[:3])} failed (exit {result.returncode})" + (f":\n{tail}" if tail else "")
        )


INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def start(args: Sequence[str], **popen: object) -> subprocess.Popen:
    """subprocess.Popen(args, **popen) leading a process group of its own (start_new_session), started with SIGINT
    and SIGTERM held: a signal that arrives while Popen runs (its handler would raise inside Popen, after the fork,
    before the caller holds the process to clean it up) is raised once the process exists, its group ended first.
    Held in the main thread only, where Python runs signal handlers; a handler that is not Python's is not held."""
    held: list[int] = []
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for sig in INTERRUPTS:
            if callable(handler := signal.getsignal(sig)):
                signal.signal(sig, lambda signum, _frame: held.append(signum))
                saved[sig] = handler
    p = None
    try:
        p = subprocess.Popen(args, start_new_session=True, **popen)  # type: ignore[call-overload]
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        try:
            for sig in held[:1]:  # the first: handlers ignore later ones while they unwind
                signal.raise_signal(sig)  # also when Popen failed: the interruption comes before its error
        except BaseException:
            if p is not None:
                terminate_group(p)
            raise
    return p


def run(
    args: Sequence[str],
    *,
    timeout: float,
    check: bool = True,
    capture: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    input: str | None = None,
    what: str | None = None,
    started: Callable[[int], None] | None = None,
    stamp_lines: bool = False,
) -> Result:
    """Run a command in its own process group; on timeout or Ctrl-C the whole group is killed.

    With capture=False the output streams to the terminal (long builds show progress); `started`
    is told the process's pid (its process group's id) as soon as it runs. stamp_lines: the
    result's stdout_times say when each line of stdout arrived (a benchmark's iterations in time)."""
    args = [str(a) for a in args]
    log.debug("run: %s", " ".join(args))
    full_env = {**os.environ, **env} if env else None
    out = subprocess.PIPE if capture else None
    proc = start(
        args,
        stdout=out,
        stderr=out,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        env=full_env,
        cwd=cwd,
        text=True,
        errors="backslashreplace" if stamp_lines else None,  # a benchmark's stray bytes kept visible, not fatal
    )
    try:
        if started:
            started(proc.pid)
        if stamp_lines and capture and input is None:
            stdout, stderr, times = _communicate_stamped(proc, timeout)
        else:
            (stdout, stderr), times = proc.communicate(input=input, timeout=timeout), None
    except subprocess.TimeoutExpired:
        terminate_group(proc)
        proc.communicate()
        raise PirexError(
            f"{what or args[0]} did not finish within {timeout:.0f} s and was stopped: {' '.join(args)}"
        ) from None
    except BaseException:
        terminate_group(proc)
        proc.communicate()
        raise
    result = Result(args, proc.returncode, stdout or "", stderr or "", times)
    if check and not result.ok:
        raise CommandFailed(result, what)
    return result


def _communicate_stamped(proc: subprocess.Popen, timeout: float) -> tuple[str, str, list[float]]:
    """communicate(), with the moment each line of stdout arrived: a thread per stream, each reading to EOF and then
    closing its stream (bytes that are not UTF-8 arrive as backslash escapes: Popen's errors). On a timeout or an
    interruption the group is killed (which ends the streams) before the exception goes on, so that the caller's
    proc.communicate() finds them closed and only reaps the process. A reader's own failure is raised here."""
    out, err = io.StringIO(), io.StringIO()  # not a list of lines: a long output costs its text, not an object a line
    times = array("d")
    failed: list[BaseException] = []

    def read(stream, into: io.StringIO, stamp: bool) -> None:
        try:
            with stream:
                for line in stream:  # readline returns once a line has arrived, not when a buffer is full
                    if stamp:
                        times.append(time.time())
                    into.write(line)
        except BaseException as e:  # handed to the caller, raised there
            failed.append(e)

    threads = [
        threading.Thread(target=read, args=(proc.stdout, out, True), daemon=True),
        threading.Thread(target=read, args=(proc.stderr, err, False), daemon=True),
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    try:
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0))
        if any(t.is_alive() for t in threads):
            raise subprocess.TimeoutExpired(proc.args, timeout)
        proc.wait(max(deadline - time.monotonic(), 1))
    except BaseException:
        terminate_group(proc)
        for t in threads:
            t.join(30)
        raise
    if failed:
        raise failed[0]
    return out.getvalue(), err.getvalue(), list(times)


def stop_group(proc: subprocess.Popen, grace: float = 30) -> None:
    """A background process started with start_new_session=True: SIGTERM to its group, after
    `grace` seconds SIGKILL (terminate_group)."""
    terminate_group(proc, grace)


def terminate_group(
    group: int | subprocess.Popen,
    grace: float = 10,
    *,
    kill_grace: float | None = None,
    first: int = signal.SIGTERM,
    reap: bool = True,
) -> bool:
    """End a process group (a process started with start_new_session=True leads its own): SIGTERM (or `first`,
    e.g. SIGINT for a pirex that unwinds as on Ctrl-C) to the whole group, up to `grace` seconds for every member
    to end, then SIGKILL and up to `kill_grace` (default: grace) more. The leader is reaped when it is a child of
    this process (through the Popen when one is given, so that its returncode is set); reap=False leaves that to
    the thread that waits on its Popen (Groups: reaped here, its wait() would find no child and report exit status
    0 for a killed command). Idempotent: a group already gone gets no signal. True once the group is gone; False
    when it outlived SIGKILL's wait, or belongs to another user (this process may not signal it)."""
    popen = group if isinstance(group, subprocess.Popen) else None
    pgid = popen.pid if popen else int(group)

    def gone() -> bool:
        alive = group_alive(pgid)  # before reaping: a leader that ends in between is then a zombie, reaped here
        if popen is not None:
            popen.poll()
        elif reap:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pgid, os.WNOHANG)
        return not alive

    for sig, wait in ((first, grace), (signal.SIGKILL, grace if kill_grace is None else kill_grace)):
        if gone():
            return True
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return gone()
        except PermissionError:
            return False
        if wait_until(gone, wait, 0.05):
            return True
    return False


def group_members(pgid: int) -> list[int]:
    """The processes of a process group that still run, from /proc: a zombie does not count, unless one of its
    threads has not exited (a zombie main thread may still hold a socket)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and (fields[0] not in ("Z", "X") or a_thread_runs(int(stat.parent.name))):
            out.append(int(stat.parent.name))
    return sorted(out)


def threads(pid: int, procfs: Path = Path("/proc")) -> list[Path]:
    """A process's /proc/<pid>/task/<tid> folders; none once it has gone. A process can end between any two reads
    of /proc, also while its task folder is listed (pathlib's glob lets that FileNotFoundError through)."""
    try:
        with os.scandir(procfs / str(pid) / "task") as it:
            return [Path(e.path) for e in it]
    except OSError:
        return []


def a_thread_runs(pid: int, procfs: Path = Path("/proc")) -> bool:
    """Whether any thread of pid has not exited (a zombie main thread may still hold a socket)."""
    for task in threads(pid, procfs):
        with contextlib.suppress(OSError, IndexError):
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                return True
    return False


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (group_members). A group of another user's processes, which this
    process may not signal, counts as gone: there is nothing here to stop."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return bool(group_members(pgid))


def wait_until(predicate: Callable[[], T], timeout: float, interval: float, what: str | None = None) -> T:
    """Call `predicate` every `interval` seconds until it returns a true value, and return that value. It is called
    at once, and once more after `timeout` seconds have passed: when that is still false, the last value is returned,
    or, with `what` given, PirexError(what) is raised (what: the whole message, e.g. "... did not start within 60 s").
    The predicate may raise to stop waiting (the process it waits for has exited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            if what is not None:
                raise PirexError(what)
            return value
        time.sleep(max(min(interval, deadline - time.monotonic()), 0))


class Groups:
    """The process groups that several threads start through run(), to end them together: stop() ends every one
    running and refuses any run() after it (a PirexError), also a process that starts while stop() runs. A retry or
    a fallback in another thread then cannot start a new one once stopping; Ctrl-C reaches the main thread only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[int] = set()
        self.stopping = False

    def run(self, args: Sequence[str], **kw) -> Result:
        """proc.run(args, **kw), its group ended by stop(); refused once stopping."""
        mine: list[int] = []

        def started(pgid: int) -> None:
            with self._lock:
                mine.append(pgid)
                self._running.add(pgid)
                late = self.stopping
            if late:  # started while stop() went round: end it as stop() would have
                terminate_group(pgid, reap=False)

        if self.stopping:
            raise PirexError(f"not started, the commands are being stopped: {' '.join(map(str, args))[:200]}")
        try:
            return run(args, started=started, **kw)
        finally:
            with self._lock:
                self._running.difference_update(mine)

    def stop(self, grace: float = 10) -> None:
        """End every running group (SIGTERM, SIGKILL after grace seconds) and refuse any later run()."""
        with self._lock:
            self.stopping = True
            groups = list(self._running)
        for pgid in groups:  # each is reaped by the run() that waits on it, which then returns its signal
            terminate_group(pgid, grace, reap=False)


def retry(
    fn: Callable[[], Result],
    *,
    attempts: int,
    what: str,
    delay: float = 5.0,
    retry_if: Callable[[Exception], bool] = lambda e: True,
) -> Result:
    """Call fn until it succeeds; for network steps (mirrors, registries) that fail now and then."""
    for i in range(1, attempts + 1):
        try:
            return fn()
        except PirexError as e:
            if i == attempts or not retry_if(e):
                raise
            log.warning("%s failed (attempt %d/%d), retrying in %.0f s: %s", what, i, attempts, delay * i, gist(e))
            time.sleep(delay * i)
    raise AssertionError("unreachable")


def gist(error: Exception) -> str:
    """The telling line of a failure: the tool's first error line, else the last line."""
    text = error.result.stderr + "\n" + error.result.stdout if isinstance(error, CommandFailed) else str(error)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(("E:", "ERROR", "error:")):
            return ln
    return lines[-1] if lines else ""


def which(name: str) -> str | None:
    from shutil import which as _which

    return _which(name)


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def same_process(pid: int, start: str | None) -> bool:
    """pid is still the process recorded, and alive (a zombie has ended; whoever adopted it reaps it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X") and (start is None or fields[19] == start)
