"""A claim judged on run values: our ratio with its interval (paired by repetition), the A/A
noise floor beside it where the bundle ran one, and a three-valued verdict: holds, differs, or
inconclusive with what would decide it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pirex.analysis import precision as prec
from pirex.analysis import stats
from pirex.analysis.interface import RunValue
from pirex.experiment import AA_SUFFIX
from pirex.reproduce.claims import Claim, Side

HOLDS, DIFFERS, INCONCLUSIVE, NOT_RUN = "holds", "differs", "inconclusive", "not run here"
# The half-width a "contains" claim needs when neither --precision nor the claim says: the papers' Docker
# overheads are a few per cent (B1 0.998, JPA read 0.980, Kieker 1.02-1.08), so an interval wider than this
# could not tell them from no effect; a wide interval that happens to contain the value proves nothing.
CONTAINS_PRECISION = 0.02


@dataclass(frozen=True)
class Ours:
    interval: stats.Interval
    metric: str  # the metric used (a stand-in named)
    log_ratios: tuple[float, ...]  # per paired repetition: what a two-stage plan is computed from
    aa: stats.Interval | None = None


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    verdict: str
    reason: str
    ours: Ours | None = None
    indicative: bool = False  # kick-the-tires: small counts
    device: str = ""  # a claim on one machine judged on one of several devices' bundles: which
    detail: str = ""  # what the report adds below the reason (a claim across devices: the variance per level)

    @property
    def published_text(self) -> str:
        c = self.claim
        if c.crossover:
            at, below, _ = c.crossover
            return f"{'>' if below == 'greater' else '<'} 1 below {at:g}, {'<' if below == 'greater' else '>'} 1 above"
        if c.published is not None:
            return f"{c.published:.3f}"
        return {"greater": "> 1", "less": "< 1"}.get(c.direction or "", "-")


def _per_repetition(values: Sequence[RunValue], side: Side, metric: str) -> dict[tuple, float]:
    """Per (device, bundle, repetition): the mean of the side's runs (forks, loops) of the metric."""
    return prec.run_means([v for v in values if v.value > 0 and math.isfinite(v.value)], metric, side.variant)


def _metric(values: Sequence[RunValue], side: Side) -> str | None:
    present = {v.metric for v in values if v.variant == side.variant}
    return next((m for m in side.metrics if m in present), None)


def ours(claim: Claim, values: Sequence[RunValue], level: float) -> Ours | str:
    """Our ratio for the claim, or why there is none."""
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
    num = _per_repetition(values, claim.numerator, num_m)
    den = _per_repetition(values, claim.denominator, den_m)
    paired = prec.in_bundles_of(den, num)
    interval = stats.paired_ratio(num, paired, level)
    _, d, _ = stats.log_ratios(num, paired)
    aa = None
    aa_side = Side((den_m,), claim.denominator.variant + AA_SUFFIX)
    if claim.numerator.variant != claim.denominator.variant and (copy := _per_repetition(values, aa_side, den_m)):
        aa = stats.paired_ratio(copy, prec.in_bundles_of(den, copy), level)
    metric = num_m if num_m == den_m else f"{num_m} / {den_m}"
    return Ours(interval, metric, tuple(float(x) for x in d), aa)


def on_values(
    claim: Claim, values: Sequence[RunValue], level: float, precision: float | None, indicative: bool
) -> Verdict:
    """A claim on one machine judged on run values: inconclusive with the reason where there is no ratio."""
    o = ours(claim, values, level)
    return Verdict(claim, INCONCLUSIVE, o) if isinstance(o, str) else judge(claim, o, precision, indicative)


