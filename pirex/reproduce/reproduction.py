"""`pirex reproduce PAPER`: print the plan (claims, runs, time here, what this machine cannot
do), run what is missing (reusing bundles of the same commit, experiment, profile and machine),
then judge every claim and write the report. The folder results/reproduce/<paper>-<id>/ holds
state.json, so `--resume DIR` continues a killed reproduction without rerunning what finished."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic, time
from typing import Any

import click
import yaml

from pirex.analysis import modules
from pirex.core import bundle as bundle_mod
from pirex.core import experiment, machine
from pirex.core.bundle import from_iso
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS, git_version
from pirex.reproduce import budgeted, calibrate, plan, report, sources, spans
from pirex.reproduce import claims as claims_mod
from pirex.reproduce.budget import Design
from pirex.reproduce.state import STATE, Budget, ReproductionState, Running
from pirex.reproduce.verdict import (
    DIFFERS,
    HOLDS,
    NOT_RUN,
    Verdict,
    alpha_of,
    expected_false_differs,
    holm,
    on_values,
    verdict_level,
)

log = logging.getLogger(__name__)
UNFINISHED = ("partial", "running")


@dataclass
class Options:
    papers: list[str]
    level: str = "kick-the-tires"
    precision: float | None = None
    confidence: float = 0.95
    budget: float | None = None  # seconds of runs: the pilot, then rounds (budgeted.py); with --inventory, a cap
    results_dir: Path = Path("results")
    tag: str = "dev"
    resume: Path | None = None
    reuse_only: bool = False  # judge the bundles there are; run nothing
    yes: bool = True
    sets: dict[str, dict[str, Any]] = field(default_factory=dict)  # experiment -> parameter overrides
    aa: bool | None = None  # an A/A copy of each denominator variant (None: at the full level only)
    experiments: list[str] = field(default_factory=list)  # only the claims on these experiments run (all: [])
    inventory: Path | None = None  # --inventory: every run on every device of this Ansible inventory (pirex fleet)
    bundles: list[Path] = field(default_factory=list)  # --bundles: judge these (bundles, fleet runs); run nothing
    storages: list[Path] = field(default_factory=list)  # --storage: the claims across storages run on each mount
    images_archive: Path | None = None  # --inventory in a lab without a registry: the hosts load the images from it
    serial: bool = False  # --inventory --serial: one device at a time (devices that share a machine or a network)
    design: str = plan.INTERLEAVED  # --design duet: each pair of variants at once, where the experiment suits it
    whole_pilot: bool = False  # --whole-pilot (make run): every run once even beyond --budget; rounds get what is left
    artifact: Path | None = None  # --artifact: a rerun on the images of this artifact (artifact/rerun.py)
    # --artifact with images: image -> platform manifest digest of those imported; only bundles of these are reused
    artifact_images: dict[str, str] | None = None
    # --artifact: the run ids of the bundles its reproduction judged: never reused, so that the rerun is its own
    not_reused: frozenset[str] = frozenset()
    calibrations: list[Path] = field(default_factory=list)  # --calibration: calibration bundles to judge with


def parse_sets(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`--set EXPERIMENT.NAME=VALUE` pairs, typed and checked against each experiment's declarations."""
    raw: dict[str, list[str]] = {}
    for pair in pairs:
        exp_id, dot, rest = pair.partition(".")
        if not dot or "=" not in rest:
            raise PirexError(
                f"--set {pair!r}: expected EXPERIMENT.NAME=VALUE (an experiment, a dot, one of its parameters)"
            )
        raw.setdefault(exp_id, []).append(rest)
    return {exp_id: experiment.load(exp_id).overrides(items) for exp_id, items in raw.items()}


def _papers(names: list[str]) -> list[claims_mod.Paper]:
    wanted = claims_mod.available() if names in ([], ["all"]) else names
    return [claims_mod.load(p) for p in wanted]


def _out_dir(opts: Options, papers: list[claims_mod.Paper]) -> Path:
    if opts.resume:
        if not (opts.resume / STATE).is_file():
            raise PirexError(f"--resume {opts.resume}: no {STATE} there (give a results/reproduce/<paper>-<id> folder)")
        return opts.resume
    name = "-".join(p.id for p in papers) if len(papers) < 3 else "all"
    return opts.results_dir / "reproduce" / f"{name}-{bundle_mod.new_run_id(bundle_mod.utcnow())}"


def artifact_of(folder: Path) -> Path | None:
    """The artifact a reproduction reran (--artifact), which its --resume must load again; None for the others."""
    try:
        return ReproductionState.read(folder).artifact
    except PirexError:
        return None  # reproduce() names what is wrong with the folder


