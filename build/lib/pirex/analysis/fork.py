"""The fork() experiment of the 2024 thesis (Hashim, chapters 5-6) from fork bundles: every counter's
average with its min-max band against the mapped memory size, per device, variant and mode, as the
thesis's Figures 6.1-6.8, as a table and as figures; with the traces of `pirex run fork --trace`, the thesis's
Table 6.1 (stack depth 7, see ftrace.TABLE_DEPTH), a flame graph per mode and size and the per-depth stack
graphs (Figures 6.9-6.13). The common interface (pirex/analysis/interface.py): VIEWS, tables, figures,
run_values; no compare, the thesis publishing no table of numbers to set ours beside.

A fork bundle's step `<variant>/<repetition>/` holds one folder per mode run by images/fork's
pirex-fork: `single/`, `single-migrate/`, `concurrent/`, `concurrent-migrate/`, each with forkbench's
fork.csv (one row per process, repetition and size), counters.csv (counter, supported,
kernel_included, reason, event: "raw 0xCODE" for a raw PMU event), skipped.csv (size_mb, reason) and
meta.csv (key, value); or, for a mode the machine cannot run, mode-skipped.txt with the reason; and
concurrent/cores-note.txt where the machine had fewer cores than the thesis's four.

Rows are `ForkRow`s, not tidy.Row: tidy.Row has no place for the mapped size (nor for the process of a
concurrent run), which is the x axis of every figure. Every row carries its step's setup (the forks per size and
mode in a step): tables and run values never pool two setups."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pirex.analysis.bundles import open_bundle, per_setup
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.tables import Table
from pirex.analysis.tidy import device_of, storage_of
from pirex.core import pmu
from pirex.core.bundle import Bundle, Step, read_csv, read_text, reading
from pirex.core.errors import PirexError

MODES = ("single", "single-migrate", "concurrent", "concurrent-migrate")
WALL = "wall_ns"  # forkbench's own CLOCK_MONOTONIC time around fork() + waitpid(), beside the counters
FIXED = ("mode", "migration", "size_mb", "repetition", "process", "cpu_before", "cpu_after", WALL)
NS_COUNTERS = {WALL, "cpu-clock", "task-clock"}
# The thesis's figures first (6.1 CPU clock, 6.2 LLC misses, 6.3 branch misses, 6.4 instructions and cycles).
COUNTER_ORDER = (
    WALL,
    "cpu-clock",
    "task-clock",
    "LLC-load-misses",
    "cache-misses",
    "branch-misses",
    "instructions",
    "cycles",
    "cache-references",
    "LLC-loads",
    "L1-dcache-loads",
    "L1-dcache-load-misses",
    "page-faults",
    "context-switches",
    "cpu-migrations",
)
TITLES = {
    WALL: "wall time of fork() + waitpid()",
    "cpu-clock": "CPU clock",
    "task-clock": "task clock",
    "LLC-load-misses": "last-level cache read misses",
    "cache-misses": "cache misses",
    "branch-misses": "branch misses",
    "instructions": "instructions",
    "cycles": "CPU cycles",
}


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
    setup: str  # setup_of(the step)


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
    setup: str
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


def _bundle(bundle_path: Path) -> tuple[Bundle, dict]:
    b = open_bundle(bundle_path, "fork")
    return b, b.machine_before()


def setup_of(step: Step) -> str:
    """What a step's forks ran as besides the machine and the row's mode and size: how many forks per size and
    mode (PirexError naming the bundle when it was not recorded)."""
    n = step.param("fork_repetitions")
    return f"{n} fork{'' if n == 1 else 's'} per size and mode in a step"


def _mode_dirs(step: Path) -> list[tuple[str, Path]]:
    return [(m, step / m) for m in MODES if (step / m).is_dir()]


def rows(bundle_path: Path) -> list[ForkRow]:
    """Every measured value of a fork bundle; an unsupported counter's empty cells give no row (never a 0)."""
    b, machine = _bundle(bundle_path)
    device, storage = device_of(machine), storage_of(machine)
    out = []
    for step in b.steps():
        setup = setup_of(step)
        for mode, d in _mode_dirs(step.dir):
            if not (d / "fork.csv").is_file():
                continue
            support = {c["counter"]: c for c in read_csv(d / "counters.csv")} if (d / "counters.csv").is_file() else {}
            with reading(d / "fork.csv"):
                for r in read_csv(d / "fork.csv"):
                    for name, cell in r.items():
                        if name in FIXED[:-1] or cell in ("", None):
                            continue
                        c = support.get(name, {})
                        if c and c.get("supported") != "true":
                            continue
                        out.append(
                            ForkRow(
                                "fork",
                                b.run_id,
                                device,
                                storage,
                                step.variant,
                                mode,
                                step.repetition,
                                int(r["size_mb"]),
                                int(r["repetition"]),
                                int(r["process"]),
                                name,
                                float(cell),
                                "ns" if name in NS_COUNTERS else "count",
                                name == WALL or c.get("kernel_included") == "true",
                                setup,
                            )
                        )
    return out


