"""pirex/analysis/across.py against independent computations: statsmodels' Welch interval, its two one-sided
tests and its REML mixed model, and a small data set worked by hand."""

import math

import numpy as np
import pytest

from pirex.analysis import across
from pirex.analysis.interface import RunValue


def _statsmodels():
    """statsmodels' Welch interval, two one-sided tests and mixed model: a dev dependency (pinned, always there in
    `make test`); the Debian-packaged analysis stack of 32-bit Pis (tests/test_debian_python.py) runs the other
    tests of this module without it."""
    pytest.importorskip("statsmodels", reason="statsmodels (the dev extra) is the independent check")
    from statsmodels.formula.api import mixedlm
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

    return mixedlm, CompareMeans, DescrStatsW, ttost_ind


def _sample(seed: int, n: int, centre: float, cv: float) -> np.ndarray:
    return centre * np.exp(np.random.default_rng(seed).normal(0, cv, n))


# (a, b): unequal sizes and variances, one side ten times the spread of the other, a large and a small ratio
DATA_SETS = [
    (_sample(1, 8, 100.0, 0.02), _sample(2, 8, 101.0, 0.02)),
    (_sample(3, 5, 100.0, 0.01), _sample(4, 12, 97.0, 0.05)),
    (_sample(5, 20, 50.0, 0.10), _sample(6, 6, 80.0, 0.01)),
    (_sample(7, 7, 3.0, 0.03), _sample(8, 9, 3.1, 0.03)),
]


@pytest.mark.parametrize(("a", "b"), DATA_SETS)
@pytest.mark.parametrize("level", [0.95, 0.99])
def test_between_is_welchs_interval_of_the_log_difference(a, b, level):
    mixedlm, CompareMeans, DescrStatsW, ttost_ind = _statsmodels()
    iv = across.between(a, b, level)
    low, high = CompareMeans(DescrStatsW(np.log(a)), DescrStatsW(np.log(b))).tconfint_diff(1 - level, usevar="unequal")
    assert (iv.low, iv.high) == (pytest.approx(math.exp(low), rel=1e-9), pytest.approx(math.exp(high), rel=1e-9))
    assert iv.value == pytest.approx(math.exp(np.log(a).mean() - np.log(b).mean()), rel=1e-12)
    assert iv.method == "welch-log" and iv.n == len(a) + len(b) and iv.level == level


@pytest.mark.parametrize(("a", "b"), DATA_SETS)
@pytest.mark.parametrize("margin", [0.02, 0.05, 0.2])
def test_tost_p_values_and_interval_are_statsmodels(a, b, margin):
    mixedlm, CompareMeans, DescrStatsW, ttost_ind = _statsmodels()
    t = across.tost(a, b, margin)
    p, lower, upper = ttost_ind(np.log(a), np.log(b), -math.log1p(margin), math.log1p(margin), usevar="unequal")
    assert (t.p_low, t.p_high, t.p) == (pytest.approx(lower[1]), pytest.approx(upper[1]), pytest.approx(p))
    low, high = CompareMeans(DescrStatsW(np.log(a)), DescrStatsW(np.log(b))).tconfint_diff(0.10, usevar="unequal")
    assert t.interval.bounds == (pytest.approx(math.exp(low)), pytest.approx(math.exp(high)))
    assert t.interval.level == pytest.approx(0.90)
    assert t.equivalent == (p < 0.05)  # the interval inside the margin iff both one-sided tests reject
    assert not (t.equivalent and t.outside) and t.reason is None


def test_tost_verdicts_on_clear_cases():
    a, b = _sample(11, 10, 100.0, 0.01), _sample(12, 10, 100.0, 0.01)
    assert across.tost(a, b, 0.05).equivalent
    slow = across.tost(a, 1.3 * b, 0.05)
    assert slow.outside and not slow.equivalent and slow.p > 0.5
    neither = across.tost(a, b, 0.001)
    assert not neither.equivalent and not neither.outside


