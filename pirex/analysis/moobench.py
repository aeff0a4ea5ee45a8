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

The analysis interface (pirex/analysis/interface.py): VIEWS, tables, figures, run_values, compare. Bundles of a
matrix run (run.json names the matrix) belong to that matrix's view; the default view reads the other bundles.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pirex.analysis import stats
from pirex.analysis import tables as T
from pirex.analysis.bundles import completed_steps, open_bundle
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.moobench_read import BLOCK, Loop, default_engine, read_loop
from pirex.analysis.tables import Table, latex, markdown, write_csv  # noqa: F401  (moobench.markdown etc.)
from pirex.analysis.tidy import device_of, storage_of
from pirex.bundle import Bundle
from pirex.errors import PirexError
from pirex.paths import PAPERS

PUBLISHED_DIR = PAPERS
LEVEL = 0.95
PEAK_FACTOR = 5.0  # ICPE'18 section 5: "a value as a peak if it is larger than 5 times the mean value"
BASELINE = "baseline"

# Order of rows and labels of the tables; configurations not listed here follow in alphabetical order.
CONFIGURATIONS = {
    "baseline": "Baseline",
    "kieker-deactivated": "Kieker (deactivated probe)",
    "kieker-dump": "Kieker (collecting, no writer)",
    "kieker-text": "Kieker (file system logging, text)",
    "kieker-binary": "Kieker (file system logging, binary)",
    "kieker-tcp": "Kieker (TCP writer)",
    "opentelemetry": "OpenTelemetry",
    "spass-meter": "SPASS-meter",
    "spass-meter-time-only": "SPASS-meter (response time only)",
}
PAPER_SPASS = "spass-meter"
PAPER_KIEKER = "kieker-text"  # the papers' Kieker: file system logging (Kieker's ASCII file writer in 2017)
# Table 5's instrumented column: SPASS-meter as in the paper, else Kieker stands in (the first one present; the
# fluctuation matrix of experiments/moobench falls back to kieker-dump when the image has no SPASS-meter).
INSTRUMENTED = (
    "spass-meter",
    "kieker-dump",
    "kieker-text",
    "kieker-binary",
    "kieker-tcp",
    "kieker-deactivated",
    "opentelemetry",
)
# Where the papers' SPASS-meter rows would be and a bundle has none.
SPASS_NOTE = (
    "SPASS-meter is bring-your-own and not in the image: images/moobench/spass-meter/README.md builds it "
    "from its sources for Java 17"
)


@dataclass(frozen=True)
class Case:
    """One row of ICPE'18 Table 5 and the matrix case of ours that reproduces it.

    paper_base: the Id in the paper's "(base)" column (icpe18_table5.csv), None for Id 1.
    ours: our matrix case (a variant of the bundle), None when not reproduced (SPASS-meter's internals, the services
        the authors disabled by hand).
    base: our case this one changes one factor of (None for the base case itself); base_id: its Table 5 Id.
    configs: the instrumented configurations to look for, in order of preference (SPASS-meter, or what the case
        sets, then the stand-ins).
    """

    id: int
    experiment: str
    paper_base: int | None
    ours: str | None = None
    base: str | None = None
    base_id: int | None = None
    configs: tuple[str, ...] = INSTRUMENTED


FLUCTUATION = "fluctuation"  # the matrix (and view) of Table 5


def fluctuation_cases(matrix=None) -> tuple[Case, ...]:
    """Every Id of the published Table 5, with the case of experiments/moobench's fluctuation matrix whose
    table_id it is (the matrix is the one source of truth of what we run)."""
    if matrix is None:
        from pirex import experiment

        matrix = experiment.load("moobench").matrices[FLUCTUATION]
    ours = {c.table_id: c for c in matrix.cases if c.table_id is not None}
    out, seen = [], set()
    for row in published_icpe18_table5():
        pid = int(row["id"])
        if pid in seen:
            continue
        seen.add(pid)
        paper_base = int(row["base"]) if row["base"] else None
        mc = ours.get(pid)
        if mc is None:
            out.append(Case(pid, row["experiment"], paper_base))
            continue
        sets = matrix.resolved(mc.name).set.get("configurations", "")
        own = tuple(c for c in str(sets).split(",") if c and c != BASELINE and c not in INSTRUMENTED)
        base = matrix.case(mc.base) if mc.base else None
        out.append(
            Case(
                pid,
                row["experiment"],
                paper_base,
                mc.name,
                base and base.name,
                base and base.table_id,
                (*own, *INSTRUMENTED),
            )
        )
    return tuple(out)


# --- statistics ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """Steady-state statistics in µs. summary pools every call; loop_means are the loops' own means."""

    summary: stats.Summary
    peaks: int
    loop_means: tuple[float, ...]
    loop_keys: tuple = ()  # per loop: (bundle, repetition), what pairs it with another configuration's loop

    @property
    def n(self) -> int:
        return self.summary.n

    @property
    def loops(self) -> int:
        return len(self.loop_means)

    @property
    def mean(self) -> float:
        return self.summary.mean

    @property
    def sd(self) -> float:
        return self.summary.sd

    def ci(self, level: float = LEVEL) -> tuple[float, float]:
        """The papers' interval: t interval over every pooled call."""
        return self.summary.ci(level)

    def loop_interval(self, level: float = LEVEL) -> stats.Interval:
        """The honest interval, over the loops' means (positive: stats.mean_interval); none below MIN_RUNS loops."""
        return stats.mean_interval(self.loop_means, level, positive=True, what="loops")

    def loop_ci(self, level: float = LEVEL) -> tuple[float, float]:
        return self.loop_interval(level).bounds


MAX_BINS = 1 << 22  # quantiles by counting while the counts take at most 32 MiB, else by partitioning


def _lerp(lo: float, hi: float, t: float) -> float:
    """numpy's linear interpolation between neighbouring order statistics (np.percentile's default, R's type 7)."""
    return hi - (hi - lo) * (1 - t) if t >= 0.5 else lo + (hi - lo) * t