@dataclass
class _Reproduction:
    """What the steps of `reproduce` hand on to each other: the plan, its bundles' verification, the state."""

    opts: Options
    out: Path
    papers: list[claims_mod.Paper]
    claims: list[claims_mod.Claim]
    needs: list[plan.Need]
    requirements: dict[str, claims_mod.Requirement]
    missing: dict[str, str]
    here: dict[str, Any]
    commit: str | None
    given: list[Path]  # --bundles, expanded and verified
    verifier: bundle_mod.Verifier
    left_out: dict[str, str]  # bundles that failed verification: path -> why
    score: float
    previous: ReproductionState  # what an earlier attempt saved; a fresh reproduction's is every default
    state: ReproductionState = field(default_factory=ReproductionState)  # this attempt's, saved as it goes
    elsewhere: dict[str, str] = field(default_factory=dict)  # need -> the other commit whose bundles answer it
    superseded: dict[str, str] = field(default_factory=dict)  # bundles of another build of this commit: path -> why
    entry: Budget | None = None  # --budget's entry, when this machine runs the pilot and rounds
    reading: budgeted.Reading | None = None  # a budgeted reproduction's reading of the claims at their looks
    left: float | None = None  # seconds of --budget left: each run spends what it took
    lost: dict[str, str] = field(default_factory=dict)  # the devices of --inventory that failed: host -> why
    calibrations: calibrate.Calibrations | None = None  # this machine's (or --calibration's): what verdicts are held to

    @property
    def local(self) -> bool:
        """Whether the runs are this machine's: not a fleet's, nor judging given bundles or what there is."""
        return not (self.opts.inventory or self.given or self.opts.reuse_only)


def reproduce(opts: Options, run_one: Callable[[plan.Need, Options], Path], echo=click.echo) -> Path:
    """The whole reproduction; `run_one` runs a need into a bundle (the runner), returning its path."""
    r = _planned(opts)
    echo(_plan_text(r.papers, r.claims, r.needs, r.missing, opts, r.elsewhere, r.superseded))
    r.out.mkdir(parents=True, exist_ok=True)
    r.state = _new_state(r)
    _start_budget(r, echo)
    _save(r.out, r.state)
    _run_needs(r, run_one, echo)
    r.lost = {h: why for hosts_ in r.state.hosts_failed.values() for h, why in hosts_.items()}
    judged = _budget_rounds(r, run_one, echo) if r.reading is not None and r.local else None
    verdicts = _verdicts(r, judged)
    _report(r, verdicts, echo)
    return r.out


def _start(opts: Options) -> tuple[Path, list[claims_mod.Paper], ReproductionState]:
    """The reproduction's folder, its papers and what an earlier attempt saved, the options checked first."""
    plan.check_level(opts.level)
    if opts.results_dir.exists() and not opts.results_dir.is_dir():
        raise PirexError(f"--results-dir {opts.results_dir} is not a directory")
    papers = _papers(opts.papers)
    out = _out_dir(opts, papers)
    # what an earlier attempt saved; a fresh reproduction's "earlier state" is every default
    state = ReproductionState.read(out) if opts.resume else ReproductionState()
    if opts.resume:
        _resume_options(opts, out, state)
        papers = _papers(opts.papers)
    _check_experiments(opts.experiments)
    return out, papers, state


def _resume_options(opts: Options, out: Path, state: ReproductionState) -> None:
    """A resumed reproduction goes on as its first attempt was asked: its options are taken from its state."""
    if opts.budget and not state.budget:
        raise PirexError(
            f"--resume {out} --budget: that reproduction ran without --budget, and its verdicts were read at the fixed "
            "level on the repetitions it has; a budget's looks on the same repetitions would test them twice. Start a "
            "new reproduction with --budget (it reuses no bundle a budget extended)"
        )
    if state.level is None:
        raise PirexError(f"--resume {out}: its {STATE} names no level: start a new reproduction")
    if state.confidence is not None:  # the level the first attempt judged at
        opts.confidence = state.confidence
    opts.level, opts.papers, opts.sets = state.level, state.papers, state.sets
    opts.aa = state.aa if state.aa is not None else opts.aa
    opts.experiments = state.experiments
    opts.inventory = state.inventory
    opts.bundles = list(state.given)
    opts.storages = list(state.storages)
    opts.design = state.design
    if state.calibrations and not opts.calibrations:  # as the first attempt judged; one given now wins
        opts.calibrations = list(state.calibrations)