def notes(bundle_path: Path) -> list[Note]:
    """What each mode run could not do, once per (device, variant, mode, subject) across the bundle's steps."""
    b, machine = _bundle(bundle_path)
    device = device_of(machine)
    seen: dict[tuple, Note] = {}

    def add(n: Note) -> None:
        seen.setdefault((n.device, n.variant, n.mode, n.subject), n)

    spec = str(b.parameters.get(pmu.PARAMETER) or "")
    if spec == "none" and (why := pmu.choose(machine).reason):
        add(Note(device, "every variant", "every mode", "raw events", why))
    for i, line in enumerate(pmu.describe(spec, machine) if spec not in ("", "none", "auto") else []):
        add(Note(device, "every variant", "every mode", f"raw event {i + 1}", line))

    for step in b.steps():
        variant, sd = step.variant, step.dir
        for mode in MODES:
            d = sd / mode
            if (d / "mode-skipped.txt").is_file():
                add(Note(device, variant, mode, "mode", read_text(d / "mode-skipped.txt").strip()))
            if (d / "counters.csv").is_file():
                for c in read_csv(d / "counters.csv"):
                    raw = (c.get("event") or "").startswith("raw ")
                    if c["supported"] != "true" or c["reason"]:
                        add(Note(device, variant, mode, c["counter"], (f"{c['event']}: " if raw else "") + c["reason"]))
                    elif raw:
                        add(Note(device, variant, mode, c["counter"], f"counted as the CPU's {c['event']}"))
            if (d / "skipped.csv").is_file():
                for s in read_csv(d / "skipped.csv"):
                    add(Note(device, variant, mode, f"size {s['size_mb']} MB", s["reason"]))
            if (d / "cores-note.txt").is_file():
                add(Note(device, variant, mode, "cores", read_text(d / "cores-note.txt").strip()))
            if (d / "meta.csv").is_file():
                meta = {m["key"]: m["value"] for m in read_csv(d / "meta.csv")}
                if mode == "concurrent" and meta.get("processes"):
                    add(
                        Note(
                            device,
                            variant,
                            mode,
                            "processes",
                            f"{meta['processes']} processes on cores {meta.get('cores', '?').replace(' ', ',')} "
                            "(thesis: the Pi's four cores, the server's first four)",
                        )
                    )
                if meta.get("drop_caches", "permitted") != "permitted":
                    add(Note(device, variant, mode, "drop_caches", meta["drop_caches"]))
                if meta.get("kernel_included") in ("false", "partial"):
                    add(
                        Note(
                            device,
                            variant,
                            mode,
                            "kernel",
                            f"counters saw user space only (perf_event_paranoid {meta.get('perf_event_paranoid')}); "
                            "fork() does its work in the kernel",
                        )
                    )
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
        groups[(r.setup, r.device, r.variant, r.mode, r.size_mb, r.counter)].append(r.value)
        units[r.counter] = r.unit
    order = {c: i for i, c in enumerate(COUNTER_ORDER)}
    mode_order = {m: i for i, m in enumerate(MODES)}

    def key(k: tuple) -> tuple:
        setup, dev, var, mode, size, counter = k
        return (setup, order.get(counter, len(order)), counter, dev, var, mode_order.get(mode, 9), size)

    return [
        Line(*k, len(v), sum(v) / len(v), min(v), max(v), units[k[5]])
        for k, v in sorted(groups.items(), key=lambda kv: key(kv[0]))
    ]


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


# --- figures -------------------------------------------------------------------------------------------------------