def test_between_too_few_values_zero_spread_and_non_positive_values():
    iv = across.between([1.0, 2.0, 3.0, 4.0], [1.0] * 6, names=("C", "A"))
    assert not iv.has_interval and iv.reason == "no interval: 4 runs of C, 5 needed" and iv.method == "none"
    assert iv.value == pytest.approx(24 ** (1 / 4))  # geometric mean 24^(1/4) over 1
    t = across.tost([1.0] * 3, [1.0] * 6, 0.05, names=("C", "A"))
    assert t.reason == "no interval: 3 runs of C, 5 needed" and not t.equivalent and math.isnan(t.p)
    point = across.between([2.0] * 5, [4.0] * 7)
    assert (point.value, point.low, point.high) == (0.5, 0.5, 0.5)
    same = across.tost([2.0] * 5, [2.0] * 7, 0.05)
    assert same.equivalent and (same.p_low, same.p_high) == (0.0, 0.0)
    assert across.tost([2.0] * 5, [4.0] * 7, 0.05).outside
    with pytest.raises(ValueError, match="<= 0"):
        across.between([1.0, 0.0, 2.0, 3.0, 4.0], [1.0] * 5)
    with pytest.raises(ValueError, match="margin"):
        across.tost([1.0] * 5, [1.0] * 5, 1.5)


# --- agree