def _planned(opts: Options) -> _Reproduction:
    """The plan: the needs of the claims this machine (these devices, storages) can judge, each with its bundles."""
    out, papers, previous = _start(opts)
    given = sources.given_bundles(opts.bundles)  # --bundles: what there is to judge, expanded
    # nothing is judged from a bundle that fails verification: left out, named in the report (sources.intact)
    verifier, left_out = bundle_mod.Verifier(), {}
    given = sources.intact(given, verifier, left_out)
    hosts = sources.check(opts, given)
    claims = [c for p in papers for c in p.claims]
    commit = git_version()[1]
    here = machine.record(opts.results_dir if opts.results_dir.is_dir() else Path("."), docker=False)
    requirements = {k: r for p in papers for k, r in p.needs.items()}
    missing = {} if opts.inventory or given else plan.missing(here, requirements)  # elsewhere: per device, below
    if opts.aa is None:
        opts.aa = opts.level == "full"
    devices = len(hosts) if opts.inventory else len(spans.groups(given, "devices")) if given else 1
    # without the claims this machine (these devices, storages) cannot judge
    storages = sources.storages_of(given) if given else opts.storages
    needs = plan.needs(claims, opts.level, opts.sets, opts.aa, missing, devices, storages, opts.design)
    if opts.experiments:  # make run EXPERIMENTS=...: the other experiments' claims are not run here
        needs = [n for n in needs if n.experiment in opts.experiments]
    for e in opts.experiments:  # one no claim needs still runs (its tables are in the report): make run takes it
        if not any(n.experiment == e for n in needs):
            needs.append(plan.Need(e, None, plan.LEVELS[opts.level], list(experiment.load(e).default_variants)))
    score = previous.score or plan.calibration_score()  # a resumed reproduction keeps its estimates
    r = _Reproduction(
        opts=opts,
        out=out,
        papers=papers,
        claims=claims,
        needs=needs,
        requirements=requirements,
        missing=missing,
        here=here,
        commit=commit,
        given=given,
        verifier=verifier,
        left_out=left_out,
        score=score,
        previous=previous,
        calibrations=calibrate.Calibrations(opts.results_dir, opts.calibrations),
    )
    _find_bundles(r)
    if r.local:
        plan.add_first_exports(needs)  # a fresh machine's first runs export the images for native
    # the needs that bundles of another commit answer (--reuse-only, or a resumed reproduction's earlier runs)
    r.elsewhere = {
        n.key: (c or "unknown")[:12]
        for n in needs
        if n.bundles and not given and (c := plan.bundle_commit(n.bundles[0])) != commit
    }
    return r


def _find_bundles(r: _Reproduction) -> None:
    """Each need's bundles that answer it already (given, run by an earlier attempt, or reused), and its estimate."""
    opts, given, verifier, left_out, here = r.opts, r.given, r.verifier, r.left_out, r.here
    done = r.previous.bundles  # a resumed reproduction keeps what it ran, even from an earlier commit
    for n in r.needs:
        if given:  # --bundles: the given ones that answer the need, whatever machine or commit ran them
            n.bundles = sources.answering(n, given)
            continue
        n.bundles = sources.intact([p for p in done.get(n.key, []) if plan.is_complete(p)], verifier, left_out)
        if r.previous.budget and not opts.inventory:  # an extension a kill finished but did not save
            found = budgeted.orphans(n, opts.results_dir, here, r.previous.running, n.bundles)
            n.bundles += sources.intact([b for b, _ in found], verifier, left_out)
        if opts.inventory:  # a fleet's runs are this reproduction's own: resumed from its state, never reused
            plan.estimate(n, experiment.load(n.experiment), r.score, None)
            continue
        n.bundles = n.bundles or sources.intact(
            plan.matching_bundles(
                n,
                opts.results_dir,
                r.commit,
                here,
                any_repetitions=opts.reuse_only,
                images=opts.artifact_images,
                not_runs=opts.not_reused,
                superseded=r.superseded,
            ),
            verifier,
            left_out,
        )
        if not n.bundles and opts.reuse_only:  # judging what there is: another commit's bundle, said so
            n.bundles = sources.intact(
                plan.of_newest_commit(plan.matching_bundles(n, opts.results_dir, None, here, any_repetitions=True)),
                verifier,
                left_out,
            )
        plan.estimate(n, experiment.load(n.experiment), r.score, plan.measured_here(n, opts.results_dir, here))


