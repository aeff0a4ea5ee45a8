"""The fork() experiment of the 2024 thesis (Hashim, chapters 5-6) from fork bundles: every counter's
average with its min-max band against the mapped memory size, per device, variant and mode, as the
thesis's Figures 6.1-6.8, as a table and as figures.

A fork bundle's step `<variant>/<repetition>/` holds one folder per mode run by images/fork's
pirex-fork: `single/`, `single-migrate/`, `concurrent/`, `concurrent-migrate/`, each with forkbench's
fork.csv (one row per process, repetition and size), counters.csv (counter, supported,
kernel_included, reason), skipped.csv (size_mb, reason) and meta.csv (key, value); or, for a mode the
machine cannot run, mode-skipped.txt with the reason.

Rows are `ForkRow`s, not tidy.Row: tidy.Row has no place for the mapped size (nor for the process of a
concurrent run), which is the x axis of every figure. `ForkRow.tidy()` maps one onto tidy.Row for the
collection's common table (benchmark = "<mode> <size> MB", fork = process, iteration = the fork's
repetition within the step)."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pirex.analysis import tidy
from pirex.analysis.tidy import Row, device_of, storage_of
from pirex.bundle import Bundle
from pirex.errors import PirexError

MODES = ("single", "single-migrate", "concurrent", "concurrent-migrate")
WALL = "wall_ns"  # forkbench's own CLOCK_MONOTONIC time around fork() + waitpid(), beside the counters
FIXED = ("mode", "migration", "size_mb", "repetition", "process", "cpu_before", "cpu_after", WALL)
NS_COUNTERS = {WALL, "cpu-clock", "task-clock"}
# The thesis's figures first (6.1 CPU clock, 6.2 LLC misses, 6.3 branch misses, 6.4 instructions and cycles).
COUNTER_ORDER = (WALL, "cpu-clock", "task-clock", "LLC-load-misses", "cache-misses", "branch-misses", "instructions",
                 "cycles", "cache-references", "LLC-loads", "L1-dcache-loads", "L1-dcache-load-misses",
                 "page-faults", "context-switches", "cpu-migrations")  # fmt: skip
TITLES = {WALL: "wall time of fork() + waitpid()", "cpu-clock": "CPU clock", "task-clock": "task clock",
          "LLC-load-misses": "last-level cache read misses", "cache-misses": "cache misses",
          "branch-misses": "branch misses", "instructions": "instructions", "cycles": "CPU cycles"}  # fmt: skip


@dataclass(frozen=True)
class ForkRow:
    experiment: str
    run: str
    device: str
    storage: str
    variant: str
    mode: str  # single, single-migrate, concurrent, concurrent-migrate
    repetition: int  # the bundle's step
    size_mb: int
    fork_repetition: int  # forkbench's repetition within the step
    process: int  # 0 in single mode; one per process in concurrent mode
    counter: str  # wall_ns or a perf counter name
    value: float
    unit: str  # ns or count
    kernel_included: bool  # False: the counter saw user space only (perf_event_paranoid, no privileges)

    def tidy(self) -> Row:
        bench = f"{self.mode} {self.size_mb} MB"
        return Row("fork", self.run, self.device, self.storage, self.variant, bench, self.repetition, self.process,
                   self.fork_repetition, self.counter, self.value, self.unit)  # fmt: skip


@dataclass(frozen=True)
class Note:
    """Something a mode run could not give: an unsupported counter, a skipped size, a skipped mode, a setting."""

    device: str
    variant: str
    mode: str
    subject: str  # a counter name, "size 1024 MB", "mode", "drop_caches", "kernel"
    reason: str


@dataclass(frozen=True)
class Line:
    device: str
    variant: str
    mode: str
    size_mb: int
    counter: str
    n: int
    mean: float
    min: float
    max: float
    unit: str


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _bundle(bundle_path: Path) -> tuple[Bundle, dict]:
    b = Bundle.open(bundle_path)
    if b.manifest["experiment"] != "fork":
        raise PirexError(f"{bundle_path} is a {b.manifest['experiment']} bundle, not fork")
    machine = json.loads((Path(bundle_path) / "machine.json").read_text())["before"]
    return b, machine


def _mode_dirs(step: Path) -> list[tuple[str, Path]]:
    return [(m, step / m) for m in MODES if (step / m).is_dir()]


def rows(bundle_path: Path) -> list[ForkRow]:
    """Every measured value of a fork bundle; an unsupported counter's empty cells give no row (never a 0)."""
    b, machine = _bundle(bundle_path)
    device, storage = device_of(machine), storage_of(machine)
    out = []
    for step in b.manifest["completed"]:
        variant, rep = step["variant"], step["repetition"]
        for mode, d in _mode_dirs(b.step_dir(variant, rep)):
            if not (d / "fork.csv").is_file():
                continue
            support = {c["counter"]: c for c in _read_csv(d / "counters.csv")} if (d / "counters.csv").is_file() else {}
            for r in _read_csv(d / "fork.csv"):
                for name, cell in r.items():
                    if name in FIXED[:-1] or cell in ("", None):
                        continue
                    c = support.get(name, {})
                    if c and c.get("supported") != "true":
                        continue
                    kernel = name == WALL or c.get("kernel_included") == "true"
                    out.append(ForkRow("fork", b.run_id, device, storage, variant, mode, rep, int(r["size_mb"]),
                                       int(r["repetition"]), int(r["process"]), name, float(cell),
                                       "ns" if name in NS_COUNTERS else "count", kernel))  # fmt: skip
    return out


