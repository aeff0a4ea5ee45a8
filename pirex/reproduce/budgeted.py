"""`pirex reproduce --budget 15m` (issues 37, 52): the pilot, then rounds that spend the budget on the runs whose
claims are still undecided, read through budget.py's group-sequential design so that the verdicts keep their error
rates although the number of repetitions depends on the data.

The budget is the rounds': the pilot (every run once, as planned; the plan prints its estimate first) runs before
it, so that a slow machine's pilot does not eat the rounds. One round: every budgeted claim whose run has more
repetitions than at its last look is looked at (the look's boundary exact for its counts, its level saved; the looks
taken before are read again at theirs, and a decided claim stays decided); the undecided ones are planned
(budget.plan_round: runs none of whose claims is likely to decide are left, the others all extended by the same
repetitions); each chosen run gets a bundle of the repetitions it lacks (a duet's alternation continued). It stops
when the budget is spent or no round adds enough. A --resume with a new --budget goes on with the looks saved: the
claims still undecided get later looks from the design's reserve.

Budgeted: the claims on one machine whose runs this reproduction starts here. Not budgeted (read at the fixed level,
as without --budget, and their runs never extended): claims across devices or storages, and every claim of
--inventory or --bundles. The design, its looks and their levels are saved in state.json after every round."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic

from pirex.analysis import precision as prec
from pirex.analysis.interface import RunValue
from pirex.core.bundle import DUET, Bundle
from pirex.core.errors import PirexError
from pirex.reproduce import budget, calibrate, plan
from pirex.reproduce.claims import Claim
from pirex.reproduce.state import Budget, ReproductionState, Running
from pirex.reproduce.verdict import DIFFERS, HOLDS, INCONCLUSIVE, Verdict, edges, on_values, regions

TINY = 1e-12  # a look whose one-sided level is below this decides nothing a float can tell apart (1 - p == 1)


def key_of(c: Claim) -> str:
    """A claim's key in the design: paper:claim (the verdict's key on one machine)."""
    return f"{c.paper}:{c.id}"


def budgeted(c: Claim, need: plan.Need) -> bool:
    """Whether the claim is read through the design: on one machine, on a run of this machine's own."""
    return not c.across and need.storage is None


# --- the design's state, in state.json


def load(state: ReproductionState) -> budget.Design | None:
    """The design a budgeted reproduction saved, or None for one without --budget."""
    saved = state.budget
    return budget.Design.from_json(json.dumps(saved.design)) if saved and saved.design else None


def start(state: ReproductionState, seconds: float, earlier: Budget | None) -> Budget:
    """state.json's budget entry for this attempt: a new one, or the resumed one with this attempt's budget added."""
    if not seconds > 0:
        raise PirexError(f"--budget {seconds:g} s: expected a duration above zero, e.g. 15m")
    entry = dataclasses.replace(earlier) if earlier else Budget()
    entry.given = [*entry.given, round(seconds, 1)]
    state.budget = entry
    return entry


def count(entry: Budget, seconds: float, round_: bool) -> None:
    """Seconds a run took, into the budget's account: the pilot's, or a round's."""
    entry.spent = round(entry.spent + seconds, 1)
    if round_:
        entry.rounds_spent = round(entry.rounds_spent + seconds, 1)
    else:
        entry.pilot = round(entry.pilot + seconds, 1)


def count_killed(previous: ReproductionState, state: ReproductionState) -> None:
    """The seconds of the run an earlier attempt was killed in (from its start to its last step: reproduction's
    _earlier_attempts) into the budget's account, which that attempt could not save: a round's, or the pilot's."""
    running, entry = previous.running, state.budget
    if running is None or entry is None:
        return
    if running.extends:
        lost = (state.extended or {}).get(running.key, 0.0) - (previous.extended or {}).get(running.key, 0.0)
    else:
        lost = state.partial.get(running.key, 0.0) - previous.partial.get(running.key, 0.0)
    count(entry, max(lost, 0.0), round_=bool(running.extends))


def save(entry: Budget, design: budget.Design) -> None:
    entry.design = json.loads(design.to_json())


