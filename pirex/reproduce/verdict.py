"""A claim judged on run values: our ratio with its interval, the A/A check beside it where the bundle ran one,
and a three-valued verdict: holds, differs, or inconclusive with what would decide it.

Every rule is three disjoint regions of the interval (../shared/STATISTICS.md, "Rules as regions"):

    rule               holds when the interval lies wholly ...      differs when it lies wholly ...
    direction          on the paper's side of 1                     on the other side of 1
    equivalent (m)     inside [1/(1+m), 1+m]                        outside it
    within (t)         inside [p/(1+t), p(1+t)], p the paper's      outside it
    different (m)      outside [1/(1+m), 1+m]                       inside it
    direction-at-most  between 1 and the edge 1+m (or 1/(1+m))      on the other side of 1, or past the edge
    beyond (edge e)    past e                                       on the other side of e
    otherwise inconclusive.

Margins are symmetric on the log scale (claims.Claim.band), so a/b and b/a give the same verdict. Each conclusion is
a test at alpha = 1 - confidence (5 % by default): a region that is one side of an edge, or inside a band (two
one-sided tests, Schuirmann's), is read off the 1 - 2 alpha interval (90 %); a region that is either of two sides
(wholly outside a band) off the 1 - alpha interval (95 %), alpha/2 a side. The regions are written once, one class
per rule in pirex/reproduce/rules.py, and read through `regions()`, which takes numbers or numpy arrays: the
calibration test (pirex/reproduce/test_rule_calibration.py) simulates intervals at the region edges through it.

A precision goal (--precision) only plans repetitions: it never turns a decided verdict into an inconclusive one.
An A/A run is a check: where its 1 - alpha interval lies wholly beyond 1 +/- precision.AA_TOLERANCE the machine was
not steady, and the verdict stays inconclusive with that reason. Within one claim judged on several devices or
sizes, "differs" is Holm-adjusted (holm())."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from pirex.analysis import assumptions, stats
from pirex.analysis import precision as prec
from pirex.analysis.calibration import method_of as calibration_method
from pirex.analysis.interface import RunValue
from pirex.analysis.verdicts import DIFFERS, HOLDS, INCONCLUSIVE
from pirex.analysis.verdicts import NOT_RUN as NOT_RUN  # the words are pirex.analysis.verdicts'; here for reproduce/
from pirex.core.experiment import AA_SUFFIX
from pirex.reproduce.claims import Claim, Side, StandIn

CONFIDENCE = 0.95  # the default: alpha = 5 % for each one-sided conclusion
# What a verdict is evidence of (Verdict.evidence), in the order the counts name them: only replications count as
# support for or against a paper; the checks are reported apart (issue 51)
REPLICATION, STAND_IN, HARNESS = "replication", "stand-in check", "harness check"
EVIDENCE = (REPLICATION, STAND_IN, HARNESS)


def alpha_of(confidence: float) -> float:
    """The error rate of each conclusion (a wrong "holds", a wrong "differs"): 1 - confidence."""
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence {confidence}: expected a level between 0.5 and 1, e.g. 0.95")
    return 1 - confidence


def verdict_level(confidence: float) -> float:
    """The interval every rule's regions are read off: 1 - 2 alpha (0.90 at 95 % confidence)."""
    return 1 - 2 * alpha_of(confidence)


