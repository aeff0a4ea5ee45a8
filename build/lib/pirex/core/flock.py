"""The flocks pirex takes and probes: a bundle held exclusively while it is written (pirex/core/bundle.py), and
whether some process holds a flock on a bundle or on one of the runner's leftover records now. A flock goes with
the process that holds it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from pirex.core.errors import PirexError


def lock(path: Path) -> int:
    """An exclusive flock on the directory `path` (a bundle being written), held until its descriptor is closed;
    PirexError when another process holds it."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PirexError(
            f"{path} is being written by another pirex process: wait for it to end, or stop it first"
        ) from None
    return fd


def held(path: Path, flags: int = 0) -> bool:
    """Whether some process holds a flock on `path` now (a shared lock cannot be had); False when it cannot be
    opened (with `flags`, e.g. os.O_DIRECTORY). The one probe of bundles and of the runner's leftover records."""
    try:
        fd = os.open(path, os.O_RDONLY | flags)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
