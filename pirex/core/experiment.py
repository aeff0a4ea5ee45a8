"""experiments/<id>/experiment.yaml: what an experiment runs, with which parameters, profiles,
variants and outputs. This module only reads and validates; every problem names the file, the
key and what was expected. Placeholders `{name}` in commands are checked against the names a
run will supply (parameters, the profile's values and the runner's own), so that a typo fails
at load time, not an hour into a run. The shapes of every key are experiment.schema.json's (pirex/core/schema.py);
what they name is checked here, each problem said through experiment_check.py's Checker; a
deployment (its roles, setup, compose files and swarm stack) is read in experiment_deployment.py, the matrices
in experiment_matrix.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pirex.core import params as P
from pirex.core import schema
from pirex.core.errors import PirexError
from pirex.core.experiment_check import ANALYSIS, KNOWN_VARIANTS, Checker, placeholders, strings

# The names imported "as" themselves are read as experiment.NAME by the runner (deployment, variants, swarm, runplan,
# samplers: one sampler per kind), so they stay importable here.
from pirex.core.experiment_deployment import SAMPLER_KINDS as SAMPLER_KINDS
from pirex.core.experiment_deployment import SWARM_RECORD as SWARM_RECORD
from pirex.core.experiment_deployment import Deployment, parse_deployment
from pirex.core.experiment_deployment import Role as Role
from pirex.core.experiment_deployment import Setup as Setup
from pirex.core.experiment_deployment import Swarm as Swarm
from pirex.core.experiment_matrix import CPU_LIST as CPU_LIST
from pirex.core.experiment_matrix import Case as Case
from pirex.core.experiment_matrix import Matrix, parse_matrix
from pirex.core.paths import REPO

SCHEMA = 1
EXPERIMENTS = REPO / "experiments"
# Names the runner fills in for every step.
RUNTIME_NAMES = ("output", "workdir", "variant", "repetition")
TOP_KEYS = set(schema.load("experiment")["properties"])  # experiment.schema.json
# What a parameter may declare as `resolve: NAME`: a value the runner works out per machine before the run, from
# the machine record (the manifest records the result).
RESOLVERS = {"pmu-raw-events": "auto -> this CPU's raw PMU event codes (pirex/core/pmu.py)"}


@dataclass(frozen=True)
class Service:
    """A helper process of the experiment (B6's sink), the same for every variant. `port` names
    the parameter that receives its port (0: a free one per run); `remote` the parameter that,
    when set, says it runs on another machine, so the runner does not start it here."""

    name: str
    command: tuple[str, ...]
    ready_line: str
    port: str = ""
    remote: str = ""


@dataclass(frozen=True)
class Soak:
    """`pirex run --soak DURATION`: the driver holds the load for a duration instead of a count."""

    set: dict[str, Any]  # parameters the soak overrides (e.g. an unbounded count)
    args: tuple[str, ...]  # appended to the command; {duration} is the --soak value
    exit_codes: tuple[int, ...]  # what a driver stopped by its clock exits with
    why: str


@dataclass(frozen=True)
class Fit:
    """Whether the duet design (both variants at once, each on half of the CPUs) suits the experiment; where a run
    needs every CPU (servers of a deployment, a mode with one process per core) it does not, and `why` says so
    (experiment.yaml: `duet: {fits: false, why: ...}`; absent: it fits)."""

    fits: bool = True
    why: str = ""


@dataclass(frozen=True)
class Privileges:
    """What the experiment needs beyond a default container, granted by the runner to every
    variant alike and recorded in the bundle (e.g. fork: root for drop_caches, SYS_ADMIN for
    perf_event_open with kernel events under Docker's default seccomp profile)."""

    root: bool = False  # run as uid 0 instead of the image's user (native and docker)
    capabilities: tuple[str, ...] = ()  # docker --cap-add
    unmask_proc: bool = False  # docker --security-opt systempaths=unconfined: /proc/sys writable
    why: str = ""

    def docker_args(self) -> list[str]:
        args = ["--user", "0"] if self.root else []
        for cap in self.capabilities:
            args += ["--cap-add", cap]
        return args + (["--security-opt", "systempaths=unconfined"] if self.unmask_proc else [])


@dataclass(frozen=True)
class Tracing:
    """ftrace around each step (pirex run --trace): which tracer on which functions per machine
    architecture (uname -m), the parameter that receives tracefs's trace_marker path, and the
    file the trace is copied to in the step's folder."""

    tracer: str
    functions: dict[str, tuple[str, ...]]
    marker_parameter: str
    output: str


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    source: str
    image: str
    command: tuple[str, ...]
    parameters: dict[str, Any]
    profiles: dict[str, dict[str, Any]]
    variants: tuple[str, ...]
    default_variants: tuple[str, ...]
    services: tuple[Service, ...]
    needs: dict[str, Any]
    outputs: tuple[dict[str, str], ...]
    path: Path = field(compare=False)
    privileges: Privileges = Privileges()
    matrices: dict[str, Matrix] = field(default_factory=dict)
    tracing: Tracing | None = None
    deployment: Deployment | None = None
    declared: dict[str, P.Param] = field(default_factory=dict)
    analysis: str = "generic"  # the module of pirex/analysis/ that reads its bundles
    soak: Soak | None = None
    durations: dict = field(default_factory=dict)  # measured seconds per step and profile, on a named machine
    metrics_parameter: str = ""  # the list parameter whose items are the metrics a run measures (a reproduction
    # sets it to those its claims compare: MooBench's configurations)
    resolvers: dict[str, str] = field(default_factory=dict)  # parameter -> the resolver that sets it per machine
    duet: Fit = Fit()  # whether `pirex run --design duet` suits it, and why not

    def resolved_by(self, resolver: str) -> tuple[str, ...]:
        """The parameters that declare `resolve: <resolver>`."""
        return tuple(n for n, r in self.resolvers.items() if r == resolver)

    @property
    def images(self) -> tuple[str, ...]:
        """Every image a run uses: the experiment's, then its deployment's roles'."""
        return tuple(dict.fromkeys((self.image, *(self.deployment.images if self.deployment else ()))))

    def resolve(self, profile: str) -> dict[str, Any]:
        """The parameters of a profile: the experiment's, overridden by the profile's."""
        if profile not in self.profiles:
            raise PirexError(f"{self.path}: no profile {profile!r} (profiles: {', '.join(self.profiles)})")
        return {**self.parameters, **self.profiles[profile]}

    def requested(self, profile: str, matrix: str | None = None, overrides: dict[str, Any] | None = None) -> dict:
        """The parameters a run asks for, the one merge: the profile's, a matrix's at that profile, then --set's
        (checked). What run.json records as "requested" and what a reproduction's reuse compares."""
        m = self.matrices[matrix].parameters_for(profile) if matrix else {}
        return {**self.resolve(profile), **m, **P.check_values(self.declared, overrides or {}, "--set")}

    def overrides(self, pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
        """`--set NAME=VALUE` pairs, typed and checked against the declarations."""
        return P.parse_overrides(self.declared, pairs)

    def pick_variants(self, text: str | None) -> tuple[str, ...]:
        if not text:
            return self.default_variants
        chosen = tuple(v.strip() for v in text.split(",") if v.strip())
        unknown = [v for v in chosen if aa_base(v) not in self.variants]
        if unknown or not chosen:
            raise PirexError(
                f"{self.id}: no variant {', '.join(unknown) or '(none given)'}; this experiment offers "
                f"{', '.join(self.variants)} (and <variant>{AA_SUFFIX}, an A/A copy of one)"
            )
        return tuple(dict.fromkeys(chosen))


AA_SUFFIX = "-aa"


def aa_base(variant: str) -> str:
    """An A/A control runs a variant a second time under another name (`native-aa`), so that a
    bundle measures its own noise floor: the variant it copies."""
    return variant.removesuffix(AA_SUFFIX)


def render(template: tuple[str, ...] | list[str], values: dict[str, Any]) -> list[str]:
    out = []
    for arg in template:
        try:
            out.append(arg.format_map(values))
        except KeyError as e:
            raise PirexError(f"command argument {arg!r} names {e.args[0]!r}, which has no value") from None
    return out


def path_of(experiment_id: str) -> Path:
    return EXPERIMENTS / experiment_id / "experiment.yaml"


def available() -> list[str]:
    return sorted(p.parent.name for p in EXPERIMENTS.glob("*/experiment.yaml"))


def load(experiment: str | Path) -> Experiment:
    """Load by id (experiments/<id>/experiment.yaml) or by path."""
    path = Path(experiment) if str(experiment).endswith((".yaml", ".yml")) else path_of(str(experiment))
    if not path.exists():
        raise PirexError(
            f"no experiment {str(experiment)!r}: {path} does not exist (experiments: "
            f"{', '.join(available()) or 'none'})"
        )
    try:
        doc = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise PirexError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None
    return parse(doc, path)


def parse(doc: Any, path: Path) -> Experiment:
    """experiment.yaml's document, checked against experiment.schema.json for its shapes, then here for what it
    refers to (the folder, the runner's variants, declared parameters, placeholders, the analysis module)."""
    c = Checker(path)
    _check_shapes(c, doc)
    exp_id = _head(c, doc)
    title, source, image = doc["title"], doc.get("source", ""), doc["image"]
    command = strings(doc["command"])
    declared, resolvers = _parameters(c, doc)
    parameters = {n: p.default for n, p in declared.items() if p.has_default}
    profiles = _profiles(c, doc, declared, parameters)
    variants, defaults = _variants(c, doc)
    services = _services(c, doc, declared)
    needs = doc.get("needs", {})
    privileges = _privileges(needs.get("privileges"))
    outputs = doc["outputs"]  # each {path, format} (the schema)
    for i, o in enumerate(outputs):
        if o.get("keys") and o["format"] != "csv":  # the generic analysis groups a csv's rows; the others are read
            raise c.fail(f"outputs[{i}].keys", "no keys: they belong to a csv output", o["keys"])
    deployment = parse_deployment(c, doc.get("deployment"), set(declared))
    known = set(declared) | set(RUNTIME_NAMES) | (deployment.urls() if deployment else set())
    matrices = {name: parse_matrix(c, name, m, declared) for name, m in doc.get("matrices", {}).items()}
    _check_placeholders(c, command, services, profiles, known, declared)
    analysis = doc.get("analysis", "generic")
    if not ANALYSIS.match(analysis) or not (REPO / "pirex" / "analysis" / f"{analysis}.py").is_file():
        raise c.fail("analysis", "the name of a module in pirex/analysis/ (or leave it out: generic)", analysis)
    durations = _durations(c, doc.get("durations", {}), profiles, matrices)
    metrics_parameter = _metrics_parameter(c, doc, declared)
    return Experiment(
        id=exp_id,
        title=title,
        source=source,
        image=image,
        command=command,
        parameters=dict(parameters),
        profiles={k: dict(v) for k, v in profiles.items()},
        variants=variants,
        default_variants=defaults,
        services=tuple(services),
        needs=dict(needs),
        outputs=tuple(outputs),
        path=path,
        privileges=privileges,
        matrices=matrices,
        tracing=_tracing(c, doc.get("tracing"), known),
        deployment=deployment,
        declared=declared,
        analysis=analysis,
        soak=_soak(c, doc.get("soak"), declared),
        durations=dict(durations),
        metrics_parameter=metrics_parameter,
        resolvers=resolvers,
        duet=_duet(c, doc.get("duet")),
    )


def _check_shapes(c: Checker, doc: Any) -> None:
    """The first problem of experiment.schema.json's, said as every problem of this file is said."""
    problem = schema.first_problem("experiment", doc)
    if problem is None:
        return
    if not problem.at and problem.unknown:
        unknown = ", ".join(problem.unknown)
        raise PirexError(f"{c.path}: unknown key {unknown} (known: {', '.join(sorted(TOP_KEYS))})")
    if problem.missing:
        raise PirexError(f"{c.path}: {problem.key()}: missing ({problem.expected})")
    raise c.fail(problem.key(), problem.expected, problem.found)


def _head(c: Checker, doc: dict) -> str:
    """The experiment's id: the folder's name (a known schema version and an id's shape: the schema)."""
    exp_id = doc["id"]
    if exp_id != c.path.parent.name and c.path.parent.parent == EXPERIMENTS:
        raise c.fail("id", f"{c.path.parent.name!r}, the folder's name", exp_id)
    return exp_id


def _parameters(c: Checker, doc: dict) -> tuple[dict[str, P.Param], dict[str, str]]:
    """The declared parameters (the builtin ones, then the experiment's) and the resolver each `resolve:` names."""
    declared = P.builtin()
    resolvers = {}
    for name, decl in doc.get("parameters", {}).items():  # lowercase names, not the runner's (the schema)
        if isinstance(decl, dict) and "resolve" in decl:
            decl = dict(decl)
            resolvers[name] = _resolver(c, name, decl.pop("resolve"), decl.get("type"))
        declared[name] = P.declare(name, decl, f"{c.path}: parameters.{name}")
    return declared, resolvers


def _profiles(c: Checker, doc: dict, declared: dict[str, P.Param], parameters: dict[str, Any]) -> dict:
    """The profiles, quick and paper among them, each giving a value to every parameter without a default."""
    path = c.path
    profiles = doc["profiles"]  # quick and paper among them, each a mapping (the schema)
    for name, values in profiles.items():
        P.check_values(declared, values, f"{path}: profiles.{name}")
        unset = sorted(n for n in declared if n not in values and n not in parameters)
        if unset:
            raise PirexError(
                f"{path}: profiles.{name}: no value for {', '.join(unset)} (no default declared under parameters)"
            )
    return profiles


def _variants(c: Checker, doc: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The variants the experiment offers and those a run takes when none are named."""
    variants = strings(doc["variants"])
    for v in variants:
        if v not in KNOWN_VARIANTS:
            raise c.fail("variants", f"names among {', '.join(KNOWN_VARIANTS)}", v)
    defaults = strings(doc.get("default_variants", variants))
    for v in defaults:
        if v not in variants:
            raise c.fail("default_variants", f"variants listed under variants ({', '.join(variants)})", v)
    return variants, defaults


def _services(c: Checker, doc: dict, declared: dict[str, P.Param]) -> list[Service]:
    """The services, each port and remote naming a declared parameter of the right type (the rest: the schema)."""
    services = []
    for name, svc in doc.get("services", {}).items():
        port, remote = svc.get("port", ""), svc.get("remote", "")
        if port and (port not in declared or declared[port].type != "int"):
            raise c.fail(f"services.{name}.port", "a declared int parameter", port)
        if remote and (remote not in declared or declared[remote].type != "string"):
            raise c.fail(f"services.{name}.remote", "a declared string parameter", remote)
        services.append(Service(name, strings(svc["command"]), svc["ready_line"], port, remote))
    return services


def _check_placeholders(
    c: Checker,
    command: tuple[str, ...],
    services: list[Service],
    profiles: dict,
    known: set[str],
    declared: dict[str, P.Param],
) -> None:
    """Every placeholder of the command and the services' commands has a value at every profile."""
    for prof_name, values in profiles.items():
        missing = placeholders(command) | {p for s in services for p in placeholders(s.command)}
        missing -= known | set(values)
        if missing:
            raise PirexError(
                f"{c.path}: command names {', '.join(sorted(missing))}, which neither parameters nor "
                f"profiles.{prof_name} define (nor the runner: {', '.join(sorted(known - set(declared)))})"
            )


def _metrics_parameter(c: Checker, doc: dict, declared: dict[str, P.Param]) -> str:
    metrics_parameter = doc.get("metrics_parameter", "")
    if metrics_parameter:
        mp = declared.get(metrics_parameter)
        if mp is None or mp.type != "list" or not mp.choices:
            raise c.fail("metrics_parameter", "the name of a declared list parameter with choices", metrics_parameter)
    return metrics_parameter


def _duet(c: Checker, doc: Any) -> Fit:
    """duet: {fits: false, why: "..."}: the experiment refuses --design duet with that reason."""
    if doc is None:
        return Fit()
    why = doc.get("why", "")  # a mapping of fits (true or false) and why (the schema)
    if not doc["fits"] and not why.strip():
        raise c.fail("duet.why", "a sentence saying why the duet design does not suit it (pirex run prints it)", why)
    return Fit(doc["fits"], why.strip())


def _resolver(c: Checker, name: str, resolver: Any, kind: Any) -> str:
    if resolver not in RESOLVERS:
        raise c.fail(f"parameters.{name}.resolve", f"one of {', '.join(RESOLVERS)}", resolver)
    if kind != "string":
        raise c.fail(f"parameters.{name}.type", f"string (what {resolver} resolves it to)", kind)
    return resolver


def _durations(c, durations: dict, profiles: dict, matrices: dict) -> dict:
    """durations: {machine: text, score: its calibration score, <profile> (or <matrix>@<profile>, a
    matrix's steps, which can differ from the plain run's): seconds of one step, or
    {step: seconds, fixed: the part that does not scale with CPU speed (timed iterations), run: the
    seconds a run spends outside its steps (exporting the image for native, a setup such as a table
    load, the analysis), and machine/score where this profile was measured on another machine than
    the block's, or score alone where the block's machine was calibrated again beside it}, first:
    the seconds the first run on a machine adds, exporting the image's filesystem for the native
    variant (runner/native.py), which later runs reuse}; a profile's dict may also give disk: the megabytes of
    results one step leaves (its bundle's files), for the disk a claim needs (ARTIFACT.md)."""

    def seconds(key: str, v, unit: str = "seconds") -> float:
        if isinstance(v, str):  # YAML reads 1e7 as a string: take it as the number it says
            try:
                v = float(v)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise c.fail(f"durations.{key}", f"{unit} (a number >= 0)", v)
        return float(v)

    out: dict = {}
    for key, v in durations.items():
        if key == "machine":
            out[key] = str(v)
        elif key in ("score", "first"):
            out[key] = seconds(key, v)
        elif (k := key.rpartition("@"))[2] not in profiles or (k[1] and k[0] not in matrices):
            raise c.fail(
                f"durations.{key}", f"machine, score, first, a profile ({', '.join(profiles)}) or MATRIX@PROFILE", key
            )
        elif isinstance(v, dict):
            if set(v) - {"step", "fixed", "run", "machine", "score", "disk"} or "step" not in v:
                raise c.fail(f"durations.{key}", "seconds, or {step: seconds[, fixed, run, disk, machine, score]}", v)
            step, fixed = seconds(f"{key}.step", v["step"]), seconds(f"{key}.fixed", v.get("fixed", 0))
            if fixed > step:
                raise c.fail(f"durations.{key}.fixed", f"at most the step's {step:g} s", fixed)
            out[key] = {"step": step, "fixed": fixed, "run": seconds(f"{key}.run", v.get("run", 0))}
            if "disk" in v:
                out[key]["disk"] = seconds(f"{key}.disk", v["disk"], "megabytes")
            if "score" in v:  # measured on a machine of its own
                if not seconds(f"{key}.score", v["score"]):
                    raise c.fail(f"durations.{key}.score", "its machine's calibration score (a number > 0)", 0)
                # a score alone: the block's machine, calibrated again beside this profile's run (a VM's drifts)
                machine = v.get("machine") or durations.get("machine") or "another machine"
                out[key].update(score=float(v["score"]), machine=str(machine))
            elif "machine" in v:
                raise c.fail(f"durations.{key}.score", "the calibration score of its machine", None)
        else:
            out[key] = {"step": seconds(key, v), "fixed": 0.0, "run": 0.0}
    unscored = [k for k, v in out.items() if k not in ("machine", "score", "first") and "score" not in v]
    if unscored and not out.get("score"):
        raise c.fail("durations.score", "the reference machine's calibration score (a number > 0)", out.get("score"))
    return out


def _soak(c: Checker, doc: Any, declared: dict[str, P.Param]) -> Soak | None:
    if doc is None:
        return None
    sets = P.check_values(declared, doc.get("set", {}), f"{c.path}: soak.set")  # its shapes: the schema
    args = strings(doc["args"])
    if placeholders(args) - {"duration"}:
        raise c.fail("soak.args", "placeholders among duration", sorted(placeholders(args)))
    return Soak(sets, args, tuple(doc["exit_codes"]), doc["why"])


def _tracing(c: Checker, doc: Any, known: set[str]) -> Tracing | None:
    if doc is None:
        return None
    if doc["marker_parameter"] not in known:  # tracer, functions, marker_parameter, output: the schema
        raise c.fail("tracing.marker_parameter", "a parameter of the experiment", doc["marker_parameter"])
    functions = {arch: strings(names) for arch, names in doc["functions"].items()}
    return Tracing(doc["tracer"], functions, doc["marker_parameter"], doc["output"])


def _privileges(doc: Any) -> Privileges:
    if doc is None:
        return Privileges()
    caps = doc.get("capabilities") or []  # root, capabilities, unmask_proc, why: the schema
    return Privileges(bool(doc.get("root")), tuple(caps), bool(doc.get("unmask_proc")), doc["why"])