@dataclass(frozen=True)
class Ours:
    interval: stats.Interval  # at verdict_level(): what the regions are read off
    metric: str  # the metric used (a stand-in named)
    log_ratios: tuple[float, ...]  # per paired repetition: what a two-stage plan is computed from
    aa: stats.Interval | None = None  # the A/A copy's interval at the confidence level: the steadiness check
    halves: tuple[int, ...] = ()  # a duet's: the numerator's CPU half per log ratio (+1/-1), for its plan
    # the 1 - alpha interval (alpha/2 a side): what a region that is a union of two sides is read off (wholly outside
    # a band: above it or below it); None: `interval` itself (constructed examples)
    wide: stats.Interval | None = None
    events: tuple[float, float, float, float] | None = None  # a count's Y_n, E_n, Y_d, E_d: its exact p-values
    # the assumption checks on the log ratios in run order (pirex/analysis/assumptions.py); a failed one withholds
    # the verdict
    checks: tuple[assumptions.Check, ...] = ()

    @property
    def plan_halves(self) -> tuple[int, ...] | None:
        """A duet's CPU half per log ratio where every one has it, else None: what a plan takes out of the spread."""
        return self.halves if len(self.halves) == len(self.log_ratios) and any(self.halves) else None

    @property
    def design(self) -> str:
        """ "duet" where the CPU half was a factor of the interval's model, else "interleaved": which of a
        calibration's rows apply."""
        return "duet" if self.interval.method == "duet-half-t" else "interleaved"

    @property
    def spread(self) -> float:
        """The sd of the log ratios a plan of more repetitions works from: a duet's residual sd once its CPU half is
        taken out (precision.duet_sd), else the plain sd. The plain one would carry the half (a 2 % half against 0.5 %
        noise, 1 % from an edge: "need 46" where the residual spread gives 8; issue 50)."""
        if (halves := self.plan_halves) is not None:
            return prec.duet_sd(self.log_ratios, halves)[0]
        return float(np.std(self.log_ratios, ddof=1)) if len(self.log_ratios) > 1 else math.nan


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    ours: Ours | None = None
    indicative: bool = False  # kick-the-tires: small counts
    device: str = ""  # a claim on one machine judged on one of several devices' bundles: which
    detail: str = ""  # what the report adds below the reason (a claim across devices: the variance per level)
    p_differs: float | None = None  # the one-sided p-value of "differs" (Holm's adjustment orders by it)
    look: str = ""  # a budgeted reproduction's: the look that decided it, or the last one read (budgeted.py)

    @property
    def stand_in(self) -> StandIn | None:
        """The stand-in this verdict was judged on (its metric is one the paper declares a stand-in), or None."""
        return self.claim.stand_in(self.ours.metric) if self.ours else None

    @property
    def evidence(self) -> str:
        """What the verdict is evidence of (EVIDENCE): a replication of the paper's claim, a check on a stand-in of
        the paper's tool, or a check that the harness works (a claim its workload makes true)."""
        if self.claim.harness:
            return HARNESS
        return STAND_IN if self.stand_in else REPLICATION

    @property
    def published_text(self) -> str:
        c = self.claim
        if c.crossover:
            at, below, _ = c.crossover
            return f"{'>' if below == 'greater' else '<'} 1 below {at:g}, {'<' if below == 'greater' else '>'} 1 above"
        if (own := c.rule_kind.published_text(c)) is not None:
            return own
        if c.published is not None:
            return f"{c.published:.3f}"
        return {"greater": "> 1", "less": "< 1"}.get(c.direction or "", "-")


# --- the regions, once


def edges(claim: Claim) -> tuple[float, ...]:
    """The ratios where the claim's regions meet: what an interval must clear to decide."""
    return claim.rule_kind.edges(claim)


def regions(claim: Claim, low, high, wide_low=None, wide_high=None):
    """(holds, differs) for an interval [low, high] at 1 - 2 alpha (floats, or numpy arrays of many intervals) under
    the claim's rule. A region that is the union of two sides (wholly outside a band: above it OR below it; the
    other side of 1 OR past the edge) is read off the wider 1 - alpha interval [wide_low, wide_high] instead, each
    side at alpha/2: read off the narrow one, its two sides would each err alpha and together up to 2 alpha
    (Bonferroni).
    Regions that are one side, or the intersection of two (inside a band: two one-sided tests), use [low, high].
    The two are never both true (the narrow interval lies inside the wide one). Not for crossover or agreement claims
    (judged per size, per pair)."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    wlow = low if wide_low is None else np.asarray(wide_low, dtype=float)
    whigh = high if wide_high is None else np.asarray(wide_high, dtype=float)
    return claim.rule_kind.regions(claim, low, high, wlow, whigh)


# --- our ratio


def _per_repetition(values: Sequence[RunValue], side: Side, metric: str) -> dict[tuple, float]:
    """Per (device, bundle, repetition): the mean of the side's runs (forks, loops) of the metric."""
    return prec.run_means([v for v in values if v.value > 0 and math.isfinite(v.value)], metric, side.variant)


def _metric(values: Sequence[RunValue], side: Side) -> str | None:
    present = {v.metric for v in values if v.variant == side.variant}
    return next((m for m in side.metrics if m in present), None)


