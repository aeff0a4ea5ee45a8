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


def test_unpaired_ratio_without_enough_runs_has_no_interval():
    r = stats.welch_ratio([1.0, 1.1], [1.0, 1.0, 1.0, 1.0, 1.0], names=("A", "B"))
    assert r.value == pytest.approx(math.sqrt(1.1)) and not r.has_interval and r.n == 7
    assert r.reason == "no interval: 2 runs of A, 5 needed"


def test_unpaired_ratio_is_welchs_t_on_logs():
    rng = np.random.default_rng(1)
    num, den = rng.normal(99.0, 1.0, 10), rng.normal(100.0, 2.0, 7)
    r = stats.welch_ratio(num, den, 0.999)
    assert (r.method, r.n) == ("welch-log", 17)
    # each bound is where scipy's Welch test of the log difference gives p = 0.001 (the interval inverts the test;
    # scipy 1.10, Debian bookworm's, has no confidence_interval() on the result)
    for bound in (r.low, r.high):
        p = sps.ttest_ind(np.log(num) - math.log(bound), np.log(den), equal_var=False).pvalue
        assert p == pytest.approx(0.001, rel=1e-6)
    assert r.value == pytest.approx(math.exp(np.log(num).mean() - np.log(den).mean()))
    assert r.low < 0.99 < r.high
    point = stats.welch_ratio([2.0] * 5, [1.0] * 5)  # no spread on either side: a point
    assert (point.low, point.high) == (pytest.approx(2.0), pytest.approx(2.0))
    with pytest.raises(ValueError, match="B's value 0.0 <= 0"):
        stats.welch_ratio([1.0] * 5, [1.0, 1.0, 0.0, 1.0, 1.0], names=("A", "B"))


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
    # each repetition shifts both variants alike (drift); the unpaired interval sees it, the paired one does not
    rng = np.random.default_rng(5)
    drift = rng.normal(0, 0.05, 12)
    native = {i: 100 * math.exp(drift[i] + rng.normal(0, 0.002)) for i in range(12)}
    docker = {i: 101 * math.exp(drift[i] + rng.normal(0, 0.002)) for i in range(12)}
    paired = stats.paired_ratio(docker, native, 0.95)
    unpaired = stats.welch_ratio(list(docker.values()), list(native.values()), 0.95)
    assert paired.low < 1.01 < paired.high and paired.low > 1.0
    assert paired.high - paired.low < 0.2 * (unpaired.high - unpaired.low)


def test_the_paired_ratio_has_one_method_and_no_spread_gives_a_point():
    # BCa at n = 5 covered 69 % among the samples it was chosen for: there is no bootstrap to ask for
    with pytest.raises(ValueError, match="only method is t on logs"):
        stats.paired_ratio(NATIVE, NATIVE, 0.95, method="bca")
    r = stats.paired_ratio(dict.fromkeys(range(6), 2.0), dict.fromkeys(range(6), 1.0))
    assert (r.value, r.low, r.high, r.method) == (pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0), "t-log")


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
    assert separate == stats.welch_ratio(list(num.values()), list(den.values()), 0.95)  # no shared round: unpaired
    assert separate.method == "welch-log" and paired.method == "t-log"
    assert separate.high / separate.low > paired.high / paired.low


def test_peak_count_counts_values_beyond_5_times_the_mean_and_nothing_added():
    values = np.array([1.0] * 99 + [1000.0])  # mean 10.99: one value beyond 54.95
    assert stats.peak_count(values, 5.0) == 1
    assert stats.peak_count(np.ones(4), 5.0) == 0  # no peak: 0, not 0.5
    assert stats.peak_count(np.array([]), 5.0) == 0


# --- counts: the counterexamples (issue 35), now with the honest answer

C = stats.Count


