"""What a reproduction needs on this machine: the runs its claims ask for (experiment, view,
profile, variants), which of them bundles already answer, what this machine cannot do and
which claims that affects, and how long the rest takes here.

Time: seconds per step from bundles of this machine where there are any, else the experiment's
measured durations (experiment.yaml: durations, taken on a named reference machine with its
calibration score) scaled by this machine's score: a short fixed CPU workload, so that a Pi 3
sees Pi 3 times."""

from __future__ import annotations

import statistics
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pirex.core import capabilities, cpuset, experiment
from pirex.core.bundle import DUET, Bundle, RunInfo, Step, from_iso
from pirex.core.errors import PirexError
from pirex.core.experiment import AA_SUFFIX
from pirex.core.machine import MachineRecord, RecordLike
from pirex.core.paths import REPO
from pirex.reproduce.claims import Claim, Requirement
from pirex.runner import host

LEVELS = {"kick-the-tires": "quick", "full": "paper"}
INTERLEAVED = "interleaved"
DESIGNS = (INTERLEAVED, DUET)  # pirex reproduce --design: how a run compares its variants (runner/duet.py)
MIN_REPETITIONS = 5  # kick-the-tires runs the quick profiles with at least this many: an interval needs them
CALIBRATION_LOOPS = 1_000_000  # a round: a tenth of a second on a server, about half a second on a Pi 4
CALIBRATION_SECONDS = 3.0


@dataclass
class Need:
    """One run the claims need: an experiment (in a view) at a profile, with these variants."""

    experiment: str
    view: str | None
    profile: str
    variants: list[str]
    claims: list[str] = field(default_factory=list)
    overrides: dict = field(default_factory=dict)  # --set EXPERIMENT.NAME=VALUE of this experiment
    cases: list[str] = field(default_factory=list)  # a view's (matrix's) cases the claims compare
    bundles: list[Path] = field(default_factory=list)  # complete bundles that answer it
    seconds: float | None = None  # estimated on this machine
    estimate_from: str = ""
    steps: int = 0
    storage: Path | None = None  # --storage: the run's work directory on this mount (the claims across storages)
    design: str = INTERLEAVED  # --design duet: the two variants at once, each on half of the CPUs
    continues: int = 0  # --budget's extension of a run: the repetitions before it (a duet continues its alternation)
    extends: str | None = None  # an extension's name, "<reproduction>@<repetitions before>" (runner.Options.extends)

    @property
    def key(self) -> str:
        on = f" on {self.storage}" if self.storage else ""
        duet = f" duet {','.join(self.variants)}" if self.design == DUET else ""
        return f"{self.experiment}{f'[{self.view}]' if self.view else ''}@{self.profile}{on}{duet}"

    @property
    def at_once(self) -> int:
        """Steps that run at the same time: a duet's repetition is its two steps at once."""
        return 2 if self.design == DUET else 1


def calibration_score(
    loops: int = CALIBRATION_LOOPS, seconds: float = CALIBRATION_SECONDS, min_rounds: int = 3
) -> float:
    """Loops per second of a fixed single-threaded workload (integer arithmetic and branches): the
    best of short rounds for about `seconds` (at least min_rounds), the round least disturbed by
    whatever else ran. A machine's speed, not its noise: on one 2-vCPU VM single rounds read 7.8 to
    14.2 M loops/s, and the slow readings came in runs of seconds, so the rounds span a few."""
    best, rounds = 0.0, 0
    deadline = time.perf_counter() + seconds
    while rounds < min_rounds or time.perf_counter() < deadline:
        start = time.perf_counter()
        x = 0
        for i in range(loops):
            x = (x * 31 + i) & 0xFFFF
        best = max(best, loops / (time.perf_counter() - start))
        rounds += 1
    return best


class Missing(dict):
    """What a machine cannot do (need name -> the reason), and the facts a claim's counted needs are read against:
    its hardware threads (threads:N). A plain dict is a machine whose threads are not known."""

    threads: int | None = None
    storage: str | None = None  # the kind of storage its work directory is on (storage:KIND)


