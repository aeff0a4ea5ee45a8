"""The duet's ratio with the CPU half as a factor (stats.duet_ratio), the design's choice of model
(stats.design_ratio) and the difference test of two designs' ratios (stats.difference_test)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pirex.analysis import stats

SWAPPED = (1, -1, 1, -1, 1)  # a duet of five repetitions: the numerator on the first half in 0, 2, 4


def _duet(d: np.ndarray, halves=SWAPPED) -> tuple[dict, dict, dict]:
    """Numerator, denominator and halves keyed (device, bundle, repetition) from log ratios d."""
    keys = [("pi", "b", j) for j in range(len(d))]
    num = {k: 1e6 * math.exp(x) for k, x in zip(keys, d, strict=True)}
    den = dict.fromkeys(keys, 1e6)
    return num, den, dict(zip(keys, halves, strict=True))


def test_the_issue_counterexample_a_half_effect_widens_the_unmodelled_interval_and_not_the_model():
    """Issue 35: a 2 % half effect, 0.5 % noise, five repetitions, truth 1: the paired t interval unmodelled reads
    1.0040 [0.9771; 1.0317], with the half as a factor 1.0001 [0.9928; 1.0074]. Seeded draw, same magnitudes."""
    rng = np.random.default_rng(35)
    h = np.array(SWAPPED, dtype=float)
    d = math.log(1.02) * h + rng.normal(0, 0.005, 5)
    num, den, halves = _duet(d)
    plain = stats.paired_ratio(num, den, method="t")
    model = stats.duet_ratio(num, den, halves)
    print(f"\nunmodelled {plain.text(4)} {plain.percent(2)}; modelled {model.text(4)} {model.percent(2)}")
    assert plain.method == "t-log" and plain.relative_half_width > 0.02  # the half's 2 % is in the spread
    assert model.method == "duet-half-t" and model.relative_half_width < 0.01
    assert model.low < 1 < model.high and abs(model.value - 1) < 0.005
    assert abs(plain.value - 1) > abs(model.value - 1)  # 3 repetitions on one half, 2 on the other: biased
    assert model.half.low < 1.02 < model.half.high and model.half.low > 1  # the half's effect, found
    assert model.half.note == "3 on the first half, 2 on the second"


def test_the_model_is_ordinary_least_squares_with_t_on_n_minus_2():
    """The closed form: mu = (mean of d on half +1 + mean on half -1) / 2, se(mu) = s / 2 sqrt(1/n+ + 1/n-)."""
    d = np.array([0.031, -0.012, 0.026, -0.018, 0.022, 0.004])
    h = np.array([1, -1, 1, -1, 1, -1])
    iv = stats.duet_ratio(*_duet(d, h))
    up, down = d[h == 1], d[h == -1]
    mu, delta = (up.mean() + down.mean()) / 2, (up.mean() - down.mean()) / 2
    rss = ((up - up.mean()) ** 2).sum() + ((down - down.mean()) ** 2).sum()
    se = math.sqrt(rss / 4) / 2 * math.sqrt(1 / 3 + 1 / 3)
    q = stats.t_quantile(0.95, 4)
    assert iv.value == pytest.approx(math.exp(mu)) and iv.half.value == pytest.approx(math.exp(delta))
    assert (iv.low, iv.high) == pytest.approx((math.exp(mu - q * se), math.exp(mu + q * se)))
    assert (iv.half.low, iv.half.high) == pytest.approx((math.exp(delta - q * se), math.exp(delta + q * se)))
    assert iv.value == pytest.approx(math.exp(d.mean()))  # balanced: the same point as the plain mean, narrower
    assert iv.relative_half_width < stats.paired_ratio(*_duet(d, h)[:2], method="t").relative_half_width


def test_the_model_agrees_with_statsmodels_ols():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(3)
    h = np.array([1, -1, 1, -1, 1, -1, 1, 1, -1])
    d = 0.01 + 0.015 * h + rng.normal(0, 0.004, h.size)
    iv = stats.duet_ratio(*_duet(d, h), level=0.9)
    fit = sm.OLS(d, sm.add_constant(h.astype(float))).fit()
    (lo_mu, hi_mu), (lo_d, hi_d) = fit.conf_int(alpha=0.1)
    assert (math.log(iv.low), math.log(iv.high)) == pytest.approx((lo_mu, hi_mu))
    assert (math.log(iv.half.low), math.log(iv.half.high)) == pytest.approx((lo_d, hi_d))


@pytest.mark.parametrize(
    ("halves", "n", "reason"),
    [
        ((1, 1, 1, 1, 1), 5, "ran on one CPU half in all 5 paired repetitions, so the half's effect cannot be told"),
        ((1, -1, 1, -1), 4, "no interval: 4 paired repetitions, 5 needed"),
    ],
)
def test_without_both_halves_or_enough_repetitions_no_interval_and_why(halves, n, reason):
    d = np.linspace(-0.01, 0.01, n)
    iv = stats.duet_ratio(*_duet(d, halves))
    assert not iv.has_interval and iv.half is None and reason in iv.reason and iv.method == "none"
    assert iv.value == pytest.approx(1.0)


def test_a_repetition_without_its_half_is_an_error_not_a_guess():
    num, den, halves = _duet(np.zeros(5))
    del halves[("pi", "b", 2)]
    with pytest.raises(ValueError, match="no CPU half for 1 repetition"):
        stats.duet_ratio(num, den, halves)
    with pytest.raises(ValueError, match="halves must be \\+1, -1"):
        stats.duet_ratio(num, den, dict.fromkeys(num, 2))


def test_the_design_decides_the_model():
    rng = np.random.default_rng(5)
    d = rng.normal(0, 0.01, 6)
    num, den, halves = _duet(d, (1, -1) * 3)
    assert stats.design_ratio(num, den, halves).method == "duet-half-t"
    assert stats.design_ratio(num, den, dict.fromkeys(num, 0)).method == "t-log"  # interleaved: no half
    assert stats.design_ratio(num, den, None) == stats.paired_ratio(num, den, method="t")


def test_the_difference_test_of_two_ratios():
    """Two t-log intervals of equal width whose points lie exactly one combined se apart: z = 1 and p from t on
    the Welch-Satterthwaite degrees of freedom; a duet interval's se is recovered with n - 2."""
    q = stats.t_quantile(0.95, 9)
    se = 0.01
    a = stats.Interval(math.exp(0.0), math.exp(-q * se), math.exp(q * se), 10, 0.95, "t-log")
    shift = math.sqrt(2) * se
    b = stats.Interval(math.exp(shift), math.exp(shift - q * se), math.exp(shift + q * se), 10, 0.95, "t-log")
    z, p = stats.difference_test(b, a)
    assert z == pytest.approx(1.0) and p == pytest.approx(2 * float(__import__("scipy").stats.t.sf(1.0, 18)))
    q6 = stats.t_quantile(0.95, 6)
    duet = stats.DuetInterval(
        1.05, math.exp(math.log(1.05) - q6 * se), math.exp(math.log(1.05) + q6 * se), 8, 0.95, "duet-half-t"
    )
    z, p = stats.difference_test(duet, a)
    assert z == pytest.approx(math.log(1.05) / shift) and p < 0.01
    with pytest.raises(ValueError, match="does not say its standard error"):
        stats.difference_test(stats.Interval(1, 0.9, 1.1, 5, 0.95, "bca-log"), a)
    with pytest.raises(ValueError, match="both ratios need an interval"):
        stats.difference_test(stats.Interval(1, None, None, 3, 0.95, "none"), a)