def test_no_peaks_against_one_per_repetition_is_not_certain():
    """0 peaks against 1 peak per repetition over five repetitions of 1 M calls. With 0.5 added to every count
    the ratio of rates was 0.333 with an interval under ±1 % (0.333 [0.332; 0.334] with the loops' lengths
    varying a little); the exact conditional test of 0 against 5 events gives p = 0.062, and the rate ratio
    lies in [0; 1.09]: it cannot even tell the rates apart."""
    calls = {j: 1_000_000 + 1000 * j for j in range(5)}
    old = stats.paired_ratio({j: 0.5 / n for j, n in calls.items()}, {j: 1.5 / (n + 700) for j, n in calls.items()})
    assert old.value == pytest.approx(0.333, abs=1e-3) and old.relative_half_width < 0.01  # the false certainty
    r = stats.rate_ratio({j: C(0, n) for j, n in calls.items()}, {j: C(1, n) for j, n in calls.items()})
    assert (r.method, r.n, r.value, r.low) == ("poisson-exact", 5, 0.0, 0.0)
    assert r.high == pytest.approx(1.09, abs=0.005) and r.high > 1  # 1 - 0.025 ** (1/5) = 0.522: R = p / (1 - p)
    assert sps.binomtest(0, 5, 0.5).pvalue == pytest.approx(0.062, abs=0.001)  # the exact test the interval inverts
    assert r.text() == "0.000 [0.000; 1.091]"


@pytest.mark.parametrize(("calls", "old"), [(1e6, 0.143), (1e7, 0.104), (1e8, 0.100)])
def test_a_rate_ratio_does_not_move_with_the_loop_length(calls, old):
    """1 event per million calls against 10 (truth 0.1), five repetitions at each loop length: with 0.5 added
    the estimate was 0.143, 0.104, 0.100 for 1 M, 10 M, 100 M calls; the ratio of the counts per call is 0.1."""
    n, d = round(calls / 1e6), round(10 * calls / 1e6)
    assert (n + 0.5) / (d + 0.5) == pytest.approx(old, abs=5e-4)
    r = stats.rate_ratio({j: C(n, calls) for j in range(5)}, {j: C(d, calls) for j in range(5)})
    assert r.value == pytest.approx(0.1) and r.method == "poisson-exact" and r.low < 0.1 < r.high


def test_exact_rate_interval_is_clopper_pearson_mapped_to_the_ratio():
    # 12 events in 3 M calls against 30 in 2 M: given 42, 12 is binomial(42, p), p = 3 R / (3 R + 2)
    num = {("a", j): C(c, 0.6e6) for j, c in enumerate([3, 2, 3, 2, 2])}
    den = {("b", j): C(6, 0.4e6) for j in range(5)}
    r = stats.rate_ratio(num, den, 0.95)  # no shared repetition: two independent groups
    ci = sps.binomtest(12, 42).proportion_ci(0.95, method="exact")
    assert (r.method, r.n) == ("poisson-exact", 10)
    assert r.value == pytest.approx((12 / 3) / (30 / 2))
    assert r.low == pytest.approx(ci.low / (1 - ci.low) * 2 / 3) and r.high == pytest.approx(
        ci.high / (1 - ci.high) * 2 / 3
    )


def test_no_events_in_the_denominator_gives_a_lower_bound_and_none_at_all_no_interval():
    r = stats.rate_ratio({j: C(3, 1e6) for j in range(5)}, {j: C(0, 1e6) for j in range(5)})
    assert r.value == math.inf and r.high == math.inf and r.low > 1
    none = stats.rate_ratio({j: C(0, 1e6) for j in range(5)}, {j: C(0, 1e6) for j in range(5)})
    assert not none.has_interval and none.reason == "no interval: no events in 5 repetitions of either side"
    few = stats.rate_ratio({j: C(3, 1e6) for j in range(4)}, {j: C(1, 1e6) for j in range(5)}, names=("a", "b"))
    assert (
        few.reason == "no interval: 4 paired repetitions, 5 needed"
        and few.note == "unpaired, dropped: 1 repetition only in b"
    )
    with pytest.raises(ValueError, match="whole numbers >= 0"):
        stats.rate_ratio({0: C(-1, 1e6)}, {0: C(1, 1e6)})
    with pytest.raises(ValueError, match="exposures must be > 0"):
        stats.rate_ratio({0: C(1, 0.0)}, {0: C(1, 1e6)})


# repetitions whose counts vary far more than Poisson allows (timer interrupts: thousands, a few % apart)
OVER_NUM = [16100, 17900, 15200, 16650, 19010, 14800]
OVER_DEN = [8000, 8800, 7000, 8900, 9100, 7600]
OVER_CALLS = [1.0e6, 1.2e6, 0.9e6, 1.0e6, 1.1e6, 0.95e6]  # the numerator's calls; the denominator ran 2 x as many


