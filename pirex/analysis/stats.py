"""The statistics of the papers, and the honest ones beside them.

- summary(): mean, sd (n-1), median, quartiles, min, max, and CIs via the t distribution,
  as the papers computed them over every pooled value (ICPE'18 Table 1: 200 iterations).
- ratio_ci(): the ratio of two variants' means with a bootstrap CI that resamples
  independent runs (forks), not iterations; None below MIN_RUNS runs per side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
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


def ratio_ci(numerator_runs: Sequence[float], denominator_runs: Sequence[float], level: float = 0.999,
             resamples: int = 10_000, seed: int = 0) -> Ratio:  # fmt: skip
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
