"""ICPE'18 Figure 3: the interrupts the machine took during each step (the runner records
/proc/interrupts before and after every step as interrupts.json), per source and variant. Any
experiment's bundles have them, so `pirex plot` draws it for every experiment."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pirex.analysis.bundles import steps
from pirex.bundle import read_json, reading

TOP = 12  # the sources with the most interrupts; the rest summed as "other"


def _label(irq: str, line: dict) -> str:
    words = line.get("description", "").split()
    return f"{irq} {words[-1]}" if words else irq


def per_step(bundles: Sequence[Path]) -> dict[str, dict[str, list[float]]]:
    """variant -> source -> interrupts per second of each completed step (all CPUs summed)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for step in steps(bundles):
        f = step.dir / "interrupts.json"
        if not f.exists():
            continue  # a step of an older bundle
        rec = read_json(f, dict)
        if rec.get("before") is None or rec.get("after") is None:
            continue  # /proc/interrupts could not be read then (machine.interrupts)
        with reading(f):
            before, after = rec["before"]["lines"], rec["after"]["lines"]
            seconds = step.seconds
            for irq, line in after.items():
                if irq in before and seconds > 0:
                    delta = sum(line.get("counts", [])) - sum(before[irq].get("counts", []))
                    out[step.variant][_label(irq, line)].append(max(delta, 0) / seconds)
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