def _new_state(r: _Reproduction) -> ReproductionState:
    """This attempt's state: what was asked, and what earlier attempts ran, took and left unfinished."""
    opts, state, needs = r.opts, r.previous, r.needs
    attempts, partial, extended = _earlier_attempts(state, needs, opts.results_dir, r.here)
    return ReproductionState(
        papers=[str(p.path) if p.path.parent.parent != PAPERS else p.id for p in r.papers],
        level=opts.level,
        sets=opts.sets,
        aa=opts.aa,
        experiments=opts.experiments,
        inventory=opts.inventory,
        given=list(opts.bundles),
        storages=list(opts.storages),
        calibrations=list(opts.calibrations),
        design=opts.design,
        confidence=opts.confidence,
        artifact=opts.artifact,  # a rerun of an artifact (artifact/rerun.py)
        # the images a rerun of an artifact ran ({}: the artifact held none): its --resume must import the same
        artifact_images=(opts.artifact_images or {}) if opts.artifact else None,
        fleets=state.fleets,  # need -> its fleet run (--inventory): resumed, never started again
        hosts_failed=state.hosts_failed,
        commit=r.commit,
        failed={},
        score=r.score,
        # a resumed reproduction keeps the first plan's estimates of the runs an earlier attempt finished
        estimates={**{n.key: n.seconds for n in needs if not n.bundles}, **state.estimates},
        bundles={n.key: list(n.bundles) for n in needs if n.bundles},
        ran=state.ran,
        attempts=[*attempts, {"started": round(time(), 1), "ended": round(time(), 1)}],
        partial=partial,  # seconds a run spent in attempts killed before it finished
        extended=extended,  # seconds each need's extensions took, in every attempt
        running=None,  # the run under way, and when it started: what a killed attempt leaves behind
    )


def _start_budget(r: _Reproduction, echo) -> None:
    """--budget on this machine: its entry and design registered before any data; else the earlier budget kept."""
    opts, state, previous = r.opts, r.state, r.previous
    design = budgeted.load(previous)  # a budgeted reproduction's design: its looks are read again
    if opts.budget and r.local:  # runs of this machine: the pilot, then rounds
        r.entry = budgeted.start(state, opts.budget, previous.budget)
        design = design or Design(alpha=alpha_of(opts.confidence))
        budgeted.register(design, r.needs, r.claims)
        budgeted.save(r.entry, design)
        todo = [n for n in r.needs if not n.bundles and n.seconds]
        pilot_s = sum(n.seconds for n in todo)
        pilot = (
            f"the pilot first (the runs above: about {pilot_s / 60:.1f} min by the plan's estimates)"
            if todo
            else "the pilot's bundles as found"
        )
        echo(
            f"budget: {pilot}, then {opts.budget / 60:.1f} min of rounds that extend the runs whose claims are still "
            "undecided (a group-sequential design: docs/statistics.md)"
        )
    else:
        if previous.budget:
            state.budget = previous.budget
        if opts.budget and (r.given or opts.reuse_only):
            echo("budget: nothing runs here (--bundles or --reuse-only): --budget is not used")
    budgeted.count_killed(r.previous, r.state)  # the run an earlier attempt was killed in
    r.reading = (
        budgeted.Reading(design, opts.confidence, opts.precision, calibrations=r.calibrations) if design else None
    )
    r.left = opts.budget  # the rounds' (the pilot runs before it); with --inventory a cap on the runs in all


def _run_needs(r: _Reproduction, run_one: Callable[[plan.Need, Options], Path], echo) -> None:
    """Run each need no bundle answers yet (on this machine or the fleet), the state saved before and after each."""
    opts, state, entry = r.opts, r.state, r.entry
    failed = state.failed  # filled in place, saved with the state
    for n in r.needs:
        if n.bundles or opts.reuse_only or r.given:
            continue
        # under a budget the pilot runs before it (the budget is the rounds'): a run longer than the whole budget
        # does not start, unless --whole-pilot; without a budget of this machine (--inventory) the cap is cumulative
        if r.left is not None and not (entry is not None and opts.whole_pilot) and (why := over_budget(n, r.left)):
            failed[n.key] = why
            echo(f"reproduce: {n.key} not run: {why}")
            continue
        started = monotonic()
        state.running = Running(n.key, round(time(), 1))
        _save(r.out, state)
        try:
            n.bundles = sources.on_fleet(n, opts, state, echo) if opts.inventory else [run_one(n, opts)]
            # fetched from the fleet's hosts: digests too; written by this very command (run_one): sizes only
            n.bundles = sources.intact(n.bundles, r.verifier, r.left_out, digests=bool(opts.inventory))
            state.bundles[n.key] = list(n.bundles)
        except PirexError as e:
            failed[n.key] = str(e).splitlines()[0]
            echo(f"reproduce: {n.key} failed: {failed[n.key]}")
        took = monotonic() - started  # a run stopped (Ctrl-C, SIGKILL): the resume counts it
        if entry is not None:
            budgeted.count(entry, took, round_=False)
        elif r.left is not None:
            r.left -= took
        state.running = None
        if n.bundles:
            state.ran[n.key] = round(took + state.partial.pop(n.key, 0.0), 1)
        _save(r.out, state)