def missing(record: RecordLike, requirements: dict[str, Requirement], here: bool = True) -> Missing:
    """What this machine cannot do, by the names claims use in `needs`, with the reason: its capabilities as
    the machine record has them, what the papers declare beyond them (a bring-your-own tool, a kit), and the
    matrix cases that would change nothing here (vacuous_cases). here=False: the record is another machine's, so one
    without capabilities is not probed here."""
    rec = MachineRecord.of(record)
    caps = rec.capabilities
    if caps is None and here:  # a record taken before capabilities were recorded: probe them now, on this machine
        caps = capabilities.probe(Path(rec.work_dir or "."))
    caps = caps or {}
    out = Missing(capabilities.missing(caps))
    out.threads, out.storage = rec.cores, rec.storage_kind
    out |= kind_missing(rec)
    out |= vacuous_cases(rec, here)
    for name, r in requirements.items():
        if r.capability:
            there = r.capability not in out
        elif r.glob:
            there = any(REPO.glob(r.glob))
        else:  # nothing pirex can check or provide
            there = False
        if not there:
            out[name] = r.how
    return out


def kind_missing(record: RecordLike) -> dict[str, str]:
    """The kind of machine a record is not (claims.DEVICE_SIDES), as a need it lacks: a Pi's board or none."""
    if MachineRecord.of(record).pi_model:
        return {"server": "this machine is a Raspberry Pi; the claim is about the paper's server"}
    return {"pi": "this machine is not a Raspberry Pi; the claim is about the paper's Pi"}


def case_key(exp: str, view: str, case: str) -> str:
    """A matrix case's name among a machine's Missing: what the report lists and blocked() looks up."""
    return f"case {case} of {exp}[{view}]"


NOT_INFORMATIVE = "not informative here: the case equals its base"


def concerning(missing: dict[str, str], claims: Sequence[Claim]) -> dict[str, str]:
    """Of what this machine cannot do, what these claims need: a need they name, or a case of a matrix they
    compare (the report of a user's paper does not list the fluctuation matrix's cases of another paper)."""
    views = {f" of {c.experiment}[{c.view}]" for c in claims if c.view}
    named = {n for c in claims for n in c.needs}
    return {k: v for k, v in missing.items() if k in named or (k.startswith("case ") and k.endswith(tuple(views)))}


def vacuous_cases(record: RecordLike, here: bool = True) -> dict[str, str]:
    """The matrix cases whose own change is already in force on this machine, so that comparing one with its base
    is an A/A run that supports nothing (issue 51: two-cores pinned to CPUs 0-1 on a machine of two CPUs), with why.
    On this machine what the runner would note (runner.host.notes: CPUs, governor, swap); on another machine's
    record only the CPUs, from its core count."""
    cores = MachineRecord.of(record).cores
    out = {}
    for exp_id in experiment.available():
        exp = experiment.load(exp_id)
        for view, matrix in exp.matrices.items():
            for case in matrix.cases:
                resolved, base = matrix.resolved(case.name), host.base_of(matrix, case.name)
                if base is None:
                    continue
                if here:
                    notes = host.notes(resolved, base=base)
                    why = [line.split(": ", 1)[1] for line in notes.lines if line.startswith(host.SAME_AS_BASE)]
                elif resolved.cpus and resolved.cpus != base.cpus and cores:
                    every = cpuset.parse_cpus(resolved.cpus) == set(range(cores))
                    why = [f"CPUs {resolved.cpus} are every CPU that machine has"] if every else []
                else:
                    why = []
                if why:
                    out[case_key(exp_id, view, case.name)] = f"{NOT_INFORMATIVE} ({case.base}): {'; '.join(why)}"
    return out


def _vacuous(claim: Claim, missing: dict[str, str]) -> str | None:
    """Why the claim compares a case with its own base where the case changes nothing (vacuous_cases), or None."""
    if not claim.view or claim.numerator is None or claim.denominator is None:
        return None
    sides = (claim.numerator.variant, claim.denominator.variant)
    for case, other in (sides, sides[::-1]):
        # a key of vacuous_cases names a case of the matrix; its experiment is read only for a claim that has one
        if (why := missing.get(case_key(claim.experiment, claim.view, case))) is not None:
            if experiment.load(claim.experiment).matrices[claim.view].case(case).base == other:
                return why
    return None


