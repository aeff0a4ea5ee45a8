"""Faults in the middle of a run, turned into a consistent bundle and one clear message: the
results file system full, the Docker daemon gone, a container killed from outside. Durations
are measured with time.monotonic (a jumping wall clock changes timestamps, never a duration)."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

from pirex.core import machine
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.proc import CommandFailed

log = logging.getLogger(__name__)

DOCKER_DOWN = ("Cannot connect to the Docker daemon", "Is the docker daemon running", "error during connect")
SPACE = (errno.ENOSPC, errno.EDQUOT)


def check_results_dir(path: Path) -> None:
    """--results-dir must be a directory pirex can write (or one it can create)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise PirexError(f"--results-dir {p} is a file, not a directory: name a directory (default: results/)")
    existing = next((a for a in (p, *p.parents) if a.exists()), None)
    if existing is not None and not existing.is_dir():
        raise PirexError(f"--results-dir {p}: {existing} is a file, not a directory: name a directory")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise PirexError(f"--results-dir {p}: {existing} is not writable by this user: pick another directory")


def settle(bundle: Bundle, status: str) -> str | None:
    """Close a bundle after a failure or an interruption: the machine record after, then the
    status. When the disk refuses even that, the manifest stays as last written (every completed
    step recorded, status running) and --resume still finishes it; None then."""
    try:
        bundle.write_machine(after=machine.record(bundle.path))
    except (OSError, PirexError) as e:
        log.warning("could not write the machine record after the run: %s", e)
    try:
        return bundle.finish(status)
    except (OSError, PirexError) as e:
        log.warning(
            "could not write the final manifest of %s (%s): it keeps the steps completed so far",
            bundle.path,
            getattr(e, "strerror", None) or e,
        )
        bundle.close()
        return None


def explained(e: BaseException, bundle: Bundle) -> BaseException:
    """The exception to show for a run that failed with e: a known fault as a PirexError saying
    what to do, anything else unchanged."""
    resume = f"then `pirex run --resume {bundle.path}` finishes the run"
    if isinstance(e, OSError) and e.errno in SPACE:
        where = e.filename or bundle.path
        return PirexError(
            f"no space left on the file system of {where}: free some space (or move the results), {resume}"
        )
    if isinstance(e, OSError) and e.errno == errno.EROFS:
        return PirexError(f"{e.filename or bundle.path} is on a read-only file system: remount it writable, {resume}")
    if isinstance(e, CommandFailed) and any(s in e.result.stderr + e.result.stdout for s in DOCKER_DOWN):
        what = " ".join(e.result.args[:3])
        return PirexError(
            f"the Docker daemon stopped answering during the run ({what}): start it again "
            f"(systemctl start docker), {resume}"
        )
    return e


def docker_down(stderr: str) -> bool:
    return any(s in stderr for s in DOCKER_DOWN)


def container_end(returncode: int, oom_killed: bool | None) -> str | None:
    """Why a step's container ended as it did, when it was not the workload's own doing."""
    if oom_killed:
        return "the kernel's OOM killer stopped the container (out of memory): give it more memory, then resume"
    if returncode == 137:
        return (
            "the container was killed from outside the run (SIGKILL: `docker kill`, or the OOM killer of "
            "another cgroup); resume the run to do this step again"
        )
    if returncode == 143:
        return "the container was stopped from outside the run (SIGTERM: `docker stop`); resume to do this step again"
    return None