# --- the duet in precision.py: run values' halves, the plan, the A/A check


def _values(d: np.ndarray, halves, numerator: str = "docker") -> list:
    from pirex.analysis.interface import RunValue

    out = []
    for j, (x, h) in enumerate(zip(d, halves, strict=True)):
        out.append(RunValue("jmh", "b", "pi", numerator, j, "B1", 1e6 * math.exp(x), "ops/s", half=h))
        out.append(RunValue("jmh", "b", "pi", "native", j, "B1", 1e6, "ops/s", half=-h))
    return out


def test_paired_interval_models_the_half_where_the_run_values_carry_it():
    from pirex.analysis import precision

    rng = np.random.default_rng(8)
    h = np.array([1, -1] * 3)
    d = 0.02 * h + rng.normal(0, 0.005, 6)
    duet = precision.paired_interval(_values(d, h), "B1", "docker", "native")
    assert duet.method == "duet-half-t" and duet == stats.duet_ratio(*_duet(d, h))
    assert precision.run_halves(_values(d, h), "B1", "docker") == {("pi", "b", j): int(h[j]) for j in range(6)}
    alone = precision.paired_interval(_values(d, [0] * 6), "B1", "docker", "native")
    assert alone.method != "duet-half-t" and precision.run_halves(_values(d, [0] * 6), "B1", "docker") == {}