def judge(claim: Claim, o: Ours, precision: float | None, indicative: bool) -> Verdict:
    i = o.interval
    if not i.has_interval:
        return Verdict(claim, INCONCLUSIVE, i.reason or "no interval", o, indicative)
    lo, hi = i.low, i.high
    if claim.rule == "direction":
        if (claim.direction == "greater" and lo > 1) or (claim.direction == "less" and hi < 1):
            return Verdict(claim, HOLDS, "the interval lies on the paper's side of 1", o, indicative)
        if (claim.direction == "greater" and hi < 1) or (claim.direction == "less" and lo > 1):
            return Verdict(claim, DIFFERS, "the interval lies on the other side of 1", o, indicative)
        return Verdict(
            claim, INCONCLUSIVE, f"the interval contains 1 ({_more(o, abs(i.value - 1) / 2)})", o, indicative
        )
    if claim.rule == "equivalent":
        return _equivalent(claim, o, indicative)
    if claim.rule == "direction-at-most":
        return _direction_at_most(claim, o, indicative)
    if claim.rule == "different":
        return _different(claim, o, indicative)
    p = claim.published
    band = (p, p) if claim.rule == "contains" else (p * (1 - claim.tolerance), p * (1 + claim.tolerance))
    need = precision or claim.tolerance or (CONTAINS_PRECISION if claim.rule == "contains" else None)
    if hi < band[0] or lo > band[1]:
        return Verdict(
            claim,
            DIFFERS,
            "the interval excludes the paper's value"
            if claim.rule == "contains"
            else f"the interval lies outside the paper's value ±{100 * claim.tolerance:g} %",
            o,
            indicative,
        )
    inside = band[0] <= lo and hi <= band[1] if claim.rule == "within" else lo <= p <= hi
    wide = need is not None and i.relative_half_width > need
    if inside and not wide:
        how = (
            "contains the paper's value"
            if claim.rule == "contains"
            else f"lies within ±{100 * claim.tolerance:g} % of the paper's value"
        )
        return Verdict(claim, HOLDS, f"the interval {how}", o, indicative)
    target = need or claim.tolerance or 0.01
    return Verdict(
        claim,
        INCONCLUSIVE,
        f"the interval ±{100 * i.relative_half_width:.1f} % is wider than the "
        f"±{100 * target:g} % needed ({_more(o, target)})",
        o,
        indicative,
    )


def _equivalent(claim: Claim, o: Ours, indicative: bool) -> Verdict:
    """No change (the paper's "did not significantly change"): judged against 1, not against the paper's own
    ratio, within the claim's margin: holds when the whole interval lies inside 1 +/- margin, differs when
    it lies wholly outside, else inconclusive."""
    i, m = o.interval, claim.margin
    band = f"1 ±{100 * m:g} %"
    if i.high < 1 - m or i.low > 1 + m:
        return Verdict(claim, DIFFERS, f"the interval lies outside {band}: a change beyond the margin", o, indicative)
    if 1 - m <= i.low and i.high <= 1 + m:
        return Verdict(claim, HOLDS, f"the interval lies within {band}: no change beyond the margin", o, indicative)
    target = max(abs(m - abs(i.value - 1)), m / 4)
    return Verdict(claim, INCONCLUSIVE, f"the interval crosses the edge of {band} ({_more(o, target)})", o, indicative)


def _direction_at_most(claim: Claim, o: Ours, indicative: bool) -> Verdict:
    """The paper's direction, by at most the margin ("slightly slower"): holds when the whole interval lies
    between 1 and the margin's edge (1 - margin for "less", 1 + margin for "greater"), differs when it lies
    wholly on the other side of 1 or wholly beyond the edge, else inconclusive."""
    i, m = o.interval, claim.margin
    less = claim.direction == "less"
    edge = 1 - m if less else 1 + m
    band_low, band_high = (edge, 1.0) if less else (1.0, edge)
    if (less and i.low > 1) or (not less and i.high < 1):
        return Verdict(claim, DIFFERS, "the interval lies on the other side of 1", o, indicative)
    if (less and i.high < edge) or (not less and i.low > edge):
        return Verdict(
            claim, DIFFERS, f"the interval lies beyond {edge:g}: an effect larger than {100 * m:g} %", o, indicative
        )
    if band_low <= i.low and i.high <= band_high and 1 not in (i.low, i.high):
        return Verdict(
            claim,
            HOLDS,
            f"the interval lies between 1 and {edge:g}: the paper's side, by at most {100 * m:g} %",
            o,
            indicative,
        )
    target = max(abs(i.value - 1) / 2, m / 4)
    return Verdict(claim, INCONCLUSIVE, f"the interval crosses 1 or {edge:g} ({_more(o, target)})", o, indicative)


def _different(claim: Claim, o: Ours, indicative: bool) -> Verdict:
    """A change either way (the storage device matters): holds when the interval excludes 1, differs when it lies
    inside 1 +/- margin (no change worth the name), else inconclusive."""
    i, m = o.interval, claim.margin
    if i.high < 1 or i.low > 1:
        way = "lower" if i.high < 1 else "higher"
        return Verdict(claim, HOLDS, f"the interval excludes 1: {way} by {100 * abs(i.value - 1):.0f} %", o, indicative)
    if 1 - m <= i.low and i.high <= 1 + m:
        return Verdict(claim, DIFFERS, f"the interval lies within 1 ±{100 * m:g} %: no change", o, indicative)
    return Verdict(claim, INCONCLUSIVE, f"the interval contains 1 ({_more(o, m / 2)})", o, indicative)


def _more(o: Ours, target: float) -> str:
    """What would decide it: the repetitions Stein's two-stage plan asks for at this spread."""
    if target <= 0 or len(o.log_ratios) < 2:
        return "more repetitions would narrow it"
    p = prec.plan(o.log_ratios, target, o.interval.level)
    return f"about {max(p.extra, 1)} more repetitions would decide it"