def notes(bundle_path: Path) -> list[Note]:
    """What each mode run could not do, once per (device, variant, mode, subject) across the bundle's steps."""
    b, machine = _bundle(bundle_path)
    device = device_of(machine)
    seen: dict[tuple, Note] = {}

    def add(n: Note) -> None:
        seen.setdefault((n.device, n.variant, n.mode, n.subject), n)

    for step in b.manifest["completed"]:
        variant = step["variant"]
        sd = b.step_dir(variant, step["repetition"])
        for mode in MODES:
            d = sd / mode
            if (d / "mode-skipped.txt").is_file():
                add(Note(device, variant, mode, "mode", (d / "mode-skipped.txt").read_text().strip()))
            if (d / "counters.csv").is_file():
                for c in _read_csv(d / "counters.csv"):
                    if c["supported"] != "true":
                        add(Note(device, variant, mode, c["counter"], c["reason"]))
                    elif c["reason"]:
                        add(Note(device, variant, mode, c["counter"], c["reason"]))
            if (d / "skipped.csv").is_file():
                for s in _read_csv(d / "skipped.csv"):
                    add(Note(device, variant, mode, f"size {s['size_mb']} MB", s["reason"]))
            if (d / "meta.csv").is_file():
                meta = {m["key"]: m["value"] for m in _read_csv(d / "meta.csv")}
                if meta.get("drop_caches", "permitted") != "permitted":
                    add(Note(device, variant, mode, "drop_caches", meta["drop_caches"]))
                if meta.get("kernel_included") in ("false", "partial"):
                    add(Note(device, variant, mode, "kernel",
                             f"counters saw user space only (perf_event_paranoid {meta.get('perf_event_paranoid')}); "
                             "fork() does its work in the kernel"))  # fmt: skip
    return list(seen.values())