PANELS = (("no migration", ("single", "concurrent")), ("migration", ("single-migrate", "concurrent-migrate")))
VARIANT_STYLES = {"native": "-", "docker": "--"}
OTHER_STYLES = (":", "-.")
MODE_MARKERS = {"single": "o", "single-migrate": "o", "concurrent": "^", "concurrent-migrate": "^"}


def _slug(counter: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in counter)


def plot(
    bundles: Sequence[Path], out_dir: Path, process: int | None = 0, counters: Sequence[str] | None = None
) -> list[Path]:
    """One figure per counter (fork-<counter>.png and .svg in out_dir): the average over every fork with the
    min-max band shaded, against the mapped size (log2 axis); left panel no migration, right panel migration;
    colour = device (Pi, server), line style = variant (native solid, docker dashed), marker = mode (single o,
    concurrent ^). A counter a device did not support has no line there, and a note under the panel says why.
    process=0 plots the first process of concurrent runs, as the thesis did; None pools them all.
    Needs matplotlib (the analysis extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    variants = sorted({ln.variant for ln in lines} | {n.variant for n in all_notes}, key=lambda v: (v != "native", v))
    look = _Look(
        by_counter,
        unsupported,
        all_notes,
        devices,
        sorted({ln.setup for ln in lines}),  # never one line over two setups
        variants,
        {d: plt.get_cmap("tab10")(i % 10) for i, d in enumerate(devices)},
        {v: VARIANT_STYLES.get(v) or OTHER_STYLES[i % len(OTHER_STYLES)] for i, v in enumerate(variants)},
        process,
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for counter in names:
        paths += _counter_figure(look, counter, out_dir)
    return paths


@dataclass
class _Look:
    """What every figure of `plot` shares: the lines per counter, the notes, each line's colour and style."""

    by_counter: dict[str, list[Line]]
    unsupported: dict[str, list[Note]]  # counter -> the notes of the devices that did not support it
    all_notes: list[Note]
    devices: list[str]
    setups: list[str]
    variants: list[str]
    colours: dict[str, Any]  # device -> its colour
    styles: dict[str, str]  # variant -> its line style
    process: int | None


def _counter_figure(look: _Look, counter: str, out_dir: Path) -> list[Path]:
    """One counter's figure, both panels, with its notes of what has no line: fork-<counter>.png and .svg."""
    import matplotlib.pyplot as plt

    missing = _gaps(counter, look.unsupported.get(counter, []), look.all_notes)
    notes_h = 0.17 * (len(missing) + 1) if missing else 0.0  # inches
    height = 5.0 + notes_h
    fig, axes = plt.subplots(1, 2, figsize=(14, height), sharey=True)
    fig.subplots_adjust(left=0.06, right=0.69, wspace=0.06, top=1 - 0.55 / height, bottom=(notes_h + 0.7) / height)
    if missing:
        fig.text(
            0.06,
            (notes_h + 0.02) / height,
            "No line for:\n" + "\n".join(missing),
            fontsize=7,
            va="top",
            ha="left",
            color="dimgray",
        )
    data = look.by_counter.get(counter, [])
    positive = all(ln.min > 0 for ln in data)
    spread = max((ln.max for ln in data), default=1) / max(min((ln.min for ln in data), default=1), 1e-12)
    for ax, (title, modes) in zip(axes, PANELS, strict=True):
        _panel(ax, look, data, title, modes)
    if data and positive and spread > 50:
        axes[0].set_yscale("log")
    unit = "ns" if counter in NS_COUNTERS else "count"
    axes[0].set_ylabel(f"{counter} ({unit}), mean and min-max")
    proc = "all processes pooled" if look.process is None else f"process {look.process} of concurrent runs"
    fig.suptitle(f"fork(): {TITLES.get(counter, counter)} against mapped memory ({proc})", fontsize=11)
    _legend(fig, axes, height)
    paths = []
    stem = out_dir / f"fork-{_slug(counter)}"
    for ext in (".png", ".svg"):
        fig.savefig(stem.with_suffix(ext), dpi=150, bbox_inches="tight")
        paths.append(stem.with_suffix(ext))
    plt.close(fig)
    return paths