def _budget_rounds(r: _Reproduction, run_one: Callable[[plan.Need, Options], Path], echo) -> list[Verdict] | None:
    """A budgeted reproduction's rounds on this machine; the last round's verdicts, when nothing ran after them."""
    extend = functools.partial(_extend, r, run_one)
    _finish_extensions(r, extend, echo)
    if r.entry is None or r.left is None:
        return None
    r.left, judged = budgeted.spend(
        r.left,
        r.needs,
        r.reading,
        lambda: _judge(r),
        extend,
        r.entry,
        lambda: _save(r.out, r.state),
        echo,
    )
    return judged


def _finish_extensions(r: _Reproduction, extend: Callable[[plan.Need, int, int], None], echo) -> None:
    """A killed attempt's unfinished extensions are finished first (their containers, mounts reaped)."""
    for n in r.needs:
        found = budgeted.orphans(n, r.opts.results_dir, r.here, r.previous.running, n.bundles, UNFINISHED)
        for b, before in found:
            started = monotonic()
            try:
                extend(n, int(bundle_mod.Bundle.open(b).param("repetitions")), before)  # the runner resumes it
            except PirexError as e:
                echo(f"reproduce: finishing {b.name} failed: {str(e).splitlines()[0]}")
            if r.entry is not None and r.left is not None:
                took = monotonic() - started
                r.left -= took
                budgeted.count(r.entry, took, round_=True)


def _extend(
    r: _Reproduction, run_one: Callable[[plan.Need, Options], Path], n: plan.Need, extra: int, before: int
) -> None:
    """Run `extra` more repetitions of a need after its first `before`: a budget's round, its time kept apart."""
    state = r.state
    name = f"{r.out.name}@{before}"  # the extension's own name (run.json "extends"): found again by it alone
    ext = dataclasses.replace(
        n, overrides={**n.overrides, "repetitions": extra}, bundles=[], continues=before, extends=name
    )
    state.running = Running(n.key, round(time(), 1), name)
    _save(r.out, state)
    started = monotonic()

    def took() -> None:
        state.running = None
        if state.extended is None:  # apart from "ran": the plan's estimates are the pilot's
            state.extended = {}
        state.extended[n.key] = round(state.extended.get(n.key, 0.0) + monotonic() - started, 1)

    try:
        got = sources.intact([run_one(ext, r.opts)], r.verifier, r.left_out, digests=False)
    except PirexError:
        took()
        raise
    # interrupted otherwise (Ctrl-C): "running" stays, so that the resume finds what the run left (orphans)
    took()
    n.bundles = [*n.bundles, *got]
    state.bundles[n.key] = list(n.bundles)
    _save(r.out, state)


def _judge(r: _Reproduction) -> list[Verdict]:
    """Every claim's verdict on the bundles the needs have now."""
    return judge_all(
        r.claims, r.needs, r.missing, r.state.failed, r.opts, r.requirements, r.lost, r.reading, r.calibrations
    )


def _verdicts(r: _Reproduction, judged: list[Verdict] | None) -> list[Verdict]:
    """The verdicts (the last round's, or judged now); a budgeted reproduction's explained, its design saved."""
    verdicts = judged or _judge(r)
    if r.reading is not None:
        verdicts = budgeted.explain(verdicts, r.needs, r.reading, r.left or 0.0, f"pirex reproduce --resume {r.out}")
        if r.state.budget is None:
            r.state.budget = Budget()
        budgeted.save(r.state.budget, r.reading.design)
    return verdicts


def _notes(r: _Reproduction, verdicts: list[Verdict]) -> list[str]:
    """The report's notes: the level's details, how far to trust the verdicts, and where the bundles came from."""
    opts = r.opts
    notes = [
        f"{e} with {', '.join(f'{k}={v}' for k, v in o.items())}" for e, o in opts.sets.items()
    ]  # the level's details
    notes.append(multiplicity_note(verdicts, opts.confidence, opts.precision))
    if r.calibrations is not None:
        notes.append(r.calibrations.note())
    if r.reading is not None:
        notes.append(budgeted.note(r.state.budget, r.reading.design, verdicts))
    if opts.design == plan.DUET:
        notes.append(plan.design_note(r.needs))
    if opts.experiments:
        notes.append(f"Only the claims on {', '.join(opts.experiments)} (--experiment)")
    notes += sources.notes(opts, r.given, r.state)
    if r.superseded:
        notes.append(
            "Bundles left out, of another build of this commit: "
            + "; ".join(f"{Path(p).name} ({why})" for p, why in r.superseded.items())
        )
    if r.elsewhere:
        notes.append(
            "Bundles of another commit (this checkout's claims and analysis, that commit's measurements): "
            + ", ".join(f"{key} at {c}" for key, c in r.elsewhere.items())
        )
    return notes