def test_stein_plans_a_duet_from_the_model_and_an_even_count():
    """Issue 35: with a 2 % half effect and 0.5 % noise, Stein's plan from a pilot of five asks for a median of
    about 155 repetitions when the half is left in the spread, about 11 with it in the model; and n is even."""
    from pirex.analysis import precision

    rng = np.random.default_rng(0)
    h = np.array(SWAPPED)
    plain, model = [], []
    for _ in range(300):
        d = math.log(1.02) * h + rng.normal(0, 0.005, 5)
        plain.append(precision.plan(d, 0.005).n)
        p = precision.plan(d, 0.005, halves=h, seconds_per_repetition=10, budget=10 * 101)
        assert p.n % 2 == 0 and p.n_budget == 100 and p.extra == p.n - 5
        model.append(p.n)
    print(f"\nStein's n for +-0.5 %: unmodelled median {np.median(plain):.0f}, modelled {np.median(model):.0f}")
    assert 130 <= np.median(plain) <= 180 and 6 <= np.median(model) <= 14  # 10.2 at the true sigma
    assert precision.duet_sd([0.01, -0.01, 0.01, -0.01], [1, -1, 1, -1]) == (pytest.approx(0.0), 2)
    assert precision.even(11) == 12 and precision.even(12) == 12


def test_an_aa_beyond_its_tolerance_says_the_machine_was_not_steady():
    from pirex.analysis import precision

    assert precision.aa_check(stats.Interval(1.001, 0.995, 1.007, 10, 0.95, "t-log")) is None
    assert precision.aa_check(stats.Interval(1.0, None, None, 3, 0.95, "none", "no interval")) is None
    assert precision.aa_check(None) is None
    assert precision.aa_check(stats.Interval(1.006, 1.003, 1.009, 80, 0.95, "t-log")) is None  # excludes 1 only
    assert precision.aa_check(stats.Interval(0.985, 0.980, 0.989, 80, 0.95, "t-log")) is not None  # below 1/1.01
    text = precision.aa_check(stats.Interval(1.021, 1.012, 1.030, 10, 0.95, "t-log"))
    assert text == (
        "the machine was not steady: the A/A ratio 1.0210 [1.0120; 1.0300] lies beyond the 1 % the same variant "
        "may differ by"
    )
    rng = np.random.default_rng(2)
    h = np.array([1, -1] * 4)
    aa = stats.duet_ratio(*_duet(0.03 * h + rng.normal(0, 0.002, 8), h))  # a steady machine, a 3 % half
    assert precision.aa_check(aa) is None and aa.half.low > 1.02  # the A/A duet measures the half's effect
    skewed = stats.duet_ratio(*_duet(0.02 + 0.03 * h + rng.normal(0, 0.002, 8), h))
    assert precision.aa_check(skewed).endswith(
        f"may differ by (the CPU half's own effect {skewed.half.text(4)}, taken out)"
    )


AA_NS = (5, 10, 20, 40, 80)


@pytest.mark.parametrize("truth", [1.0, 1.003, 1.01])  # equal, the issue's 0.3 %, at the tolerance
def test_the_aa_check_blocks_no_more_often_as_n_grows_and_at_most_alpha_on_equal_sides(truth):
    """Issue 50: the A/A check was a point test ("excludes 1"): copies 0.3 % apart with a 1 % spread blocked 8 / 14 /
    25 / 45 / 75 % of verdicts at n = 5 / 10 / 20 / 40 / 80, and a steady machine 5 % of bundles. aa_check() itself,
    on paired_ratio's 95 % intervals of simulated copies: within the tolerance the rate falls with n, and on exactly
    equal sides it stays at most alpha. Fails with the point test put back (its rate grows: 8 % to 75 %)."""
    from pirex.analysis import precision

    rng, draws, rates = np.random.default_rng(int(truth * 1000)), 2_000, []
    for n in AA_NS:
        d = math.log(truth) + rng.normal(0, 0.01, (draws, n))  # a repetition's A/A log ratio: 1 % spread
        low, high = stats.t_log_bounds(d, 0.95)
        value = np.exp(d.mean(axis=1))
        blocked = sum(
            precision.aa_check(stats.Interval(float(v), float(lo), float(hi), n, 0.95, "t-log")) is not None
            for v, lo, hi in zip(value, low, high, strict=True)
        )
        rates.append(blocked / draws)
    print(
        f"\nA/A blocks at a true {truth:g}, 1 % spread, n = {AA_NS}: " + " / ".join(f"{100 * r:.1f} %" for r in rates)
    )
    assert all(b <= a + 0.01 for a, b in zip(rates, rates[1:], strict=False))  # never more likely with n
    assert max(rates) <= 0.05 + 0.01  # at most alpha (2,000 draws: se 0.5 %)
