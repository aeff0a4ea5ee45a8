"""ICPE'18 section 5.2 and Figure 3: the interrupts the machine took during each step (the runner records
/proc/interrupts before and after every step as interrupts.json: pirex/core/machine.py, write_interrupts), per source
for the figure, and per kind as run values for the claims. Any experiment's bundles have them, so `pirex plot`
draws the figure for every experiment.

Kinds (KINDS) after the paper's words ("timer, USB ... and rescheduling interrupts", "the timer and work
interrupts"), read from each line's description: the line names differ by architecture and the ARM IPI numbers by
kernel version (ipi_types in arch/arm/kernel/smp.c and arch/arm64/kernel/smp.c):

    kind           description                x86   ARM 32-bit (Pi 3, Linux 4.x)   arm64 (Pi 4, Linux 5-6)
    timer          Local timer interrupts     LOC   -                              -
                   ... arch_timer             -     bcm2836-timer ... arch_timer   GICv2 30 Level
    work           IRQ work interrupts        IWI   IPI5                           IPI5
    rescheduling   Rescheduling interrupts    RES   IPI2                           IPI0
    function-call  Function call interrupts   CAL   IPI3                           IPI1

"timer" is each CPU's own timer (x86's local APIC timer, ARM's generic timer, every arch_timer line counted): the tick
and high-resolution timers, not x86's legacy IRQ 0 nor the "Timer broadcast interrupts" IPI. "work" is the Pi's only
line of that word (/proc/interrupts: `IRQ work interrupts`): section 5.4 names "USB/SD card interrupts and work
interrupts" beside the timer's, and since Linux 4.6 the ondemand governor (Raspbian's default) queues an IRQ work per
sample of a busy CPU (drivers/cpufreq/cpufreq_governor.c), so they grow with the ticks; a machine without cpufreq (a
VM) takes almost none. Function-call IPIs (work handed to another CPU) are the fourth kind.

Run values (run_values): a kind's interrupts during a step, all CPUs summed, per 1,000 MooBench calls of the step,
as "<configuration> interrupts <kind>"; each carries its count and its exposure (the step's calls), so that claims
compare them by stats.rate_ratio (an exact or quasi-Poisson interval of the ratio of counts per call), never with a
constant added to the counts (0.5 added gave a step without any a rate, and a false certainty to its ratio).
The paper compared "the system interrupt table before and after a benchmark
execution": counts per execution, not rates per second (one core's timer interrupts "by a factor of 2" come with a
run about 3 x as long, Table 5 Id 9, which a rate per second would divide out); a fluctuation run's cases
run the same calls, so a ratio of counts per call is the paper's ratio of counts. A step that runs several
configurations (the baseline and the monitoring tool, one JVM after the other) cannot say which of them took an
interrupt: it gives none."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pirex.analysis.bundles import steps
from pirex.analysis.interface import RunValue
from pirex.core.bundle import read_json, reading

TOP = 12  # the sources with the most interrupts; the rest summed as "other"
KINDS = ("timer", "work", "rescheduling", "function-call")
BY_DESCRIPTION = {  # a line's description (lower case) -> its kind; "arch_timer" lines: see kind()
    "local timer interrupts": "timer",
    "irq work interrupts": "work",
    "rescheduling interrupts": "rescheduling",
    "function call interrupts": "function-call",
    "single function call interrupts": "function-call",  # older ARM kernels have both
}
ARM_TIMER = "arch_timer"  # the last word of an ARM generic timer line's description
PER_CALLS = 1000  # run values are interrupts per this many calls
UNIT = "per 1,000 calls"


@dataclass(frozen=True)
class Loop:
    """What a step ran of one configuration: its mean's run value (the template of its interrupts' values) and
    every call it made (warm-up included: the interrupts are counted over the whole step)."""

    value: RunValue
    calls: int


def _label(irq: str, line: dict) -> str:
    words = line.get("description", "").split()
    return f"{irq} {words[-1]}" if words else irq


def _record(f: Path) -> tuple[dict, dict] | None:
    """The before and after lines of an interrupts.json; None where the file is absent (a step of an older bundle)
    or /proc/interrupts could not be read then (machine.interrupts)."""
    if not f.exists():
        return None
    rec = read_json(f, dict)
    if rec.get("before") is None or rec.get("after") is None:
        return None
    with reading(f):
        return rec["before"]["lines"], rec["after"]["lines"]


def _deltas(before: Mapping, after: Mapping) -> dict[str, tuple[dict, int]]:
    """irq -> (its line after the step, interrupts during the step over all CPUs); lines that appeared meanwhile
    are left out, and a count that fell (a CPU gone offline drops its column) counts 0."""
    return {
        irq: (line, max(sum(line.get("counts", [])) - sum(before[irq].get("counts", [])), 0))
        for irq, line in after.items()
        if irq in before
    }


def kind(description: str) -> str | None:
    """The kind (KINDS) of a /proc/interrupts line from its description, None for any other line."""
    words = description.lower().split()
    if words[-1:] == [ARM_TIMER]:
        return "timer"
    return BY_DESCRIPTION.get(" ".join(words))


def kind_counts(step_dir: Path) -> dict[str, int] | None:
    """kind -> interrupts the machine took during the step (every CPU, every line of the kind); a kind this machine
    has no line for is absent, not 0. None without a record."""
    rec = _record(step_dir / "interrupts.json")
    if rec is None:
        return None
    out: dict[str, int] = {}
    for line, delta in _deltas(*rec).values():
        k = kind(line.get("description", ""))
        if k is not None:
            out[k] = out.get(k, 0) + delta
    return out


def metric(configuration: str, k: str) -> str:
    """The run value's metric: "kieker-dump interrupts timer"."""
    return f"{configuration} interrupts {k}"


