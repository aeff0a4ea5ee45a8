"""Calibration on the machine's own noise: one long A/A run (a variant against its own copy, `<variant>-aa`,
interleaved or as a duet), resampled, tells how the intervals pirex judges with behave on this machine's real
repetitions, where the simulated calibration (test_calibration.py) only knows normal and log-normal data.

From the A/A run's repetitions in run order (one Series per metric), for each interval method pirex would judge the
metric with and each size n of 5, 10 and 20 repetitions:

- coverage: the share of resampled data sets whose 95 % interval holds 1, the A/A's truth by construction (the
  copies are the same variant, run in a fresh random order, or swapped between the CPU halves, every repetition).
  Two schemes of resampling: random subsets (no order kept) and contiguous blocks (which keep what neighbouring
  repetitions share: a drift, a noisy neighbour). Subsets of one run overlap, so the coverage's own 95 % interval is
  a moving-block bootstrap over the run's repetitions (blocks of about N^(1/3)), the subsets drawn afresh in each
  resample (../shared/STATISTICS.md, "Calibrating on the machine"), not a binomial one as if they were independent.
- the bounds themselves at the verdict's two levels (90 %, 95 %), which pirex/reproduce/calibrate.py reads the
  claims' rules off with a ratio planted at each edge: every bound method here is equivariant (scaling one side by
  r scales the interval by r), so a planted ratio is the same bounds times r, never a second resampling;
- power: the smallest ratio away from 1 that the direction rule (the 90 % interval wholly on one side of 1) decides
  in 80 % of the data sets, up or down, the larger of the two;
- the A/A check's block rate: the share of data sets whose 95 % interval lies wholly beyond the precision.AA_TOLERANCE
  band (what blocks a bundle's verdicts in reproduce).

The methods are the vectorised cores of pirex/analysis/stats.py that the intervals themselves call (t_log_bounds,
welch_log_bounds, duet_log_bounds, rate_bounds): what is calibrated is what judges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pirex.analysis import assumptions, stats
from pirex.analysis import precision as prec

SIZES = (5, 10, 20)  # the repetition counts calibrated: make run's five, an extension's ten, a paper profile's 20
COVER_LOW, COVER_HIGH = 0.93, 0.97  # a method calibrates when its coverage of a nominal 95 % lies in this band
LEVEL, VERDICT_LEVEL = 0.95, 0.90  # the coverage's level; the level the rules' one-sided regions are read off
SUBSETS = 2000  # random subsets per size (contiguous blocks: every one there is)
BOOTSTRAP, BOOTSTRAP_SUBSETS = 200, 100  # block-bootstrap resamples of the run, and subsets drawn in each
POWER = 0.8
SEED = 50  # the resampling is seeded: a calibration bundle's table is reproducible from its repetitions

T_LOG, WELCH_LOG, DUET, RATE = "t-log", "welch-log", "duet-half-t", "rate ratio"
METHODS = {
    T_LOG: "paired t on logs (interleaved repetitions)",
    WELCH_LOG: "Welch's t on logs (unpaired: devices, placements)",
    DUET: "duet model, the CPU half a factor",
    RATE: "rate ratio of counts (Poisson exact, or quasi-Poisson where overdispersed)",
}


@dataclass(frozen=True)
class Series:
    """One metric of an A/A run, per repetition in run order: the variant's and its copy's values (run means), or
    for a count metric their counts and exposures; a duet's copy's CPU half (+1 first, -1 second) per repetition."""

    metric: str
    base: np.ndarray
    copy: np.ndarray
    halves: np.ndarray | None = None
    counts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None  # copy's y, e; base's y, e

    @property
    def n(self) -> int:
        return int(self.base.size if self.counts is None else self.counts[0].size)

    def methods(self) -> tuple[str, ...]:
        """The methods pirex judges this metric with: a count's rate ratio; a duet's model; else the paired t and,
        for claims across devices or placements, Welch's."""
        if self.counts is not None:
            return (RATE,)
        if self.halves is not None and (self.halves != 0).any():
            return (DUET,)
        return (T_LOG, WELCH_LOG)