def quantiles(arrays: Sequence[np.ndarray], probs: Sequence[float], mean: float) -> list[float]:
    """Exact quantiles of the pooled integer arrays (linear interpolation, as np.percentile) without pooling them:
    by counting the values below a cap (all quantiles up to 3/4 lie below 4 x mean for non-negative data, by
    Markov's inequality; the cap is 8 x mean), or, when that would take too many bins, by partitioning a pooled copy."""
    n = sum(a.size for a in arrays)
    positions = [(n - 1) * p for p in probs]
    need = sorted({k for h in positions for k in (math.floor(h), min(math.floor(h) + 1, n - 1))})
    lowest = min(int(a.min()) for a in arrays)
    cap = int(min(max(int(a.max()) for a in arrays), 8 * mean)) + 1
    if lowest >= 0 and cap <= MAX_BINS:
        counts = np.zeros(cap + 1, dtype=np.int64)
        for a in arrays:
            counts += np.bincount(np.minimum(a, cap), minlength=cap + 1)
        order = np.searchsorted(np.cumsum(counts), np.asarray(need) + 1)  # value of the k-th smallest (0-based)
        if order.max() < cap:  # else a needed order statistic lies beyond the cap (not with these probs)
            value = dict(zip(need, order.tolist(), strict=True))
            out = []
            for h in positions:
                k = math.floor(h)
                out.append(float(_lerp(value[k], value[min(k + 1, n - 1)], h - k)))
            return out
    pooled = np.concatenate(arrays) if len(arrays) > 1 else arrays[0].copy()
    return [float(x) for x in np.percentile(pooled, [100 * p for p in probs], overwrite_input=True)]


def statistics(steady: Sequence[np.ndarray], keys: Sequence | None = None) -> Stats:
    """Statistics over the steady-state durations (integer ns, one array per loop; `keys` name the loops), in µs.
    The loops are pooled without copying them into one array: exact integer sums for the means, a two-pass sum of
    squares for the sd."""
    named = [(k, np.asarray(a, dtype=np.int64)) for k, a in zip(keys or range(len(steady)), steady, strict=True)]
    named = [(k, a) for k, a in named if a.size]
    arrays = [a for _, a in named]
    n = sum(a.size for a in arrays)
    if n == 0:
        return Stats(stats.Summary(0, *([math.nan] * 7)), 0, ())
    sums = [int(a.sum()) for a in arrays]  # int64: exact up to 292 years of calls
    mean = sum(sums) / n
    ss = 0.0
    for a in arrays:
        d = a.astype(np.float64)
        d -= mean
        ss += float(np.dot(d, d))
    sd = math.sqrt(ss / (n - 1)) if n > 1 else math.nan
    q1, med, q3 = quantiles(arrays, (0.25, 0.5, 0.75), mean)
    peaks = sum(int(np.count_nonzero(a > PEAK_FACTOR * mean)) for a in arrays)
    us = 1e-3
    lo, hi = min(int(a.min()) for a in arrays), max(int(a.max()) for a in arrays)
    summary = stats.Summary(n, mean * us, sd * us, med * us, q1 * us, q3 * us, lo * us, hi * us)
    loop_means = tuple(s / a.size * us for s, a in zip(sums, arrays, strict=True))
    return Stats(summary, peaks, loop_means, tuple(k for k, _ in named))


def paired(numerator: Stats, denominator: Stats, level: float = LEVEL) -> stats.Ratio:
    """numerator/denominator paired by loop: a loop of each, same bundle and repetition, ran in the same step (two
    configurations) or in the same interleaved round (two variants or cases); unpaired for loops of separate runs
    (stats.ratio_over_runs)."""
    num = dict(zip(numerator.loop_keys, numerator.loop_means, strict=True))
    return stats.ratio_over_runs(num, dict(zip(denominator.loop_keys, denominator.loop_means, strict=True)), level)


# --- bundles -------------------------------------------------------------------------------------------------------


def device_label(machine: dict) -> str:
    """The Pi's model and host name: the papers compare devices of one model (D1, D2, D3)."""
    dev = device_of(machine)
    host = machine.get("hostname")
    return f"{dev} ({host})" if host and host not in dev else dev


Key = tuple[str, str, str, str]  # device, storage, variant, configuration


def raw_files(bundles: Iterable[Path]) -> dict[Key, list[Path]]:
    """Every raw file of the completed steps, grouped per (device, storage, variant, configuration)."""
    out: dict[Key, list[Path]] = defaultdict(list)
    for path in bundles:
        b = open_bundle(path, "moobench")
        machine = json.loads((Path(path) / "machine.json").read_text())["before"]
        device, storage = device_label(machine), storage_of(machine)
        for _, step, step_dir in completed_steps([b]):
            for f in sorted(step_dir.glob("raw-*.csv")):
                out[(device, storage, step["variant"], f.name[len("raw-") : -len(".csv")])].append(f)
    return dict(out)


def config_order(configuration: str) -> tuple[int, str]:
    keys = list(CONFIGURATIONS)
    return (keys.index(configuration) if configuration in keys else len(keys), configuration)


def label(configuration: str) -> str:
    return CONFIGURATIONS.get(configuration, configuration)


@dataclass
class Result:
    device: str
    storage: str
    variant: str
    configuration: str
    stats: Stats
    series: list[np.ndarray] = field(repr=False)  # per loop: µs per block of BLOCK calls, whole loop
    steady_from: int = 0  # first steady-state call of the longest loop
    extremes: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)  # per loop: µs min, max

    @property
    def key(self) -> Key:
        return (self.device, self.storage, self.variant, self.configuration)


def analyse_files(files: dict[Key, list[Path]], engine: str | None = None) -> list[Result]:
    """Configuration by configuration: read the loops, keep only their steady state and series, reduce, drop.
    The loops are read on as many threads as there are CPUs (the readers let go of the GIL), the next configuration's
    while this one's statistics are computed; at most two configurations' loops are held at a time."""
    keys = sorted(files, key=lambda k: (k[0], k[1], k[2], config_order(k[3])))
    engine = engine or default_engine(sum(f.stat().st_size for paths in files.values() for f in paths))
    out = []
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        reading = [[pool.submit(read_loop, f, engine) for f in files[k]] for k in keys[:1]]
        for i, key in enumerate(keys):
            if i + 1 < len(keys):
                reading.append([pool.submit(read_loop, f, engine) for f in files[keys[i + 1]]])
            loops = [r.result() for r in reading.pop(0)]
            out.append(_analyse_one(key, loops, [(str(f.parent.parent.parent), f.parent.name) for f in files[key]]))
            del loops
    return out


