"""Machine-wide settings a matrix case changes for the length of one step (ICPE'18 Table 5:
CPU clock through the cpufreq governor, swapping off), always put back on every exit path.
Where the machine cannot do what a case asks, unavailable_reason() says why, and the runner
skips the case with that reason in the bundle instead of running a case that changes nothing.

A case's own change (a governor other than its base's) is required: no cpufreq, no case. A
setting the case shares with its base (the paper's `ondemand` of the base case, inherited by
every case built on it) is set where the machine can, and notes() says where it could not; it
also says when a case ends up equal to its base here (the governor in effect is already the
case's, no swap to turn off, the CPUs to pin to are all the machine has)."""

from __future__ import annotations

import logging
import os
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pirex.core import cpuset, settings
from pirex.core.errors import PirexError
from pirex.core.experiment_matrix import Case, Matrix
from pirex.runner import leftovers

log = logging.getLogger(__name__)

CPU = Path("/sys/devices/system/cpu")
SWAPS = settings.SWAPS


def online_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def offline_cpus(text: str) -> list[int]:
    """The CPUs of a CPU list that this process cannot run on (not online, or outside its affinity)."""
    return sorted(cpuset.parse_cpus(text) - online_cpus())


def governor_files(cpu_root: Path = CPU) -> list[Path]:
    return settings.governor_files(cpu_root)


def active_swaps(swaps: Path = SWAPS) -> list[str]:
    return list(swap_priorities(swaps))


def swap_priorities(swaps: Path = SWAPS) -> dict[str, int]:
    return settings.Swap(swaps).read()


def base_of(matrix: Matrix, name: str) -> Case | None:
    """The resolved base of a case (None for the root case): what its own change is measured against."""
    base = matrix.case(name).base
    return matrix.resolved(base) if base else None


def current_governor(cpu_root: Path = CPU) -> str | None:
    """The cpufreq governor in effect ("a/b" when the CPUs differ), None without cpufreq."""
    found = sorted({f.read_text().strip() for f in governor_files(cpu_root)})
    return "/".join(found) or None


def governor_problem(governor: str, cpu_root: Path = CPU) -> str | None:
    """Why this machine cannot set the governor, or None."""
    files = governor_files(cpu_root)
    if not files:
        return (
            "this machine has no cpufreq (no scaling_governor under /sys/devices/system/cpu): "
            "its CPU clock cannot be set"
        )
    available = files[0].parent / "scaling_available_governors"
    if available.exists() and governor not in available.read_text().split():
        return f"the cpufreq governor {governor!r} is not offered here ({available.read_text().strip()})"
    if os.geteuid() != 0:
        return "setting the cpufreq governor needs root"
    return None


def _own_governor(case: Case, base: Case | None) -> bool:
    """Is the case's governor its own change (required), not one it shares with its base?"""
    return bool(case.governor) and base is not None and case.governor != base.governor


def governor_in_effect(case: Case, cpu_root: Path = CPU) -> str | None:
    """The governor a step of this case runs with: its own where it can be set, else the machine's."""
    if case.governor and governor_problem(case.governor, cpu_root) is None:
        return case.governor
    return current_governor(cpu_root)


def unavailable_reason(case: Case, cpu_root: Path = CPU, base: Case | None = None) -> str | None:
    """Why this machine cannot run the case as the paper meant it, or None. base: the resolved base
    case (base_of), None for the root case."""
    if case.cpus and offline_cpus(case.cpus):
        return f"the case pins to CPUs {case.cpus}, but this machine has CPUs {sorted(online_cpus())}"
    if _own_governor(case, base) and (why := governor_problem(case.governor, cpu_root)):
        return why
    if case.swap == "off" and active_swaps() and os.geteuid() != 0:
        return "turning swap off needs root"
    return None


SAME_AS_BASE = "same as its base here"  # the start of a note whose case changed nothing on this machine


@dataclass(frozen=True)
class Notes:
    """What the bundle should know about how a case ran here, and whether it changed nothing here."""

    lines: tuple[str, ...] = ()
    same_as_base: bool = False  # the case's own change was already in force (a line says why)


def notes(
    case: Case, cpu_root: Path = CPU, base: Case | None = None, swaps: Path = SWAPS, cpus: set[int] | None = None
) -> Notes:
    """What the bundle should know about how the case ran here."""
    out, same = [], []
    # said once, by the case that sets it (the root); the cases built on it inherit it
    if case.governor and base is None and (why := governor_problem(case.governor, cpu_root)):
        out.append(
            f"the {case.governor} governor was not set ({why}); it ran with "
            f"{current_governor(cpu_root) or 'the clock the machine has'}"
        )
    if _own_governor(case, base) and governor_in_effect(case, cpu_root) == governor_in_effect(base, cpu_root):
        g = governor_in_effect(case, cpu_root)
        same.append(f"the {g} governor is in effect for both" if g else "this machine has no cpufreq governor to set")
    if case.swap == "off" and (base is None or base.swap != "off") and not active_swaps(swaps):
        same.append("no swap area was active on this machine")
    online = online_cpus() if cpus is None else cpus
    if case.cpus and (base is None or base.cpus != case.cpus) and cpuset.parse_cpus(case.cpus) == online:
        same.append(f"CPUs {case.cpus} are every CPU this machine has")
    return Notes(tuple(out + [f"{SAME_AS_BASE}: {why}" for why in same]), bool(same))


@contextmanager
def applied(case: Case, cpu_root: Path = CPU):
    """The case's machine-wide settings for the length of a step; the previous ones restored. A
    governor the machine cannot set is left as it is (the case's own ones were refused before by
    unavailable_reason; the base's are noted by notes)."""
    with ExitStack() as stack:
        if case.governor and governor_problem(case.governor, cpu_root) is None:
            for f in governor_files(cpu_root):
                file = settings.SysfsFile(f)
                old = f.read_text().strip()
                leftovers.note("setting", **file.record(old))  # a kill leaves it set: the record puts it back
                stack.callback(file.write, old)
                file.write(case.governor)
        if case.swap == "off":
            swap = settings.Swap()
            if areas := swap.read():
                leftovers.note("swap", **swap.record(areas))
                stack.callback(_quietly, swap.on, list(areas), areas)  # back with the priority each had
                swap.off(list(areas))
        yield


def _quietly(restore, *args) -> None:
    """A restore on the way out: logged where it fails, so that the other settings are restored too."""
    try:
        restore(*args)
    except PirexError as e:
        log.warning("%s", e)