def series(values, metric: str, variant: str) -> Series | None:
    """The Series of `metric` from an A/A bundle's RunValues (variant and `<variant>-aa`), repetitions sorted by
    (device, bundle, repetition): the run order within a bundle. None where the metric has too few pairs."""
    values = list(values)
    copy_name = prec.aa_name(variant)
    counts_c, counts_b = prec.run_counts(values, metric, copy_name), prec.run_counts(values, metric, variant)
    if counts_c and counts_b:
        keys = sorted(set(counts_c) & set(counts_b), key=prec.run_order)
        if len(keys) < stats.MIN_RUNS:
            return None
        arrays = tuple(
            np.array([getattr(side[k], field_) for k in keys], dtype=float)
            for side in (counts_c, counts_b)
            for field_ in ("count", "exposure")
        )
        return Series(metric, np.empty(0), np.empty(0), counts=arrays)  # type: ignore[arg-type]
    base = {k: v for k, v in prec.run_means(values, metric, variant).items() if v > 0}
    copy = {k: v for k, v in prec.run_means(values, metric, copy_name).items() if v > 0}
    keys = sorted(set(base) & set(copy), key=prec.run_order)
    if len(keys) < stats.MIN_RUNS:
        return None
    halves = prec.run_halves(values, metric, copy_name)
    h = np.array([halves.get(k, 0) for k in keys], dtype=float) if halves else None
    return Series(metric, np.array([base[k] for k in keys]), np.array([copy[k] for k in keys]), h)


def modes(s: Series) -> tuple[tuple[str, assumptions.Check], ...]:
    """The second-mode check on each side's own values over the whole run (logs): what a set of five cannot show
    (a mode of 10 % is missing from 59 % of them) the long run does, and a mode of one copy is the variant's (a JIT
    that compiles the benchmark differently in some JVMs), which the other variants of the claims share. () for
    counts. A duet's sides with their CPU half taken out (assumptions.residuals), as the checks of a verdict do."""
    if s.counts is not None:
        return ()
    h = s.halves  # a duet's sides alternate the CPU halves: each side's half effect is two modes by design
    sides = (("variant", s.base, None if h is None else -h), ("copy", s.copy, h))
    return tuple((side, assumptions.second_mode(assumptions.residuals(np.log(x), hx))) for side, x, hx in sides)


# --- resampling


def subsets(n_total: int, n: int, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` random subsets of n of the indices 0..n_total-1, each in run order: shape (count, n)."""
    return np.sort(rng.random((count, n_total)).argsort(axis=1)[:, :n], axis=1)


def blocks(n_total: int, n: int) -> np.ndarray:
    """Every contiguous block of n repetitions: shape (n_total - n + 1, n)."""
    return np.arange(n_total - n + 1)[:, None] + np.arange(n)


def block_bootstrap(n_total: int, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` moving-block bootstrap resamples of the run's indices (Kunsch 1989; blocks of ceil(N^(1/3))
    neighbouring repetitions, started at random, joined and cut to N): shape (count, N)."""
    size = max(2, math.ceil(n_total ** (1 / 3)))
    starts = rng.integers(0, n_total - size + 1, (count, math.ceil(n_total / size)))
    return (starts[:, :, None] + np.arange(size)).reshape(count, -1)[:, :n_total]


def bounds(s: Series, method: str, idx: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The method's copy/variant interval at `level` for each row of indices: (low, high), NaN where a data set has
    no interval (a duet subset with every repetition on one half)."""
    if method == RATE:
        yc, ec, yb, eb = (a[idx] for a in s.counts)  # type: ignore[union-attr]
        _, low, high, _ = stats.rate_bounds(yc, ec, yb, eb, level, paired=True)
        return low, high
    x, y = np.log(s.copy[idx]), np.log(s.base[idx])
    if method == T_LOG:
        return stats.t_log_bounds(x - y, level)
    if method == WELCH_LOG:
        return stats.welch_log_bounds(x, y, level)
    if method == DUET:
        return stats.duet_log_bounds(x - y, s.halves[idx], level)  # type: ignore[index]
    raise ValueError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")