def _analyse_one(key: Key, loops: list[Loop], loop_keys: Sequence | None = None) -> Result:
    st = statistics([lp.steady for lp in loops], loop_keys)
    series = [lp.blocks * 1e-3 for lp in loops]
    extremes = [(lp.block_min * 1e-3, lp.block_max * 1e-3) for lp in loops]
    return Result(*key, st, series, max((lp.steady_from for lp in loops), default=0), extremes)


def analyse(bundles: Iterable[Path], engine: str | None = None) -> list[Result]:
    return analyse_files(raw_files(bundles), engine)


# --- overhead ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Overhead:
    device: str
    storage: str
    variant: str
    configuration: str
    overhead: float  # µs: mean - baseline mean (pooled means)
    ratio: stats.Ratio  # over the baseline, paired by loop (paired())


def overheads(results: list[Result], level: float = LEVEL) -> list[Overhead]:
    """Each configuration against the baseline of the same device, storage and variant."""
    base = {r.key[:3]: r for r in results if r.configuration == BASELINE}
    out = []
    for r in results:
        b = base.get(r.key[:3])
        if r.configuration == BASELINE or b is None:
            continue
        ratio = paired(r.stats, b.stats, level)
        out.append(Overhead(*r.key, r.stats.mean - b.stats.mean, ratio))
    return out


# --- tables --------------------------------------------------------------------------------------------------------


def _loop_text(s: Stats, digits: int = 1) -> str:
    """The interval over loops, or how many loops there are and are needed (the one rule of stats.too_few)."""
    i = s.loop_interval()
    return T.bounds((i.low, i.high), digits) if i.has_interval else i.reason


def _record(r: Result, level: float = LEVEL) -> dict:
    s = r.stats
    (lo, hi), (llo, lhi) = s.ci(level), s.loop_ci(level)
    return {
        "device": r.device,
        "storage": r.storage,
        "variant": r.variant,
        "configuration": r.configuration,
        "n": s.n,
        "loops": s.loops,
        "mean_us": s.mean,
        "sd_us": s.sd,
        "ci95_low": lo,
        "ci95_high": hi,
        "loop_ci95_low": llo,
        "loop_ci95_high": lhi,
        "min_us": s.summary.min,
        "q1_us": s.summary.q1,
        "median_us": s.summary.median,
        "q3_us": s.summary.q3,
        "max_us": s.summary.max,
        "peaks": s.peaks,
    }


LOOP_NOTE = (
    "95 % CI: t interval over every pooled steady-state call, as the papers computed it; "
    "95 % CI (loops): t interval over the loops' means (independent JVMs), the one to judge differences by."
)


def table2(results: list[Result], digits: int = 1) -> Table:
    """ICPE'18 Table 2: rows configuration x variant, columns per device (device, storage): mean, 95 % CI, σ, and
    the 95 % CI over loops beside them. Response times in µs."""
    cols = sorted({(r.device, r.storage) for r in results})
    by = {r.key: r for r in results}
    rows_keys = sorted({(r.configuration, r.variant) for r in results}, key=lambda k: (config_order(k[0]), k[1]))
    columns = ["Experiment"]
    for dev, sto in cols:
        columns += [f"{dev}, {sto}: {c}" for c in ("mean", "95 % CI", "σ", "95 % CI (loops)")]
    rows = []
    for cfg, var in rows_keys:
        row = [f"{label(cfg)} {var}"]
        for dev, sto in cols:
            r = by.get((dev, sto, var, cfg))
            if r is None:
                row += ["", "", "", ""]
                continue
            row += [
                T.number(r.stats.mean, digits),
                T.bounds(r.stats.ci(), digits),
                T.number(r.stats.sd, digits),
                _loop_text(r.stats, digits),
            ]
        rows.append(row)
    return Table(
        "MooBench stable state response times in µs (ICPE'18 Table 2 layout)",
        columns,
        rows,
        [_record(r) for r in results],
        [LOOP_NOTE, *_spass_note(results)],
    )


def table1(results: list[Result], digits: int = 1) -> Table:
    """SSP'17 Table 1: rows configuration (storage[, variant]), columns per device: 95 % CI and σ (no mean), plus
    the 95 % CI over loops. Response times in µs."""
    devices = sorted({r.device for r in results})
    variants = {r.variant for r in results}
    by = {r.key: r for r in results}
    row_keys = sorted(
        {(r.configuration, r.storage, r.variant) for r in results}, key=lambda k: (config_order(k[0]), k[1], k[2])
    )
    columns = ["Experiment"]
    for dev in devices:
        columns += [f"{dev}: 95 % CI", f"{dev}: σ", f"{dev}: 95 % CI (loops)"]
    rows = []
    for cfg, sto, var in row_keys:
        name = f"{label(cfg)} ({sto}{', ' + var if len(variants) > 1 else ''})"
        row = [name]
        for dev in devices:
            r = by.get((dev, sto, var, cfg))
            row += (
                ["", "", ""]
                if r is None
                else [T.bounds(r.stats.ci(), digits), T.number(r.stats.sd, digits), _loop_text(r.stats, digits)]
            )
        rows.append(row)
    return Table(
        "Raw stable state response times in µs as CI and σ (SSP'17 Table 1 layout)",
        columns,
        rows,
        [_record(r) for r in results],
        [LOOP_NOTE, *_spass_note(results)],
    )


def _spass_note(results: list[Result]) -> list[str]:
    """Where the papers' SPASS-meter rows would be: why there are none."""
    if any(r.configuration.startswith("spass-meter") for r in results):
        return []
    return [f"No SPASS-meter rows (the papers' second framework): {SPASS_NOTE}."]


def _case_source(
    variant: str | None, configs: Sequence[str], by: dict[Key, Result], device: str, storage: str
) -> tuple[str, str] | None:
    """(variant, instrumented configuration) of a case on a device, None without its data."""
    if variant is None or (device, storage, variant, BASELINE) not in by:
        return None
    for cfg in configs:
        if (device, storage, variant, cfg) in by:
            return variant, cfg
    return None


