"""Raw PMU events (perf_event_open PERF_TYPE_RAW) for the Raspberry Pis' Arm cores, chosen from the machine
record's CPU part. On a Pi the kernel has no generic last-level-cache events (PERF_COUNT_HW_CACHE_LL is
ENOENT on the Cortex-A53 and A72, thesis 4.5.1.3), so the thesis counted its LLC figures (6.2, 6.6) with the
Cortex-A72's raw event codes from the TRM. This module holds those codes per core and, before a run, turns
`auto` in each parameter that declares `resolve: pmu-raw-events` (experiment.yaml) into the benchmark's
`NAME=CODE,...` (the resolved value is what the bundle's manifest records). Elsewhere (x86, an unknown or mixed
Arm CPU) nothing is chosen, with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord, RecordLike

if TYPE_CHECKING:
    from pirex.core.experiment import Experiment

RESOLVER = "pmu-raw-events"  # what a parameter declares as `resolve:` to be resolved here
PARAMETER = "raw_events"  # the name fork's experiment.yaml gives it (pirex/analysis/fork.py reads it)


@dataclass(frozen=True)
class RawEvent:
    counter: str  # the forkbench counter the raw event is counted as (the column of fork.csv)
    code: int  # the Arm PMU event number
    arm_name: str  # Arm's mnemonic
    counts: str  # what it counts, in a few words


@dataclass(frozen=True)
class Core:
    name: str
    last_level: str
    events: tuple[RawEvent, ...]


# Keyed by the MIDR part number (/proc/cpuinfo "CPU part"; machine record cpu.cpu_parts).
CORES = {
    # Pi 3 (and the Pi 2 v1.2, Zero 2 W). Cortex-A53 TRM (ARM DDI 0500), chapter 12, PMU events: 0x16 L2D_CACHE,
    # 0x17 L2D_CACHE_REFILL (reads and writes; the A53 has no read-only L2 events, nor 0x50-0x53). Common
    # architectural events, so the kernel lists them in sysfs when the PMU implements them (PMCEID); the names
    # and numbers as in the kernel's tools/perf/pmu-events/arch/arm64/armv8-common-and-microarch.json.
    "0xd03": Core(
        "Cortex-A53",
        "the 512 KB shared L2",
        (
            RawEvent("LLC-loads", 0x16, "L2D_CACHE", "L2 data accesses, reads and writes"),
            RawEvent("LLC-load-misses", 0x17, "L2D_CACHE_REFILL", "L2 data refills, reads and writes"),
        ),
    ),
    # Pi 4: the codes the thesis used. Cortex-A72 TRM r0p3 (ARM 100095_0003), chapter 11, PMU events:
    # 0x50 L2D_CACHE_LD, 0x52 L2D_CACHE_REFILL_LD (implementation defined, read only); the kernel lists them for
    # the A72 in tools/perf/pmu-events/arch/arm64/arm/cortex-a57-a72/core-imp-def.json (L2D_CACHE_RD,
    # L2D_CACHE_REFILL_RD; numbers in arm64/recommended.json). Not in sysfs: taken on the TRM's word.
    "0xd08": Core(
        "Cortex-A72",
        "the 1 MB shared L2",
        (
            RawEvent("LLC-loads", 0x50, "L2D_CACHE_RD", "L2 data accesses, reads"),
            RawEvent("LLC-load-misses", 0x52, "L2D_CACHE_REFILL_RD", "L2 data refills, reads"),
        ),
    ),
    # Pi 5. Cortex-A76 TRM (ARM 100798), PMU events: 0x36 LL_CACHE_RD, 0x37 LL_CACHE_MISS_RD, the last level
    # being the DSU's 2 MB L3 (kernel: tools/perf/pmu-events/arch/arm64/arm/cortex-a76-n1/cache.json). Common
    # events (ARMv8.2): the PMU says in sysfs whether it implements them.
    "0xd0b": Core(
        "Cortex-A76",
        "the 2 MB shared L3",
        (
            RawEvent("LLC-loads", 0x36, "LL_CACHE_RD", "last-level cache accesses, reads"),
            RawEvent("LLC-load-misses", 0x37, "LL_CACHE_MISS_RD", "last-level cache misses, reads"),
        ),
    ),
}


@dataclass(frozen=True)
class Choice:
    """The raw events for one machine, or none and why."""

    core: Core | None
    reason: str  # why none were chosen ("" when some were)

    @property
    def spec(self) -> str:
        """forkbench's --raw-events value: NAME=0xCODE,... or none."""
        if self.core is None:
            return "none"
        return ",".join(f"{e.counter}={e.code:#x}" for e in self.core.events)


def choose(machine: RecordLike) -> Choice:
    """The raw events of this machine's CPU, from its record (cpu.cpu_parts, e.g. ["0xd08"])."""
    rec = MachineRecord.of(machine)
    parts = [p.lower() for p in rec.cpu_parts]
    model = rec.cpu_model or rec.cpu.get("core") or "this CPU"
    if not parts:
        return Choice(
            None,
            f"no raw PMU events for {model}: not an Arm CPU the table knows (the kernel's generic "
            "LLC events are used where it has them)",
        )
    if len(parts) > 1:
        return Choice(
            None,
            f"no raw PMU events: the cores differ ({', '.join(parts)}), and a raw code means something else on each",
        )
    core = CORES.get(parts[0])
    if core is None:
        known = ", ".join(f"{c.name} ({p})" for p, c in CORES.items())
        return Choice(None, f"no raw PMU events known for CPU part {parts[0]} ({model}); known: {known}")
    return Choice(core, "")


_SPEC = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*=0x[0-9a-fA-F]{1,4}$")


def resolve(params: dict[str, Any], machine: RecordLike, exp: Experiment) -> dict[str, Any]:
    """The parameters with `auto` in each one the experiment declares `resolve: pmu-raw-events` replaced by this
    machine's codes (or `none`); an explicit list is checked, `none` kept; other parameters pass unchanged."""
    out = dict(params)
    for name in exp.resolved_by(RESOLVER):
        if params.get(name) is not None:
            out[name] = _resolved(name, str(params[name]).strip(), machine)
    return out


def _resolved(name: str, value: str, machine: RecordLike) -> str:
    if value == "auto":
        return choose(machine).spec
    if value != "none" and not all(_SPEC.match(item) for item in value.split(",")):
        raise PirexError(f"--set {name}={value!r}: expected auto, none or NAME=0xCODE,... (e.g. LLC-load-misses=0x52)")
    return value


def describe(spec: str, machine: RecordLike) -> list[str]:
    """One line per raw event in a resolved spec, with Arm's name where the machine's core is known."""
    if spec in ("", "none"):
        return []
    core = choose(machine).core
    names = {e.code: e for e in core.events} if core else {}
    out = []
    for item in spec.split(","):
        counter, _, code = item.partition("=")
        e = names.get(int(code, 16))
        out.append(
            f"{counter} = raw event {code}"
            + (f" ({e.arm_name}: {e.counts}; {core.name}, last level {core.last_level})" if e else "")
        )
    return out