def blocked(claim: Claim, missing: dict[str, str], devices: int | None = 1, storages: int | None = 1) -> str | None:
    """Why this machine (these devices: --inventory, --bundles; these storages: --storage) cannot judge the
    claim, or None. devices/storages None: not counted here (the bundles' groups are, when judged). A claim that
    compares a case with its base where the case changes nothing is not informative here, and costs nothing."""
    threads = getattr(missing, "threads", None)
    for n in claim.needs:
        kind, _, count = n.partition(":")
        if kind == "threads":
            if threads is not None and threads < int(count):
                return f"needs at least {count} hardware threads (the paper's machine); this machine has {threads}"
            continue
        if kind == "storage":
            have = getattr(missing, "storage", None)
            if have is not None and have != count:
                return f"needs the work directory on {count} storage (the paper's disk decided the size); here {have}"
            continue
        if count:
            have = devices if kind == "devices" else storages
            if have is not None and have < int(count):
                if kind == "devices":
                    return (
                        f"needs {count} devices; this machine is one (give them with --inventory, or every "
                        "device's bundles with --bundles)"
                    )
                return f"needs {count} storage devices (mounts): give each with --storage PATH"
        elif n in missing:
            return missing[n]
    return _vacuous(claim, missing)


def needs(
    claims: list[Claim],
    level: str,
    sets: dict[str, dict] | None = None,
    aa: bool = False,
    missing: dict[str, str] | None = None,
    devices: int = 1,
    storages: Sequence[Path] = (),
    design: str = INTERLEAVED,
) -> list[Need]:
    """The runs the claims need, one per experiment, view and profile (a claim's paper setup, Claim.setup, else the
    level's profile; claims of one setup share its runs) and storage (a claim across storages runs on each
    --storage): the variants (or a view's cases) they compare, with an A/A copy of each
    denominator when `aa`, and only the metrics they compare where the experiment can choose (its
    metrics_parameter), unless --set chose them. design duet: where the experiment suits it, one run per
    pair of variants a claim compares (its A/A pair too), each pair's two at once; a claim within one variant
    joins a pair that runs it; the rest (views, experiments that do not suit the duet) as interleaved."""
    if design not in DESIGNS:
        raise PirexError(f"--design {design!r}: expected one of {', '.join(DESIGNS)}")
    out: dict[tuple, Need] = {}
    metrics: dict[tuple, list[str]] = {}
    judged = [
        c
        for c in claims
        if c.experiment
        and c.judged
        and not (missing is not None and blocked(c, missing, devices, max(len(storages), 1)))
    ]  # a claim this machine cannot judge adds no run, case or metric
    for c in sorted(judged, key=lambda c: not _duet_pair(c, design)):  # a duet's pairs before the claims joining them
        over = dict((sets or {}).get(c.experiment, {}))
        profile = c.profile(level, LEVELS[level])
        for on in storages if c.across == "storages" else (None,):
            for key, variants in _runs_of(c, on, profile, aa, design, out):
                design_here = DUET if len(key) > 4 else INTERLEAVED  # a key with a pair is a duet's
                n = out.setdefault(
                    key, Need(c.experiment, c.view, profile, [], overrides=dict(over), storage=on, design=design_here)
                )
                n.variants += [v for v in variants if v not in n.variants]
                cases = (c.numerator.variant, c.denominator.variant) if c.view and c.numerator else ()
                n.cases += [case for case in cases if case not in n.cases]
                names = c.metrics or [m for side in (c.numerator, c.denominator) for m in side.metrics]
                metrics.setdefault(key, []).extend(b for b in map(_base_metric, names) if b not in (missing or {}))
                n.claims.append(c.id)
    for key, n in out.items():
        exp = experiment.load(n.experiment)
        param = exp.metrics_parameter
        if param and param not in n.overrides:
            choices = exp.declared[param].choices
            chosen = [m for m in choices if m in metrics[key]]  # in the declared order
            if chosen:
                n.overrides[param] = ",".join(chosen)
    return list(out.values())


def setup(need: Need) -> dict:
    """What a need's runs measure, as the plan prints it: the profile's parameters with a view's own on top and
    the need's --set (its repetitions, the metrics it chose and its service ports aside; a view's cases change
    some of them each, as experiment.yaml says)."""
    exp = experiment.load(need.experiment)
    skip = {"repetitions", exp.metrics_parameter, *(s.port for s in exp.services if s.port)}
    merged = exp.requested(need.profile, need.view, need.overrides)
    return {k: v for k, v in merged.items() if k not in skip and v not in ("", None)}


