"""A run planned as data before anything runs. The runner gathers what it needs to know about this machine and the
images once (HostFacts, run.host_facts); plan_run turns the experiment, the options and those facts into a RunPlan:
the variants or matrix cases that run and why others are skipped, every step with its parameters merged once
(profile, matrix, --set, soak, the matrix's fallback, tracing, PMU events, then the case's own), the images, the
CPUs, the tracing, the order and seed, and the run.json document. The manifest is written from the plan, and a step
runs with the parameters the manifest's plan gives it, also when resumed."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pirex.core import cpuset, experiment, pmu, preflight
from pirex.core import params as P
from pirex.core.errors import PirexError
from pirex.images import platforms as plat
from pirex.runner import duet, plan, tracing, variants

WORKDIR = "/work"  # where a step's working directory is, seen from the step
DESIGNS = ("interleaved", "duet")  # --design: one variant at a time (in --order), or a repetition's two at once


@dataclass
class Options:
    experiment: str
    profile: str = "quick"
    variants: str | None = None
    order: str = "interleaved"
    seed: int | None = None
    results_dir: Path = Path("results")
    tag: str = "dev"
    overrides: dict | None = None  # typed values (experiment.overrides parses --set), checked again by runplan
    force: bool = False
    platform: str | None = None  # another platform than this machine's runs under QEMU: function, not timing
    matrix: str | None = None  # run a matrix's cases (e.g. moobench fluctuation) instead of the variants
    trace: bool = False  # ftrace around each step, as the experiment declares (fork)
    soak: str | None = None  # a deployment's driver holds the load this long (Locust --run-time, e.g. 10m)
    allow_concurrent: bool = False  # run even while another measuring run holds this host (lock.py)
    cases: tuple[str, ...] | None = None  # with matrix: only these of its cases (all when None)
    cpus: str | None = None  # --cpus: every step of every variant pinned to these CPUs (taskset, --cpuset-cpus)
    work_dir: Path | None = None  # the workload's /work on this host directory (a storage device's mount), any variant
    design: str = "interleaved"  # --design: interleaved (one step at a time, in --order) or duet (two at once)


@dataclass(frozen=True)
class Continuation:
    """A later bundle of one plan (a budget's round, a precision second stage): what the one asking for it (reproduce,
    `pirex run --precision`) carries from run to run and passes in beside the Options, which say only how to run."""

    # run.json's "extends", "<plan>@<repetitions before>": never reused as a plain run (its size was chosen from the
    # data), found only by this very name
    extends: str
    duet_first: int = 0  # a duet's: the repetitions before it, whose alternation of the CPU halves it continues


@dataclass(frozen=True)
class CaseFacts:
    """What this machine makes of one matrix case (host.py)."""

    unavailable: str | None = None  # why the case cannot run here as the paper meant it
    notes: tuple[str, ...] = ()  # what the bundle should know about how it ran here
    same_as_base: bool = False  # it changes nothing on this machine (a note says why)


@dataclass(frozen=True)
class HostFacts:
    """Everything plan_run needs from this machine and the images, gathered once before planning."""

    platform: plat.Platform  # the platform the run targets (--platform, else this machine's)
    host_platform: plat.Platform  # this machine's
    native_unavailable: str | None  # why the native variant cannot run here
    online_cpus: frozenset[int]
    machine: dict  # the machine record taken before the run
    images: dict[str, dict] = field(default_factory=dict)  # image name -> reference, digest, platform...
    jvm: dict | None = None  # the JVM the images run
    fallback: bool = False  # the matrix's optional part is missing from the image: its fallback stands in
    cases: dict[str, CaseFacts] = field(default_factory=dict)  # per matrix case
    arch: str = ""  # this machine's architecture (uname -m): which of the tracing's functions exist
    trace_unavailable: str | None = None  # why the experiment's tracing cannot run here
    free_ports: dict[str, int] = field(default_factory=dict)  # a free port here per service port parameter
    siblings: dict[int, frozenset[int]] = field(default_factory=dict)  # CPU -> its core's hardware threads (duet)


@dataclass(frozen=True)
class Step:
    """One planned step as the bundle's manifest holds it (Bundle.remaining_steps gives its records): the variant
    or case, the repetition, the parameters it runs with (None: the run's) and, in a duet, its CPUs."""

    variant: str
    repetition: int
    params: dict | None = None
    cpus: str | None = None

    @classmethod
    def of(cls, doc: dict) -> Step:
        return cls(doc["variant"], doc["repetition"], doc.get("params"), doc.get("cpus"))

    @property
    def key(self) -> tuple[str, int]:
        return self.variant, self.repetition

    def __str__(self) -> str:
        return f"{self.variant} repetition {self.repetition}"


def groups(steps: list[Step], together: bool) -> list[list[Step]]:
    """What runs at once, in plan order: a duet's repetition (`together`: its steps side by side; a resumed bundle
    redoes whole repetitions), otherwise each step alone."""
    if not together:
        return [[s] for s in steps]
    by_repetition: dict[int, list[Step]] = {}
    for s in steps:
        by_repetition.setdefault(s.repetition, []).append(s)
    return list(by_repetition.values())


@dataclass(frozen=True)
class RunPlan:
    experiment: str
    profile: str
    platform: plat.Platform
    order: str
    seed: int
    variants: tuple[str, ...]  # the bundle's variants: what runs (variants, or a matrix's cases)
    skipped: dict[str, str]  # the variants or cases left out, with why
    parameters: dict  # the run's resolved parameters (a case's own are in its steps')
    requested: dict  # the parameters asked for, before what the runner resolves (free ports, PMU events)
    steps: tuple[dict, ...]  # {"variant", "repetition", "params"} in the order they run
    images: dict[str, dict]
    runners: dict[str, variants.Variant]  # how each of the bundle's variants runs
    matrix: dict | None  # run.json's matrix: name, runs_as, cases, notes, same_as_base, fallback
    cpus: str | None
    trace: dict | None
    soak: dict | None
    jvm: dict | None
    preflight: tuple[preflight.Finding, ...]
    duet: dict | None = None  # a duet's CPU halves (duet.Halves.describe), None for one step at a time
    extends: str | None = None  # Continuation.extends: a later bundle of one plan

    @property
    def design(self) -> str:
        """The manifest's design: duet, or the order of a run that does one step at a time."""
        return "duet" if self.duet else self.order

    @property
    def preflight_failed(self) -> bool:
        return preflight.worst(list(self.preflight)) == "fail"

    @property
    def run_info(self) -> dict:
        """run.json (Bundle.write_run_info adds its schema version)."""
        return {
            "order": self.order,
            "seed": self.seed,
            "skipped_variants": self.skipped,
            "matrix": self.matrix,
            "trace": self.trace,
            "cpus": self.cpus,
            "variants": {n: v.describe() for n, v in self.runners.items()},
            "jvm": self.jvm,
            "soak": self.soak,
            "preflight": [f.to_dict() for f in self.preflight],
            "requested": self.requested,
            "design": self.design,
            **({"duet": self.duet} if self.duet else {}),
            **({"extends": self.extends} if self.extends else {}),
        }


def check(exp: experiment.Experiment, opts: Options) -> None:
    """Every argument error that needs nothing from the machine, before anything is asked of it (Docker, images)."""
    if opts.order not in plan.ORDERS:
        raise PirexError(f"--order {opts.order!r}: expected one of {', '.join(plan.ORDERS)}")
    if opts.platform:
        plat.parse(opts.platform)
    matrix = matrix_of(exp, opts.matrix)
    _base_variants(exp, opts, matrix)
    requested(exp, opts)
    _soak(exp, opts.soak)
    trace_functions(exp, opts.trace, "")
    _cpu_list(opts.cpus, exp, matrix)
    _check_design(exp, opts, matrix)


def _check_design(exp: experiment.Experiment, opts: Options, matrix: experiment.Matrix | None) -> None:
    """--design duet, where it can mean what it says: the experiment does not declare that it does not fit, the
    run's steps are one command each (no matrix, deployment, soak or machine-wide tracing), and two variants."""
    if opts.design not in DESIGNS:
        raise PirexError(f"--design {opts.design!r}: expected one of {', '.join(DESIGNS)}")
    if opts.design != "duet":
        return
    if not exp.duet.fits:
        raise PirexError(f"{exp.id} does not suit --design duet: {exp.duet.why} (experiments/{exp.id}/experiment.yaml)")
    clash = {
        "--matrix": "its cases declare their own CPUs and machine settings",
        "--trace": "ftrace records the whole machine, and two steps at once would share one trace",
        "--soak": "a soak holds a deployment under load, which the duet does not start twice",
    }
    given = {"--matrix": matrix, "--trace": opts.trace, "--soak": opts.soak}
    for option, why in clash.items():
        if given[option]:
            raise PirexError(f"--design duet runs two steps at once: not with {option} ({why})")
    if exp.deployment:
        raise PirexError(f"--design duet runs a step's command twice at once; {exp.id} deploys servers per step")
    duet.steps(exp.pick_variants(opts.variants), 0, duet.Halves("0", "1"))  # two variants, or the reason


def plan_run(
    exp: experiment.Experiment,
    opts: Options,
    facts: HostFacts,
    checked: bool = False,
    later: Continuation | None = None,
) -> RunPlan:
    """The run, from the experiment, the options (run.Options, its seed drawn) and this machine's facts. The options
    are checked here unless the caller did (checked=True: the runner checks them before it looks for images)."""
    if opts.seed is None:
        raise ValueError("plan_run needs the seed: the runner draws one when --seed is not given")
    if not checked:
        check(exp, opts)
    matrix = matrix_of(exp, opts.matrix)
    cpus = _cpus(opts.cpus, exp, matrix, facts.online_cpus)
    runnable, skipped = _runnable(_base_variants(exp, opts, matrix), facts)
    split = _duet_halves(opts, cpus, facts, runnable, skipped)
    asked = requested(exp, opts)
    params = dict(asked)
    _service_ports(exp, params, facts.free_ports)
    soak = _soak(exp, opts.soak)
    if soak:
        params.update(exp.soak.set)
    matrix_info = None
    if matrix:
        matrix_info, runnable = _cases(matrix, runnable[0], opts.cases, facts, skipped)
        if matrix_info.get("fallback"):
            params.update({**matrix_info["fallback"]["parameters"], **_overrides(exp, opts)})
    trace = _trace(exp, opts.trace, facts)
    if trace and trace["enabled"]:  # the workload writes markers into tracefs's trace_marker
        params[exp.tracing.marker_parameter] = str(tracing.TRACEFS / "trace_marker")
    params = pmu.resolve(params, facts.machine, exp)  # a PMU parameter's auto -> this CPU's raw event codes (or none)
    runs_as = matrix_info["runs_as"] if matrix_info else None
    runners = variants_of(exp, runnable, matrix.name if matrix else None, runs_as, None if split else cpus)
    reps, first = int(params["repetitions"]), later.duet_first if later else 0
    order = duet.steps(runnable, reps, split, first) if split else plan.make(runnable, reps, opts.order, opts.seed)
    steps = tuple(
        {**s, "params": {**params, **runners[s["variant"]].parameters}}  # a case's own changes win
        for s in order
    )
    findings = preflight.check(
        facts.machine,
        min_free_disk_bytes=exp.needs.get("disk_mb", 0) << 20,
        min_free_mem_bytes=exp.needs.get("memory_mb", 0) << 20,
        io_heavy=bool(exp.needs.get("io_heavy")),
    )
    return RunPlan(
        experiment=exp.id,
        profile=opts.profile,
        platform=facts.platform,
        order=opts.order,
        seed=opts.seed,
        variants=runnable,
        skipped=skipped,
        parameters=params,
        requested=asked,
        steps=steps,
        images=facts.images,
        runners=runners,
        matrix=matrix_info,
        cpus=cpus,
        trace=trace,
        soak=soak,
        jvm=facts.jvm,
        preflight=tuple(findings),
        duet=split.describe(first) if split else None,
        extends=later.extends if later else None,
    )


def _duet_halves(
    opts: Options, cpus: str | None, facts: HostFacts, runnable: tuple[str, ...], skipped: dict[str, str]
) -> duet.Halves | None:
    """A duet's two CPU sets: halves of --cpus where given, else of every CPU this process may use; None for a run
    of one step at a time. Refused when a variant of the two cannot run here (the duet needs both)."""
    if opts.design != "duet":
        return None
    if len(runnable) != 2:
        left_out = "; ".join(f"{k}: {v}" for k, v in skipped.items())
        raise PirexError(
            f"--design duet runs two variants at once, and only {', '.join(runnable)} can run here ({left_out})"
        )
    if cpus:
        return duet.halves(cpuset.parse_cpus(cpus), facts.siblings, f"--cpus {cpus} names")
    return duet.halves(facts.online_cpus, facts.siblings)


def matrix_of(exp: experiment.Experiment, name: str | None) -> experiment.Matrix | None:
    if not name:
        return None
    if name not in exp.matrices:
        offered = ", ".join(exp.matrices) or "none"
        raise PirexError(f"{exp.id} has no matrix {name!r} (matrices: {offered})")
    return exp.matrices[name]


def _overrides(exp: experiment.Experiment, opts: Options) -> dict:
    return P.check_values(exp.declared, opts.overrides or {}, "--set")


def requested(exp: experiment.Experiment, opts: Options) -> dict:
    """The parameters asked for: the profile's, the matrix's at that profile, then --set (what reuse compares)."""
    matrix_of(exp, opts.matrix)  # an unknown matrix: the error that names the matrices
    return exp.requested(opts.profile, opts.matrix, opts.overrides)


def _base_variants(exp: experiment.Experiment, opts: Options, matrix: experiment.Matrix | None) -> tuple[str, ...]:
    """The variants asked for; with a matrix, the one its cases run on."""
    if matrix:
        base = opts.variants or matrix.runs_as
        if base not in ("native", "docker"):
            raise PirexError(f"--matrix {matrix.name} runs its cases on one variant: --variants native or docker")
        _chosen_cases(matrix, opts.cases)
        return (base,)
    if opts.cases:
        raise PirexError("--cases chooses among a matrix's cases: give --matrix too")
    return exp.pick_variants(opts.variants)


def _runnable(chosen: tuple[str, ...], facts: HostFacts) -> tuple[tuple[str, ...], dict[str, str]]:
    """The variants that can run here, and why the others cannot."""
    skipped = {}
    for name in (v for v in chosen if experiment.aa_base(v) == "native"):  # native and its A/A copy
        if facts.platform != facts.host_platform:
            skipped[name] = f"native runs this machine's platform only ({facts.host_platform}), not {facts.platform}"
        elif facts.native_unavailable:
            skipped[name] = facts.native_unavailable
    runnable = tuple(v for v in chosen if v not in skipped)
    if not runnable:
        raise PirexError("no variant left to run: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    return runnable, skipped


def _chosen_cases(matrix: experiment.Matrix, names: tuple[str, ...] | None) -> set[str]:
    known = [c.name for c in matrix.cases]
    if not names:
        return set(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise PirexError(f"--cases {','.join(unknown)}: the {matrix.name} matrix has the cases {', '.join(known)}")
    return set(names)


def _fallback(matrix: experiment.Matrix) -> dict:
    """What stands in for a matrix's optional part that the image lacks (SPASS-meter, bring-your-own)."""
    fb = matrix.fallback
    return {"reason": fb["reason"], "parameters": fb.get("parameters") or {}, "skip_cases": fb.get("skip_cases") or []}


def _cases(
    matrix: experiment.Matrix, runs_as: str, names: tuple[str, ...] | None, facts: HostFacts, skipped: dict[str, str]
) -> tuple[dict, tuple[str, ...]]:
    """run.json's matrix and the cases that run; the others go into `skipped` with why."""
    info: dict[str, Any] = {"name": matrix.name, "source": matrix.source, "runs_as": runs_as}
    fallback = _fallback(matrix) if matrix.fallback and facts.fallback else None
    wanted = _chosen_cases(matrix, names)
    cases, notes, same = [], {}, []
    for case in (c for c in matrix.cases if c.name in wanted):
        found = facts.cases.get(case.name, CaseFacts())
        why = fallback["reason"] if fallback and case.name in fallback["skip_cases"] else found.unavailable
        if why:
            skipped[case.name] = why
            continue
        if found.notes:
            notes[case.name] = list(found.notes)
        if found.same_as_base:
            same.append(case.name)
        cases.append(case.name)
    if not cases:
        raise PirexError("no case of the matrix can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    info |= {"cases": cases, "notes": notes, "same_as_base": same}
    if fallback:
        info["fallback"] = fallback
    return info, tuple(cases)


def _service_ports(exp: experiment.Experiment, params: dict, free_ports: dict[str, int]) -> None:
    """A service started here on port 0 gets a free port of this host; one on another machine
    (its `remote` parameter set) needs its port given."""
    for s in exp.services:
        remote = bool(s.remote and params.get(s.remote))
        if s.port and not params.get(s.port):
            if remote:
                raise PirexError(
                    f"--set {s.remote}={params[s.remote]} runs {s.name} on that machine: give its port "
                    f"too (--set {s.port}=PORT)"
                )
            params[s.port] = free_ports[s.port]


def _soak(exp: experiment.Experiment, duration: str | None) -> dict | None:
    """--soak: the driver sends requests until the duration is over, as the experiment declares
    (experiment.yaml: soak), while the service's heap and RSS are sampled."""
    if not duration:
        return None
    if not exp.soak:
        with_soak = [e for e in experiment.available() if experiment.load(e).soak]
        raise PirexError(
            f"--soak holds a service under load; {exp.id} declares no soak "
            f"(experiments that do: {', '.join(with_soak) or 'none'})"
        )
    if not re.fullmatch(r"(\d+[hms])+", duration):
        raise PirexError(f"--soak {duration!r}: expected a duration like 10m, 90s or 1h30m")
    return {
        "duration": duration,
        "driver_args": experiment.render(exp.soak.args, {"duration": duration}),
        "exit_codes": list(exp.soak.exit_codes),
        "why": exp.soak.why,
    }


def trace_functions(exp: experiment.Experiment, wanted: bool, arch: str) -> list[str] | None:
    """The functions --trace traces on this architecture; None without --trace."""
    if not wanted:
        return None
    if not exp.tracing:
        raise PirexError(f"{exp.id} declares no tracing (experiments/{exp.id}/experiment.yaml: tracing)")
    return list(exp.tracing.functions.get(arch, ()))


def _trace(exp: experiment.Experiment, wanted: bool, facts: HostFacts) -> dict | None:
    """Whether the run traces, with what, or why not (recorded in run.json)."""
    functions = trace_functions(exp, wanted, facts.arch)
    if functions is None:
        return None
    if facts.trace_unavailable:
        return {"enabled": False, "reason": facts.trace_unavailable}
    return {"enabled": True, "tracer": exp.tracing.tracer, "functions": functions, "output": exp.tracing.output}


def _cpu_list(text: str | None, exp: experiment.Experiment, matrix: experiment.Matrix | None) -> str | None:
    """--cpus as a well-formed CPU list, or None; refused with a matrix, whose cases declare their own CPUs (its
    base must keep every CPU for the two-cores case to mean anything), and for a deployment, whose servers and
    driver are not steps of one variant."""
    if text is None:
        return None
    text = text.strip()
    if not re.fullmatch(experiment.CPU_LIST, text):
        raise PirexError(f"--cpus {text!r}: expected a CPU list such as 1 or 0-1 or 0,2")
    if matrix:
        raise PirexError(f"--cpus pins every variant alike; the matrix {matrix.name} declares its cases' CPUs itself")
    if exp.deployment:
        raise PirexError(f"--cpus pins a step's process; {exp.id} deploys servers and a driver, which it does not pin")
    return text


def _cpus(
    text: str | None, exp: experiment.Experiment, matrix: experiment.Matrix | None, online: frozenset[int]
) -> str | None:
    """--cpus, checked, and only CPUs this process may run on."""
    text = _cpu_list(text, exp, matrix)
    if text and (missing := sorted(cpuset.parse_cpus(text) - online)):
        raise PirexError(f"--cpus {text}: CPUs {missing} are not online here (online: {sorted(online)})")
    return text


def variants_of(
    exp: experiment.Experiment,
    names: tuple[str, ...] | list[str],
    matrix: str | None = None,
    runs_as: str | None = None,
    cpus: str | None = None,
) -> dict[str, variants.Variant]:
    """The bundle's variant names -> how each runs: a variant, or a case of the matrix on the variant it runs as,
    with the experiment's privileges; every variant pinned to `cpus` (--cpus) when given."""
    if not matrix:
        return {n: dataclasses.replace(variants.by_name(n).with_privileges(exp.privileges), cpus=cpus) for n in names}
    m = exp.matrices[matrix]
    base = variants.by_name(runs_as).with_privileges(exp.privileges)
    return {n: base.for_case(m.resolved(n)) for n in names}


def step_values(
    exp: experiment.Experiment, params: dict, v: variants.Variant, repetition: int, gateway: str
) -> dict[str, Any]:
    """What a step's command is rendered from: its parameters as planned, where it reaches a service on this host,
    and the names the runner gives every step (output, workdir, variant, repetition)."""
    values = dict(params)
    for s in exp.services:
        if s.remote and not values.get(s.remote):
            values[s.remote] = v.host_address(gateway)
    values.update(output="/results", workdir=WORKDIR, variant=v.name, repetition=repetition)
    return values
