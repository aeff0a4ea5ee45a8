"""The statistics of the papers, and the honest ones beside them.

The papers' own (kept for their tables, labelled as theirs):

- summary(): mean, sd (n-1), median, quartiles, min, max, and CIs via the t distribution,
  as the papers computed them over every pooled value (ICPE'18 Table 1: 200 iterations).
- ratio_ci(): the ratio of two variants' means with an unpaired percentile bootstrap over runs:
  for runs that no plan paired (ratio_over_runs() picks it then).

The project's (one Interval type, one rule for too few runs, intervals over independent runs only):

- too_few(n): the one rule. Below MIN_RUNS independent runs no interval, and the text says how
  many there are and how many are needed ("no interval: 3 runs, 5 needed").
- mean_interval(): the interval of one variant's mean over its independent runs (forks, loops,
  repetitions). For a quantity that cannot be negative (times, throughputs) it is the modified Cox
  interval, computed on logs, so neither bound can fall below zero (formula at the function).
- paired_ratio(): numerator/denominator between two variants using the pairing that interleaved
  repetitions create: per repetition d_j = log(mean_num_j / mean_den_j), a t interval over the d_j
  back-transformed, or a BCa bootstrap of their mean where the d_j are skewed.
- Interval.text() / percent(): the one rendering every table uses ("1.003 [0.991; 1.015]", "±1.2 %").
- spread_metric(), peak_rate(): a run's spread as a value of its own ("B1 sd", "kieker-text peaks"), so
  that the papers' words on variance and peaks are judged by the same paired ratios as their means.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

MIN_RUNS = 5  # below this many independent runs per variant, no interval is printed
BOOTSTRAP_RESAMPLES = 9_999  # BCa at 99.9 %: about 5 resamples beyond each bound


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float
    median: float
    q1: float
    q3: float
    min: float
    max: float

    def ci(self, level: float) -> tuple[float, float]:
        """Two-sided t interval of the mean: mean -/+ t(1-(1-level)/2, n-1) * sd / sqrt(n)."""
        if self.n < 2:
            return (math.nan, math.nan)
        half = sps.t.ppf(1 - (1 - level) / 2, self.n - 1) * self.sd / math.sqrt(self.n)
        return (self.mean - half, self.mean + half)


def summary(values: Sequence[float]) -> Summary:
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return Summary(0, *([math.nan] * 7))
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    sd = float(a.std(ddof=1)) if a.size > 1 else math.nan
    return Summary(int(a.size), float(a.mean()), sd, float(med), float(q1), float(q3), float(a.min()), float(a.max()))


@dataclass(frozen=True)
class Ratio:
    value: float
    low: float | None
    high: float | None
    n_num: int
    n_den: int

    @property
    def has_interval(self) -> bool:
        return self.low is not None


def ratio_ci(
    numerator_runs: Sequence[float],
    denominator_runs: Sequence[float],
    level: float = 0.999,
    resamples: int = 10_000,
    seed: int = 0,
) -> Ratio:
    """mean(numerator) / mean(denominator) over per-run means, with a percentile bootstrap
    interval that resamples runs within each side; no interval with fewer than MIN_RUNS per side."""
    num = np.asarray(numerator_runs, dtype=float)
    den = np.asarray(denominator_runs, dtype=float)
    value = float(num.mean() / den.mean()) if num.size and den.size else math.nan
    if num.size < MIN_RUNS or den.size < MIN_RUNS:
        return Ratio(value, None, None, int(num.size), int(den.size))
    rng = np.random.default_rng(seed)
    n = rng.choice(num, size=(resamples, num.size)).mean(axis=1)
    d = rng.choice(den, size=(resamples, den.size)).mean(axis=1)
    low, high = np.percentile(n / d, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return Ratio(value, float(low), float(high), int(num.size), int(den.size))


# --- the one rule for too few runs, and the one interval type


def too_few(n: int, what: str = "runs", needed: int = MIN_RUNS) -> str | None:
    """None when `n` independent runs are enough for an interval, else the sentence every table prints."""
    if n >= needed:
        return None
    return f"no interval: {n} {what}, {needed} needed"


def level_text(level: float) -> str:
    """0.999 -> "99.9 %", 0.95 -> "95 %"."""
    return f"{100 * level:.10g} %"


@dataclass(frozen=True)
class Interval:
    """A point value and its two-sided interval at `level` over `n` independent units (runs or
    repetitions). `low`/`high` are None when there is none, and `reason` then says why (too_few()).
    `method` names how the bounds were computed: "t", "cox-log", "t-log", "bca-log" or "none".
    `note` says what was set aside (repetitions present in one variant only, ...)."""

    value: float
    low: float | None
    high: float | None
    n: int
    level: float
    method: str
    reason: str | None = None
    note: str = ""

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high), or (nan, nan) without an interval: for tables that print n/a."""
        return (self.low, self.high) if self.has_interval else (math.nan, math.nan)

    @property
    def relative_half_width(self) -> float | None:
        """(high - low) / (2 |value|): 0.017 reads "±1.7 %". For a back-transformed log interval
        exp(m -/+ h) this is sinh(h), which is h to within h^2/6."""
        if not self.has_interval or self.value == 0 or math.isnan(self.value):
            return None
        return (self.high - self.low) / (2 * abs(self.value))

    def text(self, digits: int = 3) -> str:
        """The text every table prints: "1.003 [0.991; 1.015]", or "1.003 (no interval: 3 runs, 5 needed)"."""
        v = _num(self.value, digits)
        if not self.has_interval:
            return f"{v} ({self.reason})" if self.reason else v
        return f"{v} [{_num(self.low, digits)}; {_num(self.high, digits)}]"

    def percent(self, digits: int = 1) -> str:
        """The relative half-width, "±1.7 %", or the reason there is none."""
        return percent(self, digits)