def setup_text(need: Need) -> str:
    """One line of a need's setup for the plan: e.g. calls=2000000 recursion_depth=10 jvm_options=-XX:+UseSerialGC."""
    return " ".join(f"{k}={v}" for k, v in setup(need).items())


def _duet_pair(c: Claim, design: str) -> tuple[str, str] | None:
    """The (denominator, numerator) variants a claim compares as a duet, or None where it runs interleaved: an
    experiment that does not suit the duet (experiment.yaml: duet), a view (its cases set the machine), or a
    claim within one variant."""
    if design != DUET or c.view or c.numerator is None or c.numerator.variant == c.denominator.variant:
        return None
    return (c.denominator.variant, c.numerator.variant) if _suits_duet(c.experiment) else None


def _suits_duet(experiment_id: str) -> bool:
    """The experiment runs as a duet: it does not declare otherwise, and a step is one command (no servers)."""
    exp = experiment.load(experiment_id)
    return exp.duet.fits and not exp.deployment


def design_note(needs: list[Need]) -> str:
    """--design duet, in the report: which runs were duets and which ran interleaved, and why."""
    duets = sorted({n.key.split(" duet ")[0] for n in needs if n.design == DUET})
    rest = []
    for n in needs:
        if n.design == DUET:
            continue
        exp = experiment.load(n.experiment)
        if not exp.duet.fits:
            why = exp.duet.why
        elif exp.deployment:
            why = "it deploys servers per step, which the duet does not start twice"
        elif n.view:
            why = "a view's cases set the machine (CPUs, clocks) themselves"
        elif not n.claims:
            why = "no claim compares its variants (--experiment: its tables only)"
        else:
            why = "its claims compare one variant with itself"
        rest.append(f"{n.key} ({why})")
    text = "Design: duet (each pair of variants at once, each on half of the CPUs, swapped every repetition) for "
    text += ", ".join(duets) or "no run"
    return text + (f"; interleaved: {'; '.join(rest)}" if rest else "")


def _runs_of(
    c: Claim, on: Path | None, profile: str, aa: bool, design: str, out: dict[tuple, Need]
) -> list[tuple[tuple, list]]:
    """The keys of the needs a claim adds to (experiment, view, storage, profile, and a duet's pair), with the
    variants it asks of each: a duet pair and its A/A pair; else its variants with an A/A copy of the denominator."""
    base = (c.experiment, c.view, on, profile)
    if pair := _duet_pair(c, design):  # keyed by the two variants in either order: docker/native is native/docker's run
        aa_pair = (pair[0], pair[0] + AA_SUFFIX)
        pairs = [pair, aa_pair] if aa else [pair]
        return [(next((k for k in out if k[:4] == base and set(k[4]) == set(p)), (*base, p)), list(p)) for p in pairs]
    if design == DUET and not c.view and _suits_duet(c.experiment):
        joined = next((k for k in out if k[:4] == base and len(k) > 4 and set(c.variants) <= set(k[4])), None)
        if joined:  # a claim within one variant: its values from a duet that runs it (on half of the CPUs)
            return [(joined, [])]
    wanted = list(c.variants)
    if aa and not c.view and c.numerator is not None and c.numerator.variant != c.denominator.variant:
        wanted.append(c.denominator.variant + AA_SUFFIX)  # the noise floor beside the ratio
    return [(base, wanted)]


def _base_metric(metric: str) -> str:
    """The measured quantity a claim's metric is made of: "kieker-text sd" of kieker-text, "x/{size}" of x."""
    return metric.split(" ")[0]


def _machine_key(record: RecordLike) -> tuple:
    rec = MachineRecord.of(record)
    return (rec.hostname, rec.cpu_model, rec.pi_model)


def _bundles(results_dir: Path, experiment_id: str) -> list[Bundle]:
    """The bundles of an experiment under results_dir, oldest first; a damaged one answers no need."""
    out = []
    for m in sorted((results_dir / experiment_id).glob("*/manifest.json")):
        try:
            out.append(Bundle.open(m.parent))
        except PirexError:
            continue
    return out


def _same_machine(b: Bundle, machine: RecordLike) -> bool:
    try:
        return _machine_key(b.machine_before()) == _machine_key(machine)
    except PirexError:  # no record to tell: not this machine's
        return False