def register(design: budget.Design, needs: Sequence[plan.Need], claims: Sequence[Claim]) -> None:
    """Mark the claims read through the design: budgeted ones on a single run of this machine's (a claim on two runs,
    a duet's pair and its A/A pair, is read at the fixed level: its repetitions are not one run's)."""
    by_id = {c.id: c for c in claims}
    serving: dict[str, int] = {}
    for n in needs:
        for cid in n.claims:
            serving[cid] = serving.get(cid, 0) + 1
    for n in needs:
        for cid in n.claims:
            c = by_id.get(cid)
            if c and serving[cid] == 1 and budgeted(c, n):
                design.register(key_of(c))


def pilot_repetitions(n: plan.Need) -> int:
    """The repetitions the need's first run makes: --set EXP.repetitions, else the plan's (at least five)."""
    if "repetitions" in n.overrides:
        return int(n.overrides["repetitions"])
    columns = len(n.cases) if n.cases else len(n.variants)
    return max(n.steps // max(columns, 1), 1)


def orphans(
    n: plan.Need,
    results_dir: Path,
    machine: dict,
    running: Running | None,
    have: Sequence[Path],
    statuses: tuple[str, ...] = ("complete",),
) -> list[tuple[Path, int]]:
    """The extension of the need a killed attempt was running (state.json's `running`, by its own name, run.json's
    "extends"), with the repetitions before it: complete (finished, then killed before the save), or with statuses
    ("partial", "running") unfinished, which the resume finishes first so that no step's container or mounts are
    left behind. Only that one bundle: never another reproduction's."""
    name = running.extends if running else None
    if not name or running.key != n.key:
        return []
    before = int(name.rpartition("@")[2])
    found = plan.matching_bundles(n, results_dir, None, machine, statuses, any_repetitions=True, extends=name)
    return [(b, before) for b in sorted(found, key=lambda b: b.name) if b not in have]


# --- reading a claim at its looks


def repetitions(values: Sequence[RunValue], bundles: Sequence[str]) -> list[tuple[str, int]]:
    """The run's repetitions, (bundle, repetition), in the order they ran: its bundles in order, then within each."""
    rank = {b: i for i, b in enumerate(bundles)}
    keys = {(v.bundle, v.repetition) for v in values}
    return sorted(keys, key=lambda k: (rank.get(k[0], len(rank)), k[0], k[1]))


def first(values: Sequence[RunValue], reps: Sequence[tuple[str, int]], n: int) -> list[RunValue]:
    """The values of the run's first n repetitions: what a look at n reads."""
    keep = set(reps[:n])
    return [v for v in values if (v.bundle, v.repetition) in keep]


@dataclass
class Reading:
    """Reads each budgeted claim at its looks; judge_all calls it in place of verdict.on_values. Takes a claim's next
    look (in the design) when its run has more repetitions than at the last, and records each run's repetitions
    (for the rounds' plan)."""

    design: budget.Design
    confidence: float
    precision: float | None
    counts: dict[str, int] = field(default_factory=dict)  # need key -> repetitions there are
    _extension: dict[str, bool] = field(default_factory=dict)  # bundle name -> whether it is a budget's extension
    calibrations: calibrate.Calibrations | None = None  # what each verdict's interval is held to on this machine

    def __call__(self, c: Claim, runs: Sequence[plan.Need], values: list[RunValue], indicative: bool) -> Verdict:
        key, need = key_of(c), runs[0]
        if len(runs) != 1 or not budgeted(c, need) or key not in self.design.claims:
            # read at the fixed level on the runs' pilots alone: how far a run was extended depends on other claims'
            # data, and an interval at a fixed n must not (a duet's pair and its A/A pair: claims on two runs)
            plain = {b.name for n in runs for b in n.bundles if not self._extends(b)}
            values = [v for v in values if v.bundle in plain]
            return on_values(c, values, self.confidence, self.precision, indicative, calibration=self._cal(c, values))
        reps = repetitions(values, [b.name for b in need.bundles])
        self.counts[need.key] = len(reps)
        if len(reps) < self.design.pilot:  # a run shorter than the design's first look: the fixed level, never extended
            return on_values(c, values, self.confidence, self.precision, indicative, calibration=self._cal(c, values))
        looks = self.design.looks(key)
        last = None
        for i in range(len(looks)):  # the looks taken before: read again at their levels, never recorded twice
            last = self._at(c, key, values, reps, i, indicative)
            if last.verdict in (HOLDS, DIFFERS):
                return last
        if not looks or len(reps) > looks[-1]:  # more repetitions than at the last look: the next look
            self.design.look(key, len(reps))
            last = self._at(c, key, values, reps, len(looks), indicative)
        return last

    def _cal(self, c: Claim, values):
        return self.calibrations.of(c.experiment, values) if self.calibrations else None

    def _extends(self, bundle: Path) -> bool:
        if bundle.name not in self._extension:
            self._extension[bundle.name] = bool(Bundle.open(bundle).run_info().extends)
        return self._extension[bundle.name]

    def _at(self, c: Claim, key: str, values, reps, index: int, indicative: bool) -> Verdict:
        n, p = self.design.looks(key)[index], self.design.level_of(key, index)
        where = f"look {index + 1} at {n} repetitions"
        if p < TINY:
            why = f"{where}: the design spends no alpha there (a later look, more repetitions, would decide it)"
            return Verdict(c, INCONCLUSIVE, why, indicative=indicative, look=where)
        at_n = first(values, reps, n)
        v = on_values(
            c, at_n, 1 - p, self.precision, indicative, aa_confidence=self.confidence, calibration=self._cal(c, at_n)
        )
        spent = sum(budget.spend_of(i, self.design.alpha) for i in range(index + 1))
        return dataclasses.replace(
            v, look=f"{where}, alpha spent by then {100 * spent:.2g} % of {100 * self.design.alpha:g} %"
        )

    # --- what is undecided, and what would decide it

    def estimates(self, verdicts: Sequence[Verdict], needs: Sequence[plan.Need], undecided: bool = True):
        """The budgeted claims with an interval to plan from (budget.Pending), the undecided ones alone by default:
        those more repetitions of their run could decide (not an unsteady machine's, nor one without a spread)."""
        by_claim = {cid: n for n in needs for cid in n.claims}
        out = []
        for v in verdicts:
            n, key = by_claim.get(v.claim.id), key_of(v.claim)
            if (undecided and v.verdict != INCONCLUSIVE) or n is None or key not in self.design.claims:
                continue
            if n.key not in self.counts or self.counts[n.key] < self.design.pilot:  # the fixed level: not extended
                continue
            o = v.ours
            if o is None or not o.interval.has_interval or prec.aa_check(o.aa) or len(o.log_ratios) < 2:
                continue  # no interval, an unsteady machine, or nothing to plan from: more of the same won't do
            try:  # a rule with regions to plan from (not a crossover's, an agreement's)
                edges(v.claim)
                regions(v.claim, 1.0, 1.0)
            except ValueError:
                continue
            out.append(budget.Pending(key, n.key, o.interval.value, o.spread, self.counts[n.key], v.claim))
        return out

    def pending(self, verdicts: Sequence[Verdict], needs: Sequence[plan.Need]) -> list[budget.Pending]:
        """The budgeted claims still undecided that more repetitions of their run could decide."""
        return self.estimates(verdicts, needs)


def cost_per_repetition(n: plan.Need) -> float | None:
    """What one more repetition of the run costs here: the wall time of its steps per repetition in its bundles (a
    duet's two steps at once: the longer), else the plan's estimate per repetition."""
    per: dict[tuple[str, int], list[float]] = {}
    for b in n.bundles:
        for s in Bundle.open(b).steps():
            if (t := plan.step_seconds(s)) is not None:
                per.setdefault((b.name, s.repetition), []).append(t)
    if per:
        at_once = n.design == DUET
        return sum(max(x) if at_once else sum(x) for x in per.values()) / len(per)
    return n.seconds / pilot_repetitions(n) if n.seconds else None


# --- the rounds


def spend(
    left: float,
    needs: Sequence[plan.Need],
    reading: Reading,
    judge: Callable[[], list[Verdict]],
    extend: Callable[[plan.Need, int, int], None],
    entry: Budget,
    checkpoint: Callable[[], None],
    echo: Callable[[str], None],
) -> tuple[float, list[Verdict] | None]:
    """Rounds until the budget left (seconds) is spent or no round adds enough: judge, plan, extend.
    `extend(need, extra, before)` runs `extra` more repetitions of the need after its `before` ones (a bundle),
    raising PirexError when it fails; `checkpoint()` saves the state. Returns the seconds left, and the verdicts
    of the last judging when nothing ran after it (else None: the caller judges the new repetitions). The first
    round of an attempt takes whatever it adds; a later one at least half the repetitions its runs have (a look
    that adds less spends the reserve on little)."""
    broken: set[str] = set()  # runs whose extension failed: not chosen again in this attempt
    verdicts, rounds = None, 0
    while left > 0:
        verdicts = judge()
        save(entry, reading.design)
        pending = [p for p in reading.pending(verdicts, needs) if p.run not in broken]
        pending, seconds = _priced(pending, needs)
        least = 1 if not rounds else math.ceil(min((p.n for p in pending), default=2) / 2)
        plan_ = budget.plan_round(pending, seconds, left, reading.design, least=least)
        if entry.forecast is None and all(len(v["looks"]) <= 1 for v in reading.design.claims.values()):
            everyone = reading.estimates(verdicts, needs, undecided=False)
            # the decided claims' runs priced too (the pending ones' are known), each once
            _, more = _priced([p for p in everyone if p.run not in seconds], needs)
            every_s = {**seconds, **more}
            everyone = [p for p in everyone if p.run in every_s]
            # the pilot's cost: its repetitions at what one costs here (reused bundles cost this attempt nothing,
            # and the yardsticks must buy the same repetitions the design had)
            pilot = sum(every_s[r] * n for r, n in {p.run: p.n for p in everyone}.items())
            first = plan_ if least == 1 else None  # the first round as planned here, not planned again
            entry.forecast = budget.forecast(everyone, pending, every_s, pilot, left, reading.design, first).to_json()
        checkpoint()
        if not plan_.targets:
            return left, verdicts
        rounds += 1
        entry.rounds += 1
        dropped = f"; left alone (no claim likely to decide): {', '.join(plan_.dropped)}" if plan_.dropped else ""
        echo(
            f"budget round {entry.rounds}: {_minutes(left)} left; extending "
            + ", ".join(f"{k} to {n} repetitions" for k, n in plan_.targets.items())
            + f" (about {_minutes(plan_.seconds)}), which would decide about {plan_.expected:.1f} claim(s) at their "
            f"estimates{dropped}"
        )
        for run, target in plan_.targets.items():
            if left <= 0:
                break
            n = _need(needs, run)
            before = reading.counts[run]
            started = monotonic()
            try:
                extend(n, target - before, before)
            except PirexError as e:
                broken.add(run)
                echo(f"reproduce: extending {run} failed: {str(e).splitlines()[0]}")
            # counted once it ended or failed; one stopped (Ctrl-C, SIGKILL) is counted by the resume, from its steps
            took = monotonic() - started
            left -= took
            count(entry, took, round_=True)
            checkpoint()
    return left, None


def _need(needs: Sequence[plan.Need], key: str) -> plan.Need:
    return next(n for n in needs if n.key == key)


def _priced(pending: Sequence[budget.Pending], needs: Sequence[plan.Need]):
    """The claims whose run has a cost per repetition here, and that cost per run: each run priced once (pricing
    opens its bundles)."""
    seconds = {r: s for r in sorted({p.run for p in pending}) if (s := cost_per_repetition(_need(needs, r)))}
    return [p for p in pending if p.run in seconds], seconds


# --- what the report says


def explain(
    verdicts: list[Verdict], needs: Sequence[plan.Need], reading: Reading, left: float, resume: str
) -> list[Verdict]:
    """Each budgeted claim left inconclusive says why in the user's terms: the repetitions at which the design's next
    look would decide it, with the chance at its estimate, and the command that continues the design."""
    pending, seconds = _priced(reading.pending(verdicts, needs), needs)
    by_key = {p.key: p for p in pending}
    out = []
    for v in verdicts:
        p = by_key.get(key_of(v.claim))
        if v.verdict != INCONCLUSIVE or p is None:
            out.append(v)
            continue
        text = advice(p, reading.design, seconds[p.run], resume)  # in place of the fixed-n advice, the last (...)
        head = v.reason[: v.reason.rfind(" (")] if v.reason.endswith(")") else v.reason
        out.append(dataclasses.replace(v, reason=f"{head} ({text})"))
    return out


def continuation(
    verdicts: Sequence[Verdict], reading: Reading, needs: Sequence[plan.Need], minutes: int
) -> tuple[int, int] | None:
    """The --resume --budget to suggest: (minutes, claims a round would extend) at the fewest of `minutes` (the last
    budget given) and the minutes each undecided claim's advice names with which a round would go on; None where no
    round would (every claim undecided sits on an edge, or has no spread)."""
    pending, seconds = _priced(reading.pending(verdicts, needs), needs)
    wanted = {minutes}
    for p in pending:
        n, _ = budget.more_for(p, reading.design.next_spend(p.key))
        if n is not None:
            wanted.add(max(1, math.ceil((n - p.n) * seconds[p.run] / 60)))
    for m in sorted(w for w in wanted if w >= minutes):
        r = budget.plan_round(pending, seconds, 60.0 * m, reading.design)
        if r.targets:
            return m, sum(1 for p in pending if p.run in r.targets)
    return None


def _a(n: int) -> str:
    """The article before a percentage said aloud (0 to 100): an 8, an 11, an 18, an 80 %; a 9, a 100."""
    return "an" if str(n).startswith("8") or n in (11, 18) else "a"


def advice(p: budget.Pending, design: budget.Design, per_repetition: float, resume: str) -> str:
    """What would decide an undecided claim: at the level of the design's next look (the reserve's), the fewest
    repetitions with a 4 in 5 chance at its estimate and spread, their minutes and the --resume that keeps the
    error rate; or why none is likely to. No parenthesis: the report takes a reason's last one as this text."""
    d = 100 * math.expm1(budget.distance(p.estimate, p.edges))
    head = f"the estimate is {d:.1f} % from the nearest edge of the rule"
    level = design.next_spend(p.key)
    n, chance = budget.more_for(p, level)
    if n is None:
        return (
            f"{head}: no number of repetitions is likely to decide it at this estimate; its chance "
            f"at the next look's level is at most {100 * chance:.0f} %"
        )
    more = n - p.n
    minutes = max(1, math.ceil(more * per_repetition / 60))
    pct = round(100 * chance)
    return (
        f"{head}: about {more} more repetitions, {n} in all and {minutes} min, would decide it with {_a(pct)} "
        f"{pct} % chance at the next look's level of {100 * level:.2g} %: {resume} --budget {minutes}m"
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def spent_text(entry: Budget) -> str:
    """The summary's line on the minutes: the pilot's, the rounds' of the budget given, and the yardsticks."""
    given = " + ".join(_minutes(s) for s in entry.given)
    text = (
        f"budget: the pilot took {_minutes(entry.pilot)}, {entry.rounds} round(s) {_minutes(entry.rounds_spent)} of "
        f"the {given} given"
    )
    f = entry.forecast
    if f and f.get("oracle"):
        text += (
            f"; at the pilot's estimates this design expected {f['design']:.1f} claims decided, the even split "
            f"{f['even']:.1f}, the oracle {f['oracle']:.1f} ({100 * f['design'] / f['oracle']:.0f} %)"
        )
    return text


def note(entry: Budget, design: budget.Design, verdicts: Sequence[Verdict]) -> str:
    """The report's note on the budget: how the minutes were spent, the method, the looks, and the yardsticks."""
    given = " + ".join(_minutes(s) for s in entry.given)
    looks = sum(len(v["looks"]) for v in design.claims.values())
    decided = sum(1 for v in verdicts if v.look and v.verdict in (HOLDS, DIFFERS))
    text = (
        f"Budget {given} of rounds after the pilot: the pilot took {_minutes(entry.pilot)}, {entry.rounds} round(s) "
        f"{_minutes(entry.rounds_spent)}. Each claim on this machine is a group-sequential test (alpha = "
        f"{100 * design.alpha:g} % per conclusion; the pilot's look spends {100 * budget.PILOT_SHARE:g} % of it, the "
        f"first round's {100 * budget.MAIN_SHARE:g} %, each later look half the reserve left; boundaries exact for "
        f"t statistics at the looks' counts); {looks} looks taken over {len(design.claims)} claims; {decided} "
        "verdict(s) decided at a look, each read off that look's interval level (in its reason)"
    )
    f = entry.forecast
    if f and f.get("oracle"):
        text += (
            f". At the pilot's estimates and spreads taken as the truth ({f['claims']} claims, "
            f"{_minutes(f['total'])} of runs in all), this design expected {f['design']:.1f} decided, the budget "
            f"spread evenly with one look at alpha {f['even']:.1f}, and an oracle choosing the best fixed repetitions "
            f"per run {f['oracle']:.1f}: {100 * f['design'] / f['oracle']:.0f} % of the oracle (budget.forecast)"
        )
    return text
