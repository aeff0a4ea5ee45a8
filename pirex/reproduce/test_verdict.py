"""The rules as regions of the interval (pirex/reproduce/verdict.py), on the counterexamples of issue 35: each now
gives the honest answer."""

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats as sps

from pirex.analysis import stats
from pirex.analysis.interface import RunValue
from pirex.reproduce import claims
from pirex.reproduce.claims import Claim, Side
from pirex.reproduce.reproduction import multiplicity_note
from pirex.reproduce.verdict import (
    DIFFERS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    Ours,
    Verdict,
    holm,
    judge,
    ours,
    p_differs,
    regions,
    verdict_level,
)

B1 = Side(("B1",), "native")
DOCKER = Side(("B1",), "docker")


def _claim(rule: str, **kw) -> Claim:
    return Claim("icpe18", "c", "Table 1", "a claim", "jmh", None, ("native", "docker"), DOCKER, B1, rule=rule, **kw)


def _at(low: float, high: float, n: int = 8, level: float = 0.90, aa: stats.Interval | None = None) -> Ours:
    """Ours with a given t interval on logs (centred on the log scale, as a t interval is)."""
    return Ours(stats.Interval(math.sqrt(low * high), low, high, n, level, "t-log"), "B1", (0.0, 0.01, -0.01, 0.02), aa)


def test_the_interval_regions_are_read_off_is_the_one_of_alpha_five_percent_each_side():
    assert verdict_level(0.95) == pytest.approx(0.90)  # TOST at alpha = 5 %: the 90 % interval
    assert verdict_level(0.99) == pytest.approx(0.98)


def test_a_change_beyond_5_percent_needs_the_whole_interval_beyond_it():
    """[1.01, 1.03] excludes 1 but shows no change beyond 5 %: it used to hold; it lies inside the band."""
    c = _claim("different", margin=0.05)
    assert judge(c, _at(1.01, 1.03)).verdict == DIFFERS
    assert judge(c, _at(1.06, 1.09)).verdict == HOLDS
    assert judge(c, _at(0.90, 0.94)).verdict == HOLDS  # a change either way
    assert judge(c, _at(1.03, 1.07)).verdict == INCONCLUSIVE  # crosses 1.05


def test_more_than_98_percent_is_a_rule_of_its_own():
    """ "more than 98 % fewer interrupts" used to be judged as "less than 1": a 10 % drop held."""
    c = _claim("beyond", edge=0.02, direction="less")
    assert judge(c, _at(0.88, 0.92)).verdict == DIFFERS  # a 10 % drop is not a 98 % one
    assert judge(c, _at(0.005, 0.015)).verdict == HOLDS
    v = judge(c, _at(0.01, 0.04))
    assert v.verdict == INCONCLUSIVE and "contains 0.02" in v.reason


def test_a_margin_gives_the_same_verdict_on_a_over_b_and_b_over_a():
    """[0.9702, 0.9831] was equivalent at 3 % and its inverse [1.0172, 1.0307] was not."""
    c = _claim("equivalent", margin=0.03)
    a_over_b, b_over_a = judge(c, _at(0.9702, 0.9831)), judge(c, _at(1 / 0.9831, 1 / 0.9702))
    assert a_over_b.verdict == b_over_a.verdict == INCONCLUSIVE  # 0.9702 < 1/1.03 = 0.97087: crosses the edge
    for low, high in [(0.975, 0.99), (0.95, 0.96), (0.96, 1.0), (1.0, 1.04)]:
        assert judge(c, _at(low, high)).verdict == judge(c, _at(1 / high, 1 / low)).verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.990, 0.999, HOLDS),  # slower, by at most 2 %
        (1.001, 1.010, DIFFERS),  # not slower at all
        (0.950, 0.970, DIFFERS),  # slower by more than "slightly"
        (0.995, 1.004, INCONCLUSIVE),  # contains 1
        (0.970, 0.990, INCONCLUSIVE),  # crosses 1/1.02
    ],
)
def test_slightly_slower_is_a_direction_and_a_size_on_the_log_scale(low, high, verdict):
    c = _claim("direction-at-most", margin=0.02, direction="less", published=0.998)
    assert judge(c, _at(low, high)).verdict == verdict
    greater = dataclasses.replace(c, direction="greater", published=1 / 0.998)  # the mirror image on the log scale
    assert judge(greater, _at(1 / high, 1 / low)).verdict == verdict


def test_a_precision_goal_never_turns_a_decided_verdict_into_an_inconclusive_one():
    c = _claim("within", published=1.0, tolerance=0.10)
    wide = _at(0.95, 1.06)  # inside [0.909, 1.1]: holds, though ±5.5 % wide
    assert judge(c, wide, precision=0.01).verdict == HOLDS
    v = judge(c, _at(0.85, 1.02), precision=0.01)
    assert v.verdict == INCONCLUSIVE and "more repetitions would decide it" in v.reason