def ours(
    claim: Claim, values: Sequence[RunValue], confidence: float = CONFIDENCE, aa_confidence: float | None = None
) -> Ours | str:
    """Our ratio for the claim at verdict_level(confidence), with the A/A check at `aa_confidence` (default
    `confidence`: a budgeted look reads the ratio at its own, higher level, and the steadiness check at the
    reproduction's); or why there is none."""
    num_m, den_m = _metric(values, claim.numerator), _metric(values, claim.denominator)
    if num_m is None or den_m is None:
        missing = claim.numerator if num_m is None else claim.denominator
        return f"the bundles have no {' or '.join(missing.metrics)} of {missing.variant}"
    setups = sorted(
        {
            v.setup
            for v in values
            if (v.metric, v.variant) in {(num_m, claim.numerator.variant), (den_m, claim.denominator.variant)}
        }
    )
    if len(setups) > 1:  # a ratio pooled over setups (depth 10 with depth 1) would be a number of neither
        ran = "; ".join(s or "unrecorded" for s in setups)
        return f"the bundles ran {len(setups)} setups ({ran}): give the bundles of one setup"
    level = verdict_level(confidence)
    metric = num_m if num_m == den_m else f"{num_m} / {den_m}"
    if counts := _rate_ratio(values, claim, num_m, den_m, confidence):
        return counts
    num = _per_repetition(values, claim.numerator, num_m)
    den = _per_repetition(values, claim.denominator, den_m)
    paired = prec.in_bundles_of(den, num)
    # a duet's repetitions say the CPU half each side ran on: the half is a factor of the model (stats.duet_ratio)
    halves = prec.run_halves(values, num_m, claim.numerator.variant)
    interval = stats.design_ratio(num, paired, halves, level)
    wide = stats.design_ratio(num, paired, halves, 1 - alpha_of(confidence))
    keys, d, _ = stats.log_ratios(num, paired)
    aa = None
    aa_side = Side((den_m,), claim.denominator.variant + AA_SUFFIX)
    if claim.numerator.variant != claim.denominator.variant and (copy := _per_repetition(values, aa_side, den_m)):
        aa_halves = prec.run_halves(values, den_m, aa_side.variant)
        aa = stats.design_ratio(copy, prec.in_bundles_of(den, copy), aa_halves, aa_confidence or confidence)
    plan_halves = tuple(halves.get(k, 0) for k in keys) if halves else ()
    order = sorted(range(len(keys)), key=lambda j: prec.run_order(keys[j]))
    h = np.array([plan_halves[j] for j in order], dtype=float) if plan_halves else None
    checks = assumptions.checks(np.asarray(d, dtype=float)[order], h) if interval.has_interval else ()
    return Ours(interval, metric, tuple(float(x) for x in d), aa, plan_halves, wide, checks=checks)


def _rate_ratio(values: Sequence[RunValue], claim: Claim, num_m: str, den_m: str, confidence: float) -> Ours | None:
    """A count metric's ratio (peaks, interrupts: RunValue.count): the rate ratio of the counts with their exposures
    (stats.rate_ratio), never a ratio of rates with something added to the counts; None for other metrics."""
    num = prec.run_counts(values, num_m, claim.numerator.variant)
    den = prec.run_counts(values, den_m, claim.denominator.variant)
    if not num or not den:
        return None
    ran = {k[:2] for k in num}
    den = {k: c for k, c in den.items() if k[:2] in ran}
    interval = stats.rate_ratio(num, den, verdict_level(confidence))
    wide = stats.rate_ratio(num, den, 1 - alpha_of(confidence))
    shared = sorted(set(num) & set(den), key=repr) or None  # paired by repetition, else the two sides' totals
    n_side = [num[k] for k in shared] if shared else list(num.values())
    d_side = [den[k] for k in shared] if shared else list(den.values())
    events = (
        float(sum(c.count for c in n_side)),
        float(sum(c.exposure for c in n_side)),
        float(sum(c.count for c in d_side)),
        float(sum(c.exposure for c in d_side)),
    )
    logs = tuple(
        math.log((num[k].count / num[k].exposure) / (den[k].count / den[k].exposure))
        for k in shared or ()
        if num[k].count > 0 and den[k].count > 0
    )  # what Stein's plan can take: the repetitions with events on both sides
    metric = num_m if num_m == den_m else f"{num_m} / {den_m}"
    return Ours(interval, metric, logs, wide=wide, events=events)