def id1_note() -> str:
    """Table 5's Id 1 ("from [16]") is SSP'17's SPASS-meter run on D1 with the USB hard disk: said with the two
    published numbers side by side (icpe18_table5.csv, ssp17_table1.csv)."""
    t5 = next(r for r in published_icpe18_table5() if r["id"] == "1" and r["configuration"] == PAPER_SPASS)
    ssp = next(
        r for r in published_ssp17() if (r["configuration"], r["storage"], r["device"]) == (PAPER_SPASS, "usb", "D1")
    )
    return (
        f"Id 1 (\"from [16]\"): the paper's published values are SSP'17's run on device D1 with the USB hard "
        f"disk (SSP'17 Table 1, SPASS-meter (USB-HDD), D1: 95 % CI [{ssp['ci_low']}; {ssp['ci_high']}], σ "
        f"{ssp['sd']}; Table 5: mean {t5['mean']}, σ {t5['sd']}) at MooBench's defaults "
        f"({setup_text(profile_setup(SPASS_PROFILE))})."
    )


def table5(
    results: list[Result],
    cases: Sequence[Case] | None = None,
    digits: int = 1,
    run_notes: Sequence[str] = (),
    same: set[str] = frozenset(),
) -> Table:
    """ICPE'18 Table 5: per fluctuation case and device, the baseline and the instrumented configuration (SPASS-meter
    in the paper; Kieker stands in where the bundle has none): mean, σ, min, max, 95 % CI, peaks, 95 % CI (loops).
    run_notes: what the runs recorded (skipped cases, cases equal to their base here), appended to the notes."""
    cases = fluctuation_cases() if cases is None else cases
    by = {r.key: r for r in results}
    parts = ("mean", "σ", "min", "max", "95 % CI", "peaks", "95 % CI (loops)")
    columns = ["Id", "Experiment (paper's base)", "Our case (our base)", "Device", "Instrumented"]
    columns += [f"Baseline: {p}" for p in parts] + [f"Instrumented: {p}" for p in parts]
    rows, records, missing, stand_in = [], [], [], set()
    for case in cases:
        found = False
        for dev, sto in sorted({(r.device, r.storage) for r in results}):
            src = _case_source(case.ours, case.configs, by, dev, sto)
            if src is None:
                continue
            found = True
            variant, cfg = src
            if not cfg.startswith("spass-meter"):
                stand_in.add(cfg)
            base, inst = by[(dev, sto, variant, BASELINE)], by[(dev, sto, variant, cfg)]
            paper_base = f" ({case.paper_base})" if case.paper_base else ""
            ours = f"{variant} ({case.base}: Id {case.base_id})" if case.base else variant
            ours += SAME_MARK if variant in same else ""
            row = [str(case.id), case.experiment + paper_base, ours, f"{dev}, {sto}", label(cfg)]
            for r in (base, inst):
                s = r.stats
                row += [
                    T.number(s.mean, digits),
                    T.number(s.sd, digits),
                    T.number(s.summary.min, digits),
                    T.number(s.summary.max, digits),
                    T.bounds(s.ci(), digits),
                    f"{s.peaks:,}",
                    _loop_text(s, digits),
                ]
                records.append(
                    {
                        "id": case.id,
                        "experiment": case.experiment,
                        "paper_base": case.paper_base,
                        "case": case.ours,
                        "base_case": case.base,
                        "base_id": case.base_id,
                        "role": "baseline" if r is base else "instrumented",
                        **_record(r),
                    }
                )
            rows.append(row)
        if not found:
            why = (
                "not reproduced (SPASS-meter's internals, or services disabled by hand)"
                if case.ours is None
                else ("no data in these bundles")
            )
            missing.append(f"{case.id} {case.experiment}: {why}")
    notes = [
        LOOP_NOTE,
        f"peaks: calls longer than {PEAK_FACTOR:g} x the mean, over the pooled steady state.",
        "Our case (our base): the case of experiments/moobench's fluctuation matrix and the case it changes one "
        "factor of; where the paper's base is Id 6 (services disabled by hand, not reproduced), ours is Id 5.",
        id1_note(),
    ]
    if stand_in:
        notes.append(
            f"No SPASS-meter in the bundle: {', '.join(label(c) for c in sorted(stand_in))} stands in "
            f"for SPASS-meter in the instrumented columns ({SPASS_NOTE})."
        )
    if missing:
        notes.append("Cases without data here: " + "; ".join(missing) + ".")
    notes += list(run_notes)
    title = "Fluctuation cases, response times in µs (ICPE'18 Table 5 layout)"
    return Table(title, columns, rows, records, notes, label_columns=5)


def overhead_table(results: list[Result], digits: int = 1) -> Table:
    ov = overheads(results)
    columns = ["Device, storage", "Variant", "Configuration", "Mean (µs)", "Overhead (µs)", "× baseline (95 % CI)"]
    by = {r.key: r for r in results}
    rows, records = [], []
    for o in ov:
        r = by[(o.device, o.storage, o.variant, o.configuration)]
        rows.append(
            [
                f"{o.device}, {o.storage}",
                o.variant,
                label(o.configuration),
                T.number(r.stats.mean, digits),
                T.number(o.overhead, digits),
                T.ratio_text(o.ratio, "loops"),
            ]
        )
        records.append(
            {
                "device": o.device,
                "storage": o.storage,
                "variant": o.variant,
                "configuration": o.configuration,
                "overhead_us": o.overhead,
                "ratio": o.ratio.value,
                "ratio_low": o.ratio.low,
                "ratio_high": o.ratio.high,
            }
        )
    note = (
        f"× baseline: per loop, the configuration's mean over the baseline's in the same step; their geometric "
        f"mean with a 95 % interval over loops (t or BCa on log ratios; no interval below {stats.MIN_RUNS} "
        "loops)."
    )
    return Table(
        "Monitoring overhead over the baseline of the same device and variant",
        columns,
        rows,
        records,
        [note],
        label_columns=3,
    )


# --- figure --------------------------------------------------------------------------------------------------------


