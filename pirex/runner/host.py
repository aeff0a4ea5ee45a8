"""Machine-wide settings a matrix case changes for the length of one step (ICPE'18 Table 5:
CPU clock through the cpufreq governor, swapping off), always put back on every exit path.
Where the machine cannot do what a case asks, unavailable_reason() says why, and the runner
skips the case with that reason in the bundle instead of running a case that changes nothing."""

from __future__ import annotations

import logging
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pirex import proc
from pirex.errors import PirexError
from pirex.experiment import Case
from pirex.runner import leftovers

log = logging.getLogger(__name__)

CPU = Path("/sys/devices/system/cpu")
SWAPS = Path("/proc/swaps")


def online_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def parse_cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def governor_files(cpu_root: Path = CPU) -> list[Path]:
    return sorted(cpu_root.glob("cpu[0-9]*/cpufreq/scaling_governor"))


def active_swaps(swaps: Path = SWAPS) -> list[str]:
    return list(swap_priorities(swaps))


def swap_priorities(swaps: Path = SWAPS) -> dict[str, int]:
    """Active swap areas -> priority (/proc/swaps: Filename Type Size Used Priority)."""
    lines = swaps.read_text().splitlines()[1:] if swaps.exists() else []
    return {ln.split()[0].replace("\\040", " "): int(ln.split()[-1]) for ln in lines if ln.strip()}


def unavailable_reason(case: Case, cpu_root: Path = CPU) -> str | None:
    """Why this machine cannot run the case as the paper meant it, or None."""
    if case.cpus and not parse_cpus(case.cpus) <= online_cpus():
        return f"the case pins to CPUs {case.cpus}, but this machine has CPUs {sorted(online_cpus())}"
    if case.governor:
        files = governor_files(cpu_root)
        if not files:
            return (
                "this machine has no cpufreq (no scaling_governor under /sys/devices/system/cpu): "
                "its CPU clock cannot be set"
            )
        available = files[0].parent / "scaling_available_governors"
        if available.exists() and case.governor not in available.read_text().split():
            return f"the cpufreq governor {case.governor!r} is not offered here ({available.read_text().strip()})"
        if os.geteuid() != 0:
            return "setting the cpufreq governor needs root"
    if case.swap == "off" and active_swaps() and os.geteuid() != 0:
        return "turning swap off needs root"
    return None


def notes(case: Case) -> list[str]:
    """What the bundle should know about how the case ran here."""
    if case.swap == "off" and not active_swaps():
        return ["no swap area was active on this machine: the case ran exactly as its base"]
    return []


@contextmanager
def applied(case: Case, cpu_root: Path = CPU):
    """The case's machine-wide settings for the length of a step; the previous ones restored."""
    with ExitStack() as stack:
        if case.governor:
            for f in governor_files(cpu_root):
                old = f.read_text().strip()
                leftovers.note("setting", path=str(f), was=old)  # a kill leaves it set: the record puts it back
                stack.callback(_write, f, old)
                _write(f, case.governor)
        if case.swap == "off":
            areas = swap_priorities()
            for area, prio in areas.items():  # back with the priority it had (-p; negative ones are the kernel's)
                argv = ["swapon", "-p", str(prio), area] if prio >= 0 else ["swapon", area]
                stack.callback(lambda a=argv: proc.run(a, timeout=300, check=False))
            if areas:
                leftovers.note("swap", areas=list(areas))
                proc.run(["swapoff", *areas], timeout=900, what="turning swap off")
        yield


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value + "\n")
    except OSError as e:
        raise PirexError(f"cannot write {value!r} to {path}: {e.strerror}") from None