def on_values(
    claim: Claim,
    values: Sequence[RunValue],
    confidence: float,
    precision: float | None,
    indicative: bool,
    aa_confidence: float | None = None,
    calibration=None,
) -> Verdict:
    """A claim on one machine judged on run values: inconclusive with the reason where there is no ratio."""
    o = ours(claim, values, confidence, aa_confidence)
    if isinstance(o, str):
        return Verdict(claim, INCONCLUSIVE, o)
    return judge(claim, o, precision, indicative, calibration)


# --- the verdict


def judge(claim: Claim, o: Ours, precision: float | None = None, indicative: bool = False, calibration=None) -> Verdict:
    """The claim's verdict from our interval. `precision` only plans (what would decide an inconclusive verdict):
    it never overrides a decided one. Before the rule: the A/A check, the assumption checks on the repetitions, and,
    with this machine's `calibration` (reproduce/calibrate.Calibration), whether the interval's method covers on its
    noise at this n; any of them failing leaves the verdict inconclusive with that reason."""
    i = o.interval
    if not i.has_interval:
        return Verdict(claim, INCONCLUSIVE, i.reason or "no interval", o, indicative)
    if unsteady := prec.aa_check(o.aa):
        return Verdict(
            claim,
            INCONCLUSIVE,
            f"{unsteady} at {stats.level_text(o.aa.level)}, so a difference between the variants cannot be told "
            "from one between two runs of the same variant (run again on a quieter machine)",
            o,
            indicative,
        )
    if broken := assumptions.reason(o.checks, o.metric):
        return Verdict(claim, INCONCLUSIVE, broken, o, indicative)
    if calibration is not None and (
        under := calibration.undercovers(calibration_method(i.method), i.n, o.design, o.metric)
    ):
        return Verdict(claim, INCONCLUSIVE, under, o, indicative)
    w = o.wide if o.wide is not None and o.wide.has_interval else i
    holds, differs = (bool(x) for x in regions(claim, i.low, i.high, w.low, w.high))
    level = f"{stats.level_text(i.level)} interval"
    if holds:
        return Verdict(claim, HOLDS, f"our {level} {claim.rule_kind.region_text(claim, HOLDS, i)}", o, indicative)
    if differs:
        return Verdict(
            claim,
            DIFFERS,
            f"our {level} {claim.rule_kind.region_text(claim, DIFFERS, i)}",
            o,
            indicative,
            p_differs=p_differs(claim, i, o.events),
        )
    return Verdict(
        claim,
        INCONCLUSIVE,
        f"our {level} {claim.rule_kind.crossing_text(claim)} ({_more(claim, o, precision)})",
        o,
        indicative,
    )


def _distance(claim: Claim, i: stats.Interval) -> float:
    """How far the estimate is, on the log scale, from the nearest edge between regions: the half-width (log) an
    interval centred there must get below to decide."""
    return min(abs(math.log(i.value) - math.log(e)) for e in edges(claim))


def _more(claim: Claim, o: Ours, precision: float | None) -> str:
    """What would decide it: the repetitions Stein's two-stage plan asks for to bring the half-width below the
    estimate's distance to the nearest edge (or below --precision, when that is narrower), at this spread."""
    i = o.interval
    distance = _distance(claim, i) if i.value > 0 else 0.0
    if distance <= 0:
        return "the estimate sits on an edge of the rule: no number of repetitions decides it at this estimate"
    target = math.expm1(distance)
    if precision:
        target = min(target, precision)
    if len(o.log_ratios) < 2:
        return "more repetitions would narrow it"
    p = prec.plan(o.log_ratios, target, i.level, halves=o.plan_halves)
    return (
        f"the estimate is {100 * target:.1f} % from the nearest edge: "
        f"about {max(p.extra, 1)} more repetitions would decide it"
    )


# --- p-values and multiplicity


def differs_parts(claim: Claim) -> tuple[str, tuple[tuple[float, str], ...]]:
    """The "differs" region as one-sided pieces (edge, "above" | "below"), and how they combine: "one" (a single
    side), "union" (either side, each at alpha/2), "inside" (both: above the low edge and below the high one)."""
    return claim.rule_kind.differs_parts(claim)


