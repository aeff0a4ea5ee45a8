"""`pirex run EXPERIMENT --precision P`: a two-stage design (Stein 1945), not peeking. The pilot is
the run as planned (the profile's repetitions); from the spread of its paired log ratios the
number of repetitions that reach half-width P at the confidence level is computed once, with the
time it takes; a second bundle runs the rest (within --budget), and the precision reached over
both is reported. The pair judged is the first two variants (e.g. docker / native), every metric;
the worst metric decides."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pirex.core import experiment
from pirex.core.bundle import DUET, Bundle
from pirex.core.errors import PirexError
from pirex.runner.runplan import Continuation

if TYPE_CHECKING:
    from pirex.analysis import precision as prec
    from pirex.analysis import stats


ANALYSIS_EXTRA = ("numpy", "scipy", "matplotlib")  # pyproject.toml's analysis extra


@dataclasses.dataclass(frozen=True)
class Target:
    precision: float  # relative half-width, 0.01 = 1 %
    level: float = 0.95
    budget: float | None = None  # seconds, the whole run (pilot included)


def _analysis(name: str):
    """A module of pirex.analysis, which needs numpy and scipy (the analysis extra): the runner alone has neither,
    and only --precision asks for them, so they are imported here, when it does."""
    try:
        from pirex.analysis import modules, precision, stats
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] not in ANALYSIS_EXTRA:
            raise
        raise PirexError(
            f"--precision plans from the pilot's statistics, which need the analysis extra ({e.name} is not "
            "installed here): run `make` in the pirex checkout, which installs it, or pip install 'pirex[analysis]'"
        ) from None
    return {"modules": modules, "precision": precision, "stats": stats}[name]


def _pair(variants: list[str]) -> tuple[str, str]:
    if len(variants) < 2:
        raise PirexError(
            "--precision judges a ratio of two variants: give at least two (e.g. --variants native,docker)"
        )
    return variants[1], variants[0]


def _seconds_per_repetition(bundle: Path) -> float:
    """What a repetition costs: its steps one after another, or a duet's at once (the longer of the two)."""
    b = Bundle.open(bundle)
    by_rep: dict[int, list[float]] = {}
    for s in b.steps():
        by_rep.setdefault(s.repetition, []).append(s.seconds)
    at_once = b.design == DUET
    return sum(max(x) if at_once else sum(x) for x in by_rep.values()) / (len(by_rep) or 1)


def report(exp: experiment.Experiment, bundles: list[Path], target: Target) -> list[tuple[str, stats.Interval]]:
    """Per metric, numerator/denominator over every bundle's repetitions."""
    values = _analysis("modules").module(exp).run_values(bundles, None)
    num, den = _pair(Bundle.open(bundles[0]).variants)
    prec, stats = _analysis("precision"), _analysis("stats")
    # a run's spread ("B1 sd") or interrupt count: claims', not what a precision target is for
    means = sorted({v.metric for v in values if not stats.is_side_metric(v.metric)})
    return [(m, prec.paired_interval(values, m, num, den, target.level)) for m in means]


def plan(exp: experiment.Experiment, pilot: Path, target: Target) -> prec.Plan:
    """The second stage from the pilot alone: the worst metric's Stein n."""
    values = _analysis("modules").module(exp).run_values([pilot], None)
    stats, prec = _analysis("stats"), _analysis("precision")
    num, den = _pair(Bundle.open(pilot).variants)
    per_rep = _seconds_per_repetition(pilot)
    plans = []
    for metric in sorted({v.metric for v in values if not stats.is_side_metric(v.metric)}):  # the means' precision
        keys, d, _ = stats.log_ratios(prec.run_means(values, metric, num), prec.run_means(values, metric, den))
        on = prec.run_halves(values, metric, num)  # a duet's: its plan from the model with the half, n even
        halves = [on[k] for k in keys] if on else None
        if d.size >= 2 and math.isfinite(float(d.std(ddof=1))):
            plans.append(prec.plan(d, target.precision, target.level, per_rep, target.budget, halves))
    if not plans:
        raise PirexError(
            f"{pilot}: the pilot has fewer than 2 paired repetitions of {num} and {den}: "
            "nothing to plan from (run at least 2 repetitions)"
        )
    return max(plans, key=lambda p: p.n)


def two_stage(opts, target: Target, run: Callable, echo: Callable[[str], None]) -> list[Path]:
    """Pilot, plan, second stage toward `target` (--precision, --confidence, --budget: what reproduce owns, not the
    run's options); `run` is the runner's run(Options, Continuation | None)."""
    exp = experiment.load(opts.experiment)
    _analysis("precision")  # before the pilot runs: without it, its numbers could not be used
    pilot = run(opts)
    p = plan(exp, pilot, target)
    echo(f"precision plan (from the pilot {pilot.name}): {p.text()}")
    extra = p.extra if p.fits is not False else max(p.n_budget - p.k, 0)
    bundles = [pilot]
    if extra > 0:
        overrides = {**(opts.overrides or {}), "repetitions": extra}
        # a duet's second stage continues the pilot's alternation of the CPU halves (duet.steps)
        first = int(Bundle.open(pilot).param("repetitions"))
        later = Continuation(f"{pilot.name}@{first}", first)  # chosen from the pilot's data: never a plain run
        bundles.append(run(dataclasses.replace(opts, overrides=overrides, seed=None), later))
    for metric, i in report(exp, bundles, target):
        echo(
            f"  {metric}: {i.text(4)} {i.percent()} over {i.n} repetitions "
            f"({'reached' if (i.relative_half_width or math.inf) <= target.precision else 'not reached'}: "
            f"±{100 * target.precision:g} % asked)"
        )
    return bundles
