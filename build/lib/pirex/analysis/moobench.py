"""MooBench monitoring overhead: SSP'17 Table 1, ICPE'18 Tables 2 and 5, the response-time figures (SSP'17 Figures
1-2, ICPE'18 Figures 1 and 4), the overhead over the baseline, and the comparison with the published numbers
(analysis/ssp17/table1.csv, analysis/icpe18/table{2,5}.csv).

Data: a moobench bundle holds `<variant>/<repetition>/raw-<configuration>.csv`, one MooBench loop (a fresh JVM) per
file; moobench_read describes the raw format and the steady-state rule (per file and per thread, the last n // 2 of a
thread's n calls).

Statistics per (device, storage, variant, configuration), in microseconds, over the steady state of every loop:

- pooled, as the papers computed them: mean, sd (n - 1), min, max, median and quartiles (linear interpolation, R's
  default), and the 95 % t interval over every call pooled. With n in the millions it is a few ns wide: it says how
  well the mean of these very calls is known, not how well a rerun would agree.
- the honest interval beside it: the 95 % t interval over the loops' means (k loops, k - 1 degrees of freedom),
  since calls within one JVM are not independent and loops are.
- peaks: calls longer than 5 x the pooled mean (ICPE'18 section 5), counted over the pooled steady state.
- the series: mean per block of 1,000 consecutive calls over each whole loop (warm-up included), for the figures.

MooBench's own frameworks/statistics.r reads `results.count - results.skip` rows of every loop into the same index
range `1:numOfRowsToRead` of one array, so each loop overwrites the last and only the last loop reaches its
statistics. Here every loop's steady state is pooled.

Configurations are named as in the bundle (raw-<configuration>.csv); the published tables' "Kieker" (file system
logging) is matched to PAPER_KIEKER. The fluctuation cases of Table 5 are experiments/moobench's matrix
`fluctuation` (one source of truth: fluctuation_cases() reads it); each case's published row and the paper's base
Id come from analysis/icpe18/table5.csv.

Loops that ran at different setups (moobench_read.SETUP: calls, recursion depth and the other parameters that change
what is measured, as each step ran them) are never pooled: each setup gets its own tables and figures, its setup in
their notes. A fluctuation run's cases change parameters by design, so its setup is the run's.

The jobs live in moobench_read (bundles and raw files), moobench_stats (statistics), moobench_paper (the published
numbers and Table 5's cases), moobench_tables and moobench_figures; this module is the analysis interface
(pirex/analysis/interface.py: VIEWS, tables, figures, run_values). Bundles of a matrix run (run.json
names the matrix) belong to that matrix's view; the default view reads the other bundles.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from pirex.analysis import interrupts, stats
from pirex.analysis.bundles import open_bundle
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.moobench_figures import envelope, figure, raw_figure
from pirex.analysis.moobench_paper import (
    FLUCTUATION,
    PUBLISHED_DIR,
    fluctuation_cases,
    id1_note,
    published_icpe18_table2,
    published_icpe18_table5,
    published_ssp17,
)
from pirex.analysis.moobench_read import (
    MOOBENCH,
    Group,
    Loop,
    block_means,
    configuration,
    device_label,
    groups,
    matrix_of,
    profile_setup,
    raw_files,
    read_loop,
    run_notes,
    same_as_base,
    setup_of,
)
from pirex.analysis.moobench_stats import PEAK_FACTOR, analyse, analyse_files, overheads, statistics
from pirex.analysis.moobench_tables import overhead_table, table1, table2, table5
from pirex.core import cpuset
from pirex.core.errors import PirexError

__all__ = [  # what tests and callers use as moobench.<name>
    "PUBLISHED_DIR",
    "VIEWS",
    "analyse",
    "envelope",
    "figure",
    "figures",
    "fluctuation_cases",
    "id1_note",
    "overheads",
    "profile_setup",
    "published_icpe18_table2",
    "published_icpe18_table5",
    "published_ssp17",
    "run_values",
    "statistics",
    "table1",
    "table2",
    "table5",
    "tables",
]

PEAKS_PER, PEAKS_UNIT = 1e6, "per million calls"  # a loop's peaks as a rate: per this many steady-state calls
VIEWS = {FLUCTUATION: "ICPE'18 Table 5: the cases of `pirex run moobench --matrix fluctuation`"}


def view_bundles(bundles: Iterable[Path], view: str | None = None) -> list[Path]:
    """The bundles of a view: a matrix's runs for its view, the other runs for the default view."""
    if view is not None and view not in VIEWS:
        raise PirexError(f"moobench has no view {view!r} (views: {', '.join(VIEWS)}, or none for Tables 1 and 2)")
    given = [Path(p) for p in bundles]
    chosen = [p for p in given if matrix_of(p) == view]
    if not chosen:
        what = f"matrix {view}" if view else "non-matrix"
        how = f"pirex run moobench --matrix {view}" if view else "pirex run moobench"
        raise PirexError(f"none of the {len(given)} bundle(s) given is a {what} moobench run: `{how}` makes one")
    return chosen


def _view_groups(bundles: Iterable[Path], view: str | None) -> list[Group]:
    """The view's raw files per setup: a step's own, or for a matrix (whose cases change parameters) its run's."""
    return groups(view_bundles(bundles, view), per_run=view is not None)


