"""Checks of the assumptions a paired interval rests on, run on a bundle's repetitions before a claim is judged.

The t interval on log ratios (stats.paired_ratio, and the duet's model on its residuals) assumes independent
repetitions from one normal-ish distribution. Real JVM repetitions break that in two ways that cost coverage
(../shared/STATISTICS.md, "Real noise"; docs/statistics.md has the rates): a second mode (a JIT that compiled
differently in some forks: Kalibera & Jones 2013, Barrett et al. 2017) and dependence between neighbouring
repetitions (a noisy neighbour, a thermal or clock drift). Three checks, each at CHECK_ALPHA on the log ratios in run
order (a duet's with its CPU half taken out):

- second mode: the largest gap between a lower and an upper group of the sorted values, over every split, in units
  of the pooled within-group sd (a group of one is a lone outlier, Grubbs' case; two clusters Hartigan & Hartigan's
  bimodality, which the dip test measures). Its law under independent normal values is free of their mean and
  spread, so the p-value is a seeded Monte Carlo of that law at the same n.
- lag-1 autocorrelation: r1 of the series, against every order of the same values (a permutation test, exact under
  exchangeability: no normality assumed), one-sided for positive dependence, the kind that narrows an interval.
- drift: Mann-Kendall's trend test (Kendall's tau of the values against their order, scipy's exact p-value at
  small n).

The consequence (pirex/reproduce/verdict.py): a verdict whose repetitions fail a check is inconclusive, with the
check's finding as its reason, so that no decision rests on an interval whose error rate is not the stated one.
On data that meet the assumptions the three checks together withhold at most about 3 % of verdicts and add no
error; at five repetitions they see only gross departures (Mann-Kendall cannot reach 1 % below six), which the
machine's calibration (pirex calibrate) measures.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from pirex.analysis import stats

CHECK_ALPHA = 0.01  # each check's level: three of them withhold at most ~3 % of verdicts on healthy data
NULL_DRAWS = 20000  # Monte Carlo draws of the second-mode statistic's null law, per n
PERMUTATIONS = 2000
SEED = 50
MIN_POINTS = 5  # stats.MIN_RUNS: below it there is no interval to protect


@dataclass(frozen=True)
class Check:
    name: str  # "second mode", "lag-1 autocorrelation", "drift"
    statistic: float
    p: float
    finding: str  # what it saw, in words a reason can carry

    @property
    def failed(self) -> bool:
        return self.p < CHECK_ALPHA

    def text(self) -> str:
        return f"{self.name} p = {self.p:.3g} ({self.finding})"

    def row(self) -> dict:
        return {"check": self.name, "statistic": self.statistic, "p": self.p, "failed": self.failed}


def residuals(d: np.ndarray, halves: np.ndarray | None) -> np.ndarray:
    """The log ratios with a duet's CPU half taken out (d - delta h, delta the model's), else as they are: the half's
    own effect is two modes by design and no break of an assumption."""
    d = np.asarray(d, dtype=float)
    if halves is None or not ((halves == 1).any() and (halves == -1).any()):
        return d
    h = np.asarray(halves, dtype=float)
    return d - stats.duet_fit(d, h)[0][1] * h


def checks(d: np.ndarray, halves: np.ndarray | None = None) -> tuple[Check, ...]:
    """The three checks on log ratios in run order; () below MIN_POINTS or where the values do not vary."""
    r = residuals(d, halves)
    if r.size < MIN_POINTS or not np.ptp(r) > 0:
        return ()
    return (second_mode(r), autocorrelation(r), drift(r))


def split_gap(x: np.ndarray) -> tuple[float, int]:
    """The largest gap between a lower and an upper group of the sorted values, over every split, in units of the
    pooled within-group sd: (mean_hi - mean_lo) / sqrt(W / (n - 2)), W the within-group sum of squares; and the size
    of the smaller group at that split. Unweighted by the groups' sizes, so that a lone repetition far from the rest
    (a group of one, Grubbs' case) counts as much as two even clusters. Rows of a 2-D array are data sets (the null
    law's draws); then the sizes are not computed (0)."""
    s = np.sort(np.asarray(x, dtype=float), axis=-1)
    n = s.shape[-1]
    c1, c2 = np.cumsum(s, axis=-1), np.cumsum(s * s, axis=-1)
    k = np.arange(1, n)
    lo_mean = c1[..., :-1] / k
    hi_sum, hi_sq = c1[..., -1:] - c1[..., :-1], c2[..., -1:] - c2[..., :-1]
    hi_mean = hi_sum / (n - k)
    within = (c2[..., :-1] - c1[..., :-1] * lo_mean) + (hi_sq - hi_sum * hi_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = (hi_mean - lo_mean) / np.sqrt(np.maximum(within, 1e-300) / (n - 2))
    best = gap.max(axis=-1)
    if s.ndim > 1:
        return best, 0
    at = int(np.argmax(gap)) + 1
    return float(best), min(at, n - at)


@functools.lru_cache(maxsize=64)
def _gap_null(n: int) -> np.ndarray:
    """split_gap's law under n independent normal values (seeded), sorted."""
    draws = np.random.default_rng(SEED + n).normal(size=(NULL_DRAWS, n))
    return np.sort(split_gap(draws)[0])


def second_mode(x: np.ndarray) -> Check:
    gap, smaller = split_gap(x)
    null = _gap_null(int(np.asarray(x).size))
    p = (1 + null.size - np.searchsorted(null, gap, side="left")) / (1 + null.size)
    n = int(np.asarray(x).size)
    return Check(
        "second mode",
        gap,
        float(p),
        f"{smaller} of {n} repetitions apart from the rest, {gap:.1f} within-group sds away",
    )


def lag1(x: np.ndarray) -> np.ndarray:
    """The lag-1 autocorrelation over the last axis."""
    c = x - x.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (c[..., :-1] * c[..., 1:]).sum(-1) / (c * c).sum(-1)


def autocorrelation(x: np.ndarray) -> Check:
    x = np.asarray(x, dtype=float)
    r1 = float(lag1(x))
    rng = np.random.default_rng(SEED)
    perms = rng.permuted(np.broadcast_to(x, (PERMUTATIONS, x.size)), axis=1)
    p = (1 + int((lag1(perms) >= r1 - 1e-12).sum())) / (1 + PERMUTATIONS)
    return Check("lag-1 autocorrelation", r1, p, f"neighbouring repetitions alike, r1 = {r1:.2f}")


def drift(x: np.ndarray) -> Check:
    x = np.asarray(x, dtype=float)
    tau, p = sps.kendalltau(np.arange(x.size), x)
    p = 1.0 if math.isnan(p) else float(p)
    way = "rising" if tau > 0 else "falling"
    return Check("drift", float(tau), p, f"the ratio {way} across the run, Kendall's tau {tau:.2f}")


def failed(cs: tuple[Check, ...]) -> tuple[Check, ...]:
    return tuple(c for c in cs if c.failed)


def reason(cs: tuple[Check, ...], what: str) -> str | None:
    """The reason a verdict stays inconclusive, or None where every check passed."""
    bad = failed(cs)
    if not bad:
        return None
    found = "; ".join(c.text() for c in bad)
    return (
        f"the repetitions of {what} break the interval's assumptions ({found}, each checked at "
        f"{100 * CHECK_ALPHA:g} %): a verdict on them would not keep its error rate, so none is given (run again on "
        "a quieter machine, or `pirex calibrate` to see how this machine's noise behaves)"
    )