def figure(results: list[Result], stem: Path, configurations: Sequence[str] | None = None) -> list[Path]:
    """Response time over the run, mean per block of 1,000 calls (averaged over the loops, the loops' range
    shaded), one line per configuration, one panel per device/storage/variant (SSP'17 Figures 1-2, ICPE'18
    Figures 1 and 4). Writes <stem>.png and <stem>.svg; needs matplotlib (the analysis extra)."""
    chosen = [r for r in results if r.series and (configurations is None or r.configuration in configurations)]
    if not chosen:
        raise PirexError("no series to plot: no raw files matched")
    fig, panels = _panels(chosen)
    for ax, panel, in_panel in panels:
        steady = 0
        for r in in_panel:
            k = min(s.size for s in r.series)
            m = np.vstack([s[:k] for s in r.series])
            x = (np.arange(k) + 0.5) * BLOCK
            (line,) = ax.plot(x, m.mean(axis=0), lw=0.9, label=label(r.configuration))
            if m.shape[0] > 1:
                ax.fill_between(x, m.min(axis=0), m.max(axis=0), color=line.get_color(), alpha=0.15, lw=0)
            steady = max(steady, r.steady_from)
        if steady:
            ax.axvline(steady, color="grey", ls="--", lw=0.8)
            ax.annotate(
                "steady state",
                (steady, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -12),
                textcoords="offset points",
                fontsize=8,
                color="grey",
            )
        _label_panel(ax, panel, "calls (per loop)", f"response time (µs, mean per {BLOCK:,} calls)")
    fig.tight_layout()
    return _save(fig, stem)


MAX_POINTS = 4_000  # points per line of the raw figure: beyond, neighbouring blocks merge (min of min, max of max)


def envelope(low: np.ndarray, high: np.ndarray, points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edges in calls, min, max) of the blocks merged `k` at a time so that at most `points` remain: every call's
    value lies within its point's [min, max], so no peak is averaged away. Point i spans edges[i] to edges[i + 1]
    (one more edge than points; the last block may hold fewer than BLOCK calls)."""
    k = max(1, math.ceil(low.size / points))
    starts = np.arange(0, low.size, k)
    edges = np.append(starts, low.size) * BLOCK
    return edges, np.minimum.reduceat(low, starts), np.maximum.reduceat(high, starts)


def raw_figure(results: list[Result], stem: Path, configurations: Sequence[str] | None = None) -> list[Path]:
    """Raw response time per call over one loop (the papers' Figures 1 and 4 plot one of ten runs' raw calls): per
    point the shortest and longest of the calls it stands for (at least 1,000), shaded between and the maxima drawn,
    so every peak stays visible; one panel per device/storage/variant, the loop with the highest peak of each
    configuration. Writes <stem>.png and <stem>.svg; needs matplotlib."""
    chosen = [r for r in results if r.extremes and (configurations is None or r.configuration in configurations)]
    if not chosen:
        raise PirexError("no raw series to plot: no raw files matched")
    fig, panels = _panels(chosen)
    for ax, panel, in_panel in panels:
        for r in in_panel:
            i = int(np.argmax([hi.max() if hi.size else -np.inf for _, hi in r.extremes]))
            edges, lo, hi = envelope(*r.extremes[i])
            line = ax.stairs(
                hi, edges, baseline=None, lw=0.6, label=f"{label(r.configuration)} (loop {i + 1} of {len(r.extremes)})"
            )
            ax.stairs(hi, edges, baseline=lo, fill=True, color=line.get_edgecolor(), alpha=0.25, lw=0)
        _label_panel(ax, panel, "calls", "response time (µs): min to max per point")
    fig.tight_layout()
    return _save(fig, stem)


def _panels(chosen: list[Result]) -> tuple:
    """A figure of one panel per device/storage/variant, stacked, and per panel (axes, panel key, its results in
    configuration order): the layout of figure and raw_figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({r.key[:3] for r in chosen})
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, 3.6 * len(keys)), squeeze=False)
    return fig, [
        (ax, key, sorted((r for r in chosen if r.key[:3] == key), key=lambda r: config_order(r.configuration)))
        for ax, key in zip(axes[:, 0], keys, strict=True)
    ]