def _report(r: _Reproduction, verdicts: list[Verdict], echo) -> None:
    """Write the report, durations.yaml and the state with its verdicts; print the summary."""
    opts, state, out, needs = r.opts, r.state, r.out, r.needs
    found = report.sections(needs, r.claims, out)  # the tables behind the verdicts (pirex table prints them), figures
    notes = _notes(r, verdicts)
    durations = plan.measured_durations(needs, opts.results_dir, r.here, r.score)
    if durations:  # what an experiment.yaml's durations: block can take from this machine
        (out / "durations.yaml").write_text(yaml.safe_dump(durations, sort_keys=False))
    timing = [(k, state.estimates.get(k), secs) for k, secs in state.ran.items()]
    _save(out, state)  # the time until now: this attempt's end so far
    facts = report.Facts(
        "Reproduction of " + ", ".join(p.id for p in r.papers),
        report.level_text(opts.level),
        notes,
        report.machine_of(needs, r.here),
        r.commit or "unknown",
        report.images_of(needs),
        state.time_taken(),
        len(state.attempts),
        opts.precision,
        {p.id: p.title for p in r.papers},
        [g.name for g in spans.groups([b for n in needs for b in n.bundles], "devices")],
        left_out=r.left_out,
        deviations=claims_mod.deviations(r.papers),
    )
    md, _ = report.write(out, facts, verdicts, needs, plan.concerning(r.missing, r.claims), timing, found)
    state.verdicts = {verdict_key(v): v.verdict for v in verdicts}
    state.reasons = {verdict_key(v): v.reason for v in verdicts}  # what a rerun compares with (artifact/rerun.py)
    state.left_out = r.left_out  # the bundles that failed verification: `pirex reproduce` exits 1 (cli/reproduce.py)
    _save(out, state)
    echo("\n" + report.summary(verdicts, md, took=state.time_taken(), attempts=len(state.attempts)))
    if r.reading is not None and r.local and state.budget:
        echo(budgeted.spent_text(state.budget))
        last = max(1, math.ceil(state.budget.given[-1] / 60)) if state.budget.given else 10
        if more := budgeted.continuation(verdicts, r.reading, r.needs, last):
            echo(
                f"More time decides more: pirex reproduce --resume {out} --budget {more[0]}m spends {more[0]} more "
                f"minutes on the runs of {more[1]} claim(s) still undecided here, the error rate kept (the design's "
                "reserve)"
            )


def multiplicity_note(verdicts: list[Verdict], confidence: float, precision_: float | None = None) -> str:
    """How far to trust the verdicts as a set: the level of each, and how many false "differs" chance alone gives."""
    alpha = alpha_of(confidence)
    judged = sum(1 for v in verdicts if v.verdict in (HOLDS, DIFFERS) or (v.ours and v.ours.interval.has_interval))
    level, chance = 100 * verdict_level(confidence), expected_false_differs(judged, confidence)
    text = (
        f"Each verdict is a test at alpha = {100 * alpha:g} %: one side of an edge or inside a band (two one-sided "
        f"tests) read off the {level:g} % interval, either of two sides (wholly outside a band) off the "
        f"{100 * (1 - alpha):g} % one. {judged} verdict{'s' * (judged != 1)} judged: were no effect real and every "
        f'estimate at the edge of its rule, chance alone would give about {chance:.1f} false "differs" among them '
        '(and as many false "holds"); the "differs" of one claim across its devices, sizes, pairs and metrics are '
        "Holm-adjusted"
    )
    return text + (
        f"; precision asked: ±{100 * precision_:g} % (it plans repetitions, never overrides a verdict)"
        if precision_
        else ""
    )


def verdict_key(v: Verdict) -> str:
    """paper:claim, and @device for a claim on one machine judged on each of several devices."""
    return f"{v.claim.paper}:{v.claim.id}" + (f"@{v.device}" if v.device else "")


def over_budget(need: plan.Need, left: float) -> str | None:
    """Why a run does not fit in what is left of --budget, or None. A run of unknown duration does
    not fit: a budget is a promise, and its length is only known once it has run."""
    if need.seconds is None:
        return (
            "time unknown (no measured duration) and --budget is set: run it once without --budget (make run BUDGET=)"
        )
    if need.seconds > left:
        return f"over the budget (about {need.seconds / 60:.0f} min, {max(left, 0) / 60:.0f} min of it left)"
    return None


