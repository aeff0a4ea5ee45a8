"""Verdicts on noise that is not normal, through the production path: claims.yaml rows judged by verdict.on_values
(the interval, the assumption checks, the rule; what `pirex reproduce` calls per device) on constructed run values,
the truth planted on a rule's edge, so that any decided verdict there is a wrong one (issue 50).

Three kinds of repetitions: independent normal log ratios (the model), a second mode (10 % of the repetitions 15 %
slower: a JIT that compiled differently), and AR(1) dependence (rho 0.5: a noisy neighbour). The rates are printed
(`pytest -s`) and asserted with a simulation margin; the mutations each test is shown to catch are in the docstrings.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pirex.analysis import assumptions, calibration
from pirex.analysis.interface import RunValue
from pirex.reproduce import calibrate, verdict
from pirex.reproduce import claims as claims_mod
from pirex.reproduce.calibrate import Calibration
from pirex.reproduce.verdict import DIFFERS, HOLDS, on_values

DRAWS = 400  # per cell: a wrong-verdict rate of 5 % is estimated within about +-2.2 points (2 se)
SIGMA = 0.01  # 1 % noise on the log ratio


def _claim(paper: str, cid: str) -> claims_mod.Claim:
    return next(c for c in claims_mod.load(paper).claims if c.id == cid)


def _values(claim: claims_mod.Claim, d: np.ndarray) -> list[RunValue]:
    """Run values of the claim's two sides whose per-repetition log ratio is d (the denominator at 1e6)."""
    num, den = claim.numerator, claim.denominator
    out = []
    for j, x in enumerate(d):
        out.append(RunValue("jmh", "b", "pi", den.variant, j, den.metrics[0], 1e6, "ops/s"))
        out.append(RunValue("jmh", "b", "pi", num.variant, j, num.metrics[0], 1e6 * math.exp(x), "ops/s"))
    return out


def _noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(0, SIGMA, n)
    if kind == "bimodal":
        return e + np.where(rng.random(n) < 0.1, math.log(1.15), 0.0)  # 10 % of the repetitions 15 % slower
    if kind == "ar1":
        x = np.empty(n)
        x[0] = e[0]
        for t in range(1, n):
            x[t] = 0.5 * x[t - 1] + e[t] * math.sqrt(1 - 0.25)  # stationary sd SIGMA
        return x
    return e


def _rates(claim, kind: str, n: int, edge: float, seed: int) -> tuple[float, float, float]:
    """The shares of holds, differs and checks-withheld verdicts with the truth on `edge`, centred as a second mode
    would leave the mean (the slow repetitions' share subtracted: the truth is the mixture's mean)."""
    rng = np.random.default_rng(seed)
    shift = 0.1 * math.log(1.15) if kind == "bimodal" else 0.0
    counts = {HOLDS: 0, DIFFERS: 0, "withheld": 0}
    for _ in range(DRAWS):
        d = math.log(edge) - shift + _noise(kind, n, rng)
        v = on_values(claim, _values(claim, d), verdict.CONFIDENCE, None, False)
        if v.verdict in (HOLDS, DIFFERS):
            counts[v.verdict] += 1
        elif "assumptions" in v.reason:
            counts["withheld"] += 1
    return counts[HOLDS] / DRAWS, counts[DIFFERS] / DRAWS, counts["withheld"] / DRAWS


RULES = [("icpe18", "t1-b5-docker"), ("icpe18", "t1-b1-docker"), ("icpe18", "t1-b2-inlined")]


@pytest.mark.parametrize("paper,cid", RULES)
def test_on_normal_repetitions_each_conclusion_at_an_edge_errs_at_most_alpha(paper, cid):
    """The model's case through claims.yaml rows (direction, direction-at-most, equivalent): each conclusion at
    most 5 % (+ simulation error) at every edge, and the checks withhold few verdicts (at most ~3 % by their
    levels). Mutation caught: the interval 20 % narrower (verdict_level's t quantile x 0.8) errs 8-9 %."""
    claim = _claim(paper, cid)
    for n in (5, 10):
        for e in verdict.edges(claim):
            holds, differs, withheld = _rates(claim, "normal", n, e, seed=n)
            print(
                f"\n{cid} n={n} edge {e:.4g}: holds {100 * holds:.1f} %, differs {100 * differs:.1f} %, "
                f"withheld {100 * withheld:.1f} %"
            )
            assert holds <= 0.05 + 0.025 and differs <= 0.05 + 0.025
            assert withheld <= 0.05


