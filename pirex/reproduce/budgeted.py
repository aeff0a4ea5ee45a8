"""`pirex reproduce --budget 15m` (issue 37): the pilot, then rounds that spend what is left of the budget on the
runs whose claims are closest to a verdict, read through budget.py's group-sequential design so that the verdicts
keep their error rates although the number of repetitions depends on the data.

One round: every budgeted claim is read at its looks (the design's grid points its run has passed, in order, each
on the run's first n repetitions and at that look's level; the first look that decides is the verdict, and a
decided claim is looked at no more); the undecided ones say what would decide them (budget.need); budget.allocate()
chooses which runs to extend to which grid point (a run shared by several claims counts for all of them); each
chosen run gets a bundle of the repetitions it lacks (a duet's alternation of its CPU halves continued). It stops
when the budget is spent or nothing decidable is left.

Budgeted: the claims on one machine whose runs this reproduction starts here. Not budgeted (read at the fixed level,
as without --budget, and their runs never extended): claims across devices or storages, and every claim of
--inventory or --bundles. The design, its looks and the alpha they spent are saved in state.json after every
round, so that --resume continues with a new budget and counts them once."""

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
from pirex.reproduce.verdict import DIFFERS, HOLDS, INCONCLUSIVE, Verdict, edges, on_values

CAP = 4  # a run's n_max is at most CAP times its pilot (register)
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


def save(entry: Budget, design: budget.Design) -> None:
    entry.design = json.loads(design.to_json())


