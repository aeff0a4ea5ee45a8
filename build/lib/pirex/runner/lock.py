"""One measuring run per host: two runs at once measure each other, so the second one refuses,
naming the first (its run id, pid and bundle), unless it is told --allow-concurrent.

The lock is an flock on /run/pirex/run-<host identity>.lock (root; a user's runtime directory
otherwise), held for the whole run and released
by the kernel when the process ends, however it ends (SIGKILL included): there is no stale lock
to clean up. The host identity is the network namespace's inode plus the hostname: a machine's
processes share the network namespace (and the hostname), while the hosts the fleet tests
simulate in network namespaces on one machine each have their own, so they do not block each
other. The mount namespace would not do (the simulated hosts share /run with the machine), nor
the hostname alone (the simulated hosts keep the machine's)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pirex.core.errors import PirexError


def _lock_dir() -> Path:
    """/run/pirex for root (the runs that measure natively); a user's own runtime directory otherwise
    (a user without root runs only Docker variants, and cannot write /run)."""
    if env := os.environ.get("PIREX_LOCK_DIR"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/run/pirex")
    return Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/pirex-{os.getuid()}") / "pirex"


LOCK_DIR = _lock_dir()

_held: dict = {}  # this process's lock: {"fd": int, "path": Path, "info": dict}


def host_identity() -> str:
    """netns inode + hostname: what tells one (possibly simulated) host from another."""
    try:
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:  # no /proc/self/ns (an unusual kernel): the hostname alone
        netns = 0
    return f"{netns}-{socket.gethostname()}"


def lock_path(directory: Path | None = None) -> Path:
    return (directory or LOCK_DIR) / f"run-{host_identity()}.lock"


def holder(directory: Path | None = None) -> dict | None:
    """Who holds this host's lock ({run_id, pid, bundle, ...}), or None when no run holds it."""
    path = lock_path(directory)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read(path: Path) -> dict:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    return info if isinstance(info, dict) else {}


@contextmanager
def measuring(allow_concurrent: bool = False, directory: Path | None = None) -> Iterator[None]:
    """This host's measuring lock for the block; PirexError naming the holder when another run has it.
    Re-entrant within one process (a resumed run inside `pirex run`)."""
    if _held or allow_concurrent:
        yield
        return
    path = lock_path(directory)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise PirexError(
            f"cannot take the one-run-per-host lock {path}: {e.strerror}; run pirex as root, or pass --allow-concurrent"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        info = _read(path)
        who = f"run {info.get('run_id') or '(starting)'} (pid {info.get('pid', '?')}"
        who += f", bundle {info['bundle']})" if info.get("bundle") else ")"
        raise PirexError(
            f"another measuring run is under way on this host: {who}; two runs at once measure each "
            "other: wait for it to end, or pass --allow-concurrent if you mean it"
        ) from None
    _held.update(fd=fd, path=path, info={"pid": os.getpid()})
    try:
        describe()
        yield
    finally:
        _held.clear()
        os.close(fd)  # releases the flock; the file stays (removing it would race with the next run's open)


def describe(**info) -> None:
    """Add what the run is (run_id, bundle) to the lock file, for the message a second run prints."""
    if not _held:
        return
    _held["info"].update({k: str(v) for k, v in info.items()})
    os.ftruncate(_held["fd"], 0)
    os.pwrite(_held["fd"], json.dumps(_held["info"]).encode(), 0)
