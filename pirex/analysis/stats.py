"""The statistics of the papers, and the honest ones beside them.

The papers' own (kept for their tables, labelled as theirs):

- summary(): mean, sd (n-1), median, quartiles, min, max, and CIs via the t distribution,
  as the papers computed them over every pooled value (ICPE'18 Table 1: 200 iterations).

The project's (one Interval type, one rule for too few runs, intervals over independent runs only).
Every interval is one of a few named methods, each calibrated by simulation at n = 5, 10 and 30
(pirex/analysis/test_calibration.py; the table and the references: docs/statistics.md):

- too_few(n): the one rule. Below MIN_RUNS independent runs no interval, and the text says how
  many there are and how many are needed ("no interval: 3 runs, 5 needed").
- mean_interval() "cox-log" (or "t"): one variant's mean over its independent runs (forks, loops,
  repetitions). For a quantity that cannot be negative (times, throughputs) it is the modified Cox
  interval, computed on logs, so neither bound can fall below zero (formula at the function).
- paired_ratio() "t-log": numerator/denominator between two variants using the pairing that
  interleaved repetitions create: per repetition d_j = log(mean_num_j / mean_den_j), a t interval
  over the d_j, back-transformed. The one method at every n pirex uses: no bootstrap (at five
  repetitions BCa covered 83 % of a nominal 95 %, 69 % among the samples it was chosen for, and the
  unpaired percentile bootstrap 88 %; docs/statistics.md).
- welch_ratio() "welch-log": the ratio of two independent groups (runs no plan paired: two devices,
  two placements run one after the other), Welch's t on logs; ratio_over_runs() picks it or
  paired_ratio() by whether the runs share rounds.
- rate_ratio() "poisson-exact" or "quasi-poisson": the ratio of two rates of events (peaks,
  interrupts) from their counts and exposures (calls), never from rates with a constant added.
- Interval.text() / percent(): the one rendering every table uses ("1.003 [0.991; 1.015]", "±1.2 %").
- The vectorised cores (t_log_bounds, welch_log_bounds, cox_log_bounds, rate_bounds, duet_fit) compute the
  bounds of many data sets at once: the functions above call them on one, the calibrations (by simulation,
  and `pirex calibrate` on a machine's own repetitions) on thousands.
- spread_metric(), peak_count(): a run's spread as a value of its own ("B1 sd", "kieker-text peaks"), so
  that the papers' words on variance and peaks are judged by ratios like their means.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import special as spf
from scipy import stats as sps

MIN_RUNS = 5  # below this many independent runs per variant, no interval is printed


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


# --- the one rule for too few runs, and the one interval type


def too_few(n: int, what: str = "runs", needed: int = MIN_RUNS) -> str | None:
    """None when `n` independent runs are enough for an interval, else the sentence every table prints."""
    if n >= needed:
        return None
    return f"no interval: {n} {what}, {needed} needed"


def too_few_of(sizes: Mapping[str, int], what: str = "runs") -> str | None:
    """too_few's sentence for every side of a comparison below MIN_RUNS, naming it
    ("no interval: 4 runs of C, 5 needed"); None when every side has enough."""
    reasons = [r for name, n in sizes.items() if (r := too_few(n, f"{what} of {name}"))]
    return "; ".join(reasons) or None


def level_text(level: float) -> str:
    """0.999 -> "99.9 %", 0.95 -> "95 %", 0.9451327 -> "94.5 %", 0.99998 -> "99.998 %": three significant digits,
    more only where fewer would round a level below 1 up to 100 %."""
    x = 100 * level
    for digits in range(3, 12):
        t = f"{x:.{digits}g}"
        if float(t) < 100 or x >= 100:
            return f"{t} %"
    return f"{x:.12g} %"


@dataclass(frozen=True)
class Interval:
    """A point value and its two-sided interval at `level` over `n` independent units (runs or
    repetitions). `low`/`high` are None when there is none, and `reason` then says why (too_few()).
    `method` names how the bounds were computed: "t", "cox-log", "t-log", "welch-log", "poisson-exact",
    "quasi-poisson" (docs/statistics.md), or "none".
    `note` says what was set aside (repetitions present in one variant only, ...)."""

    value: float
    low: float | None
    high: float | None
    n: int
    level: float
    method: str
    reason: str | None = None
    note: str = ""
    df: float | None = None  # a t interval's degrees of freedom (Welch's are not n - 1): p-values from the bounds

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
    low, high = cox_log_bounds(np.log(a), level)
    return Interval(value, float(low), float(high), n, level, "cox-log")


def cox_log_bounds(y: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The modified Cox interval of mean_interval() over the last axis of y = log(values): one data set
    or many at once (the calibration's)."""
    y = np.asarray(y, dtype=float)
    n = y.shape[-1]
    s2 = y.var(axis=-1, ddof=1)
    centre = y.mean(axis=-1) + s2 / 2
    half = t_quantile(level, n - 1) * np.sqrt(s2 / n + s2 * s2 / (2 * (n - 1)))
    return np.exp(centre - half), np.exp(centre + half)