def percent(interval: Interval, digits: int = 1) -> str:
    rel = interval.relative_half_width
    if rel is None:
        return interval.reason or "n/a"
    return f"±{100 * rel:.{digits}f} %"


def _num(x: float, digits: int) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:,.{digits}f}"


def t_quantile(level: float, df: int) -> float:
    """t(1 - (1-level)/2, df): the two-sided quantile used throughout."""
    return float(sps.t.ppf(1 - (1 - level) / 2, df))


# --- one variant's mean over its independent runs


def mean_interval(values: Sequence[float], level: float = 0.95, positive: bool = True, what: str = "runs") -> Interval:
    """The mean of independent runs' values with a two-sided interval at `level`.

    positive=True (times, throughputs: cannot be negative) uses the modified Cox interval for the
    mean of a log-normal quantity (Armstrong 1992, "Confidence intervals for arithmetic means of
    lognormally distributed exposures", AIHA J. 53(8); Olsson 2005, "Confidence intervals for the
    mean of a log-normal distribution", J. Statistics Education 13(1)): with y = log x,

        exp( ybar + s_y^2/2  -/+  t(1-a/2, n-1) * sqrt( s_y^2/n + s_y^4 / (2(n-1)) ) ),

    which is positive by construction and, at the small spreads of benchmark runs (CV of a few %),
    equals the t interval to within s_y^2. The value shown is the arithmetic mean of the runs.
    positive=False: the t interval mean -/+ t(1-a/2, n-1) s/sqrt(n).
    No interval below MIN_RUNS runs (too_few)."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    n = int(a.size)
    value = float(a.mean()) if n else math.nan
    reason = too_few(n, what)
    if reason:
        return Interval(value, None, None, n, level, "none", reason)
    if not positive:
        half = t_quantile(level, n - 1) * float(a.std(ddof=1)) / math.sqrt(n)
        return Interval(value, value - half, value + half, n, level, "t")
    if (a <= 0).any():
        raise ValueError(f"mean_interval(positive=True) got a value <= 0 ({a.min()}); pass positive=False")
    y = np.log(a)
    s2 = float(y.var(ddof=1))
    centre = float(y.mean()) + s2 / 2
    half = t_quantile(level, n - 1) * math.sqrt(s2 / n + s2 * s2 / (2 * (n - 1)))
    return Interval(value, math.exp(centre - half), math.exp(centre + half), n, level, "cox-log")


# --- paired ratio of two variants over interleaved repetitions


def log_ratios(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    names: tuple[str, str] = ("numerator", "denominator"),
) -> tuple[list, np.ndarray, str]:
    """The repetitions both variants have (sorted), d_j = log(numerator_j / denominator_j) for each,
    and a note naming the repetitions dropped because only one variant has them ("" if none).
    Keys are repetitions (or (bundle, repetition)); values the repetition's run mean, > 0."""
    common = sorted(set(numerator) & set(denominator), key=repr)
    only_num = len(set(numerator) - set(denominator))
    only_den = len(set(denominator) - set(numerator))
    parts = [
        f"{k} repetition{'s' if k > 1 else ''} only in {name}"
        for k, name in ((only_num, names[0]), (only_den, names[1]))
        if k
    ]
    note = f"unpaired, dropped: {' and '.join(parts)}" if parts else ""
    num = np.array([numerator[k] for k in common], dtype=float)
    den = np.array([denominator[k] for k in common], dtype=float)
    if (num <= 0).any() or (den <= 0).any():
        raise ValueError("paired ratio of a value <= 0: ratios need positive run means")
    return common, np.log(num / den), note


