"""Statistics across devices: whether a result holds from one machine to another.

Claims that span machines ("three identical Pis give the same results", SSP'17; "a Pi against a
server"; "SD card against USB disk") compare devices whose runs are independent of each other: no
repetition of one device is paired with one of another, so the paired ratios of stats.py do not apply.

- between(): the ratio of two independent groups' means (Welch's t on logs).
- tost(): whether two groups are equivalent within a margin (Schuirmann's two one-sided tests).
- agree(): whether every device agrees with every other, and which device is the odd one.
- decompose_devices(): the Kalibera & Jones variance decomposition with a device level on top; top_share(): the
  device level's share with an interval (a chi-square interval with k - 1 degrees of freedom from k devices).
- device_means(): per device, its repetition means: what agree(), tost() and between() are fed with.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from pirex.analysis import precision, stats
from pirex.analysis.interface import RunValue
from pirex.analysis.verdicts import DIFFERS, HOLDS, INCONCLUSIVE

DEVICE_LEVEL_NAMES = ("device", "repetition", "fork", "iteration")  # top first; MooBench: loop for fork


# --- two independent groups


def between(
    numerator: Sequence[float],
    denominator: Sequence[float],
    level: float = 0.95,
    names: tuple[str, str] = ("numerator", "denominator"),
) -> stats.Interval:
    """numerator/denominator of two independent groups (e.g. device A's repetition means over device B's):
    stats.welch_ratio, Welch's t on logs (method "welch-log"; the formula, its reference and its calibration
    are there). n is n_x + n_y; no interval below MIN_RUNS values on either side (the reason names the side);
    values <= 0: ValueError."""
    return stats.welch_ratio(numerator, denominator, level, names)


def _welch(a: Sequence[float], b: Sequence[float], names: tuple[str, str]) -> tuple[float, float, float]:
    """d = mean(log a) - mean(log b), its standard error and Welch's degrees of freedom (stats.welch_logs)."""
    d, se, df = stats.welch_logs(stats.positive_logs(a, names[0]), stats.positive_logs(b, names[1]))
    return float(d), float(se), float(df)


@dataclass(frozen=True)
class Tost:
    """Two one-sided tests of a/b within [1/(1 + margin), 1 + margin]. interval: between() at 1 - 2 alpha;
    p_low, p_high: the one-sided p-values against the lower and the upper bound; p: their max.
    equivalent: the interval lies inside the margin (p < alpha); outside: it lies wholly outside it.
    reason: why there is no test (too few runs), else None."""

    interval: stats.Interval
    p_low: float
    p_high: float
    p: float
    equivalent: bool
    outside: bool
    reason: str | None = None


def tost(
    a: Sequence[float],
    b: Sequence[float],
    margin: float,
    level: float = 0.95,
    names: tuple[str, str] = ("a", "b"),
) -> Tost:
    """Equivalence of two independent groups within `margin` on the ratio scale (Schuirmann 1987, "A
    comparison of the two one-sided tests procedure and the power approach for assessing the equivalence
    of average bioavailability", J. Pharmacokinet. Biopharm. 15(6)). With alpha = 1 - level and d, se, df
    of between():

        p_low  = P(T_df > (d + log(1 + margin)) / se)    H0: a/b <= 1/(1 + margin)
        p_high = P(T_df < (d - log(1 + margin)) / se)    H0: a/b >= 1 + margin

    a and b are equivalent iff both are below alpha, i.e. iff the (1 - 2 alpha) interval of between()
    lies inside [1/(1 + margin), 1 + margin] (level 0.95: the 90 % interval). The band is symmetric on the log
    scale, so tost(a, b) and tost(b, a) decide alike."""
    if not 0 < margin < 1:
        raise ValueError(f"margin {margin}: expected a relative margin between 0 and 1, e.g. 0.05 for ±5 %")
    alpha = 1 - level
    interval = between(a, b, 1 - 2 * alpha, names)
    if not interval.has_interval:
        return Tost(interval, math.nan, math.nan, math.nan, False, False, interval.reason)
    d, se, df = _welch(a, b, names)
    low, high = -math.log1p(margin), math.log1p(margin)  # [1/(1+m), 1+m]: symmetric on the log scale
    if se > 0:
        p_low, p_high = float(sps.t.sf((d - low) / se, df)), float(sps.t.cdf((d - high) / se, df))
    else:  # no spread: each null hypothesis is either certainly false or not rejected at all
        p_low, p_high = float(d <= low), float(d >= high)
    equivalent = interval.low >= 1 / (1 + margin) and interval.high <= 1 + margin
    # outside: above the band OR below it, each side at alpha/2 (Bonferroni): read off the 1 - 2 alpha interval,
    # the two sides would together err up to 2 alpha
    outside = _union_p(p_low, p_high) < alpha
    return Tost(interval, p_low, p_high, max(p_low, p_high), equivalent, outside)