def _glm(y, exog, exposure):
    sm = pytest.importorskip("statsmodels.api")
    return sm.GLM(np.asarray(y, float), exog, family=sm.families.Poisson(), offset=np.log(exposure)).fit(scale="X2")


def test_overdispersed_paired_counts_are_the_quasi_poisson_glm_with_the_repetition_as_block():
    j = len(OVER_NUM)
    den_calls = [2 * c * (1 + 0.05 * (i % 3)) for i, c in enumerate(OVER_CALLS)]  # exposure ratios that vary
    y = OVER_NUM + OVER_DEN
    exog = np.column_stack([np.tile(np.eye(j), (2, 1)), np.r_[np.ones(j), np.zeros(j)]])  # block factor, side
    fit = _glm(y, exog, np.r_[OVER_CALLS, den_calls])
    arrays = [np.array([a], float) for a in (OVER_NUM, OVER_CALLS, OVER_DEN, den_calls)]
    beta, inv_info, x2, df, robust = stats._block_fit(*arrays)
    assert beta[0] == pytest.approx(fit.params[-1], rel=1e-9) and df[0] == fit.df_resid == j - 1
    assert math.sqrt(x2[0] / df[0] * inv_info[0]) == pytest.approx(fit.bse[-1], rel=1e-6)
    r = stats.rate_ratio(
        {i: C(OVER_NUM[i], OVER_CALLS[i]) for i in range(j)}, {i: C(OVER_DEN[i], den_calls[i]) for i in range(j)}
    )
    half = sps.t.ppf(0.975, j - 1) * math.sqrt(max(x2[0] / df[0] * inv_info[0], robust[0]))
    assert (r.method, r.df) == ("quasi-poisson", j - 1)
    assert r.value == pytest.approx(math.exp(fit.params[-1]))
    assert (r.low, r.high) == (pytest.approx(math.exp(beta[0] - half)), pytest.approx(math.exp(beta[0] + half)))
    poisson = stats.rate_ratio(  # the same totals without the spread: exact, and far narrower
        {i: C(sum(OVER_NUM) // j, OVER_CALLS[i]) for i in range(j)},
        {i: C(sum(OVER_DEN) // j, 2 * OVER_CALLS[i]) for i in range(j)},
    )
    assert poisson.method == "poisson-exact" and poisson.relative_half_width < 0.3 * r.relative_half_width


def test_overdispersed_unpaired_counts_are_the_quasi_poisson_glm_of_two_rates():
    j = len(OVER_NUM)
    fit = _glm(OVER_NUM + OVER_DEN, np.column_stack([np.ones(2 * j), np.r_[np.ones(j), np.zeros(j)]]), OVER_CALLS * 2)
    r = stats.rate_ratio(
        {("a", i): C(OVER_NUM[i], OVER_CALLS[i]) for i in range(j)},
        {("b", i): C(OVER_DEN[i], OVER_CALLS[i]) for i in range(j)},
    )
    half = sps.t.ppf(0.975, fit.df_resid) * fit.bse[-1]
    assert (r.method, r.df, r.n) == ("quasi-poisson", 2 * j - 2, 2 * j)
    assert r.value == pytest.approx(math.exp(fit.params[-1]))
    assert (r.low, r.high) == (
        pytest.approx(math.exp(fit.params[-1] - half), rel=1e-6),
        pytest.approx(math.exp(fit.params[-1] + half), rel=1e-6),
    )


def test_a_spread_metric_is_named_by_its_suffix():
    assert stats.spread_metric("kieker-text", "peaks") == "kieker-text peaks"
    assert stats.is_spread("B1 sd") and stats.is_spread("spass-meter max") and not stats.is_spread("B1")
    assert not stats.is_spread("sd") and not stats.is_spread("wall_ns/single/1")
    with pytest.raises(ValueError, match="spread 'var'"):
        stats.spread_metric("B1", "var")
    # beside spreads, interrupt counts are not means of the calls either: no precision plan, no means table
    assert stats.is_side_metric("kieker-dump interrupts timer") and stats.is_side_metric("B1 sd")
    assert not stats.is_side_metric("kieker-dump") and not stats.is_side_metric("cpu-clock/single/8")
