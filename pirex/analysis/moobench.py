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
logging) is matched to PAPER_KIEKER. The fluctuation cases of Table 5 map to variants in FLUCTUATION_CASES.
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
from scipy import stats as sps

from pirex.analysis import stats
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
INSTRUMENTED = ("spass-meter", "kieker-dump", "kieker-text", "kieker-binary", "kieker-tcp", "kieker-deactivated",
                "opentelemetry")  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One row of ICPE'18 Table 5.

    sources: (our variant, instrumented configurations to try), in order of preference; empty when the case is not
        reproduced (SPASS-meter's internals, the services the authors disabled by hand).
    base: our variant this case changes one factor against (None for the base case itself).
    like: the paper's Id that our base corresponds to, for the published case/base ratios.
    """

    id: int
    experiment: str
    paper_base: int | None
    sources: tuple[tuple[str, tuple[str, ...]], ...]
    base: str | None = None
    like: int | None = None


def _v(variant: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return ((variant, INSTRUMENTED),)


# ICPE'18 Table 5 -> the cases of experiments/moobench's fluctuation matrix (variant = case name). Edit here when
# the matrix changes. Our cases on "ram-drive" stand where the paper's build on Id 6 (services, not reproduced).
FLUCTUATION_CASES = (
    Case(1, "from [16]", None, _v("base")),
    Case(2, "object pools", 1, ()),  # SPASS-meter's object pools: not reproducible from outside
    Case(3, "parallel GC", 2, _v("parallel-gc"), "base", 1),
    Case(4, "time resources", 2, (("time-only", ("spass-meter-time-only", *INSTRUMENTED)),), "base", 1),
    Case(5, "ramdrive", 2, _v("ram-drive"), "base", 1),
    Case(6, "services", 5, ()),  # Raspbian services disabled by hand: not reproduced
    Case(7, "SPASS timer", 6, ()),  # SPASS-meter's timer: not reproducible from outside
    Case(8, "SPASS events", 7, ()),  # SPASS-meter's synchronous events: not reproducible from outside
    Case(9, "one CPU core", 6, _v("one-core"), "ram-drive", 5),
    Case(10, "two CPU cores", 6, _v("two-cores"), "ram-drive", 5),
    Case(11, "max CPU clock", 6, _v("max-clock"), "ram-drive", 5),
    Case(12, "min CPU clock", 6, _v("min-clock"), "ram-drive", 5),
    Case(13, "no swapping", 6, _v("no-swap"), "ram-drive", 5),
    Case(14, "no recursion", 6, _v("depth-1"), "ram-drive", 5),
)


# --- statistics ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """Steady-state statistics in µs. summary pools every call; loop_means are the loops' own means."""

    summary: stats.Summary
    peaks: int
    loop_means: tuple[float, ...]

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

    def loop_ci(self, level: float = LEVEL) -> tuple[float, float]:
        """The honest interval: t interval over the loops' means (k - 1 degrees of freedom); NaN below 2 loops."""
        return t_interval(self.loop_means, level)


def t_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    if a.size < 2:
        return (math.nan, math.nan)
    half = sps.t.ppf(1 - (1 - level) / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)
    return (float(a.mean() - half), float(a.mean() + half))


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


def statistics(steady: Sequence[np.ndarray]) -> Stats:
    """Statistics over the steady-state durations (integer ns, one array per loop), in µs. The loops are pooled
    without copying them into one array: exact integer sums for the means, a two-pass sum of squares for the sd."""
    arrays = [np.asarray(a, dtype=np.int64) for a in steady]
    arrays = [a for a in arrays if a.size]
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
    return Stats(summary, peaks, loop_means)


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
        b = Bundle.open(Path(path))
        if b.manifest["experiment"] != "moobench":
            raise PirexError(f"{path} is a {b.manifest['experiment']} bundle, not moobench")
        machine = json.loads((Path(path) / "machine.json").read_text())["before"]
        device, storage = device_label(machine), storage_of(machine)
        for step in b.manifest["completed"]:
            for f in sorted(b.step_dir(step["variant"], step["repetition"]).glob("raw-*.csv")):
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
            out.append(_analyse_one(key, loops))
            del loops
    return out


def _analyse_one(key: Key, loops: list[Loop]) -> Result:
    st = statistics([lp.steady for lp in loops])
    series = [lp.blocks * 1e-3 for lp in loops]
    return Result(*key, st, series, max((lp.steady_from for lp in loops), default=0))


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
    ratio: stats.Ratio  # mean / baseline mean over loop means, bootstrap CI over loops


def overheads(results: list[Result], level: float = LEVEL) -> list[Overhead]:
    """Each configuration against the baseline of the same device, storage and variant."""
    base = {r.key[:3]: r for r in results if r.configuration == BASELINE}
    out = []
    for r in results:
        b = base.get(r.key[:3])
        if r.configuration == BASELINE or b is None:
            continue
        ratio = stats.ratio_ci(r.stats.loop_means, b.stats.loop_means, level)
        out.append(Overhead(*r.key, r.stats.mean - b.stats.mean, ratio))
    return out


# --- tables --------------------------------------------------------------------------------------------------------


def _f(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def _ci(lo_hi: tuple[float, float], digits: int = 1) -> str:
    lo, hi = lo_hi
    return "n/a" if math.isnan(lo) else f"[{_f(lo, digits)}; {_f(hi, digits)}]"


def _record(r: Result, level: float = LEVEL) -> dict:
    s = r.stats
    (lo, hi), (llo, lhi) = s.ci(level), s.loop_ci(level)
    return {"device": r.device, "storage": r.storage, "variant": r.variant, "configuration": r.configuration,
            "n": s.n, "loops": s.loops, "mean_us": s.mean, "sd_us": s.sd, "ci95_low": lo, "ci95_high": hi,
            "loop_ci95_low": llo, "loop_ci95_high": lhi, "min_us": s.summary.min, "q1_us": s.summary.q1,
            "median_us": s.summary.median, "q3_us": s.summary.q3, "max_us": s.summary.max,
            "peaks": s.peaks}  # fmt: skip


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
            row += [_f(r.stats.mean, digits), _ci(r.stats.ci(), digits), _f(r.stats.sd, digits),
                    _ci(r.stats.loop_ci(), digits)]  # fmt: skip
        rows.append(row)
    return Table("MooBench stable state response times in µs (ICPE'18 Table 2 layout)", columns, rows,
                 [_record(r) for r in results], [LOOP_NOTE])  # fmt: skip


def table1(results: list[Result], digits: int = 1) -> Table:
    """SSP'17 Table 1: rows configuration (storage[, variant]), columns per device: 95 % CI and σ (no mean), plus
    the 95 % CI over loops. Response times in µs."""
    devices = sorted({r.device for r in results})
    variants = {r.variant for r in results}
    by = {r.key: r for r in results}
    row_keys = sorted({(r.configuration, r.storage, r.variant) for r in results},
                      key=lambda k: (config_order(k[0]), k[1], k[2]))  # fmt: skip
    columns = ["Experiment"]
    for dev in devices:
        columns += [f"{dev}: 95 % CI", f"{dev}: σ", f"{dev}: 95 % CI (loops)"]
    rows = []
    for cfg, sto, var in row_keys:
        name = f"{label(cfg)} ({sto}{', ' + var if len(variants) > 1 else ''})"
        row = [name]
        for dev in devices:
            r = by.get((dev, sto, var, cfg))
            row += ["", "", ""] if r is None else [_ci(r.stats.ci(), digits), _f(r.stats.sd, digits),
                                                   _ci(r.stats.loop_ci(), digits)]  # fmt: skip
        rows.append(row)
    return Table("Raw stable state response times in µs as CI and σ (SSP'17 Table 1 layout)", columns, rows,
                 [_record(r) for r in results], [LOOP_NOTE])  # fmt: skip


def _case_source(case: Case, by: dict[Key, Result], device: str, storage: str) -> tuple[str, str] | None:
    for variant, configs in case.sources:
        if (device, storage, variant, BASELINE) not in by:
            continue
        for cfg in configs:
            if (device, storage, variant, cfg) in by:
                return variant, cfg
    return None


def table5(results: list[Result], cases: Sequence[Case] = FLUCTUATION_CASES, digits: int = 1) -> Table:
    """ICPE'18 Table 5: per fluctuation case and device, the baseline and the instrumented configuration (SPASS-meter
    in the paper; Kieker stands in where the bundle has none): mean, σ, min, max, 95 % CI, peaks, 95 % CI (loops)."""
    by = {r.key: r for r in results}
    parts = ("mean", "σ", "min", "max", "95 % CI", "peaks", "95 % CI (loops)")
    columns = ["Id", "Experiment (base)", "Variant (base)", "Device", "Instrumented"]
    columns += [f"Baseline: {p}" for p in parts] + [f"Instrumented: {p}" for p in parts]
    rows, records, missing, stand_in = [], [], [], set()
    for case in cases:
        found = False
        for dev, sto in sorted({(r.device, r.storage) for r in results}):
            src = _case_source(case, by, dev, sto)
            if src is None:
                continue
            found = True
            variant, cfg = src
            if not cfg.startswith("spass-meter"):
                stand_in.add(cfg)
            base, inst = by[(dev, sto, variant, BASELINE)], by[(dev, sto, variant, cfg)]
            paper_base = f" ({case.paper_base})" if case.paper_base else ""
            ours = f"{variant} ({case.base})" if case.base else variant
            row = [str(case.id), case.experiment + paper_base, ours, f"{dev}, {sto}", label(cfg)]
            for r in (base, inst):
                s = r.stats
                row += [_f(s.mean, digits), _f(s.sd, digits), _f(s.summary.min, digits), _f(s.summary.max, digits),
                        _ci(s.ci(), digits), f"{s.peaks:,}", _ci(s.loop_ci(), digits)]  # fmt: skip
                records.append({"id": case.id, "experiment": case.experiment, "paper_base": case.paper_base,
                                "base_variant": case.base, "role": "baseline" if r is base else "instrumented",
                                **_record(r)})  # fmt: skip
            rows.append(row)
        if not found:
            missing.append(f"{case.id} {case.experiment}")
    notes = [LOOP_NOTE, f"peaks: calls longer than {PEAK_FACTOR:g} x the mean, over the pooled steady state."]
    if stand_in:
        notes.append(f"No SPASS-meter in the bundle: {', '.join(label(c) for c in sorted(stand_in))} stands in "
                     "for SPASS-meter in the instrumented columns.")  # fmt: skip
    if missing:
        notes.append("Cases without data here: " + "; ".join(missing) + ".")
    title = "Fluctuation cases, response times in µs (ICPE'18 Table 5 layout)"
    return Table(title, columns, rows, records, notes, label_columns=5)


def overhead_table(results: list[Result], digits: int = 1) -> Table:
    ov = overheads(results)
    columns = ["Device, storage", "Variant", "Configuration", "Mean (µs)", "Overhead (µs)", "× baseline (95 % CI)"]
    by = {r.key: r for r in results}
    rows, records = [], []
    for o in ov:
        r = by[(o.device, o.storage, o.variant, o.configuration)]
        rows.append([f"{o.device}, {o.storage}", o.variant, label(o.configuration), _f(r.stats.mean, digits),
                     _f(o.overhead, digits), ratio_text(o.ratio)])  # fmt: skip
        records.append({"device": o.device, "storage": o.storage, "variant": o.variant,
                        "configuration": o.configuration, "overhead_us": o.overhead, "ratio": o.ratio.value,
                        "ratio_low": o.ratio.low, "ratio_high": o.ratio.high})  # fmt: skip
    note = (f"× baseline: mean over loop means / baseline's, 95 % bootstrap CI over loops (no interval below "
            f"{stats.MIN_RUNS} loops).")  # fmt: skip
    return Table("Monitoring overhead over the baseline of the same device and variant", columns, rows, records,
                 [note], label_columns=3)  # fmt: skip


def ratio_text(r: stats.Ratio, digits: int = 3) -> str:
    if not r.has_interval:
        return f"{r.value:,.{digits}f} (no interval: {min(r.n_num, r.n_den)} loops, {stats.MIN_RUNS} needed)"
    return f"{r.value:,.{digits}f} [{r.low:,.{digits}f}; {r.high:,.{digits}f}]"


# --- figure --------------------------------------------------------------------------------------------------------


def figure(results: list[Result], stem: Path, configurations: Sequence[str] | None = None) -> list[Path]:
    """Response time over the run, mean per block of 1,000 calls (averaged over the loops, the loops' range
    shaded), one line per configuration, one panel per device/storage/variant (SSP'17 Figures 1-2, ICPE'18
    Figures 1 and 4). Writes <stem>.png and <stem>.svg; needs matplotlib (the analysis extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    chosen = [r for r in results if r.series and (configurations is None or r.configuration in configurations)]
    if not chosen:
        raise PirexError("no series to plot: no raw files matched")
    panels = sorted({r.key[:3] for r in chosen})
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.6 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        steady = 0
        for r in sorted((r for r in chosen if r.key[:3] == panel), key=lambda r: config_order(r.configuration)):
            k = min(s.size for s in r.series)
            m = np.vstack([s[:k] for s in r.series])
            x = (np.arange(k) + 0.5) * BLOCK
            (line,) = ax.plot(x, m.mean(axis=0), lw=0.9, label=label(r.configuration))
            if m.shape[0] > 1:
                ax.fill_between(x, m.min(axis=0), m.max(axis=0), color=line.get_color(), alpha=0.15, lw=0)
            steady = max(steady, r.steady_from)
        if steady:
            ax.axvline(steady, color="grey", ls="--", lw=0.8)
            ax.annotate("steady state", (steady, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", fontsize=8, color="grey")  # fmt: skip
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_title(", ".join(panel), fontsize=9)
        ax.set_xlabel("calls (per loop)")
        ax.set_ylabel(f"response time (µs, mean per {BLOCK:,} calls)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
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
    """A ratio of two published means, and its range over the paper's devices widened by the rounding to 0.1 µs."""

    source: str
    name: str
    numerator: tuple[str, str]  # (variant or storage kind, configuration) of ours it is compared with
    denominator: tuple[str, str]
    value: float
    low: float
    high: float


def _ratio_range(pairs: list[tuple[float, float]], half: float = 0.05) -> tuple[float, float, float]:
    values = [a / b for a, b in pairs]
    low = min((a - half) / (b + half) for a, b in pairs)
    high = max((a + half) / (b - half) for a, b in pairs)
    return float(np.mean(values)), low, high


def published_ratios() -> list[PublishedRatio]:
    """Ratios comparable across hardware: instrumented / baseline, docker / native, fluctuation case / base case."""
    out = []
    t1 = published_ssp17()
    mid = {(r["configuration"], r["storage"], r["device"]): (float(r["ci_low"]) + float(r["ci_high"])) / 2 for r in t1}
    for cfg, ours in (("spass-meter", PAPER_SPASS), ("kieker", PAPER_KIEKER)):
        for sto in ("sd-card", "usb"):
            pairs = [(mid[(cfg, sto, d)], mid[("baseline", "sd-card", d)]) for d in ("D1", "D2", "D3")]
            out.append(PublishedRatio("SSP'17 Table 1", f"{label(ours)} / Baseline ({sto})", (sto, ours),
                                      (sto, BASELINE), *_ratio_range(pairs)))  # fmt: skip
    t2 = {(r["configuration"], r["variant"], r["device"]): float(r["mean"]) for r in published_icpe18_table2()}
    devs = ("D1", "D2", "D3")
    for cfg, ours in (("spass-meter", PAPER_SPASS), ("kieker", PAPER_KIEKER)):
        pairs = [(t2[(cfg, "native", d)], t2[("baseline", "", d)]) for d in devs]
        out.append(PublishedRatio("ICPE'18 Table 2", f"{label(ours)} / Baseline (native)", ("native", ours),
                                  ("native", BASELINE), *_ratio_range(pairs)))  # fmt: skip
        pairs = [(t2[(cfg, "docker", d)], t2[(cfg, "native", d)]) for d in devs]
        out.append(PublishedRatio("ICPE'18 Table 2", f"{label(ours)} docker / native", ("docker", ours),
                                  ("native", ours), *_ratio_range(pairs)))  # fmt: skip
    t5 = {(int(r["id"]), r["configuration"]): float(r["mean"]) for r in published_icpe18_table5()}
    for case in FLUCTUATION_CASES:
        if not case.sources or case.base is None or case.like is None:
            continue
        variant, configs = case.sources[0]
        ours = configs[0] if configs[0].startswith("spass-meter") else PAPER_SPASS
        for cfg, mine in (("baseline", BASELINE), ("spass-meter", ours)):
            pairs = [(t5[(case.id, cfg)], t5[(case.like, cfg)])]
            name = f"{case.experiment}: {label(mine)} {variant} / {case.base} (paper: Id {case.id} / Id {case.like})"
            out.append(PublishedRatio("ICPE'18 Table 5", name, (variant, mine), (case.base, PAPER_SPASS if
                                      mine != BASELINE else BASELINE), *_ratio_range(pairs)))  # fmt: skip
    return out


@dataclass(frozen=True)
class Comparison:
    published: PublishedRatio
    config: str  # our device, storage
    ours: stats.Ratio
    verdict: str


def compare(results: list[Result], level: float = LEVEL) -> list[Comparison]:
    """Our ratios (bootstrap CI over loops) beside the published ones. A verdict where our interval and the paper's
    range (over its devices, widened by its rounding) overlap or not; none with fewer than MIN_RUNS loops."""
    by = {r.key: r for r in results}
    out = []
    for p in published_ratios():
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
                r = stats.ratio_ci(by[num].stats.loop_means, by[den].stats.loop_means, level)
                if not r.has_interval:
                    verdict = f"no verdict: {min(r.n_num, r.n_den)} loops, {stats.MIN_RUNS} needed"
                elif r.low <= p.high and p.low <= r.high:
                    verdict = "consistent with the paper"
                else:
                    verdict = "differs from the paper"
                out.append(Comparison(p, f"{dev}, {sto}, {num[2]}", r, verdict))
    return out


def compare_markdown(result: list[Comparison]) -> str:
    out = ["| Source | Ratio | Our configuration | Published (range over devices, rounding) | "
           "Ours (95 % bootstrap CI over loops) | Verdict |", "|---|---|---|---|---|---|"]  # fmt: skip
    for c in result:
        p = c.published
        out.append(f"| {p.source} | {p.name} | {c.config} | {p.value:,.3f} [{p.low:,.3f}; {p.high:,.3f}] | "
                   f"{ratio_text(c.ours)} | {c.verdict} |")  # fmt: skip
    out += ["", "The papers ran Oracle JDK 8 on Raspberry Pi 3 devices: ratios to the baseline depend on the JVM's "
            "JIT and the CPU; docker/native and case/base ratios depend less on the machine."]  # fmt: skip
    return "\n".join(out)