def _machine(kind: str, sizes=(5, 10, 20)) -> Calibration:
    """A calibration as `pirex calibrate` computes it (calibration.cells) from a long A/A run on `kind` noise: 200
    repetitions of a variant and its copy, each side with that noise of its own."""
    rng = np.random.default_rng(7)
    a, b = (np.exp(_noise(kind, 200, rng)) for _ in range(2))
    s = calibration.Series("B5", a, b)
    cells = tuple(("interleaved", c) for c in calibration.cells(s, sizes=sizes))
    result = calibrate.Result("jmh", "pi", cells, tuple(calibrate.mode_rows("interleaved", s)), (), (), {})
    return Calibration(path=Path("calibration"), experiment="jmh", device="pi", doc=calibrate.document(result))


@pytest.mark.parametrize("kind", ["bimodal", "ar1"])
def test_real_noise_the_checks_withhold_what_shows_and_the_calibration_the_rest(kind):
    """10 % of the repetitions 15 % slower, or AR(1) with rho 0.5; a direction claim (t1-b5-docker), the truth on 1
    (a mixture's mean). The per-bundle checks withhold the data sets in which the break shows (a lone slow
    repetition, a run of alike ones), but a set of five without a slow repetition shows nothing, so the checks alone
    leave the paired t erring far beyond 5 % (printed: the review's 34-49 %). The machine's calibration on the same
    noise finds the t interval undercovering at these n (the blocks keep the dependence, the subsets the second
    mode), and with it the verdicts at that n are withheld: each conclusion then errs 0 %. Mutations caught: a
    calibration ignored by judge (calibration=None) fails the last bound; checks that never fail leave the withheld
    share at 0 (the second assertion)."""
    claim = _claim("icpe18", "t1-b5-docker")
    machine = _machine(kind)
    for n in (5, 10):
        holds, differs, withheld = _rates(claim, kind, n, 1.0, seed=100 + n)
        cover, at = machine.coverage("t-log", n, "interleaved")
        why = machine.undercovers("t-log", n, "interleaved", "B5")
        print(
            f"\n{kind} n={n}: checks alone: holds {100 * holds:.1f} %, differs {100 * differs:.1f} %, withheld "
            f"{100 * withheld:.1f} %; the calibration's t-log coverage at n={at}: {100 * cover:.1f} %; {why}"
        )
        if kind == "bimodal":  # a lone slow repetition shows; AR(1)'s runs of alike ones hardly do at n <= 10
            assert withheld > 0.03
        assert why  # the long A/A run shows what a short set cannot: a second mode, or the blocks' undercoverage
        rng = np.random.default_rng(300 + n)
        shift = 0.1 * math.log(1.15) if kind == "bimodal" else 0.0
        decided = 0
        for _ in range(100):
            d = -shift + _noise(kind, n, rng)
            v = on_values(claim, _values(claim, d), verdict.CONFIDENCE, None, False, calibration=machine)
            decided += v.verdict in (HOLDS, DIFFERS)
        assert decided == 0


def test_a_calibration_that_covers_leaves_verdicts_decided():
    """The same path on independent noise: the calibration covers, verdicts are decided as before (nothing withheld
    for the calibration's sake)."""
    claim = _claim("icpe18", "t1-b5-docker")
    rng = np.random.default_rng(11)
    machine = _machine("normal", sizes=(5, 10))
    assert machine.undercovers("t-log", 10, "interleaved") is None, machine.doc
    d = math.log(1.05) + rng.normal(0, SIGMA, 10)
    v = on_values(claim, _values(claim, d), verdict.CONFIDENCE, None, False, calibration=machine)
    assert v.verdict == DIFFERS, v.reason  # 5 % faster in Docker: the paper's "slower" differs, decided


def test_the_checks_find_what_they_are_for_and_pass_the_model():
    rng = np.random.default_rng(3)
    clean = rng.normal(0, SIGMA, 10)
    assert not assumptions.failed(assumptions.checks(clean))
    bimodal = clean.copy()
    bimodal[4] += math.log(1.15)
    bad = assumptions.failed(assumptions.checks(bimodal))
    assert [c.name for c in bad] == ["second mode"] and "1 of 10 repetitions" in bad[0].finding
    trend = clean + np.linspace(0, 0.1, 10)
    assert "drift" in [c.name for c in assumptions.failed(assumptions.checks(trend))]
    halves = np.array([1, -1] * 5, dtype=float)
    assert not assumptions.failed(assumptions.checks(clean + 0.03 * halves, halves))  # a duet's half: no mode
    assert assumptions.checks(clean[:4]) == ()


def test_the_checks_false_alarm_rate_on_the_model_is_within_their_levels():
    """Each check at 1 % on independent normal values (the null law is the Monte Carlo's, the permutation's and
    Kendall's exact one): together at most about 3 % of data sets."""
    rng = np.random.default_rng(5)
    for n in (5, 10, 20):
        alarms = sum(bool(assumptions.failed(assumptions.checks(rng.normal(0, 1, n)))) for _ in range(1000))
        print(f"\nn={n}: checks fail on {alarms / 10:.1f} % of normal data sets")
        assert alarms / 1000 <= 0.03 + 0.015