def _run_info(b: Bundle) -> RunInfo | None:
    """run.json, or None where it is damaged (such a bundle answers no need)."""
    try:
        return b.run_info()
    except PirexError:
        return None


def parameters(need: Need, exp: experiment.Experiment) -> dict:
    """The parameters a run of the need has: its profile's, at least MIN_REPETITIONS, its --set; without
    the service ports (0 in the profile means a free port per run: the bundle records the one taken)."""
    ports = {s.port for s in exp.services if s.port}
    # a view's (a matrix's) own parameters too: what its runs record as requested (moobench's fluctuation: depth 10)
    wanted = {**exp.requested(need.profile, need.view), "repetitions": repetitions(exp, need.profile), **need.overrides}
    return {k: v for k, v in wanted.items() if k not in ports}


def matching_bundles(
    need: Need,
    results_dir: Path,
    commit: str | None,
    machine: RecordLike,
    statuses=("complete",),
    any_repetitions: bool = False,
    extends: str | None = None,
    images: dict[str, str] | None = None,
    not_runs: Collection[str] = (),
    superseded: dict[str, str] | None = None,
) -> list[Path]:
    """Bundles of the same commit, experiment, profile, parameters, view and machine with every variant needed
    (any_repetitions: also those with fewer repetitions than a run would make: to judge what there is). An extension
    (a budget's round, a precision second stage: run.json's "extends") is never a plain run's: its size was chosen
    from another run's data; it is found only by its own name (`extends`). images (a rerun of an artifact: image ->
    platform manifest digest): only bundles that ran these images and no other. not_runs: run ids never reused (a
    rerun of an artifact: the bundles its reproduction judged, which the rerun is compared with). superseded: gets the
    bundles of this commit left out for another build's (of_newest_build), each with why."""
    exp = experiment.load(need.experiment)
    wanted = parameters(need, exp)
    if any_repetitions:
        wanted.pop("repetitions")
    found = []
    for b in _bundles(results_dir, need.experiment):
        if b.status not in statuses or b.profile != need.profile or b.path.name in not_runs:
            continue
        if commit is not None and b.commit != commit:
            continue
        run = _run_info(b)
        if run is None or run.matrix != need.view or run.work_dir != need.storage or run.deployment:
            continue  # another view, another storage device's work directory, or a deployment's one run
        if run.extends != extends:
            continue
        if design_of(b) != need.design:
            continue  # a duet's steps ran on half of the CPUs, at once: they answer a duet, and only a duet
        asked = run.requested or b.parameters  # older bundles: the resolved parameters
        if not _same_parameters(asked, wanted, exp.metrics_parameter):
            continue
        if not set(need.cases if need.view else need.variants) <= set(b.variants):
            continue
        if not _same_machine(b, machine):
            continue
        if images is not None and not ran_only(b, images):
            continue  # a rerun of an artifact: a bundle of other images (this checkout's build) is not its rerun
        found.append(b)
    return [b.path for b in of_newest_build(found, superseded)]


def _build_of(b: Bundle) -> tuple:
    """The images a bundle ran, by digest: which build of the collection measured it."""
    return tuple(sorted((n, i.get("digest")) for n, i in (b.images or {}).items() if isinstance(i, dict)))


def of_newest_build(bundles: list[Bundle], superseded: dict[str, str] | None = None) -> list[Bundle]:
    """Of bundles of one commit that ran different images, those of the build that ran the newest: one build's
    measurements, never a mix of two. A commit with uncommitted changes ("-dirty") is the same name for different
    code: a deliberate x0.5 bug and its fix, both on 12bb975-dirty, were judged as one run (issue 54). superseded
    (path -> why) gets the others, for the plan and the report to name."""
    if len({_build_of(b) for b in bundles}) < 2:
        return bundles
    latest = max(bundles, key=lambda b: b.path.name)
    newest = _build_of(latest)
    for b in bundles:
        if superseded is not None and _build_of(b) != newest:
            other = ", ".join(f"{n} {d[7:19] if d else '?'}" for n, d in _build_of(b) if (n, d) not in newest)
            superseded[str(b.path)] = (
                f"another build of commit {b.commit} ({other}) than its newest bundle's, {latest.path.name}: one "
                "build's measurements, never a mix"
            )
    return [b for b in bundles if _build_of(b) == newest]


