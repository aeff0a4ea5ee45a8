import math

import numpy as np
import pytest
import scipy.stats as sps

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


# --- the one rule, the one interval type


def test_too_few_rule_says_how_many_there_are_and_are_needed():
    assert stats.too_few(3) == "no interval: 3 runs, 5 needed"
    assert stats.too_few(4, "loops") == "no interval: 4 loops, 5 needed"
    assert stats.too_few(5) is None
    m = stats.mean_interval([1.0, 1.1, 0.9, 1.0])
    assert not m.has_interval and m.reason == "no interval: 4 runs, 5 needed" and m.value == pytest.approx(1.0)
    assert m.text() == "1.000 (no interval: 4 runs, 5 needed)" and m.percent() == m.reason
    assert stats.mean_interval([1.0, 1.1, 0.9, 1.0, 1.05]).has_interval
    r = stats.paired_ratio({i: 1.0 for i in range(4)}, {i: 1.0 for i in range(4)})
    assert not r.has_interval and r.reason == "no interval: 4 paired repetitions, 5 needed"


def test_interval_text_and_relative_half_width():
    iv = stats.Interval(1.003, 0.991, 1.015, 12, 0.95, "t-log")
    assert iv.text() == "1.003 [0.991; 1.015]"
    assert iv.relative_half_width == pytest.approx(0.012 / 1.003)
    assert iv.percent() == "±1.2 %"
    assert stats.Interval(12_322_204.0, 12_314_425.9, 12_329_982.2, 10, 0.999, "t").text(1) == (
        "12,322,204.0 [12,314,425.9; 12,329,982.2]"
    )
    assert stats.level_text(0.999) == "99.9 %" and stats.level_text(0.95) == "95 %"


def test_t_mean_interval_against_hand_computation():
    x = [10.0, 12.0, 11.0, 13.0, 9.0]  # mean 11, sd sqrt(2.5); t(0.975, 4) = 2.7764451 (tables)
    iv = stats.mean_interval(x, 0.95, positive=False)
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert (iv.value, iv.method) == (11.0, "t")
    assert (iv.low, iv.high) == (pytest.approx(11 - half, rel=1e-7), pytest.approx(11 + half, rel=1e-7))


def test_positive_mean_interval_is_the_modified_cox_interval_and_never_below_zero():
    x = [0.1, 0.1, 0.2, 0.1, 50.0]  # skewed: the t interval's lower bound is negative
    assert stats.mean_interval(x, 0.95, positive=False).low < 0
    iv = stats.mean_interval(x, 0.95)
    y = [math.log(v) for v in x]
    ybar = sum(y) / 5
    s2 = sum((v - ybar) ** 2 for v in y) / 4
    half = 2.7764451 * math.sqrt(s2 / 5 + s2**2 / 8)
    assert iv.method == "cox-log" and iv.value == pytest.approx(10.1)
    assert iv.low == pytest.approx(math.exp(ybar + s2 / 2 - half), rel=1e-6) and iv.low > 0
    assert iv.high == pytest.approx(math.exp(ybar + s2 / 2 + half), rel=1e-6)
    # at a benchmark's spread (CV 2 %) it is the t interval to within a fraction of its width
    rng = np.random.default_rng(3)
    x = rng.normal(1000.0, 20.0, 10)
    t, cox = stats.mean_interval(x, 0.999, positive=False), stats.mean_interval(x, 0.999)
    assert abs(cox.low - t.low) < 0.05 * (t.high - t.low) and abs(cox.high - t.high) < 0.05 * (t.high - t.low)
    with pytest.raises(ValueError, match="positive=False"):
        stats.mean_interval([1.0, 0.0, 2.0, 3.0, 4.0])


# --- paired ratios


NATIVE = {1: 100.0, 2: 104.0, 3: 98.0, 4: 101.0, 5: 103.0, 6: 99.0}
DOCKER = {1: 101.0, 2: 104.5, 3: 99.5, 4: 101.2, 5: 104.1, 6: 99.4, 7: 97.0}


def test_paired_log_ratio_t_interval_against_hand_computation():
    d = [math.log(DOCKER[k] / NATIVE[k]) for k in range(1, 7)]
    dbar = sum(d) / 6
    s = math.sqrt(sum((x - dbar) ** 2 for x in d) / 5)
    half = 2.5705818 * s / math.sqrt(6)  # t(0.975, 5) (tables)
    r = stats.paired_ratio(DOCKER, NATIVE, 0.95, method="t", names=("docker", "native"))
    assert r.method == "t-log" and r.n == 6
    assert r.value == pytest.approx(math.exp(dbar), rel=1e-12)
    assert (r.low, r.high) == (
        pytest.approx(math.exp(dbar - half), rel=1e-7),
        pytest.approx(math.exp(dbar + half), rel=1e-7),
    )
    assert r.note == "unpaired, dropped: 1 repetition only in docker"
    assert r.relative_half_width == pytest.approx(math.sinh(half), rel=1e-7)


def test_pairing_removes_the_repetitions_common_drift():
    # each repetition shifts both variants alike (drift); the unpaired bootstrap sees it, the paired one does not
    rng = np.random.default_rng(5)
    drift = rng.normal(0, 0.05, 12)
    native = {i: 100 * math.exp(drift[i] + rng.normal(0, 0.002)) for i in range(12)}
    docker = {i: 101 * math.exp(drift[i] + rng.normal(0, 0.002)) for i in range(12)}
    paired = stats.paired_ratio(docker, native, 0.95)
    unpaired = stats.ratio_ci(list(docker.values()), list(native.values()), 0.95)
    assert paired.low < 1.01 < paired.high and paired.low > 1.0
    assert paired.high - paired.low < 0.2 * (unpaired.high - unpaired.low)