def _panel(ax: Any, look: _Look, data: list[Line], title: str, modes: Sequence[str]) -> None:
    """One panel (no migration, or migration): a line and its min-max band per setup, device, variant and mode."""
    import matplotlib.ticker

    drawn = 0
    for setup, dev, var, mode in itertools.product(look.setups, look.devices, look.variants, modes):
        pts = sorted(
            (ln for ln in data if (ln.setup, ln.device, ln.variant, ln.mode) == (setup, dev, var, mode)),
            key=lambda ln: ln.size_mb,
        )
        if pts:
            x = [p.size_mb for p in pts]
            label = f"{dev} · {var} · {mode.split('-')[0]}" + (f" · {setup}" if len(look.setups) > 1 else "")
            ax.plot(
                x,
                [p.mean for p in pts],
                color=look.colours[dev],
                ls=look.styles[var],
                marker=MODE_MARKERS[mode],
                ms=4,
                lw=1.2,
                label=label,
            )
            ax.fill_between(x, [p.min for p in pts], [p.max for p in pts], color=look.colours[dev], alpha=0.12, lw=0)
            drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="gray")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("mapped memory (MB)")
    ax.grid(True, which="major", alpha=0.3)


def _legend(fig: Any, axes: Any, height: float) -> None:
    """One legend right of both panels, each label once."""
    handles: dict[str, object] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    if handles:
        anchor = (0.70, 1 - 0.55 / height)
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="upper left",
            bbox_to_anchor=anchor,
            fontsize=7,
            frameon=False,
            title="device · variant · mode",
            title_fontsize=7,
        )


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
    return [
        f"{dev} ({', '.join(sorted(v))}; {', '.join(m for m in MODES if m in ms)}): {_short(reason)}"
        for (dev, reason), (v, ms) in sorted(groups.items())
    ]


# --- ftrace traces (`pirex run fork --trace`) ----------------------------------------------------------------------


def trace_calls(bundles: Sequence[Path]) -> dict[tuple[str, str, str], list]:
    """(device, variant, mode) -> the calls inside the fork markers of every completed step's trace; native and
    docker are never pooled, nor two devices."""
    from pirex.analysis import ftrace

    calls: dict[tuple[str, str, str], list] = {}
    for path in bundles:
        b, machine = _bundle(Path(path))
        device = device_of(machine)
        for step in b.steps():
            trace = step.dir / "trace.txt"
            if trace.exists():
                for mode, lines in ftrace.by_mode(trace.read_text(errors="replace").splitlines()).items():
                    if parsed := ftrace.parse(lines):  # the header before the first mode marker has none
                        calls.setdefault((device, step.variant, mode), []).extend(parsed)
    return calls


def trace_skipped(bundles: Sequence[Path]) -> list[str]:
    """Why a bundle run with --trace has no trace (run.json's trace.reason)."""
    out = []
    for path in bundles:
        t = open_bundle(path, "fork").run_info().trace
        if t and not t.get("enabled"):
            out.append(f"{Path(path).name}: tracing was skipped: {t['reason']}")
    return out


def _trace_label(key: tuple[str, str, str]) -> str:
    device, variant, mode = key
    return f"{device}, {variant}, {mode}"


def table_6_1_tables(calls: dict[tuple[str, str, str], list]) -> list[NamedTable]:
    """The thesis's Table 6.1 per device and variant: concurrent minus single execution, µs per fork, for the
    functions at stack depth 7 (counted from the clone syscall's entry, as the thesis did), for the migration
    subtype the thesis traced and for the no-migration one."""
    from pirex.analysis import ftrace

    out = []
    for device, variant in sorted({(d, v) for d, v, _ in calls}):
        by_mode = {m: cs for (d, v, m), cs in calls.items() if (d, v) == (device, variant)}
        for subtype, rows in ftrace.table_6_1(by_mode).items():
            single, concurrent = ftrace.SUBTYPES[subtype]
            sizes = sorted({z for r in rows for z in r.by_size})
            forks = {m: ftrace.forks_per_size(by_mode[m]) for m in (single, concurrent)}
            entry = ", ".join(sorted({c.stack[0] for c in by_mode[single] if c.stack}))
            title = (
                f"Table 6.1 ({subtype}): {concurrent} minus {single}, µs per fork, functions at stack depth "
                f"{ftrace.TABLE_DEPTH} — {device}, {variant}"
            )
            table = Table(
                title=title,
                columns=["Function"] + [f"{z}_MB" for z in sizes],
                rows=[
                    [r.function] + ["-" if r.by_size.get(z) is None else f"{r.by_size[z]:.3f}" for z in sizes]
                    for r in rows
                ],
                records=[
                    {
                        "device": device,
                        "variant": variant,
                        "subtype": subtype,
                        "depth": r.depth,
                        "function": r.function,
                        "size_mb": z,
                        "difference_us": v,
                    }
                    for r in rows
                    for z, v in r.by_size.items()
                ],
                notes=[
                    f"Depth 0 is the clone syscall's entry ({entry});"
                    " the thesis's Table 6.1 is at depth 7 for the migration subtype (chapter 5).",
                    "Forks traced per size: "
                    + ", ".join(
                        f"{z} MB {forks[single].get(z, 0)} single / {forks[concurrent].get(z, 0)} concurrent"
                        for z in sizes
                    )
                    + ". '-': the function ran in only one of the two modes at that size.",
                ],
            )
            slug = _slug(f"table6.1-{subtype.replace(' ', '-')}-{variant}-{device}")
            out.append(NamedTable(slug, table))
    return out