def register(design: budget.Design, needs: Sequence[plan.Need], claims: Sequence[Claim], seconds: float) -> None:
    """Fix the n_max of every budgeted claim not yet in the design, before its first look: what this attempt's
    budget buys of its run when spread evenly over the runs (budget.n_max_for), from the plan's seconds per
    repetition (estimates, not data), and at most CAP times the run's pilot: where one run has the whole budget
    (`make run EXPERIMENTS=jmh BUDGET=30m`: n_max 76), the O'Brien-Fleming shape would leave the pilot's look 4e-15
    of alpha and decide nothing there, not even a ratio of 0.5; at a quarter of n_max it spends 9e-5 (a t_4 interval
    of about +-5.4 sd). A claim registered by an earlier attempt keeps its n_max (Design.register)."""
    by_id = {c.id: c for c in claims}
    serving: dict[str, int] = {}
    for n in needs:
        for cid in n.claims:
            serving[cid] = serving.get(cid, 0) + 1
    # a claim on two runs (a duet's pair and its A/A pair) is read at the fixed level: its repetitions are not one run's
    by_id = {i: c for i, c in by_id.items() if serving.get(i) == 1}
    runs = [n for n in needs if n.seconds and any(budgeted(by_id[i], n) for i in n.claims if i in by_id)]
    if not runs:
        return
    pilots = {n.key: max(design.pilot, pilot_repetitions(n)) for n in runs}
    per_rep = {n.key: n.seconds / pilot_repetitions(n) for n in runs}
    left = seconds - sum(pilots[k] * s for k, s in per_rep.items())
    even = math.ceil(seconds / sum(per_rep.values()))
    for n in runs:
        # the even share, no more than the budget buys of this run after every pilot, at most CAP pilots; never
        # below the repetitions its pilot runs (a look must not leave out repetitions there are)
        top = pilots[n.key] + max(int(left // per_rep[n.key]), 0)
        n_max = max(pilots[n.key], min(even, top, CAP * pilots[n.key]))
        for cid in n.claims:
            c = by_id.get(cid)
            entry = design.claims.get(key_of(c)) if c else None
            if c and budgeted(c, n) and not (entry and entry["looks"]):  # not looked at yet: n_max may still change
                design.register(key_of(c), n_max)


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
    """Reads each budgeted claim at its looks; judge_all calls it in place of verdict.on_values. Records the looks a
    claim's run has newly passed (in the design), and what each run's repetitions are (for the allocation)."""

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
        looks = self.design.claims[key]["looks"]
        last = None
        for n in list(looks):  # the looks taken before: read again, never recorded twice
            last = self._at(c, key, values, reps, n, indicative)
            if last.verdict in (HOLDS, DIFFERS):
                return last
        for n in self.design.looks_between(key, looks[-1] if looks else 0, len(reps)):
            self.design.look(key, n)
            last = self._at(c, key, values, reps, n, indicative)
            if last.verdict in (HOLDS, DIFFERS):
                return last
        if last is None:
            return Verdict(
                c,
                INCONCLUSIVE,
                f"{len(reps)} repetitions, fewer than the design's first look at {self.design.pilot}",
                indicative=indicative,
            )
        return last

    def _cal(self, c: Claim, values):
        return self.calibrations.of(c.experiment, values) if self.calibrations else None

    def _extends(self, bundle: Path) -> bool:
        if bundle.name not in self._extension:
            self._extension[bundle.name] = bool(Bundle.open(bundle).run_info().doc.get("extends"))
        return self._extension[bundle.name]

    def _at(self, c: Claim, key: str, values, reps, n: int, indicative: bool) -> Verdict:
        grid = self.design.grid_of(key)
        p = self.design.levels(key)[n]
        where = f"look {grid.index(n) + 1} of {len(grid)} at {n} repetitions"
        if p < TINY:
            why = f"{where}: the design spends no alpha there (a later look, more repetitions, would decide it)"
            return Verdict(c, INCONCLUSIVE, why, indicative=indicative, look=where)
        at_n = first(values, reps, n)
        v = on_values(
            c, at_n, 1 - p, self.precision, indicative, aa_confidence=self.confidence, calibration=self._cal(c, at_n)
        )
        spent = budget.spent(n / self.design.n_max_of(key), self.design.alpha, self.design.shape)
        return dataclasses.replace(
            v, look=f"{where}, alpha spent by then {100 * spent:.2g} % of {100 * self.design.alpha:g} %"
        )

    # --- what is undecided, and what would decide it

    def pending(self, verdicts: Sequence[Verdict], needs: Sequence[plan.Need]) -> list[budget.Pending]:
        """The budgeted claims still undecided that more repetitions of their run could decide."""
        by_claim = {cid: n for n in needs for cid in n.claims}
        out = []
        for v in verdicts:
            n, key = by_claim.get(v.claim.id), key_of(v.claim)
            if v.verdict != INCONCLUSIVE or n is None or key not in self.design.claims or n.key not in self.counts:
                continue
            if self.counts[n.key] < self.design.pilot:  # read at the fixed level: never extended
                continue
            o = v.ours
            if o is None or not o.interval.has_interval or prec.aa_check(o.aa) or len(o.log_ratios) < 2:
                continue  # no interval, an unsteady machine, or nothing to plan from: more of the same won't do
            try:
                e = edges(v.claim)
            except ValueError:
                continue
            out.append(budget.Pending(key, n.key, o.interval.value, o.spread, self.counts[n.key], e))
        return out


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
    """Rounds until the budget left (seconds) is spent or nothing decidable is left: judge, allocate, extend.
    `extend(need, extra, before)` runs `extra` more repetitions of the need after its `before` ones (a bundle),
    raising PirexError when it fails; `checkpoint()` saves the state. Returns the seconds left, and the verdicts
    of the last judging when nothing ran after it (else None: the caller judges the new repetitions)."""
    broken: set[str] = set()  # runs whose extension failed: not chosen again in this attempt
    verdicts = None
    while left > 0:
        verdicts = judge()
        save(entry, reading.design)
        checkpoint()
        pending = [p for p in reading.pending(verdicts, needs) if p.run not in broken]
        seconds = {p.run: s for p in pending if (s := cost_per_repetition(_need(needs, p.run)))}
        pending = [p for p in pending if p.run in seconds]
        alloc = budget.allocate(pending, seconds, left, reading.design)
        if not alloc.targets:
            return left, verdicts
        entry.rounds += 1
        echo(
            f"budget round {entry.rounds}: {_minutes(left)} left; extending "
            + ", ".join(f"{k} to {n} repetitions" for k, n in alloc.targets.items())
            + f" (about {_minutes(alloc.seconds)}), which would decide {len(alloc.decides)} claim(s) at their estimates"
        )
        run_of = {p.key: p.run for p in pending}
        gain = {r: sum(run_of[k] == r for k in alloc.decides) / seconds[r] for r in alloc.targets}
        for run, target in sorted(alloc.targets.items(), key=lambda kv: -gain[kv[0]]):  # the most decided per second
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
            finally:
                took = monotonic() - started
                left -= took
                entry.spent = round(entry.spent + took, 1)
                checkpoint()
    return left, None


def _need(needs: Sequence[plan.Need], key: str) -> plan.Need:
    return next(n for n in needs if n.key == key)


# --- what the report says


def explain(
    verdicts: list[Verdict], needs: Sequence[plan.Need], reading: Reading, left: float, resume: str
) -> list[Verdict]:
    """Each budgeted claim left inconclusive says why in the user's terms, with the command that would decide it."""
    pending = reading.pending(verdicts, needs)
    seconds = {p.run: s for p in pending if (s := cost_per_repetition(_need(needs, p.run)))}
    pending = [p for p in pending if p.run in seconds]
    why = {x.key: x for x in budget.allocate(pending, seconds, max(left, 0.0), reading.design).needs}
    by_key = {p.key: p for p in pending}
    out = []
    for v in verdicts:
        key = key_of(v.claim)
        x = why.get(key)
        if v.verdict != INCONCLUSIVE or x is None or not v.reason.endswith(")"):
            out.append(v)
            continue
        text = _why(x, by_key[key], reading.design, resume)
        out.append(dataclasses.replace(v, reason=f"{v.reason[: v.reason.rfind(' (')]} ({text})"))
    return out


def _why(x: budget.Need, p: budget.Pending, design: budget.Design, resume: str) -> str:
    if x.n is None:
        return x.reason
    d = 100 * math.expm1(budget.distance(p.estimate, p.edges))
    head = f"the estimate is {d:.1f} % from the nearest edge of the rule"
    more = max(x.n - p.n, 0)
    minutes = max(1, math.ceil((x.seconds or 0) / 60))
    n_max = design.n_max_of(p.key)
    if x.n > n_max:
        more = (
            "a new reproduction with a larger --budget would: a run's n_max is the budget's even share over the runs, "
            f"at most {CAP} pilots"
            if n_max < CAP * design.pilot
            else (
                f"a larger pilot would: a new reproduction with --budget and "
                f"--set {_experiment_of(p.run)}.repetitions={math.ceil(x.n / CAP)}, more repetitions in each run"
            )
        )
        beyond = f"beyond its run's {n_max} where the design's alpha is spent"
        return f"{head}: about {x.n} repetitions would decide it, {beyond}; {more}"
    return f"{head}: about {x.n} repetitions, {more} more, {minutes} min, would decide it: {resume} --budget {minutes}m"


def _experiment_of(key: str) -> str:
    """The experiment of a need's key: "moobench[fluctuation]@quick" -> "moobench"."""
    return key.split("@")[0].split("[")[0]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def note(entry: Budget, design: budget.Design, verdicts: Sequence[Verdict]) -> str:
    """The report's note on the budget: the method, what was spent, the looks taken, each verdict's level."""
    given = " + ".join(_minutes(s) for s in entry.given)
    looks = sum(len(v["looks"]) for v in design.claims.values())
    decided = sum(1 for v in verdicts if v.look and v.verdict in (HOLDS, DIFFERS))
    shape = "O'Brien-Fleming" if design.shape == budget.OBRIEN_FLEMING else "Pocock"
    return (
        f"Budget {given} of runs, {_minutes(entry.spent)} spent, the pilot and {entry.rounds} round(s): each "
        f"claim on this machine is a group-sequential test (alpha = {100 * design.alpha:g} % per conclusion, spent by "
        f"a Lan-DeMets function of {shape} shape, {design.method} over the looks), looked at on the fixed grid "
        f"{', '.join(map(str, budget.grid(max(design.n_max, design.pilot), design.pilot)))}... repetitions up to its "
        f"run's n_max; {looks} looks taken over {len(design.claims)} claims; {decided} verdict(s) decided at a look, "
        "each read off that look's interval level (in its reason), with the alpha spent by then"
    )