def test_an_aa_beyond_its_tolerance_keeps_the_verdict_inconclusive_with_the_reason():
    steady = stats.Interval(1.001, 0.995, 1.007, 8, 0.95, "t-log")
    unsteady = stats.Interval(1.03, 1.02, 1.04, 8, 0.95, "t-log")
    c = _claim("direction", direction="less", published=0.9)
    assert judge(c, _at(0.88, 0.92, aa=steady)).verdict == HOLDS
    v = judge(c, _at(0.88, 0.92, aa=unsteady))
    assert v.verdict == INCONCLUSIVE and "the machine was not steady" in v.reason and "lies beyond the 1 %" in v.reason
    near = stats.Interval(1.006, 1.002, 1.011, 8, 0.95, "t-log")  # excludes 1, but not shown beyond 1 %
    assert judge(c, _at(0.88, 0.92, aa=near)).verdict == HOLDS


def test_the_regions_never_overlap():
    rng = np.random.default_rng(1)
    low = np.exp(rng.normal(0, 0.2, 20_000))
    high = low * np.exp(rng.uniform(0, 0.3, low.size))
    for c in [
        _claim("direction", direction="less"),
        _claim("direction", direction="greater"),
        _claim("equivalent", margin=0.05),
        _claim("different", margin=0.05),
        _claim("within", published=0.9, tolerance=0.05),
        _claim("direction-at-most", margin=0.05, direction="less"),
        _claim("direction-at-most", margin=0.05, direction="greater"),
        _claim("beyond", edge=0.9, direction="less"),
        _claim("beyond", edge=1.2, direction="greater"),
    ]:
        holds, differs = regions(c, low, high)
        assert not (holds & differs).any(), c.rule
        assert holds.any() and differs.any() and (~holds & ~differs).any(), c.rule  # all three regions reachable


def test_a_differs_across_devices_is_holm_adjusted():
    c = _claim("direction", direction="less", published=0.9)
    # three devices: one interval just above 1 (p about 0.03), two that hold
    just = judge(c, _at(1.001, 1.05, n=10))
    assert just.verdict == DIFFERS and 0.01 < just.p_differs < 0.05
    far = judge(c, _at(1.10, 1.20, n=10))
    held = judge(c, _at(0.80, 0.90, n=10))
    out = holm([dataclasses.replace(v, device=d) for v, d in [(just, "a"), (held, "b"), (held, "c")]])
    assert [v.verdict for v in out] == [INCONCLUSIVE, HOLDS, HOLDS]
    assert "Holm" in out[0].reason
    out = holm([far, just, held])  # far survives alpha/3; then just against alpha/2 = 0.025 fails or passes by p
    assert out[0].verdict == DIFFERS and out[2].verdict == HOLDS
    assert out[1].verdict == (DIFFERS if just.p_differs < 0.025 else INCONCLUSIVE)
    alone = holm([just, Verdict(c, NOT_RUN, "not here")])  # one test made: nothing to adjust
    assert alone[0].verdict == DIFFERS


def test_p_differs_matches_the_interval_it_was_read_off():
    """At the edge of "differs" the p-value is alpha: an interval whose upper bound is 1 exactly."""
    c = _claim("direction", direction="greater", published=1.1)
    i = stats.Interval(math.sqrt(0.9 * 1.0), 0.9, 1.0, 12, 0.90, "t-log")
    assert p_differs(c, i) == pytest.approx(0.05, rel=1e-6)
    welch = stats.Interval(math.sqrt(0.9 * 1.0), 0.9, 1.0, 12, 0.90, "welch-log", df=7.3)
    assert p_differs(c, welch) == pytest.approx(0.05, rel=1e-6)


def test_the_report_says_how_many_false_differs_chance_alone_gives():
    c = _claim("direction", direction="less", published=0.9)
    verdicts = [judge(c, _at(0.8, 0.9))] * 40 + [Verdict(c, NOT_RUN, "no")] * 5
    note = multiplicity_note(verdicts, 0.95)
    assert "40 verdicts judged" in note and "about 2.0 false" in note and "Holm" in note and "90 %" in note


def test_contains_is_gone_from_the_vocabulary():
    assert "contains" not in claims.RULES


def _counts(num_per_rep: list[int], den_per_rep: list[int], calls: float = 1e6) -> list[RunValue]:
    out = []
    for rep, (a, b) in enumerate(zip(num_per_rep, den_per_rep, strict=True)):
        for variant, n in (("docker", a), ("native", b)):
            out.append(
                RunValue("moobench", "b", "d", variant, rep, "B1", n / calls * 1e6, "per M", count=n, exposure=calls)
            )
    return out