def flame_graphs(calls: dict[tuple[str, str, str], list], out: Path) -> list[Path]:
    """One flame graph per device, variant, mode and mapped size (the thesis's Figures 6.9, 6.13, A.1-A.8), and
    the folded stacks beside each."""
    from pirex.analysis import ftrace

    paths = []
    for key, cs in sorted(calls.items()):
        for size in sorted({c.size_mb for c in cs if c.size_mb is not None}):
            folded = ftrace.folded(cs, size_mb=size)
            if not folded:
                continue
            stem = Path(out) / _slug(f"flamegraph-{key[0]}-{key[1]}-{key[2]}-{size}MB")
            stem.parent.mkdir(parents=True, exist_ok=True)
            stem.with_suffix(".folded").write_text("\n".join(folded) + "\n")
            paths.append(
                ftrace.flamegraph_svg(
                    folded, stem.with_suffix(".svg"), f"fork(), {size} MB mapped — {_trace_label(key)}"
                )
            )
    return paths


def depth_figures(calls: dict[tuple[str, str, str], list], out: Path) -> list[Path]:
    """The thesis's stack graphs (Figures 6.10-6.12): per depth (6, 7, and 8 under __pte_alloc), the functions
    whose time per fork depends on the mapped size, their mean time per fork (log10 axis) against the size, each
    bar annotated with the calls per fork. Interrupts are left out, as in 6.3. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pirex.analysis import ftrace

    paths = []
    for key, cs in sorted(calls.items()):
        for depth, parent in ftrace.FIGURE_DEPTHS:
            profiles = ftrace.depth_profile(cs, depth, parent=parent, min_ratio=1.0 if parent else 2.0)
            if not profiles:
                continue
            sizes = sorted({z for p in profiles for z in p.us_per_fork})
            fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(sizes) * max(1, len(profiles)) ** 0.5 + 3), 4.5))
            width = 0.8 / len(profiles)
            for i, p in enumerate(profiles):
                xs = [k + (i - (len(profiles) - 1) / 2) * width for k, z in enumerate(sizes) if z in p.us_per_fork]
                ys = [p.us_per_fork[z] for z in sizes if z in p.us_per_fork]
                bars = ax.bar(xs, ys, width=width, label=p.function)
                labels = [f"{p.calls_per_fork[z]:g}" for z in sizes if z in p.us_per_fork]
                ax.bar_label(bars, labels=labels, fontsize=6, padding=1)
            ax.set_yscale("log")
            ax.set_xticks(range(len(sizes)), [f"{z}" for z in sizes])
            ax.set_xlabel("mapped memory (MB)")
            ax.set_ylabel("time per fork (µs, log scale)")
            under = f" called by {parent}" if parent else ""
            ax.set_title(
                f"Stack depth {depth}{under}: functions whose time depends on the size\n"
                f"{_trace_label(key)} (bar labels: calls per fork)",
                fontsize=9,
            )
            ax.legend(fontsize=7, frameon=False)
            ax.grid(True, axis="y", alpha=0.3)
            stem = Path(out) / _slug(f"stack-depth{depth}{'-' + parent if parent else ''}-{'-'.join(key)}")
            stem.parent.mkdir(parents=True, exist_ok=True)
            for ext in (".png", ".svg"):
                fig.savefig(stem.with_suffix(ext), dpi=150, bbox_inches="tight")
                paths.append(stem.with_suffix(ext))
            plt.close(fig)
    return paths


# --- the common analysis interface (pirex/analysis/interface.py) ----------------------------------------------------

VIEWS: dict[str, str] = {}


def _check_view(view: str | None) -> None:
    if view is not None:
        raise PirexError(f"fork has no view {view!r} (it has none)")


def counter_table(lines: Sequence[Line], notes_: Sequence[Note]) -> Table:
    """The counters' average, min and max per device, variant, mode and size (the numbers of Figures 6.1-6.8)."""
    cells = [
        [
            ln.counter,
            ln.device,
            ln.variant,
            ln.mode,
            str(ln.size_mb),
            str(ln.n),
            _fmt(ln.mean),
            _fmt(ln.min),
            _fmt(ln.max),
            ln.unit,
        ]
        for ln in lines
    ]
    notes_text = [f"- {n.device}, {n.variant}, {n.mode}: {n.subject}: {n.reason}" for n in notes_]
    if notes_text:
        notes_text.insert(0, "Not measured, measured differently, or worth knowing:")
    return Table(
        title="fork(): counters per mapped size, mean and min-max over every fork (thesis Figures 6.1-6.8)",
        columns=["Counter", "Device", "Variant", "Mode", "Size (MB)", "n", "Mean", "Min", "Max", "Unit"],
        rows=cells,
        records=[dataclasses.asdict(ln) for ln in lines],
        notes=notes_text,
        label_columns=4,
    )