def skewness_se(n: int) -> float:
    """Standard error of the sample skewness G1 of n normal values:
    sqrt(6 n (n-1) / ((n-2)(n+1)(n+3))) (Joanes & Gill 1998, "Comparing measures of sample
    skewness and kurtosis", The Statistician 47(1))."""
    return math.sqrt(6 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))


def is_skewed(d: Sequence[float]) -> bool:
    """The criterion for BCa: |G1| > 2 SE(G1), G1 the adjusted Fisher-Pearson skewness
    (scipy.stats.skew(bias=False)), i.e. skewness distinguishable from 0 at about the 5 % level."""
    a = np.asarray(d, dtype=float)
    if a.size < 3 or float(a.std()) == 0:
        return False
    return abs(float(sps.skew(a, bias=False))) > 2 * skewness_se(int(a.size))


def paired_ratio(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    level: float = 0.95,
    method: str = "auto",
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """Ratio numerator/denominator paired by repetition (keys of the two mappings; values: the
    repetition's run mean of each variant). With d_j = log(num_j / den_j) over the n paired
    repetitions, dbar their mean and s their sd (n-1):

        value = exp(dbar)  (the geometric mean of the per-repetition ratios)
        "t-log":   exp(dbar -/+ t(1-a/2, n-1) s / sqrt(n))
        "bca-log": exp of the BCa bootstrap interval of mean(d) (Efron 1987, "Better bootstrap
                   confidence intervals", JASA 82(397); scipy.stats.bootstrap, seeded)

    method="auto" takes BCa where the d_j are skewed (is_skewed: |G1| > 2 SE), t otherwise.
    Both are computed on logs, so the bounds are positive. Repetitions present in one variant
    only are dropped and the note says so; no interval below MIN_RUNS paired repetitions."""
    if method not in ("auto", "t", "bca"):
        raise ValueError(f"method {method!r}: expected auto, t or bca")
    _, d, note = log_ratios(numerator, denominator, names)
    n = int(d.size)
    value = float(math.exp(d.mean())) if n else math.nan
    reason = too_few(n, "paired repetitions")
    if reason:
        return Interval(value, None, None, n, level, "none", reason, note)
    if method == "bca" or (method == "auto" and is_skewed(d)):
        low, high = _bca_mean(d, level, seed, resamples)
        return Interval(value, math.exp(low), math.exp(high), n, level, "bca-log", None, note)
    half = t_quantile(level, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return Interval(value, math.exp(d.mean() - half), math.exp(d.mean() + half), n, level, "t-log", None, note)


def ratio_over_runs(
    numerator: Mapping[Hashable, float], denominator: Mapping[Hashable, float], level: float = 0.95
) -> Ratio:
    """numerator/denominator over runs keyed by (bundle, repetition): paired_ratio where the two sides
    ran in the same rounds of an interleaved plan (shared keys), else (separate runs, e.g. two
    placements run one after the other) the unpaired ratio_ci, the only honest interval there."""
    if set(numerator) & set(denominator):
        iv = paired_ratio(numerator, denominator, level)
        return Ratio(iv.value, iv.low, iv.high, iv.n, iv.n)
    return ratio_ci(list(numerator.values()), list(denominator.values()), level)


def _bca_mean(d: np.ndarray, level: float, seed: int, resamples: int) -> tuple[float, float]:
    if float(d.std()) == 0:  # every resample has the same mean: the interval is that point
        return float(d[0]), float(d[0])
    # random_state: the keyword both scipy 1.10 (Debian bookworm, 32-bit Pis) and 1.16 take
    res = sps.bootstrap(
        (d,),
        np.mean,
        confidence_level=level,
        n_resamples=resamples,
        method="BCa",
        random_state=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


# --- a run's spread as a run value of its own (claims on the papers' σ, peaks and maxima)

SPREADS = ("sd", "peaks", "max")  # the suffixes of spread metrics: "<metric> sd"
PEAK_ZERO = 0.5  # added to every run's peak count (Haldane-Anscombe): a run without peaks keeps a ratio


def spread_metric(metric: str, spread: str) -> str:
    """The name of a metric's spread: "B1 sd", "kieker-text peaks" (a space: no metric name has one)."""
    if spread not in SPREADS:
        raise ValueError(f"spread {spread!r}: expected one of {', '.join(SPREADS)}")
    return f"{metric} {spread}"


def is_spread(metric: str) -> bool:
    """Whether a run value's metric is a spread (its precision is not what a plan for the means targets)."""
    return metric.rpartition(" ")[2] in SPREADS and " " in metric


def is_side_metric(metric: str) -> bool:
    """A run value that is not the mean of the measured calls: a spread ("B1 sd"), or a count of what the machine
    did around them ("kieker-dump interrupts timer", pirex/analysis/interrupts.py). Claims judge them; the
    per-device table of means and the precision a run plans for leave them out."""
    return is_spread(metric) or " interrupts " in metric


def peak_rate(values: np.ndarray, factor: float, per: float = 1e6) -> float:
    """Peaks per `per` values: values larger than factor x their mean (ICPE'18 section 5: "we count a value as
    a peak if it is larger than 5 times the mean value"), PEAK_ZERO added to the count so that a run without
    peaks has a positive rate and the ratio of two runs' rates is defined (log ratios need both > 0). A rate,
    not a count, so that runs of different lengths compare; nan without values."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return math.nan
    peaks = int(np.count_nonzero(a > factor * float(a.mean())))
    return (peaks + PEAK_ZERO) / a.size * per


# --- the duet


@dataclass(frozen=True)
class DuetInterval(Interval):
    """A duet's ratio (an Interval, method "duet-half-t") and the CPU half's own effect beside it: `half` is
    exp(delta), the factor by which the numerator ran faster or slower on the first half than on the second
    (relative to the denominator), with its interval; None where it could not be estimated."""

    half: Interval | None = None


def duet_ratio(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    halves: Mapping[Hashable, int],
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> DuetInterval:
    """Ratio numerator/denominator over a duet's repetitions with the CPU half as a factor of the model.

    Keys and values as paired_ratio's ((device, bundle, repetition) -> the repetition's mean); halves: key -> +1
    where the numerator ran on the first CPU half, -1 on the second (the duet swaps them every repetition,
    pirex/runner/duet.py). With d_j = log(num_j / den_j), least squares of

        d_j = mu + delta h_j + e_j,   e_j ~ N(0, s^2)

    gives mu (the log ratio with the half's effect taken out) and delta (half the log difference between the
    halves), each with a t interval on n - 2 degrees of freedom, s^2 = RSS / (n - 2):

        value = exp(mu_hat), interval exp(mu_hat -/+ t(1-a/2, n-2) se(mu_hat)); half = exp(delta_hat) likewise.

    Why: swapping halves cancels a half effect from the mean only for an even, balanced count, and leaves it in
    the spread of the d_j either way: with delta = 2 % and sigma = 0.5 %, five repetitions give an unmodelled
    paired t interval of about +-2.7 %, the model about +-0.7 % (Bulej et al. 2020, "Duet Benchmarking:
    Improving Measurement Accuracy in the Cloud", ICPE; the model is the two-period crossover's, Senn 2002,
    "Cross-over Trials in Clinical Research", ch. 3). A key with half 0 (a pair that ran alone) adds to mu only.
    No interval below MIN_RUNS paired repetitions, nor when one half has no repetition: then the half's effect
    cannot be told from the ratio, and the reason says so."""
    common, d, note = log_ratios(numerator, denominator, names)
    missing = [k for k in common if k not in halves]
    if missing:
        raise ValueError(f"duet_ratio: no CPU half for {len(missing)} repetition(s), e.g. {missing[0]!r}")
    h = np.array([halves[k] for k in common], dtype=float)
    if not np.isin(h, (-1, 0, 1)).all():
        raise ValueError(f"duet_ratio: halves must be +1, -1 (or 0 for a pair that ran alone), got {sorted(set(h))}")
    n = int(d.size)
    value = float(math.exp(d.mean())) if n else math.nan
    reason = too_few(n, "paired repetitions")
    if reason is None and not ((h == 1).any() and (h == -1).any()):
        reason = (
            f"no interval: the {names[0]} ran on one CPU half in all {n} paired repetitions, so the half's effect "
            "cannot be told from the ratio (a duet swaps the halves every repetition: run at least two)"
        )
    if reason:
        return DuetInterval(value, None, None, n, level, "none", reason, note)
    x = np.column_stack([np.ones(n), h])
    coef, _, _, _ = np.linalg.lstsq(x, d, rcond=None)
    df = n - 2
    s2 = float(np.sum((d - x @ coef) ** 2)) / df
    se = np.sqrt(s2 * np.diag(np.linalg.inv(x.T @ x)))
    q = t_quantile(level, df)
    mu, delta = float(coef[0]), float(coef[1])
    counts = f"{int((h == 1).sum())} on the first half, {int((h == -1).sum())} on the second"
    lo, hi = np.exp(coef - q * se), np.exp(coef + q * se)
    half = Interval(math.exp(delta), float(lo[1]), float(hi[1]), n, level, "duet-half-t", None, counts)
    return DuetInterval(math.exp(mu), float(lo[0]), float(hi[0]), n, level, "duet-half-t", None, note, half=half)


def design_ratio(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    halves: Mapping[Hashable, int] | None,
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """The ratio the design calls for: duet_ratio where any paired repetition ran on a CPU half (a duet's),
    else paired_ratio's t interval on logs (pairs that ran one after the other)."""
    if halves and any(halves.get(k) for k in set(numerator) & set(denominator)):
        return duet_ratio(numerator, denominator, halves, level, names)
    return paired_ratio(numerator, denominator, level, method="t", names=names)


def difference_test(a: Interval, b: Interval) -> tuple[float, float]:
    """Whether two independent ratios differ (one comparison measured by two designs): on logs,

        z = (log a - log b) / sqrt(se_a^2 + se_b^2),

    each se recovered from its interval exp(m -/+ q se) as log(high / low) / (2 q), q the t quantile it was built
    with (the interval's df where it says them, else n - 1 for "t-log", n - 2 for the duet's "duet-half-t");
    p two-sided from t on the
    Welch-Satterthwaite degrees of freedom (se_a^2 + se_b^2)^2 / (se_a^4 / df_a + se_b^4 / df_b), since at five
    repetitions a side the normal's p would be too small. Returns (z, p).

    Not "one value inside the other's interval": with no difference at all and equal widths, one point lies
    outside the other's 95 % interval 2 Phi(-1.96 / sqrt 2) = 16.6 % of the time, and the rate moves with the
    widths (Schenker & Gentleman 2001, "On judging the significance of differences by examining the overlap
    between confidence intervals", Am. Statist. 55(3))."""
    if not (a.has_interval and b.has_interval):
        raise ValueError("difference_test: both ratios need an interval")
    (se_a, df_a), (se_b, df_b) = _log_se(a), _log_se(b)
    var = se_a**2 + se_b**2
    if var == 0:
        return (0.0 if a.value == b.value else math.copysign(math.inf, a.value - b.value)), float(a.value == b.value)
    z = (math.log(a.value) - math.log(b.value)) / math.sqrt(var)
    df = var**2 / (se_a**4 / df_a + se_b**4 / df_b)
    return z, float(2 * sps.t.sf(abs(z), df))


def _log_se(iv: Interval) -> tuple[float, int]:
    """The standard error on the log scale an interval exp(m -/+ q se) was built with, and its degrees of freedom."""
    df = getattr(iv, "df", None) or {"t-log": iv.n - 1, "duet-half-t": iv.n - 2}.get(iv.method)
    if df is None:
        raise ValueError(f"difference_test: a {iv.method!r} interval does not say its standard error")
    return math.log(iv.high / iv.low) / (2 * t_quantile(iv.level, df)), df