def test_one_slow_device_among_three_is_named():
    # C's times 30 % above A's and B's: C/A and C/B about 1.3, far outside ±5 %; A and B equivalent
    groups = {"A": _sample(21, 10, 100.0, 0.01), "B": _sample(22, 10, 100.0, 0.01), "C": _sample(23, 10, 130.0, 0.01)}
    ag = across.agree(groups, 0.05)
    assert ag.verdict == "differs" and ag.odd == ("C",)
    assert [(p.a, p.b) for p in ag.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    assert ag.pairs[0].tost.equivalent and ag.pairs[1].tost.outside and ag.pairs[2].tost.outside
    assert ag.reason.startswith("C differs from A and B by more than ±5 % (90 % intervals 1.")
    # the reason gives C/A, the inverse of the pair's A/C interval
    low, high = ag.pairs[1].tost.interval.bounds
    assert f"{1 / high:.2f}-{1 / low:.2f}" in ag.reason


def test_two_devices_that_differ_are_both_named():
    ag = across.agree({"pi": _sample(31, 8, 100.0, 0.01), "server": _sample(32, 8, 20.0, 0.01)}, 0.1)
    assert ag.verdict == "differs" and ag.odd == ("pi", "server")
    assert ag.reason.startswith("pi/server differ by more than ±10 % (90 % interval 4.")


def test_equal_devices_hold_and_a_tight_margin_is_inconclusive():
    groups = {name: _sample(40 + i, 10, 100.0, 0.01) for i, name in enumerate("ABC")}
    ag = across.agree(groups, 0.05)
    assert ag.verdict == "holds" and ag.odd == () and all(p.tost.equivalent for p in ag.pairs)
    low, high = min(p.tost.interval.low for p in ag.pairs), max(p.tost.interval.high for p in ag.pairs)
    assert ag.reason == f"A, B and C agree within ±5 % (every pair's 90 % interval within {low:.2f}-{high:.2f})"
    assert 0.95 < low < 1 < high < 1.05
    tight = across.agree(groups, 0.001)
    assert tight.verdict == "inconclusive" and tight.odd == ()
    assert tight.reason.startswith("A/B, A/C and B/C neither within nor wholly outside ±0.1 % (90 % intervals 0.")


def test_a_device_with_too_few_runs_is_inconclusive_and_named():
    groups = {"A": _sample(51, 10, 100.0, 0.01), "B": _sample(52, 4, 100.0, 0.01), "C": _sample(53, 10, 130.0, 0.01)}
    ag = across.agree(groups, 0.05)
    assert ag.verdict == "inconclusive" and ag.reason == "no interval: 4 runs of B, 5 needed"
    with pytest.raises(ValueError, match="at least 2 devices"):
        across.agree({"A": [1.0] * 5}, 0.05)


# --- run values: device means and the decomposition


def _values(data: dict, metric: str = "B1", variant: str = "native") -> list[RunValue]:
    """data[device][repetition][run] = value, or a list of inner samples (the run's value their mean)."""
    out = []
    for device, reps in data.items():
        for rep, runs in enumerate(reps):
            for run, x in enumerate(runs):
                inner = tuple(x) if isinstance(x, list) else ()
                value = float(np.mean(x))
                out.append(
                    RunValue("e", f"{device}-b", device, variant, rep, metric, value, "ns", run=run, inner=inner)
                )
    return out


# data[device][repetition][run], by hand:
#   run level: within-repetition variances 2, 2, 2, 8 -> S1^2 = 3.5
#   repetition level: A's repetition means 2, 6 (variance 8), B's 13, 22 (variance 40.5) -> S2^2 = 24.25
#   device level: device means 4, 17.5 -> S3^2 = 13.5^2 / 2 = 91.125
#   T1^2 = 3.5, T2^2 = 24.25 - 3.5/2 = 22.5, T3^2 = 91.125 - 24.25/2 = 79; grand mean 10.75
HAND = {"B": [[12, 14], [20, 24]], "A": [[1, 3], [5, 7]]}


def test_decompose_devices_against_hand_computation():
    values = _values(HAND) + _values({"A": [[1000, 1000]]}, variant="other")  # another variant: ignored
    d = across.decompose_devices(values, "B1", "native")
    assert [lv.name for lv in d.levels] == ["device", "repetition", "fork"]
    assert [lv.s2 for lv in d.levels] == [pytest.approx(91.125), pytest.approx(24.25), pytest.approx(3.5)]
    assert [lv.t2 for lv in d.levels] == [pytest.approx(79.0), pytest.approx(22.5), pytest.approx(3.5)]
    assert d.grand_mean == pytest.approx(10.75)
    means = across.device_means(values[::-1], "B1", "native")  # in (bundle, repetition) order, devices sorted
    assert list(means.items()) == [("A", [2.0, 6.0]), ("B", [13.0, 22.0])]


def test_decompose_devices_with_inner_samples_names_and_balance():
    inner = {"A": [[[1, 3], [5, 7]], [[2, 2], [10, 14]]], "B": [[[1, 1], [2, 2]], [[3, 3], [4, 4], [9, 9]]]}
    d = across.decompose_devices(_values(inner), "B1", "native", names=("device", "repetition", "loop", "iteration"))
    assert [lv.name for lv in d.levels] == ["device", "repetition", "loop", "iteration"]
    assert [lv.count for lv in d.levels] == [2, 2, 2, 2] and "unbalanced: cut to 2 x 2 x 2 x 2" in d.note
    with pytest.raises(ValueError, match="no run values"):
        across.decompose_devices(_values(inner), "B2", "native")


def test_decompose_devices_equals_the_reml_mixed_model_on_a_balanced_design():
    mixedlm, CompareMeans, DescrStatsW, ttost_ind = _statsmodels()
    # 4 devices x 6 repetitions x 5 runs; components 16 (device), 4 (repetition), 1 (run); seeded.
    # Balanced and every ANOVA estimate positive: REML's estimates are the ANOVA (K&J) ones
    # (Searle, Casella & McCulloch 1992, "Variance Components", 6.3)
    rng = np.random.default_rng(2017)
    shape = (4, 6, 5)
    y = 100 + rng.normal(0, 4, (4, 1, 1)) + rng.normal(0, 2, (4, 6, 1)) + rng.normal(0, 1, shape)
    data = {f"pi{d}": y[d].tolist() for d in range(4)}
    dec = across.decompose_devices(_values(data), "B1", "native")
    device, rep, run = (lv.t2 for lv in dec.levels)
    assert min(device, rep, run) > 0
    idx = np.indices(shape).reshape(3, -1)
    import pandas as pd  # statsmodels' formulas take a data frame (pandas comes with statsmodels)

    df = pd.DataFrame({"y": y.ravel(), "device": idx[0], "rep": idx[1]})
    fit = mixedlm("y ~ 1", df, groups="device", re_formula="1", vc_formula={"rep": "0 + C(rep)"}).fit(reml=True)
    assert fit.converged
    assert float(fit.cov_re.iloc[0, 0]) == pytest.approx(device, rel=1e-4)
    assert float(fit.vcomp[0]) == pytest.approx(rep, rel=1e-4)
    assert float(fit.scale) == pytest.approx(run, rel=1e-4)
    assert dec.grand_mean == pytest.approx(float(fit.fe_params.iloc[0]), rel=1e-9)


# --- the top level's share, never bare


def test_the_device_share_from_two_devices_is_not_estimable_and_from_three_spans_a_factor_of_146():
    two = across.top_share(across.decompose_devices(_values(HAND), "B1", "native"))
    assert two.k == 2 and two.low is None and two.high is None
    assert two.share == pytest.approx(79 / (79 + 22.5 + 3.5))  # the point estimate of HAND, by hand above
    assert two.factor == pytest.approx(5116, rel=1e-3)  # chi2(0.975, 1) / chi2(0.025, 1)
    assert two.text().startswith("75 % (from 2 devices: not estimable") and "factor of about 5,116" in two.text()
    three = {**HAND, "C": [[30, 31], [33, 36]]}
    t = across.top_share(across.decompose_devices(_values(three), "B1", "native"))
    assert t.k == 3 and t.factor == pytest.approx(145.8, rel=1e-3)  # the "a factor of ~150"
    assert 0 <= t.low < t.share < t.high <= 1
    assert t.text() == (
        f"{100 * t.share:.0f} % [{100 * t.low:.0f} %; {100 * t.high:.0f} %] (95 % interval from 3 devices, "
        "2 degrees of freedom)"
    )


def test_the_device_share_interval_is_the_exact_f_interval_worked_by_hand():
    from scipy import stats as sps

    # 3 devices x 2 repetitions x 2 runs: S_k^2 (device means), W = S_r^2 / 2, the lower components T_r^2 + T_1^2
    data = {**HAND, "C": [[30, 31], [33, 36]]}
    d = across.decompose_devices(_values(data), "B1", "native")
    device, rep, run = d.levels
    w = rep.s2 / 2
    ratio, c = device.s2 / w, (rep.t2 + run.t2) / w
    lam_low = max(ratio / sps.f.ppf(0.975, 2, 3) - 1, 0)
    lam_high = ratio / sps.f.ppf(0.025, 2, 3) - 1
    t = across.top_share(d)
    assert t.low == pytest.approx(lam_low / (lam_low + c)) and t.high == pytest.approx(lam_high / (lam_high + c))


def test_the_device_share_interval_covers_at_its_level():
    """2,000 simulated nested designs (3 devices x 5 repetitions x 3 runs, components 1, 1, 0.25: a true share of
    0.44): the 95 % interval covers the true share within [93.5 %, 96.5 %] (3 standard errors). The chi-square
    interval with the lower levels taken as known, tried first, covered about 93 % in this design."""
    from pirex.analysis import precision

    rng = np.random.default_rng(35)
    k, r, f, n = 3, 5, 3, 2000
    y = 100 + rng.normal(0, 1.0, (n, k, 1, 1)) + rng.normal(0, 1.0, (n, k, r, 1)) + rng.normal(0, 0.5, (n, k, r, f))
    covered = 0
    for one in y:
        t = across.top_share(precision.decompose(one, ["device", "repetition", "run"]))
        covered += t.low <= 1 / (1 + 1 + 0.25) <= t.high
    assert 0.935 <= covered / n <= 0.965, covered / n


def test_the_devices_table_counts_repetitions_not_forks():
    """Three forks per repetition share the repetition's JVM start and moment: averaged first, n = repetitions
    and the interval over repetition means (it counted 15 runs per device, a narrower interval, before)."""
    from pirex.analysis import devices, stats

    rng = np.random.default_rng(7)
    data = {
        dev: [list(centre * (1 + rng.normal(0, 0.02)) * (1 + rng.normal(0, 0.002, 3))) for _ in range(5)]
        for dev, centre in (("pi-a", 100.0), ("pi-b", 120.0))
    }
    values = _values(data)
    t = devices.table(values)
    for dev, cell, record in zip(("pi-a", "pi-b"), t.rows[0][2:], t.records, strict=True):
        means = [float(np.mean(forks)) for forks in data[dev]]
        want = stats.mean_interval(means, 0.95, what="repetitions")
        assert cell.endswith(", n=5") and record["repetitions"] == 5
        assert (record["mean"], record["low"], record["high"]) == pytest.approx((want.value, want.low, want.high))
        pooled = stats.mean_interval([x for forks in data[dev] for x in forks])  # the pseudo-replicated one
        assert pooled.n == 15 and pooled.high - pooled.low < 0.7 * (want.high - want.low)
    short = devices.table(_values({"pi-a": [[1.0, 2.0]] * 2}))
    assert short.rows[0][2] == "1.500 (no interval: 2 repetitions, 5 needed), n=2"
    assert "mean over the device's repetitions" in short.notes[0]