def tables(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    """The counter table per setup (a bundle's notes under each of its setups) and, when the bundles hold traces,
    Table 6.1 per device, variant and subtype."""
    _check_view(view)
    by_setup: dict[str, tuple[list[ForkRow], list[Note]]] = {}
    for b in bundles:
        found, found_notes = rows(Path(b)), notes(Path(b))
        for setup in dict.fromkeys(setup_of(s) for s in open_bundle(b, "fork").steps()):
            group = by_setup.setdefault(setup, ([], []))
            group[0].extend(r for r in found if r.setup == setup)
            group[1].extend(found_notes)
    out = per_setup("counters", by_setup, lambda g: counter_table(table(g[0]), g[1]))
    calls = trace_calls(bundles)
    if not calls and (skipped := trace_skipped(bundles)):
        for nt in out:
            nt.table.notes.extend(f"- no Table 6.1: {why}" for why in skipped)
    return out + table_6_1_tables(calls)


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    """Per counter against the mapped size (Figures 6.1-6.8); with traces, a flame graph per device, variant,
    mode and size and the per-depth stack graphs (Figures 6.9-6.13)."""
    _check_view(view)
    paths = plot(bundles, out)
    calls = trace_calls(bundles)
    if calls:
        paths += flame_graphs(calls, Path(out) / "flamegraphs")
        paths += depth_figures(calls, Path(out) / "stacks")
    return paths


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    """One value per step (repetition), mode, size and counter: the step's mean over its forks (every process's),
    metric "<counter>/<mode>/<size_mb>" (wall_ns first); inner = the per-fork values."""
    _check_view(view)
    groups: dict[tuple, list[float]] = defaultdict(list)
    units: dict[str, str] = {}
    for b in bundles:
        for r in rows(Path(b)):
            groups[(r.run, r.device, r.variant, r.repetition, f"{r.counter}/{r.mode}/{r.size_mb}", r.setup)].append(
                r.value
            )
            units[r.counter] = r.unit
    order = {c: i for i, c in enumerate(COUNTER_ORDER)}
    mode_order = {m: i for i, m in enumerate(MODES)}

    def key(k: tuple) -> tuple:
        counter, mode, size = k[4].split("/")
        return (*k[:4], order.get(counter, len(order)), counter, mode_order.get(mode, 9), int(size))

    out = []
    for (run, device, variant, rep, metric, setup), v in sorted(groups.items(), key=lambda kv: key(kv[0])):
        unit = units[metric.split("/")[0]]
        out.append(
            RunValue("fork", run, device, variant, rep, metric, sum(v) / len(v), unit, inner=tuple(v), setup=setup)
        )
    return out