def ran_only(b: Bundle, images: dict[str, str]) -> bool:
    """Whether every image the bundle ran is one of images (name -> platform manifest digest), by digest."""
    ran = b.images or {}
    return bool(ran) and all(isinstance(i, dict) and images.get(n) == i.get("digest") for n, i in ran.items())


def design_of(b: Bundle) -> str:
    """A bundle's design as a need has it: duet, or interleaved for every design of one step at a time."""
    return DUET if b.design == DUET else INTERLEAVED


def bundle_commit(bundle: Path) -> str | None:
    """The pirex commit that ran a bundle (its manifest's tool record)."""
    return Bundle.open(bundle).commit


def of_newest_commit(bundles: list[Path]) -> list[Path]:
    """Of bundles that several commits ran, those of the commit that ran the newest (a run id begins with
    its start time): one commit's measurements, never a mix of two."""
    if not bundles:
        return []
    commit = bundle_commit(max(bundles, key=lambda b: b.name))
    return [b for b in bundles if bundle_commit(b) == commit]


def is_complete(bundle: Path) -> bool:
    """A bundle that finished (one that is gone, or damaged, answers nothing)."""
    try:
        return Bundle.open(bundle).status == "complete"
    except PirexError:
        return False


def _same_parameters(have: dict, wanted: dict, metrics_parameter: str = "") -> bool:
    """The bundle ran with the wanted parameters; more repetitions than wanted, or more metrics (a superset
    of the metrics parameter's items), are as good."""
    for k, v in wanted.items():
        got = have.get(k)
        if k == "repetitions" and isinstance(got, int) and got >= v:
            continue
        if k == metrics_parameter and isinstance(got, str) and set(v.split(",")) <= set(got.split(",")):
            continue
        if got != v:
            return False
    return True


@dataclass(frozen=True)
class Measured:
    """What this machine's bundles of an experiment and profile took: the median step, and the median
    seconds a run spent outside its steps (None without a complete, never-resumed bundle to tell), and the
    median megabytes a step's results take on disk (None likewise)."""

    step: float
    run: float | None
    disk: float | None = None


def measured_here(need: Need, results_dir: Path, machine: RecordLike) -> Measured | None:
    """Medians over the bundles of this experiment and profile on this machine (a step is its wall time
    in the manifest, servers started and stopped included; a run's own part is its wall time less its steps')."""
    steps, runs, disk = [], [], []
    for b in _bundles(results_dir, need.experiment):
        run = _run_info(b)
        if b.profile != need.profile or run is None or run.matrix != need.view or design_of(b) != need.design:
            continue  # a view's steps (a matrix's cases), a duet's (on half of the CPUs) are not the plain run's
        if not _same_machine(b, machine):
            continue
        done = b.steps()
        walls = [s for s in map(step_seconds, done) if s is not None]
        steps += walls
        whole = _wall(b.started, b.ended)
        if b.status == "complete" and not b.resumed and whole and len(walls) == len(done):
            # a duet's two steps of a repetition at once: the run's own part is its wall time less one step each
            runs.append(max(whole - sum(walls) / need.at_once, 0.0))  # resumed: its wall time holds the pause
            disk.append(_bytes(b.path) / 1e6 / len(done))
    if not steps:
        return None
    return Measured(
        statistics.median(steps), statistics.median(runs) if runs else None, statistics.median(disk) if disk else None
    )