def _label_panel(ax, panel: tuple, xlabel: str, ylabel: str) -> None:
    """A panel's log scale, title, axis labels, grid and legend (figure and raw_figure alike)."""
    import matplotlib.ticker

    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title(", ".join(panel), fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def _save(fig, stem: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


# --- comparison with the published tables --------------------------------------------------------------------------


def _published(name: str) -> list[dict]:
    with open(PUBLISHED_DIR / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def published_ssp17() -> list[dict]:
    return _published("ssp17/table1.csv")


def published_icpe18_table2() -> list[dict]:
    return _published("icpe18/table2.csv")


def published_icpe18_table5() -> list[dict]:
    return _published("icpe18/table5.csv")


@dataclass(frozen=True)
class PublishedRatio:
    """A ratio of two published means, and its range over the paper's devices widened by the rounding to 0.1 µs.
    profile: the profile of experiments/moobench that runs the setup these published rows were measured at."""

    source: str
    name: str
    numerator: tuple[str, str]  # (variant or storage kind, configuration) of ours it is compared with
    denominator: tuple[str, str]
    value: float
    low: float
    high: float
    profile: str = ""


def _ratio_range(pairs: list[tuple[float, float]], half: float = 0.05) -> tuple[float, float, float]:
    values = [a / b for a, b in pairs]
    low = min((a - half) / (b + half) for a, b in pairs)
    high = max((a + half) / (b - half) for a, b in pairs)
    return float(np.mean(values)), low, high


# The setups of the published rows (SSP'17 Table 1's header; ICPE'18 section 4.2): SPASS-meter and SSP'17's baseline
# at MooBench's defaults, Kieker and ICPE'18 Table 2's baseline at SSP'17's Kieker setup. Ratios across the two
# setups (SPASS-meter over Table 2's baseline, Kieker over SSP'17's) mix recursion depths and are left out.
SPASS_PROFILE, KIEKER_PROFILE = "paper-spass-meter", "paper"


def published_ratios() -> list[PublishedRatio]:
    """Ratios comparable across hardware: instrumented / baseline, docker / native, each from rows of one setup."""
    out = []
    t1 = published_ssp17()
    mid = {(r["configuration"], r["storage"], r["device"]): (float(r["ci_low"]) + float(r["ci_high"])) / 2 for r in t1}
    for sto in ("sd-card", "usb"):
        pairs = [(mid[("spass-meter", sto, d)], mid[("baseline", "sd-card", d)]) for d in ("D1", "D2", "D3")]
        out.append(
            PublishedRatio(
                "SSP'17 Table 1",
                f"{label(PAPER_SPASS)} / Baseline ({sto})",
                (sto, PAPER_SPASS),
                (sto, BASELINE),
                *_ratio_range(pairs),
                SPASS_PROFILE,
            )
        )
    t2 = {(r["configuration"], r["variant"], r["device"]): float(r["mean"]) for r in published_icpe18_table2()}
    devs = ("D1", "D2", "D3")
    pairs = [(t2[("kieker", "native", d)], t2[("baseline", "", d)]) for d in devs]
    out.append(
        PublishedRatio(
            "ICPE'18 Table 2",
            f"{label(PAPER_KIEKER)} / Baseline (native)",
            ("native", PAPER_KIEKER),
            ("native", BASELINE),
            *_ratio_range(pairs),
            KIEKER_PROFILE,
        )
    )
    for cfg, ours, profile in (("spass-meter", PAPER_SPASS, SPASS_PROFILE), ("kieker", PAPER_KIEKER, KIEKER_PROFILE)):
        pairs = [(t2[(cfg, "docker", d)], t2[(cfg, "native", d)]) for d in devs]
        out.append(
            PublishedRatio(
                "ICPE'18 Table 2",
                f"{label(ours)} docker / native",
                ("docker", ours),
                ("native", ours),
                *_ratio_range(pairs),
                profile,
            )
        )
    return out


@dataclass(frozen=True)
class Comparison:
    published: PublishedRatio
    config: str  # our device, storage
    ours: stats.Ratio
    verdict: str


def verdict(ours: stats.Ratio, low: float, high: float) -> str:
    """Overlap of our interval (over loops) with the published range; none below MIN_RUNS loops."""
    if not ours.has_interval:
        return f"no verdict: {min(ours.n_num, ours.n_den)} loops, {stats.MIN_RUNS} needed"
    return "consistent with the paper" if ours.low <= high and low <= ours.high else "differs from the paper"


def compare_results(
    results: list[Result], level: float = LEVEL, ratios: Sequence[PublishedRatio] | None = None
) -> list[Comparison]:
    """Our ratios (paired by loop, 95 % interval over loops) beside the published ones. A verdict where our interval
    and the paper's range (over its devices, widened by its rounding) overlap or not; none below MIN_RUNS loops."""
    by = {r.key: r for r in results}
    out = []
    for p in published_ratios() if ratios is None else ratios:
        for dev, sto in sorted({(r.device, r.storage) for r in results}):
            if p.source.startswith("SSP'17"):
                if not sto.startswith(p.numerator[0]):
                    continue
                variants = sorted({r.variant for r in results if (r.device, r.storage) == (dev, sto)})
                keys = [((dev, sto, v, p.numerator[1]), (dev, sto, v, p.denominator[1])) for v in variants]
                keys = [k for k in keys if k[0][2] == "native"] or keys[:1]
            else:
                keys = [((dev, sto, *p.numerator), (dev, sto, *p.denominator))]
            for num, den in keys:
                if num not in by or den not in by:
                    continue
                r = paired(by[num].stats, by[den].stats, level)
                out.append(Comparison(p, f"{dev}, {sto}, {num[2]}", r, verdict(r, p.low, p.high)))
    return out


def compare_markdown(result: list[Comparison]) -> str:
    out = [
        "| Source | Ratio | Our configuration | Published (range over devices, rounding) | "
        "Ours (95 % interval over paired loops) | Verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in result:
        p = c.published
        out.append(
            f"| {p.source} | {p.name} | {c.config} | {p.value:,.3f} [{p.low:,.3f}; {p.high:,.3f}] | "
            f"{T.ratio_text(c.ours, 'loops')} | {c.verdict} |"
        )
    out += ["", JVM_NOTE]
    return "\n".join(out)


JVM_NOTE = (
    "The papers ran Oracle JDK 8 on Raspberry Pi 3 devices: ratios to the baseline depend on the JVM's JIT and "
    "the CPU; docker/native and case/base ratios depend less on the machine."
)


# --- the analysis interface (pirex/analysis/interface.py) ---------------------------------------------------------

VIEWS = {FLUCTUATION: "ICPE'18 Table 5: the cases of `pirex run moobench --matrix fluctuation`"}
Setup = tuple[int, int]  # calls, recursion depth of a bundle (its manifest's parameters)


def _run_info(path: Path) -> dict:
    f = Path(path) / "run.json"
    return json.loads(f.read_text()) if f.exists() else {}


def matrix_of(path: Path) -> str | None:
    """The matrix a bundle ran (run.json), None for a bundle of variants."""
    return (_run_info(path).get("matrix") or {}).get("name")


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


def setup_of(path: Path) -> Setup:
    params = Bundle.open(Path(path)).manifest.get("parameters") or {}
    return int(params.get("calls", 0)), int(params.get("recursion_depth", 0))


def setup_text(setup: Setup) -> str:
    return f"{setup[0]:,} calls at recursion depth {setup[1]}"


def profile_setup(profile: str) -> Setup:
    """The setup a profile of experiments/moobench runs (the paper's rows are paired by it)."""
    from pirex import experiment

    params = experiment.load("moobench").resolve(profile)
    return int(params["calls"]), int(params["recursion_depth"])


def _by_setup(paths: Sequence[Path]) -> dict[Setup, list[Path]]:
    out: dict[Setup, list[Path]] = defaultdict(list)
    for p in paths:
        out[setup_of(p)].append(p)
    return dict(sorted(out.items()))


def run_notes(paths: Sequence[Path]) -> list[str]:
    """What the runs recorded: cases skipped here and why, cases that equal their base here, stand-ins."""
    out = []
    for p in paths:
        info = _run_info(p)
        for case, why in (info.get("skipped_variants") or {}).items():
            out.append(f"Skipped in {p.name}: {case}: {why}.")
        for case, notes in ((info.get("matrix") or {}).get("notes") or {}).items():
            out.append(f"Note of {p.name}: {case}: {'; '.join(notes)}.")
        if info.get("matrix") and (flags := jvm_options(p)):
            out.append(
                f"JVM options as run ({p.name}, step.json): "
                + "; ".join(f"{case}: {o or '(none)'}" for case, o in flags.items())
                + "."
            )
    return out


def same_as_base(paths: Sequence[Path]) -> set[str]:
    """The cases whose run noted that they equal their base on that machine (pirex.runner.host.notes)."""
    from pirex.runner.host import SAME_AS_BASE

    return {
        case
        for p in paths
        for case, notes in ((_run_info(p).get("matrix") or {}).get("notes") or {}).items()
        if any(n.startswith(SAME_AS_BASE) for n in notes)
    }


SAME_MARK = " [same as its base here]"


def jvm_options(path: Path) -> dict[str, str]:
    """Per variant (matrix case), the --jvm-options its first completed step ran with (step.json's argv)."""
    out = {}
    for _, step, step_dir in completed_steps([path]):
        f = step_dir / "step.json"
        if step["variant"] in out or not f.exists():
            continue
        argv = json.loads(f.read_text()).get("argv") or []
        if "--jvm-options" in argv[:-1]:
            out[step["variant"]] = argv[argv.index("--jvm-options") + 1]
    return out


def tables(bundles: Iterable[Path], view: str | None = None) -> list[NamedTable]:
    """Default view: Table 2, Table 1 and the overheads, per setup of the bundles; fluctuation: Table 5."""
    paths = view_bundles(bundles, view)
    groups = _by_setup(paths)
    if view == FLUCTUATION:
        results = analyse(paths)
        setups = "; ".join(f"{setup_text(k)} ({', '.join(p.name for p in v)})" for k, v in groups.items())
        notes = [f"Ran: {setups}; the paper: {setup_text(profile_setup(SPASS_PROFILE))} (profile paper)."]
        return [NamedTable("table5", table5(results, run_notes=notes + run_notes(paths), same=same_as_base(paths)))]
    out = []
    for setup, group in groups.items():
        results = analyse(group)
        suffix = "" if len(groups) == 1 else f"-{setup[0]}-d{setup[1]}"
        for name, t in (
            ("table2", table2(results)),
            ("table1", table1(results)),
            ("overhead", overhead_table(results)),
        ):
            t.notes.append(f"Setup: {setup_text(setup)} ({', '.join(p.name for p in group)}).")
            out.append(NamedTable(name + suffix, t))
    return out


def figures(bundles: Iterable[Path], out: Path, view: str | None = None) -> list[Path]:
    """The mean per 1,000 calls (response-time) and the raw calls' range (response-time-raw), per setup."""
    paths = view_bundles(bundles, view)
    groups = _by_setup(paths)
    files = []
    for setup, group in groups.items():
        results = analyse(group)
        suffix = "" if len(groups) == 1 else f"-{setup[0]}-d{setup[1]}"
        files += figure(results, Path(out) / f"response-time{suffix}")
        files += raw_figure(results, Path(out) / f"response-time-raw{suffix}")
    return files


def run_values(bundles: Iterable[Path], view: str | None = None) -> list[RunValue]:
    """One value per MooBench loop (a fresh JVM, one repetition): its steady-state mean in µs per configuration;
    inner: the loop's steady-state means per 1,000 calls. variant: the bundle's variant, or the matrix case."""
    out = []
    for path in view_bundles(bundles, view):
        b = open_bundle(path)
        device = device_label(json.loads((path / "machine.json").read_text())["before"])
        for _, step, step_dir in completed_steps([b]):
            for f in sorted(step_dir.glob("raw-*.csv")):
                loop = read_loop(f)
                if not loop.n:
                    continue
                inner = tuple(float(x) * 1e-3 for x in _blocks_of(loop.steady))
                out.append(
                    RunValue(
                        "moobench",
                        path.name,
                        device,
                        step["variant"],
                        int(step["repetition"]),
                        f.name[len("raw-") : -len(".csv")],
                        float(loop.steady.mean()) * 1e-3,
                        "µs",
                        inner=inner,
                    )
                )
    return out


def _blocks_of(d: np.ndarray) -> np.ndarray:
    starts = np.arange(0, d.size, BLOCK)
    return np.add.reduceat(d, starts) / np.diff(np.append(starts, d.size))


def compare(bundles, view: str | None = None, level: float = LEVEL):
    """Beside the published numbers. Default view: ratios of SSP'17 Table 1 and ICPE'18 Table 2, each paired with
    the bundles of the setup its rows ran at; fluctuation: Table 5's case / base ratios. Returns NamedTables.
    (Given analysed Results instead of bundles, as the current cli.py does: compare_results.)"""
    bundles = list(bundles)
    if bundles and isinstance(bundles[0], Result):
        return compare_results(bundles, level)
    paths = view_bundles(bundles, view)
    if view == FLUCTUATION:
        t = compare_table5(analyse(paths), run_notes=run_notes(paths), same=same_as_base(paths))
        return [NamedTable("compare-table5", t)]
    return [NamedTable("compare", compare_table(paths, level))]


def compare_table(paths: Sequence[Path], level: float = LEVEL) -> Table:
    """Each published ratio with our bundles of the matching setup (or, where we have none, the others, said so)."""
    groups = {k: analyse(v) for k, v in _by_setup(paths).items()}
    columns = [
        "Source",
        "Ratio",
        "Paper's setup (profile)",
        "Our configuration",
        "Our setup",
        "Published (range over devices, rounding)",
        "Ours (95 % interval over paired loops)",
        "Verdict",
    ]
    rows, records = [], []
    has_spass = any(r.configuration.startswith("spass-meter") for res in groups.values() for r in res)
    for p in published_ratios():
        want = profile_setup(p.profile)
        use = {want: groups[want]} if want in groups else groups
        found = False
        for setup, results in use.items():
            for c in compare_results(results, level, [p]):
                found = True
                v = (
                    c.verdict
                    if setup == want
                    else (f"{c.verdict}, but at another setup than the paper's: run --profile {p.profile}")
                )
                rows.append(
                    [
                        p.source,
                        p.name,
                        f"{setup_text(want)} ({p.profile})",
                        c.config,
                        setup_text(setup),
                        f"{p.value:,.3f} [{p.low:,.3f}; {p.high:,.3f}]",
                        T.ratio_text(c.ours, "loops"),
                        v,
                    ]
                )
                records.append(
                    {
                        "source": p.source,
                        "ratio": p.name,
                        "profile": p.profile,
                        "configuration": c.config,
                        "calls": setup[0],
                        "recursion_depth": setup[1],
                        "published": p.value,
                        "published_low": p.low,
                        "published_high": p.high,
                        "ours": c.ours.value,
                        "ours_low": c.ours.low,
                        "ours_high": c.ours.high,
                        "verdict": v,
                    }
                )
        if not found and PAPER_SPASS in (p.numerator[1], p.denominator[1]) and not has_spass:
            published = f"{p.value:,.3f} [{p.low:,.3f}; {p.high:,.3f}]"
            rows.append(
                [
                    p.source,
                    p.name,
                    f"{setup_text(want)} ({p.profile})",
                    "",
                    "",
                    published,
                    "no SPASS-meter rows",
                    SPASS_NOTE,
                ]
            )
    notes = [
        JVM_NOTE,
        "Each published ratio is paired with our bundles of the setup its rows ran at: SPASS-meter "
        f"and SSP'17's baseline at {setup_text(profile_setup(SPASS_PROFILE))} (profile {SPASS_PROFILE}), Kieker "
        f"and ICPE'18 Table 2's baseline at {setup_text(profile_setup(KIEKER_PROFILE))} (profile "
        f"{KIEKER_PROFILE}); ratios across the two setups are not compared.",
    ]
    return Table(
        "MooBench against the published ratios (SSP'17 Table 1, ICPE'18 Table 2)",
        columns,
        rows,
        records,
        notes,
        label_columns=5,
    )


def compare_table5(
    results: list[Result],
    cases: Sequence[Case] | None = None,
    level: float = LEVEL,
    run_notes: Sequence[str] = (),
    same: set[str] = frozenset(),
) -> Table:
    """ICPE'18 Table 5 as effects: each case against its base. The published reference is the case over the base in
    the paper's "(base)" column (Id 3 / Id 2, Id 9 / Id 6), which our case reproduces by changing the same one factor
    of our base (Id 5 stands where the paper's Id 6 was); it is the one judged. Beside it, the case against Id 1
    (the paper's text quotes Id 4's effect that way), ours against our base case."""
    cases = fluctuation_cases() if cases is None else cases
    by = {r.key: r for r in results}
    t5 = {(int(r["id"]), r["configuration"]): float(r["mean"]) for r in published_icpe18_table5()}
    root = next((c for c in cases if c.ours and c.base is None), None)
    configs = {c.ours: c.configs for c in cases if c.ours}
    columns = [
        "Id",
        "Experiment (paper's base)",
        "Our case (our base)",
        "Device",
        "Configuration",
        "Paper: case / its base",
        "Ours: case / our base (95 % CI over loops)",
        "Verdict",
        "Paper: case / Id 1",
        "Ours: case / our Id 1",
    ]
    rows, records, stand_in = [], [], set()
    for case in cases:
        if not case.ours or not case.base or case.paper_base is None:
            continue
        for dev, sto in sorted({(r.device, r.storage) for r in results}):
            me = _case_source(case.ours, case.configs, by, dev, sto)
            base = _case_source(case.base, configs.get(case.base, INSTRUMENTED), by, dev, sto)
            first = root and _case_source(root.ours, root.configs, by, dev, sto)
            if me is None or base is None:
                continue
            for role in ("baseline", "instrumented"):
                cfg, base_cfg = (BASELINE, BASELINE) if role == "baseline" else (me[1], base[1])
                paper_cfg = BASELINE if role == "baseline" else PAPER_SPASS
                if role == "instrumented" and not cfg.startswith("spass-meter"):
                    stand_in.add(cfg)
                num, den = by[(dev, sto, case.ours, cfg)], by[(dev, sto, case.base, base_cfg)]
                ours = paired(num.stats, den.stats, level)
                pv, plo, phi = _ratio_range([(t5[(case.id, paper_cfg)], t5[(case.paper_base, paper_cfg)])])
                p1 = t5[(case.id, paper_cfg)] / t5[(1, paper_cfg)]
                vs1 = ""
                if first:
                    key1 = (dev, sto, root.ours, BASELINE if role == "baseline" else first[1])
                    r1 = paired(num.stats, by[key1].stats, level)
                    vs1 = T.ratio_text(r1, "loops")
                v = verdict(ours, plo, phi)
                if case.ours in same:  # the case changed nothing on that machine: no effect to judge
                    v = f"no verdict: {SAME_MARK.strip(' []')} (notes)"
                cfg_text = label(cfg) if cfg == base_cfg else f"{label(cfg)} / {label(base_cfg)}"
                rows.append(
                    [
                        str(case.id),
                        f"{case.experiment} ({case.paper_base})",
                        f"{case.ours} ({case.base}: Id {case.base_id}){SAME_MARK if case.ours in same else ''}",
                        f"{dev}, {sto}",
                        cfg_text,
                        f"{pv:,.3f} [{plo:,.3f}; {phi:,.3f}] (Id {case.id} / Id {case.paper_base})",
                        T.ratio_text(ours, "loops"),
                        v,
                        f"{p1:,.3f} (Id {case.id} / Id 1)",
                        vs1,
                    ]
                )
                records.append(
                    {
                        "id": case.id,
                        "paper_base": case.paper_base,
                        "case": case.ours,
                        "base": case.base,
                        "device": dev,
                        "storage": sto,
                        "role": role,
                        "configuration": cfg,
                        "base_configuration": base_cfg,
                        "published": pv,
                        "published_low": plo,
                        "published_high": phi,
                        "ours": ours.value,
                        "ours_low": ours.low,
                        "ours_high": ours.high,
                        "verdict": v,
                        "published_vs_id1": p1,
                    }
                )
    notes = [
        'Judged by the case over its base: the paper\'s over the base in its "(base)" column, ours over the '
        "case of ours it changes one factor of (Id 5 stands for the paper's Id 6, not reproduced). Paper: case / "
        "Id 1 is the effect as the paper's text quotes some of them (Id 4: 11 % faster than Id 1); it mixes in "
        "the changes between Id 1 and the base (Id 2's SPASS-meter object pools, Id 6's services).",
        "Published range: widened by the rounding to 0.1 µs.",
        id1_note(),
        JVM_NOTE,
    ]
    if stand_in:
        notes.append(
            f"No SPASS-meter in the bundle: {', '.join(label(c) for c in sorted(stand_in))} stands in, so "
            f"the instrumented rows set Kieker's effects beside SPASS-meter's ({SPASS_NOTE})."
        )
    notes += list(run_notes)
    return Table(
        "Fluctuation cases against their bases (ICPE'18 Table 5)", columns, rows, records, notes, label_columns=5
    )


def comparisons(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    """The interface's name (pirex/analysis/interface.py) for compare()."""
    return compare(list(bundles), view)
