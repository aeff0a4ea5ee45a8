"""Reading this machine for its record (pirex/core/machine.py): files under /proc and /sys and a few short
commands, read so that a failure never raises. Each failure logs a warning (a debug line where the source cannot
exist on this machine: cpufreq on a VM, vcgencmd off a Pi) and its reason goes into the record's "unavailable"
map, under the key of what could not be read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pirex.core import proc
from pirex.core.errors import PirexError

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 10.0
"""Seconds any one external command may take (vcgencmd, findmnt, lsblk, dpkg, docker info)."""


class Reader:
    """File and command reads that never raise: failures log and are noted in `unavailable`."""

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def note(self, key: str, reason: str, *, expected: bool = False) -> None:
        self.unavailable.setdefault(key, reason)
        (log.debug if expected else log.warning)("machine record: %s unavailable: %s", key, reason)

    def text(self, path: str | Path, key: str, *, expected: bool = False) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except FileNotFoundError:
            self.note(key, f"{path} does not exist", expected=expected)
        except OSError as e:
            self.note(key, f"cannot read {path}: {e}")
        return None

    def command(self, args: list[str], key: str, *, expected_missing: bool = False) -> str | None:
        if proc.which(args[0]) is None:
            self.note(key, f"{args[0]} not found", expected=expected_missing)
            return None
        try:
            result = proc.run(args, timeout=COMMAND_TIMEOUT, check=False)
        except (PirexError, OSError) as e:
            self.note(key, str(e))
            return None
        if not result.ok:
            tail = (result.stderr or result.stdout).strip().splitlines()
            self.note(key, f"{' '.join(args)} exited {result.returncode}" + (f": {tail[-1]}" if tail else ""))
            return None
        return result.stdout

    def section(self, key: str, fn: Callable[[], Any]) -> Any:
        """Run one section's reader; a bug or surprise in one section costs only that section."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - the record must never stop a run
            self.note(key, f"{type(e).__name__}: {e}")
            return None