def _bytes(folder: Path) -> int:
    """The bytes of a bundle's files on disk (its results: what a run leaves besides the shared native trees)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def step_seconds(step: Step) -> float | None:
    """A step's wall time: from the manifest's times, else its step.json (None when neither tells)."""
    try:
        return _wall(step.started, step.ended) or step.seconds
    except PirexError:
        return None


def _wall(started: str | None, ended: str | None) -> float | None:
    """Seconds from started to ended (ISO times), or None."""
    try:
        return (from_iso(ended) - from_iso(started)).total_seconds()
    except (TypeError, ValueError):
        return None


def estimate(need: Need, exp: experiment.Experiment, score: float, here: Measured | None) -> None:
    """Fill in the steps and the seconds the need takes on this machine: from this machine's own
    bundles when there are some, else the reference's measured step scaled by the calibration
    scores (only the part that scales: a JMH iteration lasts its second on any machine), plus
    the run's own part outside its steps (the image exported, a table loaded)."""
    reps = repetitions(exp, need.profile)
    columns = len(need.cases or exp.matrices[need.view].cases) if need.view else len(need.variants)
    need.steps = reps * columns
    ref = exp.durations
    measured = (need.view and ref.get(f"{need.view}@{need.profile}")) or ref.get(need.profile)
    ref_score = measured and (measured.get("score") or ref.get("score"))  # a profile may have its own machine
    scale = float(ref_score) / score if ref_score and score else None
    ref_run = measured.get("run", 0.0) * scale if measured and scale else 0.0  # the reference's run part, here
    in_turn = need.steps / need.at_once  # the steps' times that add up: a duet's two steps run at once
    if here is not None:
        run = here.run if here.run is not None else ref_run
        need.seconds, need.estimate_from = in_turn * here.step + run, "bundles of this machine"
        return
    if measured is None or scale is None:
        need.seconds, need.estimate_from = None, "no measured duration"
        return
    fixed = measured["fixed"]
    need.seconds = ref_run + in_turn * (fixed + (measured["step"] - fixed) * scale)
    machine = measured.get("machine") or ref.get("machine", "a reference machine")
    need.estimate_from = f"measured on {machine}, x{scale:.2f} for this one"


def add_first_exports(needs: Sequence[Need], exported=None) -> None:
    """A machine's first run of an experiment exports its image's filesystem for the native variant (runner/native.py;
    later runs reuse it): where this host has no export of that image, the first need estimated from the reference
    (not from bundles of this machine) that runs natively gets the experiment's `durations: first` seconds, once per
    image. `exported`: native.exported, or a stand-in."""
    if exported is None:
        from pirex.runner import native

        exported = native.exported
    seen: set[str] = set()
    for n in needs:
        if n.bundles or n.seconds is None or n.estimate_from == "bundles of this machine":
            continue
        exp = experiment.load(n.experiment)
        first = exp.durations.get("first")
        natively = n.view is not None or any(v.startswith("native") for v in n.variants)
        images = _native_images(exp)  # what the native variant runs in its chroot: the services' where there are
        if not first or not natively or images & seen or all(exported(i) for i in images):
            continue
        seen |= images
        n.seconds += first
        n.estimate_from += f"; and the first export of {', '.join(sorted(images))} for native, {first:g} s"


def _native_images(exp: experiment.Experiment) -> set[str]:
    """The images a native run exports: its deployment's servers' (jpa-rest: the service and PostgreSQL; its load
    driver stays in a container), else the experiment's own."""
    return {r.image for r in exp.deployment.roles.values()} if exp.deployment else {exp.image}


def measured_durations(needs: list[Need], results_dir: Path, machine: RecordLike, score: float) -> dict[str, dict]:
    """What this machine measured, per experiment: a `durations:` block for its experiment.yaml
    (the median step of each profile in this machine's bundles, the run's own part where a bundle
    tells it, and this machine's score)."""
    out: dict[str, dict] = {}
    for n in needs:
        if n.design == DUET:  # a duet's steps ran on half of the CPUs, two at once: not the durations of a step
            continue
        here = measured_here(n, results_dir, machine)
        if here is not None:
            d = out.setdefault(n.experiment, {"machine": machine_text(machine), "score": round(score)})
            key = f"{n.view}@{n.profile}" if n.view else n.profile  # a matrix's steps are its own
            step = round(here.step, 1)
            d[key] = step if here.run is None else {"step": step, "run": round(here.run, 1)}
            if here.disk is not None:  # megabytes of results per step: what ARTIFACT.md's disk column adds up
                d[key] = {**(d[key] if isinstance(d[key], dict) else {"step": step}), "disk": round(here.disk, 3)}
    return out


def machine_text(record: RecordLike) -> str:
    rec = MachineRecord.of(record)
    return f"{rec.pi_model or rec.cpu_model or 'unknown CPU'}, {rec.cores or '?'} cores, {rec.arch or '?'}"


def repetitions(exp: experiment.Experiment, profile: str) -> int:
    """The repetitions a reproduction runs: the profile's, at least MIN_REPETITIONS."""
    return max(int(exp.resolve(profile)["repetitions"]), MIN_REPETITIONS)


def check_level(level: str) -> str:
    if level not in LEVELS:
        raise PirexError(f"--level {level!r}: expected one of {', '.join(LEVELS)}")
    return LEVELS[level]
