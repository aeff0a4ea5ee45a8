"""MooBench statistics per (device, storage, variant, configuration), in microseconds, over the steady state of every
loop (moobench_read's rule); pirex/analysis/moobench.py's docstring says what is computed and why.

The papers' statistics pool every call; beside them the honest interval over the loops' means (independent JVMs).
Ratios pair the loops of one bundle and repetition (paired()); overheads are over the baseline of the same device,
storage and variant.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pirex.analysis import stats
from pirex.analysis.moobench_read import Key, Loop, default_engine, groups, read_loop
from pirex.core.errors import PirexError

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


def config_order(configuration: str) -> tuple[int, str]:
    keys = list(CONFIGURATIONS)
    return (keys.index(configuration) if configuration in keys else len(keys), configuration)


def label(configuration: str) -> str:
    return CONFIGURATIONS.get(configuration, configuration)


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


def paired(numerator: Stats, denominator: Stats, level: float = LEVEL) -> stats.Interval:
    """numerator/denominator paired by loop: a loop of each, same bundle and repetition, ran in the same step (two
    configurations) or in the same interleaved round (two variants or cases), the t interval on the log ratios;
    Welch's t on logs for loops of separate runs (stats.ratio_over_runs)."""
    num = dict(zip(numerator.loop_keys, numerator.loop_means, strict=True))
    return stats.ratio_over_runs(num, dict(zip(denominator.loop_keys, denominator.loop_means, strict=True)), level)


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
    """The results of bundles of one setup; PirexError for bundles of several (analyse each group of groups())."""
    found = groups(bundles)
    if len(found) > 1:
        setups = "; ".join(f"{g.setup.text} ({', '.join(p.name for p in g.bundles)})" for g in found)
        raise PirexError(f"these bundles ran at {len(found)} setups, whose loops are not pooled: {setups}")
    return analyse_files(found[0].files, engine) if found else []


@dataclass(frozen=True)
class Overhead:
    device: str
    storage: str
    variant: str
    configuration: str
    overhead: float  # µs: mean - baseline mean (pooled means)
    ratio: stats.Interval  # over the baseline, paired by loop (paired())


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