def run_with_runner(need: plan.Need, opts: Options) -> Path:
    """Run a need with the runner: a bundle of it that a killed reproduction left is finished,
    else a new one (kick-the-tires: at least plan.MIN_REPETITIONS repetitions)."""
    from pirex.runner import run as runner
    from pirex.runner.runplan import Continuation

    here = machine.record(opts.results_dir, docker=False)
    # a bundle a killed reproduction left is finished, whatever commit started it (its manifest says which)
    left = plan.matching_bundles(
        need, opts.results_dir, None, here, statuses=UNFINISHED, extends=need.extends, images=opts.artifact_images
    )
    if left:
        log.info("resuming %s", left[-1])
        return runner.resume(left[-1])
    overrides = {"repetitions": plan.repetitions(experiment.load(need.experiment), need.profile), **need.overrides}
    variants = None if need.view else ",".join(need.variants)
    return runner.run(
        runner.Options(
            need.experiment,
            need.profile,
            variants,
            results_dir=opts.results_dir,
            tag=opts.tag,
            overrides=overrides,
            matrix=need.view,
            cases=tuple(need.cases) or None,
            work_dir=need.storage,
            design=need.design,
        ),
        Continuation(need.extends, need.continues) if need.extends else None,
    )


def _check_experiments(names: list[str]) -> None:
    unknown = [e for e in names if e not in experiment.available()]
    if unknown:
        raise PirexError(
            f"--experiment {', '.join(unknown)}: no such experiment (experiments: {', '.join(experiment.available())})"
        )


def _earlier_attempts(
    state: ReproductionState, needs: list[plan.Need], results_dir: Path, here: dict
) -> tuple[list, dict, dict | None]:
    """A resumed reproduction's earlier attempts and the seconds of the runs they left unfinished (taken_over): a
    killed attempt saved its state last when its run started, which lasted until its bundle's last step at least."""
    running = state.running
    need = next((n for n in needs if running and n.key == running.key), None)
    return state.taken_over(_last_step_end(need, results_dir, here, running.extends) if need else None)


def _last_step_end(need: plan.Need, results_dir: Path, here: dict, extends: str | None = None) -> float | None:
    """When the newest step of the need's unfinished bundles (or its extension's) ended (epoch seconds), or None."""
    left = plan.matching_bundles(need, results_dir, None, here, statuses=UNFINISHED, extends=extends)
    ends = [from_iso(s.ended).timestamp() for b in left for s in bundle_mod.Bundle.open(b).steps() if s.ended]
    return max(ends, default=None)


def time_taken(state: ReproductionState) -> float | None:
    """The reproduction's time: every attempt's, added up (None for a state from before attempts were kept)."""
    return state.time_taken()


def _save(out: Path, state: ReproductionState) -> None:
    if state.attempts:  # this attempt lasts at least until now
        state.attempts[-1]["ended"] = round(time(), 1)
    state.write(out)