def _bca_by_hand(x: np.ndarray, level: float, resamples: int, seed: int) -> tuple[float, float]:
    """BCa for the mean as Efron & Tibshirani (1993, eqs. 14.10-14.15) give it, independently of scipy."""
    from statistics import NormalDist

    nd = NormalDist()
    rng = np.random.default_rng(seed)
    theta = x.mean()
    boot = x[rng.integers(0, x.size, (resamples, x.size))].mean(axis=1)
    z0 = nd.inv_cdf(float((boot < theta).mean()))
    jack = np.array([np.delete(x, i).mean() for i in range(x.size)])
    u = jack.mean() - jack
    a = float((u**3).sum() / (6 * (u**2).sum() ** 1.5))
    out = []
    for alpha in ((1 - level) / 2, (1 + level) / 2):
        z = nd.inv_cdf(alpha)
        out.append(float(np.quantile(boot, nd.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))))
    return out[0], out[1]


def test_bca_matches_an_independent_implementation_on_skewed_log_ratios():
    rng = np.random.default_rng(11)
    d = rng.lognormal(0.0, 1.0, 15) * 0.01 - 0.005  # strongly right-skewed log ratios
    assert stats.is_skewed(d)
    num = {i: math.exp(x) for i, x in enumerate(d)}
    den = dict.fromkeys(range(15), 1.0)
    r = stats.paired_ratio(num, den, 0.95, seed=2)
    assert r.method == "bca-log"  # auto chose BCa
    low, high = _bca_by_hand(d, 0.95, 40_000, seed=99)
    width = high - low
    assert math.log(r.low) == pytest.approx(low, abs=0.05 * width)
    assert math.log(r.high) == pytest.approx(high, abs=0.05 * width)
    assert stats.paired_ratio(num, den, 0.95, seed=2) == r  # seeded: reproducible


def test_skewness_criterion():
    assert stats.skewness_se(10) == pytest.approx(math.sqrt(540 / 1144))
    assert not stats.is_skewed([-2.0, -1.0, 0.0, 1.0, 2.0, -0.5, 0.5])
    assert stats.is_skewed([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 5.0])
    assert not stats.is_skewed([1.0] * 8)
    r = stats.paired_ratio(dict.fromkeys(range(6), 2.0), dict.fromkeys(range(6), 1.0))
    assert (r.value, r.low, r.high) == (pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0))


def test_ratio_over_runs_pairs_the_rounds_of_one_plan_and_only_those():
    rng = np.random.default_rng(5)
    drift = rng.normal(0, 0.05, 8)  # what one round shares: pairing removes it
    num = {("b", j): 110 * math.exp(d + rng.normal(0, 0.002)) for j, d in enumerate(drift)}
    den = {("b", j): 100 * math.exp(d + rng.normal(0, 0.002)) for j, d in enumerate(drift)}
    paired = stats.ratio_over_runs(num, den, 0.95)
    logs = np.log([num[k] / den[k] for k in num])  # the textbook t interval on the log ratios
    half = sps.t.ppf(0.975, 7) * logs.std(ddof=1) / math.sqrt(8)
    assert paired.low == pytest.approx(math.exp(logs.mean() - half)) and paired.high == pytest.approx(
        math.exp(logs.mean() + half)
    )
    assert paired.high / paired.low < 1.01  # the shared drift is gone
    separate = stats.ratio_over_runs(num, {("other", j): v for (_, j), v in den.items()}, 0.95)
    assert separate == stats.ratio_ci(list(num.values()), list(den.values()), 0.95)  # no shared round: unpaired
    assert separate.high / separate.low > paired.high / paired.low


def test_peak_rate_counts_values_beyond_5_times_the_mean_per_million_with_half_a_peak_added():
    values = np.array([1.0] * 99 + [1000.0])  # mean 10.99: one value beyond 54.95
    assert stats.peak_rate(values, 5.0) == pytest.approx((1 + 0.5) / 100 * 1e6)
    assert stats.peak_rate(np.ones(4), 5.0) == pytest.approx(0.5 / 4 * 1e6)  # no peak: still a rate, a ratio
    assert stats.peak_rate(values, 5.0, per=100) == pytest.approx(1.5)
    assert math.isnan(stats.peak_rate(np.array([]), 5.0))


def test_a_spread_metric_is_named_by_its_suffix():
    assert stats.spread_metric("kieker-text", "peaks") == "kieker-text peaks"
    assert stats.is_spread("B1 sd") and stats.is_spread("spass-meter max") and not stats.is_spread("B1")
    assert not stats.is_spread("sd") and not stats.is_spread("wall_ns/single/1")
    with pytest.raises(ValueError, match="spread 'var'"):
        stats.spread_metric("B1", "var")
    # beside spreads, interrupt counts are not means of the calls either: no precision plan, no means table
    assert stats.is_side_metric("kieker-dump interrupts timer") and stats.is_side_metric("B1 sd")
    assert not stats.is_side_metric("kieker-dump") and not stats.is_side_metric("cpu-clock/single/8")