def p_differs(claim: Claim, i: stats.Interval, events: tuple[float, float, float, float] | None = None) -> float | None:
    """The p-value of the "differs" conclusion, such that it is below alpha exactly when the verdict's interval lies
    in the differs region: one side, its one-sided p; a union of two sides, twice the smaller (Bonferroni, as
    regions() reads them off the 1 - alpha interval); inside a band, the larger of the two. Each side's p from the
    interval's t (its standard error and df recovered from the bounds), or for counts (events: Y_n, E_n, Y_d, E_d)
    the exact conditional binomial tail of Y_n given the total at the edge's rate ratio, which Clopper-Pearson's
    interval inverts. The p is always the deciding interval's own: counts whose repetitions varied more than Poisson
    allows are judged on the quasi-Poisson t interval, and so take its t p (the exact tail would ignore the
    dispersion: at the edge of two devices, negative binomial counts k = 5, n = 5, Holm on it left 8.4 % wrong
    "differs", 4.4 % on the interval's p; test_rule_calibration.py, issue 50). None where neither is known (holm()
    then keeps no "differs" of it)."""
    kind, parts = differs_parts(claim)
    side_p = _side_p_counts(events) if events and i.method == "poisson-exact" else _side_p_t(i)
    if side_p is None:
        return None
    ps = [side_p(e, way) for e, way in parts]
    if kind == "one":
        return ps[0]
    return min(1.0, 2 * min(ps)) if kind == "union" else max(ps)


def _side_p_t(i: stats.Interval):
    sd = stats.log_se(i)
    if sd is None:
        return None
    se, df = sd
    m = math.log(i.value)

    def p(edge: float, way: str) -> float:
        if se == 0:
            return 0.0 if (m > math.log(edge) if way == "above" else m < math.log(edge)) else 1.0
        z = (m - math.log(edge)) / se
        return float(sps.t.sf(z, df) if way == "above" else sps.t.cdf(z, df))

    return p


def _side_p_counts(events: tuple[float, float, float, float]):
    yn, en, yd, ed = events
    total = int(round(yn + yd))
    if total == 0:
        return None

    def p(edge: float, way: str) -> float:
        p0 = en * edge / (en * edge + ed)  # the numerator's share of the events were the ratio at the edge
        return float(sps.binom.sf(yn - 1, total, p0) if way == "above" else sps.binom.cdf(yn, total, p0))

    return p


def holm(verdicts: Sequence[Verdict], confidence: float = CONFIDENCE) -> list[Verdict]:
    """Holm's step-down adjustment (Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J.
    Statist. 6(2)) of the "differs" among the verdicts of ONE claim (its devices, or its sizes): with k verdicts,
    the one with the smallest p must be below alpha/k, the next alpha/(k-1), ...; the first that is not stops,
    and it and the rest become inconclusive with the reason. Valid whatever the dependence. A verdict without a
    p-value (an interval method that gives none) cannot be shown to survive, and is made inconclusive (conservative)."""
    k = sum(
        1 for v in verdicts if v.verdict in (HOLDS, DIFFERS, INCONCLUSIVE) and v.ours and v.ours.interval.has_interval
    )
    if k < 2:  # the tests made: verdicts read off an interval (not those not run, nor those with too few runs)
        return list(verdicts)
    alpha = alpha_of(confidence)
    differs = [j for j, v in enumerate(verdicts) if v.verdict == DIFFERS]
    ps = [verdicts[j].p_differs if verdicts[j].p_differs is not None else 1.0 for j in differs]
    rank = {j: r for r, j in enumerate(sorted(range(len(ps)), key=lambda j: ps[j]))}  # stats.holm's order
    out = list(verdicts)
    for n, kept in enumerate(stats.holm(ps, alpha, k)):
        if not kept:
            threshold = alpha / (k - rank[n])
            out[differs[n]] = dataclasses.replace(
                verdicts[differs[n]],
                verdict=INCONCLUSIVE,
                reason=f"{verdicts[differs[n]].reason}; but not after Holm's adjustment over the claim's {k} verdicts "
                f"(p = {ps[n]:.3g}, needs < {threshold:.3g})",
            )
    return out


def expected_false_differs(n_judged: int, confidence: float = CONFIDENCE) -> float:
    """At most this many "differs" would come from chance alone among n judged verdicts, were every estimate at its
    region's edge: alpha per verdict (and as many wrong "holds")."""
    return n_judged * alpha_of(confidence)