def run_values(step_loops: Sequence[tuple[Path, Sequence[Loop]]]) -> list[RunValue]:
    """The interrupt run values of one bundle's steps (each step's folder and the loops it ran): per step that ran
    exactly one configuration and every kind, count / calls x PER_CALLS, with the count and the calls (its
    exposure); a step that took none of a kind gives 0. A kind the machine took none of in any such step of the
    bundle gives no values (a ratio of two "none" would read as "no change")."""
    found = []
    for step_dir, loops in step_loops:
        if len(loops) != 1 or loops[0].calls <= 0:
            continue  # several configurations in one step: which took an interrupt is unknown
        counts = kind_counts(step_dir)
        if counts is not None:
            found.append((loops[0], counts))
    taken = {k for _, counts in found for k, n in counts.items() if n > 0}
    return [
        replace(
            loop.value,
            metric=metric(loop.value.metric, k),
            value=counts[k] / loop.calls * PER_CALLS,
            unit=UNIT,
            inner=(),
            count=counts[k],
            exposure=float(loop.calls),
        )
        for loop, counts in found
        for k in KINDS
        if k in counts and k in taken
    ]


def per_step(bundles: Sequence[Path]) -> dict[str, dict[str, list[float]]]:
    """variant -> source -> interrupts per second of each completed step (all CPUs summed)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for step in steps(bundles):
        rec = _record(step.dir / "interrupts.json")
        if rec is None:
            continue
        seconds = step.seconds
        if seconds <= 0:
            continue
        for irq, (line, delta) in _deltas(*rec).items():
            out[step.variant][_label(irq, line)].append(delta / seconds)
    return out


def figure(bundles: Sequence[Path], out: Path) -> list[Path]:
    """Bars of the mean interrupts per second per source, one group per variant; [] without records."""
    data = per_step(bundles)
    if not data:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    totals: dict[str, float] = defaultdict(float)
    for sources in data.values():
        for src, xs in sources.items():
            totals[src] += sum(xs) / len(xs)
    shown = sorted(totals, key=totals.get, reverse=True)[:TOP]
    variants = sorted(data)
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(shown) * len(variants) + 1.5))
    height = 0.8 / len(variants)
    for k, v in enumerate(variants):
        means = [sum(data[v].get(s, [0])) / max(len(data[v].get(s, [0])), 1) for s in shown]
        ax.barh([i + k * height for i in range(len(shown))], means, height, label=v)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(shown))], shown)
    ax.invert_yaxis()
    ax.set_xscale("symlog")
    ax.set_xlabel("interrupts per second during a step (mean over steps, all CPUs)")
    ax.set_title("Interrupts during the steps (ICPE'18 Figure 3)")
    ax.legend()
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "interrupts.png", out / "interrupts.svg"]
    for f in files:
        fig.savefig(f, dpi=110)
    plt.close(fig)
    return files