def _union_p(p_low: float, p_high: float) -> float:
    """The p-value of "wholly outside the band": twice the smaller of "below 1/(1+m)" (1 - p_low) and "above 1+m"
    (1 - p_high), at most 1."""
    return min(1.0, 2 * min(1 - p_low, 1 - p_high))


def p_outside(t: Tost) -> float:
    """The p-value of "wholly outside the band" (tost's `outside` is p_outside < alpha): what Holm's adjustment
    orders the pairs by."""
    return _union_p(t.p_low, t.p_high) if not math.isnan(t.p) else 1.0


# --- many devices


@dataclass(frozen=True)
class PairResult:
    a: str
    b: str
    tost: Tost  # a/b


@dataclass(frozen=True)
class Agreement:
    """verdict: HOLDS (every pair equivalent), DIFFERS (some pair wholly outside the margin) or INCONCLUSIVE
    (pirex.analysis.verdicts); reason: one line saying why; odd: the devices in every pair that lies outside."""

    verdict: str
    reason: str
    pairs: tuple[PairResult, ...]
    odd: tuple[str, ...]


def agree(
    groups: Mapping[str, Sequence[float]], margin: float, level: float = 0.95, family: int | None = None
) -> Agreement:
    """Whether all devices give the same result within ±margin: tost() of every pair of devices (names
    sorted, a before b). "holds" needs every pair equivalent: an intersection-union test, so each pair at
    level alpha keeps the overall test at alpha, with no multiplicity correction (Berger & Hsu 1996,
    "Bioequivalence trials, intersection-union tests and equivalence confidence sets", Statistical
    Science 11(4)). "differs" when some pair's interval lies wholly outside the margin; `odd` then names
    the devices found in every such pair (the one slow Pi among three; with two devices, both).
    A device below MIN_RUNS makes it "inconclusive", its name in the reason. "differs" is Holm-adjusted over
    `family` tests (default: the pairs; a claim on several metrics passes pairs x metrics: the step-down within
    one metric's pairs against the whole family's count is still a valid Holm bound, and conservative)."""
    names = sorted(groups)
    if len(names) < 2:
        raise ValueError(f"agreement across devices needs at least 2 devices, got {len(names)}: {names}")
    pairs = tuple(
        PairResult(a, b, tost(groups[a], groups[b], margin, level, (a, b)))
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
    short = stats.too_few_of(
        {name: int(np.count_nonzero(~np.isnan(np.asarray(groups[name], float)))) for name in names}
    )
    outside = _holm_outside([p for p in pairs if p.tost.outside], 1 - level, family or len(pairs))
    odd = tuple(sorted(set.intersection(*({p.a, p.b} for p in outside)))) if outside else ()
    within = f"±{100 * margin:g} %"
    if short:
        return Agreement(INCONCLUSIVE, short, pairs, ())
    if all(p.tost.equivalent for p in pairs):
        low, high = min(p.tost.interval.low for p in pairs), max(p.tost.interval.high for p in pairs)
        envelope = f"every pair's {_level_text(level)} interval within {low:.2f}-{high:.2f}"
        return Agreement(HOLDS, f"{_and(names)} agree within {within} ({envelope})", pairs, ())
    if outside:
        return Agreement(DIFFERS, _differs(outside, odd, within, level), pairs, odd)
    unsure = [p for p in pairs if not p.tost.equivalent]
    text = f"{_and([f'{p.a}/{p.b}' for p in unsure])} neither within nor wholly outside {within}"
    if any(p.tost.outside for p in pairs):  # outside on its own, but not after Holm's adjustment
        text += f" after Holm's adjustment over {family or len(pairs)} tests"
    return Agreement(INCONCLUSIVE, f"{text} ({_intervals(unsure, level)})", pairs, ())


def _holm_outside(outside: list[PairResult], alpha: float, family: int) -> list[PairResult]:
    """The pairs whose "wholly outside" survives Holm's step-down at alpha over `family` tests (stats.holm)."""
    ordered = sorted(outside, key=lambda p: p_outside(p.tost))  # the surviving pairs named smallest p first
    kept = stats.holm([p_outside(p.tost) for p in ordered], alpha, family)
    return [p for p, keep in zip(ordered, kept, strict=True) if keep]


def _differs(outside: list[PairResult], odd: tuple[str, ...], within: str, level: float) -> str:
    if len(odd) == 1:  # the odd device against each other one, as odd/other
        (o,) = odd
        others = [p.b if p.a == o else p.a for p in outside]
        text = f"{o} differs from {_and(others)} by more than {within}"
        bounds = [_oriented(p, o) for p in outside]
        return f"{text} ({_level_text(level)} intervals {', '.join(bounds)})"
    return f"{_and([f'{p.a}/{p.b}' for p in outside])} differ by more than {within} ({_intervals(outside, level)})"


def _oriented(p: PairResult, first: str) -> str:
    """The pair's interval as first/other."""
    low, high = p.tost.interval.bounds
    return f"{low:.2f}-{high:.2f}" if p.a == first else f"{1 / high:.2f}-{1 / low:.2f}"


def _intervals(pairs: Sequence[PairResult], level: float) -> str:
    word = "interval" if len(pairs) == 1 else "intervals"
    return f"{_level_text(level)} {word} " + ", ".join(_oriented(p, p.a) for p in pairs)


def _level_text(level: float) -> str:
    return stats.level_text(1 - 2 * (1 - level))  # the interval TOST decides by


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# --- RunValue lists


def _select(values: Iterable[RunValue], metric: str, variant: str) -> list[RunValue]:
    chosen = [v for v in values if v.metric == metric and v.variant == variant]
    if not chosen:
        raise ValueError(f"no run values of metric {metric!r}, variant {variant!r}")
    return chosen


def device_means(values: Iterable[RunValue], metric: str, variant: str) -> dict[str, list[float]]:
    """device -> the means of its repetitions' runs, one per (bundle, repetition) in that order; devices sorted.
    Repetitions of different devices are independent: these are what between(), tost() and agree() compare."""
    means = precision.run_means(_select(values, metric, variant), metric, variant)
    out: dict[str, list[float]] = defaultdict(list)
    for device, bundle, repetition in sorted(means):
        out[device].append(means[(device, bundle, repetition)])
    return dict(out)


def decompose_devices(
    values: Iterable[RunValue],
    metric: str,
    variant: str,
    names: Sequence[str] = DEVICE_LEVEL_NAMES,
) -> precision.Decomposition:
    """precision.decompose() of data[device][repetition][run][inner]: the Kalibera & Jones components
    with the device level on top of the repetition level (devices sorted, repetitions by bundle and
    number, runs by number). `names`, top first: device, repetition, the run level (JMH: fork, MooBench:
    loop), iteration. The iteration level only where every run has inner samples; groups of unequal size
    are cut to the smallest, and levels with one unit per parent merged, as decompose() does and its note says."""
    chosen = _select(values, metric, variant)
    inner = all(v.inner for v in chosen)
    runs: dict[str, dict[tuple, dict[int, RunValue]]] = defaultdict(lambda: defaultdict(dict))
    for v in chosen:
        runs[v.device][(v.bundle, v.repetition)][v.run] = v
    data = [
        [[list(rep[r].inner) if inner else rep[r].value for r in sorted(rep)] for _, rep in sorted(reps.items())]
        for _, reps in sorted(runs.items())
    ]
    return precision.decompose(data, list(names)[: 4 if inner else 3])


@dataclass(frozen=True)
class TopShare:
    """The top level's (device's, storage's) share of one bottom-level value's variance with its interval.
    k: the top level's units (devices); df = k - 1; low/high: the share's bounds at `level` (None below 3
    devices: not estimable); factor: how many times its upper bound exceeds its lower one on the variance scale
    (chi2(1 - a/2, df) / chi2(a/2, df): about 5,100 at 2 devices, 146 at 3, 11 at 6)."""

    name: str
    share: float
    low: float | None
    high: float | None
    k: int
    level: float
    factor: float

    def text(self) -> str:
        """The share as the report prints it: never bare, always with how imprecise k devices make it."""
        point = f"{100 * self.share:.0f} %"
        if self.low is None or self.high is None:
            return (
                f"{point} (from {self.k} {self.name}s: not estimable, a {stats.level_text(self.level)} interval of "
                f"the {self.name} variance would span a factor of about {self.factor:,.0f})"
            )
        return (
            f"{point} [{100 * self.low:.0f} %; {100 * self.high:.0f} %] ({stats.level_text(self.level)} interval "
            f"from {self.k} {self.name}s, {self.k - 1} degrees of freedom)"
        )


MIN_TOP_UNITS = 3  # below 3 devices (1 degree of freedom) the top share is not estimable: a factor of ~5,000
LEVEL_OF_SHARE = 0.95  # the level of the top share's interval in the reports


def top_share(d: precision.Decomposition, level: float = 0.95) -> TopShare:
    """The top level's share of the variance of one bottom-level value (decompose()'s share) with an interval
    that says how little k devices tell. With r units per device one level down (repetitions), S_k^2 the sample
    variance of the k device means (k - 1 degrees of freedom) and W = S_r^2 / r the lower levels' part of a
    device mean (S_r^2 pooled within devices, k (r - 1) degrees of freedom), in a balanced nested design with
    normal effects S_k^2 and S_r^2 are independent and

        F = S_k^2 / W  ~  (1 + lambda) F(k - 1, k (r - 1)),   lambda = sigma_top^2 / E[W],

    so lambda lies in [F / F(1 - a/2) - 1;  F / F(a/2) - 1] (cut to 0), exactly: the interval of a variance
    ratio in the one-way random model (Searle, Casella & McCulloch 1992, "Variance Components", 3.5d; Burdick
    & Graybill 1992, "Confidence Intervals on Variance Components", ch. 3). The share is lambda / (lambda + c),
    c = (sum of the lower components) / W at their estimates, which have k r (...) degrees of freedom or more.
    Simulated (3, 4 and 6 devices, 5 repetitions of 3 runs, shares 0.17 to 0.88, 3,000 draws each) it covers
    95.0-95.8 % at 95 % (97.5 % at a share of 0, where the lower bound is cut; test_across.py checks it).
    Below MIN_TOP_UNITS devices no bounds: at k = 2 the interval of the device variance alone spans a factor of
    chi2(1 - a/2, 1) / chi2(a/2, 1), about 5,000 (`factor`: that ratio at k - 1 degrees of freedom)."""
    top, below = d.levels[0], d.levels[1:]
    k, df, alpha = top.count, top.count - 1, 1 - level
    factor = float(sps.chi2.ppf(1 - alpha / 2, df) / sps.chi2.ppf(alpha / 2, df))
    if k < MIN_TOP_UNITS or not below:
        return TopShare(top.name, top.share, None, None, k, level, factor)
    within = below[0].s2 / below[0].count  # W: the lower levels' part of one device's mean
    rest = sum(lv.t2 for lv in below)  # the other components of one value's variance
    if within <= 0:  # no spread within devices: the share is known, 1 (or 0 when the devices agree exactly)
        return TopShare(top.name, top.share, top.share, top.share, k, level, factor)
    df_within = k * (below[0].count - 1)
    ratio = top.s2 / within
    c = rest / within

    def share(q: float) -> float:
        lam = max(ratio / float(sps.f.ppf(q, df, df_within)) - 1, 0.0)
        return lam / (lam + c) if lam + c > 0 else 0.0

    return TopShare(top.name, top.share, share(1 - alpha / 2), share(alpha / 2), k, level, factor)