def has_interval(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which data sets have an interval (NaN bounds: none, e.g. a duet subset on one half only)."""
    return np.isfinite(low) & np.isfinite(high)


def covered(low: np.ndarray, high: np.ndarray) -> tuple[float, int]:
    """The share of data sets whose interval holds 1, among those with an interval, and how many had one."""
    ok = has_interval(low, high)
    n = int(ok.sum())
    return (float(((low[ok] <= 1) & (1 <= high[ok])).mean()) if n else math.nan), n


@dataclass(frozen=True)
class Cell:
    """One method at one size under one scheme: the coverage with its block-bootstrap interval, the bounds at the
    two levels (for the rules), the power and the A/A check's block rate."""

    metric: str
    method: str
    scheme: str  # "random" or "blocks"
    n: int
    coverage: float
    coverage_low: float
    coverage_high: float
    sets: int
    low90: np.ndarray = field(repr=False)
    high90: np.ndarray = field(repr=False)
    low95: np.ndarray = field(repr=False)
    high95: np.ndarray = field(repr=False)

    @property
    def calibrates(self) -> bool:
        return COVER_LOW <= self.coverage <= COVER_HIGH

    @property
    def power_ratio(self) -> float:
        """The smallest ratio r (> 1) with r or 1/r decided by the direction rule in 80 % of the data sets."""
        ok = has_interval(self.low90, self.high90)
        if not ok.any():
            return math.nan
        up = float(np.quantile(1 / self.low90[ok], POWER))  # r * low > 1 in 80 %
        down = float(np.quantile(self.high90[ok], POWER))  # high / r < 1 in 80 %
        return max(up, down)

    @property
    def aa_blocked(self) -> float:
        """The share of data sets the A/A check would block (their 95 % interval wholly beyond the band)."""
        ok = has_interval(self.low95, self.high95)
        if not ok.any():
            return math.nan
        t = prec.AA_TOLERANCE
        lo, hi = self.low95[ok], self.high95[ok]
        return float(((hi < 1 / (1 + t)) | (lo > 1 + t)).mean())

    def row(self) -> dict:
        return {
            "metric": self.metric,
            "method": self.method,
            "scheme": self.scheme,
            "n": self.n,
            "coverage": self.coverage,
            "coverage_interval": [self.coverage_low, self.coverage_high],
            "sets": self.sets,
            "calibrates": self.calibrates,
            "power_ratio": self.power_ratio,
            "aa_blocked": self.aa_blocked,
        }


def cells(s: Series, sizes=SIZES, seed: int = SEED) -> list[Cell]:
    """Every method of the series at every size its run is long enough for (n at most half the repetitions, so
    that subsets differ), both schemes."""
    rng = np.random.default_rng(seed)
    out = []
    for n in (n for n in sizes if 2 * n <= s.n):
        for scheme in ("random", "blocks"):
            idx = subsets(s.n, n, rng, SUBSETS) if scheme == "random" else blocks(s.n, n)
            boot = block_bootstrap(s.n, rng, BOOTSTRAP)
            if scheme == "random":
                inner = subsets(s.n, n, rng, BOOTSTRAP * BOOTSTRAP_SUBSETS).reshape(BOOTSTRAP, BOOTSTRAP_SUBSETS, n)
            else:
                inner = np.broadcast_to(blocks(s.n, n), (BOOTSTRAP, s.n - n + 1, n))
            resampled = _gather(boot, inner)
            for method in s.methods():
                low90, high90 = bounds(s, method, idx, VERDICT_LEVEL)
                low95, high95 = bounds(s, method, idx, LEVEL)
                cover, sets = covered(low95, high95)
                blo, bhi = bounds(s, method, resampled.reshape(-1, n), LEVEL)
                per = _per_resample(blo.reshape(BOOTSTRAP, -1), bhi.reshape(BOOTSTRAP, -1))
                lo, hi = (float(np.nanquantile(per, q)) for q in (0.025, 0.975))
                out.append(Cell(s.metric, method, scheme, n, cover, lo, hi, sets, low90, high90, low95, high95))
    return out


def _gather(boot: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """boot[b, inner[b, j, k]]: the subsets of each bootstrap resample, as indices into the original run."""
    return boot[np.arange(boot.shape[0])[:, None, None], inner]


def _per_resample(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The coverage within each bootstrap resample (rows), NaN for a resample without an interval."""
    ok = has_interval(low, high)
    hit = ((low <= 1) & (1 <= high) & ok).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok.sum(axis=1) > 0, hit / ok.sum(axis=1), np.nan)


def method_of(interval_method: str) -> str:
    """The calibration's name of an Interval's method: both count intervals are its rate ratio."""
    return RATE if interval_method in ("poisson-exact", "quasi-poisson") else interval_method
