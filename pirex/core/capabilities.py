"""What this machine can do for an experiment, probed in one place and recorded in the machine record
(machine.json: "capabilities"): CPU clock control (cpufreq), hardware performance counters (PMU), the
tracers of tracefs (function_graph), swap, root, and the storage devices under the results directory.

Each capability is {"available": bool, "why": the reason when it is not, ...what was found}. The names
are those claims list under `needs` (analysis/<paper>/claims.yaml). This module reads files only
(no command, no pirex module beyond the standard library): the swarm's machine reader carries it to
nodes where pirex is not installed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pirex.core import settings

# PMUs the kernel lists in /sys/bus/event_source/devices for a CPU's hardware counters (x86, hybrid x86, Arm)
CPU_PMUS = ("cpu", "cpu_core", "cpu_atom", "armv8_pmuv3", "armv8_pmuv3_0", "armv7_cortex_a7", "armv7_cortex_a15")
TRACEFS = (Path("sys/kernel/tracing"), Path("sys/kernel/debug/tracing"))  # under the root, the first present
TRACERS = ("function_graph",)  # the tracers an experiment can need, each recorded as a capability of its own
NAMES = ("cpufreq", "pmu", *TRACERS, "swap", "root", "storage")


def _has(found: dict[str, Any] | None = None, why: str = "") -> dict[str, Any]:
    return {"available": not why, **({"why": why} if why else {}), **(found or {})}


def cpufreq(root: Path = Path("/")) -> dict[str, Any]:
    cpus = root / "sys/devices/system/cpu"
    governors = settings.governor_files(cpus)
    if not governors:
        return _has(why="no cpufreq (the kernel offers no CPU clock control here, as in most VMs)")
    available = cpus / "cpu0/cpufreq/scaling_available_governors"
    names = available.read_text().split() if available.exists() else []
    return _has({"cores": len(governors), "governors": names})


def pmu(root: Path = Path("/")) -> dict[str, Any]:
    events = root / "sys/bus/event_source/devices"
    pmus = [d for d in CPU_PMUS if (events / d).exists()]
    paranoid = root / "proc/sys/kernel/perf_event_paranoid"
    level = int(paranoid.read_text()) if paranoid.exists() else None
    if not pmus:
        return _has(why="no hardware performance counters (no PMU in /sys/bus/event_source/devices)")
    return _has({"pmus": pmus, "perf_event_paranoid": level})


def tracefs(root: Path = Path("/")) -> Path | None:
    """Where tracefs is mounted under root (its available_tracers readable), or None."""
    return next((root / p for p in TRACEFS if (root / p / "available_tracers").exists()), None)


def tracers(root: Path = Path("/")) -> list[str]:
    """The tracers this kernel's tracefs offers (none without a mounted tracefs)."""
    where = tracefs(root)
    return offered_tracers(where) if where else []


def offered_tracers(tracefs_dir: Path) -> list[str]:
    """The tracers a mounted tracefs lists."""
    return (tracefs_dir / "available_tracers").read_text().split()


def tracer(name: str, root: Path = Path("/")) -> dict[str, Any]:
    if tracefs(root) is None:
        return _has(why=f"no {name} tracer: no tracefs mounted (the kernel needs CONFIG_FTRACE)")
    offered = tracers(root)
    if name not in offered:
        return _has({"tracers": offered}, f"no {name} tracer in this kernel's tracefs (it offers {' '.join(offered)})")
    return _has({"tracers": offered})


def swaps(root: Path = Path("/")) -> list[str]:
    """The active swap areas (/proc/swaps: a header, then Filename Type Size Used Priority)."""
    f = root / "proc/swaps"
    lines = f.read_text().splitlines()[1:] if f.exists() else []
    return [ln.split()[0].replace("\\040", " ") for ln in lines if ln.strip()]


def swap(root: Path = Path("/")) -> dict[str, Any]:
    active = swaps(root)
    return _has({"areas": active}, "" if active else "no swap is active")


def is_root() -> bool:
    return os.geteuid() == 0


def root_user() -> dict[str, Any]:
    if is_root():
        return _has()
    return _has(why="not root (native runs, page-cache drops, CPU clock changes and tracing need it)")


def block_devices(work_dir: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> list[str]:
    """The block devices that hold work_dir and every file system mounted below it (e.g. an SD card and a USB
    disk mounted in the results directory): /proc/self/mountinfo's sources that are devices."""
    where = Path(os.path.abspath(work_dir))
    while not where.exists() and where != where.parent:
        where = where.parent
    where = where.resolve()
    mounts = []
    for line in mountinfo.read_text().splitlines() if mountinfo.exists() else []:
        fields, _, tail = line.partition(" - ")
        if tail and len(fields.split()) >= 5 and len(tail.split()) >= 2:
            mounts.append((Path(fields.split()[4].replace("\\040", " ")), tail.split()[1]))
    holding = [(p, s) for p, s in mounts if p == where or p in where.parents]
    found = {s for p, s in mounts if where in p.parents}  # file systems mounted below it
    if holding:
        found.add(max(holding, key=lambda m: len(m[0].parts))[1])  # the deepest mount at or above it holds it
    return sorted(s for s in found if s.startswith("/dev/"))


def storage(work_dir: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> dict[str, Any]:
    devices = block_devices(work_dir, mountinfo)
    why = "" if devices else f"no block device under {work_dir} (an overlay or tmpfs?)"
    return _has({"devices": devices}, why)


def probe(work_dir: Path, root: Path = Path("/")) -> dict[str, dict[str, Any]]:
    """Every capability of this machine; `root` is where its / is (a node's, bind-mounted into a container)."""
    return {
        "cpufreq": cpufreq(root),
        "pmu": pmu(root),
        **{name: tracer(name, root) for name in TRACERS},
        "swap": swap(root),
        "root": root_user(),
        "storage": storage(work_dir),
    }


def missing(capabilities: dict[str, dict[str, Any]]) -> dict[str, str]:
    """name -> why, for each capability this machine lacks."""
    return {name: c.get("why") or f"no {name}" for name, c in capabilities.items() if not c.get("available")}
