import math

import numpy as np
import pytest

from pirex.analysis import stats


def test_t_interval_reproduces_icpe18_table1():
    # Line 1 of Table 1: mean 12,322,204.022, sd 32,933.231 over 200 pooled iterations,
    # 99.9 % CI [12,314,425.859 ; 12,329,982.186]: the paper's CI is the t interval with n = 200.
    s = stats.Summary(200, 12_322_204.022, 32_933.231, 0, 0, 0, 0, 0)
    low, high = s.ci(0.999)
    assert low == pytest.approx(12_314_425.859, abs=0.5)
    assert high == pytest.approx(12_329_982.186, abs=0.5)


def test_summary_against_independent_values():
    s = stats.summary([1, 2, 3, 4, 100])
    assert (s.n, s.mean, s.median, s.min, s.max) == (5, 22.0, 3.0, 1.0, 100.0)
    assert s.sd == pytest.approx(math.sqrt(sum((x - 22) ** 2 for x in [1, 2, 3, 4, 100]) / 4))
    assert (s.q1, s.q3) == (2.0, 4.0)
    # t(0.975, 4) = 2.7764451 (tables)
    low, high = s.ci(0.95)
    assert high - s.mean == pytest.approx(2.7764451 * s.sd / math.sqrt(5), rel=1e-6)


def test_summary_edge_cases():
    assert stats.summary([]).n == 0 and math.isnan(stats.summary([]).mean)
    one = stats.summary([3.0])
    assert one.n == 1 and one.mean == 3.0 and math.isnan(one.sd) and all(map(math.isnan, one.ci(0.99)))
    assert stats.summary([1.0, float("nan"), 3.0]).n == 2


def test_ratio_without_enough_runs_has_no_interval():
    r = stats.ratio_ci([1.0, 1.1], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert r.value == pytest.approx(1.05) and not r.has_interval and (r.n_num, r.n_den) == (2, 5)


def test_ratio_interval_covers_the_truth_and_is_reproducible():
    rng = np.random.default_rng(1)
    num = rng.normal(99.0, 1.0, 10)
    den = rng.normal(100.0, 1.0, 10)
    r = stats.ratio_ci(num, den, level=0.999)
    assert r.has_interval and r.low < r.value < r.high
    assert r.low < 0.99 < r.high
    assert stats.ratio_ci(num, den, level=0.999) == r