def table(fork_rows: Iterable[ForkRow], process: int | None = None) -> list[Line]:
    """Per (device, variant, mode, size, counter): n, mean, min, max over every fork (the thesis's average and
    min-max band). process=None pools every process of a concurrent run; process=0 keeps only the first, as the
    thesis's figures did (6.1: "we only depict one of the processes")."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    units: dict[str, str] = {}
    for r in fork_rows:
        if process is not None and r.process != process:
            continue
        groups[(r.device, r.variant, r.mode, r.size_mb, r.counter)].append(r.value)
        units[r.counter] = r.unit
    order = {c: i for i, c in enumerate(COUNTER_ORDER)}
    mode_order = {m: i for i, m in enumerate(MODES)}

    def key(k: tuple) -> tuple:
        dev, var, mode, size, counter = k
        return (order.get(counter, len(order)), counter, dev, var, mode_order.get(mode, 9), size)

    return [Line(*k, len(v), sum(v) / len(v), min(v), max(v), units[k[4]]) for k, v in sorted(groups.items(),
            key=lambda kv: key(kv[0]))]  # fmt: skip


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


def markdown(lines: Sequence[Line], notes_: Sequence[Note] = ()) -> str:
    out = ["| Counter | Device | Variant | Mode | Size (MB) | n | Mean | Min | Max | Unit |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for ln in lines:
        out.append(f"| {ln.counter} | {ln.device} | {ln.variant} | {ln.mode} | {ln.size_mb} | {ln.n} | "
                   f"{_fmt(ln.mean)} | {_fmt(ln.min)} | {_fmt(ln.max)} | {ln.unit} |")  # fmt: skip
    if notes_:
        out += ["", "Not measured or measured differently:", ""]
        out += [f"- {n.device}, {n.variant}, {n.mode}: {n.subject}: {n.reason}" for n in notes_]
    return "\n".join(out)


def write_csv(lines: Sequence[Line], path: Path) -> None:
    tidy.write_csv(lines, path, Line)


def write_rows_csv(fork_rows: Sequence[ForkRow], path: Path) -> None:
    tidy.write_csv(fork_rows, path, ForkRow)


# --- figures -------------------------------------------------------------------------------------------------------

PANELS = (("no migration", ("single", "concurrent")), ("migration", ("single-migrate", "concurrent-migrate")))
VARIANT_STYLES = {"native": "-", "docker": "--"}
OTHER_STYLES = (":", "-.")
MODE_MARKERS = {"single": "o", "single-migrate": "o", "concurrent": "^", "concurrent-migrate": "^"}


def _slug(counter: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in counter)


def plot(bundles: Sequence[Path], out_dir: Path, process: int | None = 0,
         counters: Sequence[str] | None = None) -> list[Path]:  # fmt: skip
    """One figure per counter (fork-<counter>.png and .svg in out_dir): the average over every fork with the
    min-max band shaded, against the mapped size (log2 axis); left panel no migration, right panel migration;
    colour = device (Pi, server), line style = variant (native solid, docker dashed), marker = mode (single o,
    concurrent ^). A counter a device did not support has no line there, and a note under the panel says why.
    process=0 plots the first process of concurrent runs, as the thesis did; None pools them all.
    Needs matplotlib (the analysis extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    all_rows: list[ForkRow] = []
    all_notes: list[Note] = []
    for b in bundles:
        all_rows += rows(Path(b))
        all_notes += notes(Path(b))
    lines = table(all_rows, process)
    if not lines and not all_notes:
        raise PirexError("nothing to plot: the bundles hold no fork measurements")
    by_counter: dict[str, list[Line]] = defaultdict(list)
    for ln in lines:
        by_counter[ln.counter].append(ln)
    unsupported: dict[str, list[Note]] = defaultdict(list)
    for n in all_notes:
        if n.subject in COUNTER_ORDER or n.subject in by_counter:
            unsupported[n.subject].append(n)
    names = [c for c in COUNTER_ORDER if c in by_counter or c in unsupported]
    names += sorted(set(by_counter) - set(names))
    if counters is not None:
        names = [c for c in names if c in counters]
    devices = sorted({ln.device for ln in lines} | {n.device for n in all_notes})
    colours = {d: plt.get_cmap("tab10")(i % 10) for i, d in enumerate(devices)}
    variants = sorted({ln.variant for ln in lines} | {n.variant for n in all_notes}, key=lambda v: (v != "native", v))
    styles = {v: VARIANT_STYLES.get(v) or OTHER_STYLES[i % len(OTHER_STYLES)] for i, v in enumerate(variants)}

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for counter in names:
        missing = _gaps(counter, unsupported.get(counter, []), all_notes)
        notes_h = 0.17 * (len(missing) + 1) if missing else 0.0  # inches
        height = 5.0 + notes_h
        fig, axes = plt.subplots(1, 2, figsize=(14, height), sharey=True)
        fig.subplots_adjust(left=0.06, right=0.69, wspace=0.06, top=1 - 0.55 / height, bottom=(notes_h + 0.7) / height)
        if missing:
            fig.text(0.06, (notes_h + 0.02) / height, "No line for:\n" + "\n".join(missing), fontsize=7, va="top",
                     ha="left", color="dimgray")  # fmt: skip
        data = by_counter.get(counter, [])
        positive = all(ln.min > 0 for ln in data)
        spread = max((ln.max for ln in data), default=1) / max(min((ln.min for ln in data), default=1), 1e-12)
        for ax, (title, modes) in zip(axes, PANELS, strict=True):
            drawn = 0
            for dev in devices:
                for var in variants:
                    for mode in modes:
                        pts = sorted((ln for ln in data if (ln.device, ln.variant, ln.mode) == (dev, var, mode)),
                                     key=lambda ln: ln.size_mb)  # fmt: skip
                        if not pts:
                            continue
                        x = [p.size_mb for p in pts]
                        kind = mode.split("-")[0]
                        ax.plot(x, [p.mean for p in pts], color=colours[dev], ls=styles[var], marker=MODE_MARKERS[mode],
                                ms=4, lw=1.2, label=f"{dev} · {var} · {kind}")  # fmt: skip
                        ax.fill_between(x, [p.min for p in pts], [p.max for p in pts], color=colours[dev], alpha=0.12,
                                        lw=0)  # fmt: skip
                        drawn += 1
            if not drawn:
                ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="gray")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("mapped memory (MB)")
            ax.grid(True, which="major", alpha=0.3)
        if data and positive and spread > 50:
            axes[0].set_yscale("log")
        unit = "ns" if counter in NS_COUNTERS else "count"
        axes[0].set_ylabel(f"{counter} ({unit}), mean and min-max")
        proc = "all processes pooled" if process is None else f"process {process} of concurrent runs"
        fig.suptitle(f"fork(): {TITLES.get(counter, counter)} against mapped memory ({proc})", fontsize=11)
        handles: dict[str, object] = {}
        for ax in axes:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, h)
        if handles:
            anchor = (0.70, 1 - 0.55 / height)
            fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=anchor, fontsize=7,
                       frameon=False, title="device · variant · mode", title_fontsize=7)  # fmt: skip
        stem = out_dir / f"fork-{_slug(counter)}"
        for ext in (".png", ".svg"):
            fig.savefig(stem.with_suffix(ext), dpi=150, bbox_inches="tight")
            paths.append(stem.with_suffix(ext))
        plt.close(fig)
    return paths


def _short(reason: str, width: int = 150) -> str:
    return reason if len(reason) <= width else reason[: width - 1] + "…"


def _gaps(counter: str, unsupported: list[Note], all_notes: list[Note]) -> list[str]:
    """One line per device and reason: which variants and modes have no line for this counter, and why."""
    groups: dict[tuple[str, str], tuple[set, set]] = {}
    for n in unsupported + [n for n in all_notes if n.subject == "mode"]:
        reason = f"mode not run: {n.reason}" if n.subject == "mode" else n.reason
        variants, modes = groups.setdefault((n.device, reason), (set(), set()))
        variants.add(n.variant)
        modes.add(n.mode)
    return [f"{dev} ({', '.join(sorted(v))}; {', '.join(m for m in MODES if m in ms)}): {_short(reason)}"
            for (dev, reason), (v, ms) in sorted(groups.items())]  # fmt: skip
