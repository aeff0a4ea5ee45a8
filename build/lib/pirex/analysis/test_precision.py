import math

import numpy as np
import pytest

from pirex.analysis import precision
from pirex.analysis.interface import RunValue

# data[repetition][fork][iteration], small enough to do by hand:
#   iteration level: within-fork variances 2, 2, 0, 8 -> S1^2 = 3
#   fork level: fork means (2, 6) and (2, 12) -> within-repetition variances 8, 50 -> S2^2 = 29
#   repetition level: repetition means 4, 7 -> S3^2 = 4.5
#   T1^2 = 3, T2^2 = 29 - 3/2 = 27.5, T3^2 = 4.5 - 29/2 < 0 -> 0
HAND = [[[1, 3], [5, 7]], [[2, 2], [10, 14]]]


def test_variance_components_against_hand_computation():
    d = precision.decompose(HAND, costs=[5.0, 10.0, 1.0])
    rep, fork, it = d.levels
    assert [lv.name for lv in d.levels] == ["repetition", "fork", "iteration"]
    assert (rep.s2, fork.s2, it.s2) == (pytest.approx(4.5), pytest.approx(29.0), pytest.approx(3.0))
    assert (rep.t2, fork.t2, it.t2) == (0.0, pytest.approx(27.5), pytest.approx(3.0))
    assert fork.share == pytest.approx(27.5 / 30.5)
    # the grand mean's variance: 0/2 + 27.5/(2*2) + 3/(2*2*2)
    assert fork.of_mean == pytest.approx(6.875 / 7.25) and d.dominant() is fork
    # K&J: r_1 = ceil(sqrt(c2 T1^2 / (c1 T2^2))) = ceil(sqrt(10 * 3 / 27.5)) = 2; T3^2 = 0: all the time to forks
    assert d.optimal == {"iteration": 2, "fork": None}
    assert d.grand_mean == pytest.approx(5.5)
    assert d.advice.startswith("more forks, not longer iterations: the fork level holds 95 % of the variance")


def test_variance_components_recover_known_components():
    # sigma^2 = 4 (repetition), 9 (fork), 25 (iteration); a large simulated design, fixed seed
    rng = np.random.default_rng(20130616)
    r3, r2, r1 = 400, 4, 10
    a = (100 + rng.normal(0, 2, (r3, 1, 1)) + rng.normal(0, 3, (r3, r2, 1)) + rng.normal(0, 5, (r3, r2, r1))).tolist()
    d = precision.decompose(a, costs=[5.0, 10.0, 1.0])
    assert [lv.t2 for lv in d.levels] == [
        pytest.approx(4, rel=0.25),
        pytest.approx(9, rel=0.15),
        pytest.approx(25, rel=0.1),
    ]
    # K&J with the true components: r_1 = ceil(sqrt(10 * 25 / 9)) = 6, r_2 = ceil(sqrt(5 * 9 / (10 * 4))) = 2
    assert d.optimal == {"iteration": 6, "fork": 2}
    assert "K&J's optimum is 2 forks per repetition, 6 iterations per fork" in d.advice


def test_a_level_with_one_unit_is_merged_and_an_unbalanced_design_is_cut():
    d = precision.decompose([[[1.0, 2.0, 3.0]], [[2.0, 4.0, 3.0]], [[5.0, 5.0, 6.0]]], costs=[1.0, 30.0, 1.0])
    assert [lv.name for lv in d.levels] == ["repetition", "iteration"] and "merged" in d.note
    assert d.optimal.keys() == {"iteration"}  # the fork's cost went to the repetition
    a, note = precision.balance([[1.0, 2.0, 3.0], [4.0, 5.0], [6.0, 7.0, 8.0, 9.0]], 2)
    assert a.shape == (3, 2) and note == "unbalanced: cut to 3 x 2, 3 values set aside"
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        precision.decompose([[[1.0, 2.0], [3.0, 4.0]]])


def test_two_stage_n_is_the_textbook_n():
    # a pilot of k = 10 log ratios with sd exactly 0.02; target +-1 % at 95 %: d = log(1.01),
    # n = ceil((t(0.975, 9) * 0.02 / d)^2) with t(0.975, 9) = 2.2621572 (tables) = ceil(20.67) = 21
    z = np.arange(10, dtype=float)
    pilot = (z - z.mean()) / z.std(ddof=1) * 0.02
    p = precision.plan(pilot, 0.01, 0.95, seconds_per_repetition=60.0)
    assert p.sd == pytest.approx(0.02)
    assert p.n == math.ceil((2.2621572 * 0.02 / math.log(1.01)) ** 2) == 21
    assert (p.k, p.extra, p.seconds) == (10, 11, 660.0)
    assert precision.stein_n(0.001, 10, 0.01) == 10  # the pilot already reaches it
    # a budget of 15 minutes: 15 repetitions in all, reaching expm1(t(0.975, 9) * 0.02 / sqrt(15))
    b = precision.plan(pilot, 0.01, 0.95, seconds_per_repetition=60.0, budget=900.0)
    assert b.fits is False and b.n_budget == 15
    assert b.reachable == pytest.approx(math.expm1(2.2621572 * 0.02 / math.sqrt(15)), rel=1e-6)
    assert "the budget of 15.0 min allows 15" in b.text()
    with pytest.raises(ValueError, match="at least 2"):
        precision.stein_n(0.02, 1, 0.01)


def _runs(variant: str, scale: float, rng: np.random.Generator, reps: int = 20, forks: int = 2) -> list[RunValue]:
    out = []
    for rep in range(reps):
        for fork in range(forks):
            jvm = scale * 1e6 * math.exp(rng.normal(0, 0.02))  # fork-to-fork CV 2 %
            inner = tuple(jvm * math.exp(rng.normal(0, 0.005)) for _ in range(5))
            out.append(RunValue("jmh", "b1", "vm", variant, rep, "B1", sum(inner) / 5, "ops/s", False, fork, inner))
    return out


def test_aa_interval_of_variants_drawn_alike_contains_one():
    rng = np.random.default_rng(7)
    values = _runs("native", 1.0, rng) + _runs("native-aa", 1.0, rng) + _runs("docker", 1.03, rng)
    aa = precision.aa_interval(values, "B1", "native", 0.95)
    assert aa.has_interval and aa.low < 1.0 < aa.high and aa.n == 20
    dn = precision.paired_interval(values, "B1", "docker", "native", 0.95)
    assert dn.low > 1.0 and dn.low < 1.03 < dn.high
    assert precision.aa_interval(values, "B1", "docker") is None  # no docker-aa copy
    assert precision.aa_name("native") == "native-aa"


def test_run_values_grouped_for_the_decomposition():
    rng = np.random.default_rng(8)
    values = _runs("native", 1.0, rng, reps=6, forks=3)
    data = precision.nested(values, "B1", "native")
    assert len(data) == 6 and len(data[0]) == 3 and len(data[0][0]) == 5
    means = precision.run_means(values, "B1", "native")
    assert means[("vm", "b1", 0)] == pytest.approx(np.mean([v.value for v in values if v.repetition == 0]))
    d = precision.decompose_runs(values, "B1", "native", costs=[1.0, 2.0, 1.0])
    assert [lv.name for lv in d.levels] == ["repetition", "fork", "iteration"]
    # without inner samples: two levels, repetition > fork
    bare = [
        RunValue(v.experiment, v.bundle, v.device, v.variant, v.repetition, v.metric, v.value, v.unit, False, v.run)
        for v in values
    ]
    assert [lv.name for lv in precision.decompose_runs(bare, "B1", "native").levels] == ["repetition", "fork"]