# --- paired ratio of two variants over interleaved repetitions


def log_ratios(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    names: tuple[str, str] = ("numerator", "denominator"),
) -> tuple[list, np.ndarray, str]:
    """The repetitions both variants have (sorted), d_j = log(numerator_j / denominator_j) for each,
    and a note naming the repetitions dropped because only one variant has them ("" if none).
    Keys are repetitions (or (bundle, repetition)); values the repetition's run mean, > 0."""
    common, note = _paired_keys(numerator, denominator, names)
    num = np.array([numerator[k] for k in common], dtype=float)
    den = np.array([denominator[k] for k in common], dtype=float)
    if (num <= 0).any() or (den <= 0).any():
        raise ValueError("paired ratio of a value <= 0: ratios need positive run means")
    return common, np.log(num / den), note


def paired_ratio(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    level: float = 0.95,
    method: str = "t",
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """Ratio numerator/denominator paired by repetition (keys of the two mappings; values: the
    repetition's run mean of each variant). With d_j = log(num_j / den_j) over the n paired
    repetitions, dbar their mean and s their sd (n-1):

        value = exp(dbar)  (the geometric mean of the per-repetition ratios)
        "t-log": exp(dbar -/+ t(1-a/2, n-1) s / sqrt(n))

    computed on logs, so the bounds are positive; exact when the log ratios are normal, and it covers
    at 94.9-95.2 % of a nominal 95 % at n = 5, 10 and 30 for normal and log-normal run means
    (test_calibration.py). There is no bootstrap: a BCa interval of mean(d) (Efron 1987, JASA 82(397))
    covers 69 % at n = 5 among the samples that look skewed, percentile intervals undercover below ~30
    (Hall 1992, "The Bootstrap and Edgeworth Expansion"); method may only be "t" (kept so callers can
    name it). Repetitions present in one variant only are dropped and the note says so; no interval
    below MIN_RUNS paired repetitions."""
    if method != "t":
        raise ValueError(
            f"method {method!r}: the paired ratio's only method is t on logs (no bootstrap covers at n = 5)"
        )
    _, d, note = log_ratios(numerator, denominator, names)
    n = int(d.size)
    value = float(math.exp(d.mean())) if n else math.nan
    reason = too_few(n, "paired repetitions")
    if reason:
        return Interval(value, None, None, n, level, "none", reason, note)
    low, high = t_log_bounds(d, level)
    return Interval(value, float(low), float(high), n, level, "t-log", None, note, n - 1)


def t_log_bounds(d: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """paired_ratio's bounds exp(dbar -/+ t(1-a/2, n-1) s / sqrt(n)) over the last axis of the log ratios d:
    one data set or many at once (the calibration's)."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    half = t_quantile(level, n - 1) * d.std(axis=-1, ddof=1) / math.sqrt(n)
    return np.exp(mean - half), np.exp(mean + half)


# --- the ratio of two independent groups


def positive_logs(values: Sequence[float], name: str) -> np.ndarray:
    """log of the values (NaN dropped); ValueError naming the side for a value <= 0."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    if (a <= 0).any():
        raise ValueError(f"ratio of {name}'s value {a.min()} <= 0: ratios need positive values (times, throughputs)")
    return np.log(a)


def welch_logs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mean(x) - mean(y) over the last axis, its standard error and the Welch-Satterthwaite degrees of
    freedom (inf where neither side varies): one data set or many at once."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    nx, ny = x.shape[-1], y.shape[-1]
    vx, vy = x.var(axis=-1, ddof=1) / nx, y.var(axis=-1, ddof=1) / ny
    se = np.sqrt(vx + vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(se > 0, (vx + vy) ** 2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1)), np.inf)
    return x.mean(axis=-1) - y.mean(axis=-1), se, df


def welch_log_bounds(x: np.ndarray, y: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """welch_ratio's bounds exp(d -/+ t(1-a/2, df) se) from the logs x and y (last axis: the runs)."""
    d, se, df = welch_logs(x, y)
    half = np.where(se > 0, sps.t.ppf(1 - (1 - level) / 2, df) * se, 0.0)
    return np.exp(d - half), np.exp(d + half)


def welch_ratio(
    numerator: Sequence[float],
    denominator: Sequence[float],
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """numerator/denominator of two independent groups (device A's repetition means over device B's, runs
    of two placements run one after the other). With x = log(numerator), y = log(denominator), sizes n_x,
    n_y and sample variances s_x^2, s_y^2 (n-1), Welch's t with the Welch-Satterthwaite degrees of freedom
    (Welch 1947, "The generalization of 'Student's' problem when several different population variances
    are involved", Biometrika 34):

        d = xbar - ybar,   se = sqrt(s_x^2/n_x + s_y^2/n_y),
        df = se^4 / ((s_x^2/n_x)^2/(n_x-1) + (s_y^2/n_y)^2/(n_y-1))
        value = exp(d)   (the ratio of the geometric means, not of the arithmetic ones)
        interval exp(d -/+ t(1-(1-level)/2, df) se),  method "welch-log"

    It covers 94.7-95.7 % of a nominal 95 % at 5, 10 and 30 runs a side (test_calibration.py), where the
    percentile bootstrap of a ratio of means it replaces covered 87.3 % at 5. n is n_x + n_y. No interval
    below MIN_RUNS values on either side (the reason names the side); no spread on either side gives a
    point interval. Values <= 0: ValueError."""
    x, y = positive_logs(numerator, names[0]), positive_logs(denominator, names[1])
    n = int(x.size + y.size)
    value = math.exp(x.mean() - y.mean()) if x.size and y.size else math.nan
    reason = too_few_of({names[0]: int(x.size), names[1]: int(y.size)})
    if reason:
        return Interval(value, None, None, n, level, "none", reason)
    low, high = welch_log_bounds(x, y, level)
    return Interval(value, float(low), float(high), n, level, "welch-log", df=float(welch_logs(x, y)[2]))


def ratio_over_runs(
    numerator: Mapping[Hashable, float],
    denominator: Mapping[Hashable, float],
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """numerator/denominator over runs keyed by (bundle, repetition): paired_ratio where the two sides
    ran in the same rounds of an interleaved plan (shared keys), else (separate runs, e.g. two
    placements run one after the other) welch_ratio, the interval for independent groups."""
    if set(numerator) & set(denominator):
        return paired_ratio(numerator, denominator, level, names=names)
    return welch_ratio(list(numerator.values()), list(denominator.values()), level, names)


# --- rates of events: counts over an exposure (peaks per call, interrupts per call)


class Count(NamedTuple):
    """A count of events and the exposure it was counted over (calls, seconds): a rate without rounding."""

    count: int
    exposure: float


# The dispersion test's level: counts more variable than Poisson over the repetitions at this level get the
# quasi-Poisson interval. Liberal on purpose (X^2 above its median under Poisson, i.e. a dispersion estimate of
# about 1 or more): a missed overdispersion makes the exact interval too narrow, a false alarm only widens it. At
# 0.2 the paired negative binomial counts of test_calibration.py were covered 93 % at n = 5; at 0.5, 95 %.
DISPERSION_ALPHA = 0.5
NEWTON_STEPS = 30  # the block model's one-parameter logistic fit converges in a few from the pooled start


def rate_ratio(
    numerator: Mapping[Hashable, Count],
    denominator: Mapping[Hashable, Count],
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> Interval:
    """The ratio R of two rates of events, numerator/denominator, from each repetition's count and exposure
    (keys: repetitions, e.g. (device, bundle, repetition) as precision.run_counts gives them; values: Count).
    Never from rates with 0.5 added to the counts (Haldane-Anscombe): that gives 0 peaks against 1 per
    repetition over five repetitions 0.333 [0.332; 0.334], where this gives 0 [0; 1.09] (exact test p = 0.062).

    Shared keys pair the sides: the repetition is a block (whatever a repetition does to both sides' rates
    cancels), keys of one side only are dropped and the note says so. Without shared keys the sides are
    independent groups. With Y, E the summed counts and exposures of each side:

    "poisson-exact": given the total T = Y_n + Y_d, Y_n is binomial(T, p) with p = E_n R / (E_n R + E_d)
        when the counts are Poisson (and, paired, when each block's exposure ratio is the same, as when both
        sides run the same calls). The Clopper-Pearson interval of p (Clopper & Pearson 1934, Biometrika
        26(4)), mapped by R = p E_d / ((1 - p) E_n), is the exact conditional interval (Lehmann & Romano,
        "Testing Statistical Hypotheses", 4.5); value (Y_n/E_n)/(Y_d/E_d): 0 with an upper bound when the
        numerator had no events, inf with a lower bound when the denominator had none. Discrete, hence
        conservative: it covers at least its level.
    "quasi-poisson": when the counts vary more between repetitions than Poisson allows (Pearson's X^2 of
        the Poisson model over the repetitions beyond the chi-square's 1 - DISPERSION_ALPHA quantile), the
        Poisson log-linear model with log(exposure) as offset (McCullagh & Nelder 1989, "Generalized Linear
        Models", 6.2 and 4.5), paired: a factor per repetition (block), unpaired: one rate per side, with the
        dispersion phi = X^2 / df estimated and the t quantile on df:
            log R_hat -/+ t(1-a/2, df) sqrt(V),  paired: df = J - 1, V = max(phi / I, V_robust),
                                                     I = sum_j T_j p_j (1 - p_j);
                                                 unpaired: df = J_n + J_d - 2, V = phi (1/Y_n + 1/Y_d).
        Paired, V_robust = J/(J-1) sum_j (y_nj - T_j p_j)^2 / I^2 is the sandwich (robust) variance of the
        estimating equation (Liang & Zeger 1986, Biometrika 73(1)): where the repetitions' counts differ in size,
        their dispersion differs too (negative binomial: var = mu + mu^2/k), and phi / I alone covered 93 %.
        Needs events on both sides; with none on one side the exact interval is given.
    The block model's estimate equals the Poisson GLM's with the repetition as a factor (conditioning on
    the block totals; checked against statsmodels in test_stats.py). No interval below MIN_RUNS (paired)
    repetitions, nor without any event. Counts must be integers >= 0, exposures > 0 (ValueError)."""
    paired = bool(set(numerator) & set(denominator))
    if paired:
        keys, note = _paired_keys(numerator, denominator, names)
        num, den = [[side[k] for k in keys] for side in (numerator, denominator)]
        n = len(keys)
        reason = too_few(n, "paired repetitions")
    else:
        num, den, note = list(numerator.values()), list(denominator.values()), ""
        n = len(num) + len(den)
        reason = too_few_of({names[0]: len(num), names[1]: len(den)}, "repetitions")
    (yn, en), (yd, ed) = _counts(num, names[0]), _counts(den, names[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float((yn.sum() / en.sum()) / (yd.sum() / ed.sum())) if yn.size and yd.size else math.nan
    if reason is None and yn.sum() + yd.sum() == 0:
        reason = f"no interval: no events in {n} repetitions of either side"
    if reason:
        return Interval(value, None, None, n, level, "none", reason, note)
    v, low, high, df = rate_bounds(yn[None], en[None], yd[None], ed[None], level, paired)
    if np.isnan(df[0]):
        return Interval(float(v[0]), float(low[0]), float(high[0]), n, level, "poisson-exact", None, note)
    return Interval(float(v[0]), float(low[0]), float(high[0]), n, level, "quasi-poisson", None, note, float(df[0]))


def _paired_keys(
    numerator: Mapping[Hashable, object], denominator: Mapping[Hashable, object], names: tuple[str, str]
) -> tuple[list, str]:
    """The keys both sides have (sorted), and the note naming the repetitions of one side only ("" if none)."""
    common = sorted(set(numerator) & set(denominator), key=repr)
    only = ((len(set(numerator) - set(denominator)), names[0]), (len(set(denominator) - set(numerator)), names[1]))
    parts = [f"{k} repetition{'s' if k > 1 else ''} only in {name}" for k, name in only if k]
    return common, f"unpaired, dropped: {' and '.join(parts)}" if parts else ""


def _counts(counts: Sequence[Count], name: str) -> tuple[np.ndarray, np.ndarray]:
    y = np.array([c.count for c in counts], dtype=float)
    e = np.array([c.exposure for c in counts], dtype=float)
    if (y < 0).any() or (y != np.round(y)).any():
        raise ValueError(f"rate ratio: {name}'s counts must be whole numbers >= 0, got {y.tolist()}")
    if not (e > 0).all():
        raise ValueError(f"rate ratio: {name}'s exposures must be > 0 (calls, seconds), got {e.tolist()}")
    return y, e


def rate_bounds(
    yn: np.ndarray, en: np.ndarray, yd: np.ndarray, ed: np.ndarray, level: float, paired: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """rate_ratio's value, low, high and the quasi-Poisson interval's degrees of freedom (NaN where the exact
    interval was taken), for many data sets at once: counts y and exposures e of shape (sets, repetitions),
    paired by column when `paired`."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tn, sn, td, sd = yn.sum(-1), en.sum(-1), yd.sum(-1), ed.sum(-1)
        pooled = (tn / sn) / (td / sd)
        low, high = _exact_bounds(tn, sn, td, sd, level)
        beta, inv_info, x2, df, robust = (_block_fit if paired else _sides_fit)(yn, en, yd, ed)
        dfs = np.maximum(df, 1)
        over = (tn > 0) & (td > 0) & (df >= 1) & (sps.chi2.sf(x2, dfs) < DISPERSION_ALPHA)
        half = sps.t.ppf(1 - (1 - level) / 2, dfs) * np.sqrt(np.maximum(x2 / dfs * inv_info, robust))
        value = np.where(over, np.exp(beta), pooled)
        low = np.where(over, np.exp(beta - half), low)
        high = np.where(over, np.exp(beta + half), high)
    return value, low, high, np.where(over, dfs, np.nan)


def _exact_bounds(tn, sn, td, sd, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson bounds of p = Y_n / T mapped to R = p E_d / ((1 - p) E_n): 0 when Y_n = 0, inf when Y_d = 0."""
    a = (1 - level) / 2
    total = tn + td
    p_low = np.where(tn > 0, sps.beta.ppf(a, np.maximum(tn, 1), td + 1), 0.0)
    p_high = np.where(td > 0, sps.beta.ppf(1 - a, tn + 1, np.maximum(td, 1)), 1.0)
    p_low, p_high = np.where(total > 0, p_low, np.nan), np.where(total > 0, p_high, np.nan)
    return p_low / (1 - p_low) * sd / sn, p_high / (1 - p_high) * sd / sn


def _block_fit(yn, en, yd, ed) -> tuple[np.ndarray, ...]:
    """The Poisson model with a factor per repetition, conditioned on each repetition's total T_j: y_nj is
    binomial(T_j, p_j), logit p_j = beta + log(e_nj / e_dj). beta by Newton's method from the pooled log ratio;
    its inverse information, Pearson's X^2, its degrees of freedom (repetitions with events, less one) and the
    robust (sandwich) variance of beta."""
    total = yn + yd
    offset = np.log(en / ed)
    beta = np.log((yn.sum(-1) / en.sum(-1)) / (yd.sum(-1) / ed.sum(-1)))
    beta = np.where(np.isfinite(beta), beta, 0.0)
    for _ in range(NEWTON_STEPS):
        p = spf.expit(beta[..., None] + offset)
        info = (total * p * (1 - p)).sum(-1)
        step = (yn - total * p).sum(-1) / info
        beta = beta + np.where(np.isfinite(step), step, 0.0)
        if np.nanmax(np.abs(step), initial=0.0) < 1e-12:
            break
    p = spf.expit(beta[..., None] + offset)
    var = total * p * (1 - p)
    resid2 = (yn - total * p) ** 2
    x2 = np.where(total > 0, resid2 / var, 0.0).sum(-1)
    blocks = (total > 0).sum(-1)
    info = var.sum(-1)
    robust = blocks / np.maximum(blocks - 1, 1) * resid2.sum(-1) / info**2
    return beta, 1 / info, x2, blocks - 1, robust


def _sides_fit(yn, en, yd, ed) -> tuple[np.ndarray, ...]:
    """The Poisson model with one rate per side: the pooled log ratio, 1/Y_n + 1/Y_d, Pearson's X^2 of each
    side's counts against its exposures, J_n + J_d - 2 degrees of freedom, and no robust variance (0)."""
    x2 = 0.0
    for y, e in ((yn, en), (yd, ed)):
        mu = e * (y.sum(-1) / e.sum(-1))[..., None]
        x2 = x2 + np.where(mu > 0, (y - mu) ** 2 / mu, 0.0).sum(-1)
    tn, td = yn.sum(-1), yd.sum(-1)
    beta = np.log((tn / en.sum(-1)) / (td / ed.sum(-1)))
    df = np.full(np.shape(tn), yn.shape[-1] + yd.shape[-1] - 2)
    return beta, 1 / tn + 1 / td, x2, df, np.zeros(np.shape(tn))


# --- a run's spread as a run value of its own (claims on the papers' σ, peaks and maxima)

SPREADS = ("sd", "peaks", "max")  # the suffixes of spread metrics: "<metric> sd"


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


def peak_count(values: np.ndarray, factor: float) -> int:
    """How many values are larger than factor x their mean (ICPE'18 section 5: "we count a value as a peak if it
    is larger than 5 times the mean value"). A count with its exposure (the values' number), not a rate with a
    constant added: rate_ratio compares counts, and a run without peaks counts 0."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return 0
    return int(np.count_nonzero(a > factor * float(a.mean())))


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
    coef, se = (a[..., 0, :] for a in duet_fit(d[None], h[None]))
    df = n - 2
    q = t_quantile(level, df)
    mu, delta = float(coef[0]), float(coef[1])
    counts = f"{int((h == 1).sum())} on the first half, {int((h == -1).sum())} on the second"
    lo, hi = np.exp(coef - q * se), np.exp(coef + q * se)
    half = Interval(math.exp(delta), float(lo[1]), float(hi[1]), n, level, "duet-half-t", None, counts, df)
    return DuetInterval(math.exp(mu), float(lo[0]), float(hi[0]), n, level, "duet-half-t", None, note, df, half)


def duet_fit(d: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """duet_ratio's least squares of d = mu + delta h + e over the last axis, for one data set or many at once (the
    calibration's): the coefficients (mu, delta) and their standard errors on n - 2 df, each of shape (..., 2).
    The 2 x 2 normal equations solved in closed form, so that many sets cost one pass; a set whose halves are all
    one side (a singular design) gets NaN."""
    d, h = np.asarray(d, dtype=float), np.asarray(h, dtype=float)
    n = d.shape[-1]
    sh, shh = h.sum(-1), (h * h).sum(-1)
    sd, shd = d.sum(-1), (h * d).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        det = n * shh - sh * sh
        det = np.where(np.abs(det) < 1e-12, np.nan, det)
        mu = (shh * sd - sh * shd) / det
        delta = (n * shd - sh * sd) / det
        s2 = ((d - mu[..., None] - delta[..., None] * h) ** 2).sum(-1) / (n - 2)
        se = np.sqrt(np.stack([s2 * shh / det, s2 * n / det], axis=-1))
    return np.stack([mu, delta], axis=-1), se


def duet_log_bounds(d: np.ndarray, h: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """duet_ratio's bounds exp(mu_hat -/+ t(1-a/2, n-2) se(mu_hat)) over the last axis: many sets at once."""
    coef, se = duet_fit(d, h)
    q = t_quantile(level, np.asarray(d).shape[-1] - 2)
    return np.exp(coef[..., 0] - q * se[..., 0]), np.exp(coef[..., 0] + q * se[..., 0])


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


def _log_se(iv: Interval) -> tuple[float, float]:
    if (found := log_se(iv)) is None:
        raise ValueError(f"difference_test: a {iv.method!r} interval does not say its standard error")
    return found


def log_se(iv: Interval) -> tuple[float, float] | None:
    """The standard error on the log scale a t interval exp(m -/+ q se) was built with, and its degrees of freedom
    (the interval's df where it says them, else n - 1 for "t-log", n - 2 for "duet-half-t"); None for an interval
    that is not a t interval on logs (an exact one for counts), or has no bounds."""
    df = iv.df if iv.df is not None else {"t-log": iv.n - 1, "duet-half-t": iv.n - 2}.get(iv.method)
    if df is None or df < 1 or not iv.has_interval or iv.low <= 0:
        return None
    return math.log(iv.high / iv.low) / (2 * t_quantile(iv.level, df)), float(df)


def holm(pvalues: Sequence[float], alpha: float, family: int | None = None) -> list[bool]:
    """Which of the p-values Holm's step-down rejects at alpha over `family` tests (default: these; more when they
    are part of a larger family): the smallest against alpha/family, the next alpha/(family-1), ..., until one fails,
    and it and all larger are kept (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J.
    Statist. 6(2)). Valid whatever the dependence between the tests."""
    family = len(pvalues) if family is None else family
    rejected = [False] * len(pvalues)
    for step, j in enumerate(sorted(range(len(pvalues)), key=lambda j: pvalues[j])):
        if pvalues[j] >= alpha / (family - step):
            break
        rejected[j] = True
    return rejected
