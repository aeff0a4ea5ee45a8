"""The machine-wide settings pirex changes for a while and puts back (pyperf's `Operation` is the model): each reads,
sets and restores itself, and says how it is recorded, so that a later pirex can put it back after a kill. One class
per setting, used alike by `pirex doctor --fix`/`--undo` (core/tuning.py), a matrix case's settings for a step
(runner/host.py) and the recovery of a killed run (runner/leftovers.py, from the record in resources.jsonl):

    SysfsFile   one file under /sys (a CPU's scaling_governor: governor_files): its text   record {path, was}
    Swap        the active swap areas and their priorities (swapoff, swapon -p)  record {areas, priorities}

A record's keys are the ones runs and doctor --fix have always written, so that an older record is restored too."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pirex.core import proc
from pirex.core.errors import PirexError

SWAPS = Path("/proc/swaps")
Run = Callable[[list[str]], Any]  # runs a command (raises on failure): proc.run by default, doctor's System.cmd


class SysfsFile:
    """A file under /sys whose text is the setting (a CPU's scaling_governor)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def read(self) -> str | None:
        """The value in effect, None where the file cannot be read."""
        try:
            return self.path.read_text().strip()
        except OSError:
            return None

    def write(self, value: str) -> None:
        try:
            self.path.write_text(value + "\n")
        except OSError as e:
            root = " (run as root: sudo pirex ...)" if isinstance(e, PermissionError) else ""
            raise PirexError(f"cannot write {value!r} to {self.path}: {e.strerror}{root}") from None

    def record(self, was: str) -> dict[str, Any]:
        return {"path": str(self.path), "was": was}

    def changed(self, was: str) -> str | None:
        """How it differs from the value recorded, None where it is that value (or gone)."""
        now = self.read()
        return None if now in (None, was) else f"{self.path} = {now!r} (was {was!r})"


class Swap:
    """The swap areas in use, each with its priority: turned off for a while, and back on at the priority each had
    (swapon -p; a negative priority is the kernel's own, which swapon without -p gives again)."""

    def __init__(self, swaps: Path = SWAPS, run: Run | None = None):
        self.swaps = swaps
        self.run = run or (lambda args: proc.run(args, timeout=900, what=" ".join(args)))

    def read(self) -> dict[str, int]:
        """Active swap areas -> priority (/proc/swaps: Filename Type Size Used Priority; a space in a name is
        \\040); none where it cannot be read."""
        try:
            lines = self.swaps.read_text().splitlines()[1:]
        except OSError:
            return {}
        return {ln.split()[0].replace("\\040", " "): int(ln.split()[-1]) for ln in lines if ln.strip()}

    def off(self, areas: Sequence[str]) -> None:
        if areas:
            self.run(["swapoff", *areas])

    def on(self, areas: Sequence[str], priorities: Mapping[str, int] | None = None) -> None:
        """The areas not active now back on, each at its recorded priority (none recorded: the kernel's). Every area
        is tried; the ones that failed are named together afterwards."""
        active, failed = self.read(), []
        for area in areas:
            if area not in active:
                try:
                    self.run(swapon_args(area, (priorities or {}).get(area)))
                except PirexError as e:
                    failed.append(f"{area}: {str(e).splitlines()[0]}")
        if failed:
            raise PirexError("could not turn swap back on: " + "; ".join(failed))

    def record(self, was: Mapping[str, int]) -> dict[str, Any]:
        return {"areas": list(was), "priorities": dict(was)}

    def changed(self, areas: Sequence[str]) -> str | None:
        off = [a for a in areas if a not in self.read()]
        return f"swap areas off: {', '.join(off)}" if off else None


def governor_files(cpu_root: Path = Path("/sys/devices/system/cpu")) -> list[Path]:
    """Each CPU's cpufreq scaling_governor (a SysfsFile) under a /sys/devices/system/cpu, in CPU order (cpu2 before
    cpu10); none without cpufreq. The one place they are found: doctor --fix, matrix cases, the capabilities."""
    files = [p / "cpufreq/scaling_governor" for p in cpu_root.glob("cpu[0-9]*") if p.name[3:].isdigit()]
    return sorted((f for f in files if f.exists()), key=lambda f: int(f.parent.parent.name[3:]))


def swapon_args(area: str, priority: int | None) -> list[str]:
    """swapon for an area turned off, back at the priority it had (None where it was not recorded)."""
    return ["swapon", "-p", str(priority), area] if priority is not None and priority >= 0 else ["swapon", area]