def judge_all(
    claims: list[claims_mod.Claim],
    needs: list[plan.Need],
    missing: dict[str, str],
    failed: dict[str, str],
    opts: Options,
    requirements: dict[str, claims_mod.Requirement] | None = None,
    lost: dict[str, str] | None = None,
    reading: budgeted.Reading | None = None,
    calibrations: calibrate.Calibrations | None = None,
) -> list[Verdict]:
    """A verdict per claim; where the bundles are of several devices (--inventory, --bundles), a claim on one
    machine gets one per device (judged on that device's bundles, with that device's capabilities), and a claim
    across devices or storages is judged over all of them (spans.py). `lost`: the devices of --inventory that
    failed or were unreachable (inventory name -> why): a column of their own says so. `reading`: a budgeted
    reproduction's, which reads each claim on this machine at its looks (budgeted.py)."""
    by_claim: dict[str, list[plan.Need]] = {}
    for n in needs:
        for cid in n.claims:
            by_claim.setdefault(cid, []).append(n)
    readers: dict[str, spans.Values] = {}  # per need: its run values, each set of bundles read once
    grouped: dict[tuple, list[spans.Group]] = {}  # (bundles, devices|storages): each bundle's record read once

    def reader(n: plan.Need) -> spans.Values:
        if n.key not in readers:
            mod = modules.module(experiment.load(n.experiment))
            readers[n.key] = spans.cached(lambda bs, mod=mod, view=n.view: mod.run_values(list(bs), view))
        return readers[n.key]

    # per group (kept in `grouped`, so shared by the claims of the same bundles): what its record lacks, read once
    lacking: dict[int, plan.Missing] = {}

    def lacks_of(g: spans.Group) -> plan.Missing:
        if id(g) not in lacking:
            lacking[id(g)] = plan.missing(g.record, requirements or {}, here=False)
        return lacking[id(g)]

    def groups(bundles: list[Path], kind: str) -> list[spans.Group]:
        key = (tuple(map(str, bundles)), kind)
        if key not in grouped:
            grouped[key] = spans.groups(bundles, kind)
        return grouped[key]

    out = []
    for c in claims:
        # a claim across devices counts the devices (storages) its bundles are of when it is judged, not here
        why = plan.blocked(c, missing, devices=None, storages=None) if c.across else plan.blocked(c, missing)
        if why or not c.judged:
            out.append(Verdict(c, NOT_RUN, why or "this claim is not judged by a measurement here"))
            continue
        mine = by_claim.get(c.id)
        if not mine and c.across and c.span > 1:  # not planned: too few devices or storages
            have = "storage devices" if c.across == "storages" else "devices"
            out.append(Verdict(c, NOT_RUN, plan.blocked(c, {}) or f"needs {c.span} {have}"))
            continue
        if not mine:  # --experiment left its experiment out
            out.append(Verdict(c, NOT_RUN, f"{c.experiment} was not among the experiments asked (--experiment)"))
            continue
        bundles = [b for n in mine for b in n.bundles]
        if not bundles:
            n = mine[0]
            out.append(Verdict(c, NOT_RUN, failed.get(n.key) or f"no bundle of {n.key}: run without --reuse-only"))
            continue
        read = reader(mine[0])
        indicative = opts.level == "kick-the-tires"
        if c.across:
            found = groups(bundles, c.across)
            out.append(spans.judge_across(c, found, read, opts.confidence, opts.precision, indicative))
            continue
        found = groups(bundles, "devices")
        elsewhere = bool(opts.inventory or opts.bundles)  # other machines: each with its own capabilities
        per_device = []
        for g in found:
            lacks = plan.blocked(c, lacks_of(g)) if elsewhere else None
            if lacks:
                v = Verdict(c, NOT_RUN, lacks)
            elif reading is not None:
                v = reading(c, mine, read(g.bundles), indicative)
            else:
                values = read(g.bundles)
                calibration = calibrations.of(c.experiment, values) if calibrations else None
                v = on_values(c, values, opts.confidence, opts.precision, indicative, calibration=calibration)
            per_device.append(dataclasses.replace(v, device=g.name) if len(found) > 1 else v)
        out += holm(per_device, opts.confidence)  # one claim on several devices: "differs" Holm-adjusted
        for host, why in (lost or {}).items():
            out.append(Verdict(c, NOT_RUN, f"the device failed or was unreachable: {why}", device=f"{host} (failed)"))
    return out


def _plan_text(
    papers,
    claims,
    needs,
    missing,
    opts: Options,
    elsewhere: dict[str, str] | None = None,
    superseded: dict[str, str] | None = None,
) -> str:
    lines = [f"reproduce {', '.join(p.id for p in papers)} at {opts.level}: {len(claims)} claims"]
    total = 0.0
    for n in needs:
        exp = experiment.load(n.experiment)
        if n.bundles:
            c = (elsewhere or {}).get(n.key)
            t = f"done: {len(n.bundles)} bundle(s) of " + (
                f"commit {c}, this machine" if c else "this commit and machine"
            )
        elif n.seconds is not None:
            t = f"about {n.seconds / 60:.1f} min ({n.estimate_from})"
            total += n.seconds
        else:
            t = "time unknown (no measured duration)"
        runs = f"cases {','.join(n.cases)}" if n.cases else f"variants {','.join(n.variants)}"
        mem, disk, k = exp.needs.get("memory_mb", 0), exp.needs.get("disk_mb", 0), len(n.claims)
        lines.append(
            f"  {n.key:<28} {runs}: {n.steps} steps, {t}; {mem} MB memory, {disk} MB disk; {k} claim{'s' * (k > 1)}"
        )
        lines.append(f"    setup: {plan.setup_text(n)}" + (f"; claims: {', '.join(n.claims)}" if n.claims else ""))
    blocked = {}
    for c in claims:
        if why := plan.blocked(c, missing):
            blocked.setdefault(why, []).append(f"{c.paper}:{c.id}")
    for why, ids in blocked.items():
        lines.append(f"  cannot here: {why}: {', '.join(ids)}")
    for path, why in (superseded or {}).items():
        lines.append(f"  left out: {path}: {why}")
    unknown = sum(1 for n in needs if not n.bundles and n.seconds is None)
    if opts.reuse_only:
        lines.append("  total to run: nothing (--reuse-only: judging the bundles there are)")
    else:
        lines.append(
            f"  total to run: about {total / 60:.1f} min"  # as the budget line says the pilot
            + (f" and {unknown} run{'s' * (unknown > 1)} of unknown duration" if unknown else "")
        )
    return "\n".join(lines)