def test_counts_are_judged_by_their_rate_ratio_not_by_rates_with_a_half_added():
    """0 peaks against 1 per repetition over five: the +0.5 gave 0.333 [0.332; 0.334]; the exact conditional
    interval is [0; 1.09] at 95 % (two-sided p = 0.062), [0; 0.82] at the 90 % the regions are read off: "fewer"
    holds as the exact one-sided test at 5 % says (p = 1/2^5 = 0.031), and with 3 events against none it does not."""
    c = _claim("direction", direction="less", published=0.5)
    o = ours(c, _counts([0] * 5, [1] * 5))
    assert o.interval.method == "poisson-exact" and o.interval.value == 0 and o.interval.low == 0
    assert o.interval.high == pytest.approx((1 - 0.05**0.2) / 0.05**0.2)
    assert judge(c, o).verdict == HOLDS
    two_sided = stats.rate_ratio(_rates([0] * 5), _rates([1] * 5), 0.95)
    assert two_sided.high == pytest.approx((1 - 0.025**0.2) / 0.025**0.2)  # 1.09
    few = ours(c, _counts([0, 0, 0, 0, 0], [1, 1, 1, 0, 0]))
    assert judge(c, few).verdict == INCONCLUSIVE  # p = 1/8
    many = ours(c, _counts([2, 3, 1, 2, 2], [20, 22, 19, 21, 18]))
    assert judge(c, many).verdict == HOLDS and many.interval.high < 0.2


def _rates(counts: list[int]) -> dict:
    return {("d", "b", r): stats.Count(n, 1e6) for r, n in enumerate(counts)}


def test_a_duets_ratio_takes_the_cpu_half_out():
    """A 2 % half effect, 0.5 % noise, six repetitions swapped every one: the model's interval is narrow around 1."""
    rng = np.random.default_rng(3)
    values = []
    for rep in range(6):
        half = 1 if rep % 2 == 0 else -1
        base = 100 * (1 + rng.normal(0, 0.05))
        docker = base * math.exp(0.02 * half + rng.normal(0, 0.005))
        values += [
            RunValue("jmh", "b", "d", "docker", rep, "B1", docker, "ops/s", half=half),
            RunValue("jmh", "b", "d", "native", rep, "B1", base, "ops/s", half=-half),
        ]
    c = _claim("equivalent", margin=0.03)
    o = ours(c, values)
    assert o.interval.method == "duet-half-t" and o.interval.relative_half_width < 0.01
    assert o.halves == (1, -1, 1, -1, 1, -1)
    assert judge(c, o).verdict == HOLDS


def _t_interval(value: float, se: float, df: int, level: float) -> stats.Interval:
    """A t interval on logs exp(log value -/+ t se), as paired_ratio makes it (df = n - 1)."""
    half = stats.t_quantile(level, df) * se
    return stats.Interval(value, value * math.exp(-half), value * math.exp(half), df + 1, level, "t-log", df=df)


def test_the_p_of_differs_outside_a_band_is_the_near_edges_and_counts_both_sides():
    """1.06 [1.0376; 1.0828] against equivalence within 3 %: the "differs" is "above 1.03", p = 0.0227 one-sided;
    either side may err, so the region's p is twice it (0.045), and over three devices Holm keeps none."""
    c = _claim("equivalent", margin=0.03)
    narrow, wide = _t_interval(1.06, 0.01, 4, 0.90), _t_interval(1.06, 0.01, 4, 0.95)
    one = float(sps.t.sf((math.log(1.06) - math.log(1.03)) / 0.01, 4))
    assert one == pytest.approx(0.0227, abs=1e-4)
    v = judge(c, Ours(narrow, "B1", (), wide=wide))
    assert v.verdict == DIFFERS and v.p_differs == pytest.approx(2 * one)
    out = holm([dataclasses.replace(v, device=d) for d in "abc"])
    assert [x.verdict for x in out] == [INCONCLUSIVE] * 3


def test_a_band_is_left_wholly_only_when_the_wider_interval_leaves_it():
    """Wholly outside a band is either of two sides: read off the 1 - alpha interval (alpha/2 a side)."""
    c = _claim("different", margin=0.05)
    narrow, wide = _t_interval(1.0757, 0.01, 4, 0.90), _t_interval(1.0757, 0.01, 4, 0.95)
    assert narrow.low > 1.05 > wide.low  # outside at 90 %, not at 95 %
    assert judge(c, Ours(narrow, "B1", (), wide=wide)).verdict == INCONCLUSIVE
    clear = Ours(_t_interval(1.10, 0.01, 4, 0.90), "B1", (), wide=_t_interval(1.10, 0.01, 4, 0.95))
    assert judge(c, clear).verdict == HOLDS


def test_a_count_claims_differs_keeps_its_exact_p_through_holm():
    """40 against 5 events per repetition on each of two devices: 8.0, far past 1; its exact p survives Holm."""
    c = _claim("direction", direction="less", published=0.5)
    o = ours(c, _counts([40] * 5, [5] * 5))
    v = judge(c, o)
    assert v.verdict == DIFFERS and v.p_differs < 1e-20
    assert [x.verdict for x in holm([dataclasses.replace(v, device=d) for d in "ab"])] == [DIFFERS, DIFFERS]