def _suffix(group: Group, all_groups: Sequence[Group]) -> str:
    """The file name suffix of a setup's tables and figures: none for the only setup, else its calls and depth (and
    its place among the setups when two differ only in other parameters)."""
    if len(all_groups) == 1:
        return ""
    s = group.setup
    suffix = f"-{s.calls}-d{s.recursion_depth}"
    twins = [g for g in all_groups if (g.setup.calls, g.setup.recursion_depth) == (s.calls, s.recursion_depth)]
    return suffix if len(twins) == 1 else f"{suffix}-{twins.index(group) + 1}"


def _ran(group: Group) -> str:
    return f"{group.setup.text} ({', '.join(p.name for p in group.bundles)})"


def tables(bundles: Iterable[Path], view: str | None = None) -> list[NamedTable]:
    """Default view: Table 2, Table 1 and the overheads; fluctuation: Table 5; per setup of the bundles."""
    found = _view_groups(bundles, view)
    out = []
    for g in found:
        results, suffix = analyse_files(g.files), _suffix(g, found)
        if view == FLUCTUATION:
            paper = profile_setup("paper", FLUCTUATION)
            notes = [f"Ran: {_ran(g)}; the paper: {paper.text} (profile paper).", *run_notes(g.bundles)]
            t = table5(results, run_notes=notes, same=same_as_base(g.bundles))
            out.append(NamedTable("table5" + suffix, t))
            continue
        for name, t in (
            ("table2", table2(results)),
            ("table1", table1(results)),
            ("overhead", overhead_table(results)),
        ):
            t.notes.append(f"Setup: {_ran(g)}.")
            out.append(NamedTable(name + suffix, t))
    return out


def figures(bundles: Iterable[Path], out: Path, view: str | None = None) -> list[Path]:
    """The mean per 1,000 calls (response-time) and the raw calls' range (response-time-raw), per setup."""
    found = _view_groups(bundles, view)
    files = []
    for g in found:
        results, suffix = analyse_files(g.files), _suffix(g, found)
        files += figure(results, Path(out) / f"response-time{suffix}")
        files += raw_figure(results, Path(out) / f"response-time-raw{suffix}")
    return files


def run_values(bundles: Iterable[Path], view: str | None = None) -> list[RunValue]:
    """One value per MooBench loop (a fresh JVM, one repetition): its steady-state mean in µs per configuration;
    inner: the loop's steady-state means per 1,000 calls. variant: the bundle's variant, or the matrix case.
    A matrix run's steps that ran one configuration also give the interrupts they took, per kind
    ("kieker-dump interrupts timer": pirex/analysis/interrupts.py), for section 5.2's claims; only there, since
    they say how the machine behaved around the calls, not what the precision of the means is planned for."""
    out = []
    for path in view_bundles(bundles, view):
        b = open_bundle(path, MOOBENCH)
        device = device_label(b.machine_before())
        run = setup_of(b.param) if b.matrix else None  # a matrix's cases change parameters on purpose: its rows
        halves = cpuset.step_halves(b)  # a duet's: the CPU half each step ran on, a factor of its ratio's model
        step_loops = []
        for step in b.steps():
            setup = (run or setup_of(step.param)).text
            files, loops = raw_files(step), []
            for f in files:
                loop = read_loop(f)
                if not loop.n:
                    continue
                inner = tuple(float(x) * 1e-3 for x in block_means(loop.steady))
                mean = float(loop.steady.mean()) * 1e-3
                value = RunValue(
                    MOOBENCH,
                    path.name,
                    device,
                    step.variant,
                    step.repetition,
                    configuration(f),
                    mean,
                    "µs",
                    inner=inner,
                    setup=setup,
                    half=halves.get((step.variant, step.repetition), 0),
                )
                out += [value, *_spreads(value, loop)]
                loops.append(interrupts.Loop(value, sum(loop.calls)))
            if b.matrix and len(files) == 1:  # several configurations in a step: whose interrupts is unknown
                step_loops.append((step.dir, loops))
        out += interrupts.run_values(step_loops)
    return out


def _spreads(mean: RunValue, loop: Loop) -> list[RunValue]:
    """A loop's spread, each a run value of its own over its steady-state calls: "<configuration> sd" (µs, n - 1),
    "<configuration> peaks" (calls longer than PEAK_FACTOR x the loop's mean, stats.peak_count: the value per
    million calls, the count and its exposure, the steady-state calls, for stats.rate_ratio; a loop without peaks
    counts 0) and "<configuration> max" (µs). Table 5 counts its peaks over the pooled steady state of 10 loops. No
    sd where every call took the same time: a ratio of no spread is undefined."""
    d = loop.steady.astype(np.float64)
    if d.size < 2:
        return []
    spreads = {"sd": (float(d.std(ddof=1)) * 1e-3, "µs"), "max": (float(d.max()) * 1e-3, "µs")}
    out = [
        replace(mean, metric=stats.spread_metric(mean.metric, name), value=value, unit=unit, inner=())
        for name, (value, unit) in spreads.items()
        if value > 0
    ]
    peaks = stats.peak_count(d, PEAK_FACTOR)
    rate = peaks / d.size * PEAKS_PER
    metric = stats.spread_metric(mean.metric, "peaks")
    return [*out, replace(mean, metric=metric, value=rate, unit=PEAKS_UNIT, inner=(), count=peaks, exposure=d.size)]
