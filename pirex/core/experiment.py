"""experiments/<id>/experiment.yaml: what an experiment runs, with which parameters, profiles,
variants and outputs. This module only reads and validates; every problem names the file, the
key and what was expected. Placeholders `{name}` in commands are checked against the names a
run will supply (parameters, the profile's values and the runner's own), so that a typo fails
at load time, not an hour into a run."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pirex.core import params as P
from pirex.core.errors import PirexError
from pirex.core.paths import REPO

SCHEMA = 1
EXPERIMENTS = REPO / "experiments"
# The variants the runner knows (docs/design.md, "Variants"): the image's own files outside any container, a
# default `docker run`, and Docker taken apart one mechanism at a time.
KNOWN_VARIANTS = ("native", "docker", "docker-host-network", "docker-bind-workdir", "docker-seccomp-unconfined")
# Names the runner fills in for every step.
RUNTIME_NAMES = ("output", "workdir", "variant", "repetition")
# Names the runner fills in for a role of a deployment: its own port and listen address; beside
# them <role>_host and <role>_port of every role (where the other roles reach it), and for the
# experiment's command <role>_url of every role with an HTTP health check (where this host reaches it).
ROLE_NAMES = ("port", "listen")
# The raw formats the runner checks after a step and the analysis reads; "csv" is any table
# with a header whose numeric columns pirex/analysis/generic.py summarises per variant.
OUTPUT_FORMATS = ("jmh-json", "moobench-csv", "locust-csv", "fork-csv", "csv")
NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
TOP_KEYS = {
    "schema",
    "id",
    "title",
    "source",
    "image",
    "command",
    "parameters",
    "profiles",
    "variants",
    "default_variants",
    "services",
    "needs",
    "outputs",
    "matrices",
    "tracing",
    "deployment",
    "analysis",
    "soak",
    "durations",
    "metrics_parameter",
    "duet",
}
ANALYSIS = re.compile(r"^[a-z][a-z0-9_]*$")  # a module of pirex/analysis/
# What a parameter may declare as `resolve: NAME`: a value the runner works out per machine before the run, from
# the machine record (the manifest records the result).
RESOLVERS = {"pmu-raw-events": "auto -> this CPU's raw PMU event codes (pirex/core/pmu.py)"}
# What a matrix case may change against its base case (ICPE'18 Table 5's factors).
CPU_LIST = r"\d+(-\d+)?(,\d+(-\d+)?)*"  # 0, 0-1, 0,2-3: what cpuset.parse_cpus reads (cases, --cpus)
# What a deployment role's `samples` may name: the kinds runner/samplers.py runs (its KINDS has these keys).
SAMPLER_KINDS = ("spring-actuator-memory",)
CASE_KEYS = {"name", "table_id", "title", "base", "set", "cpus", "ram_workdir_mb", "governor", "swap"}
GOVERNORS = ("performance", "powersave", "ondemand", "schedutil", "conservative", "userspace")


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
class Role:
    """A server of a deployment, started fresh for every step under the variant measured. It is
    ready once its log shows `ready_line`, or once its `health` path answers {"status": "UP"}; a
    role with a health path is also published on this host, where the driver reaches it."""

    name: str
    image: str
    command: tuple[str, ...]
    port: int  # where it listens in its container
    environment: dict[str, str]
    ready_line: str = ""  # printed once it accepts connections (a database)
    health: str = ""  # HTTP path that answers {"status":"UP"} once it serves (a web service)
    data: str = ""  # its data directory, bind-mounted from the host disk and kept across steps
    samples: tuple[str, ...] = ()  # sampler kinds (pirex/runner/samplers.py) run while each step runs


@dataclass(frozen=True)
class Setup:
    """A one-shot command run once per run before the first step, in one role's image with that
    role's environment, while the roles it needs are up (e.g. a table loaded into a database's data
    directory, which every variant then opens). Each time it ran goes into <record>.json."""

    what: str  # what it makes, for messages ("customer table")
    record: str
    runs_in: str
    needs: tuple[str, ...]
    command: tuple[str, ...]
    timeout_s: int


@dataclass(frozen=True)
class Stage:
    """One stage of a swarm run: a service of the stack file deployed, then waited for until it is running
    (healthy, a server) or complete (a one-shot, e.g. a loader)."""

    service: str
    until: str


@dataclass(frozen=True)
class Swarm:
    """`pirex swarm EXPERIMENT`: the deployment as a Docker Swarm stack, from the swarm's manager. `place`:
    role -> the node label (KEY=VALUE) of the one node that runs it; the driver (the experiment's image and
    command) runs on the manager. After a one-shot service that records every node's machine (RECORD), the
    stages deploy in order, each waited for; the roles' samplers run while the last stage (the driver) runs."""

    stack: str  # the stack file, relative to the checkout
    place: dict[str, str]
    stages: tuple[Stage, ...]

    @property
    def servers(self) -> tuple[str, ...]:
        """The services that stay up (a stage until running): one that died under load spoils the run."""
        return tuple(s.service for s in self.stages if s.until == "running")


@dataclass(frozen=True)
class Deployment:
    """A client-server experiment (ICPE'18 Experiment 3): the experiment's image and command are
    the load driver, run against servers (roles) that every step starts under its variant, in
    the order declared, and stops in reverse. `compose` names the docker compose files of the
    same deployment (`pirex compose`): one_host, and per host the file of each role and the driver."""

    roles: dict[str, Role]
    setup: Setup | None = None
    compose: dict[str, Any] = field(default_factory=dict)
    swarm: Swarm | None = None

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.image for r in self.roles.values()))

    def names(self) -> set[str]:
        """The placeholders a role's command and environment may use beside the parameters."""
        return role_names(self.roles)

    def urls(self) -> set[str]:
        """The placeholders the experiment's command (the driver) may use: <role>_url of each role
        with a health path."""
        return {f"{r.name}_url" for r in self.roles.values() if r.health}


def role_names(roles: Iterable[str]) -> set[str]:
    return set(ROLE_NAMES) | {f"{r}_{k}" for r in roles for k in ("host", "port")}


@dataclass(frozen=True)
class Case:
    """One case of a matrix: its own change, applied on top of its base case's (see resolved)."""

    name: str
    table_id: int | None
    title: str
    base: str | None
    set: dict[str, Any]
    cpus: str | None = None
    ram_workdir_mb: int | None = None
    governor: str | None = None
    swap: str | None = None  # "off": every active swap area is turned off for the step


@dataclass(frozen=True)
class Matrix:
    name: str
    source: str
    runs_as: str
    cases: tuple[Case, ...]
    parameters: dict[str, Any]
    fallback: dict[str, Any]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)  # per profile, over `parameters`

    def parameters_for(self, profile: str) -> dict[str, Any]:
        """The matrix's parameters at a profile (e.g. moobench's paper profile: MooBench's 2,000,000 calls)."""
        return {**self.parameters, **self.profiles.get(profile, {})}

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        raise PirexError(f"matrix {self.name}: no case {name!r}")

    def chain(self, name: str) -> list[Case]:
        """The case and its bases, the root first: each case changes one factor of its base."""
        out = [self.case(name)]
        while out[0].base:
            out.insert(0, self.case(out[0].base))
        return out

    def resolved(self, name: str) -> Case:
        """The case with every change along its base chain applied (later ones win)."""
        merged: dict[str, Any] = {"set": {}}
        for c in self.chain(name):
            merged["set"] = {**merged["set"], **c.set}
            for key in ("cpus", "ram_workdir_mb", "governor", "swap"):
                if getattr(c, key) is not None:
                    merged[key] = getattr(c, key)
        me = self.case(name)
        return Case(me.name, me.table_id, me.title, me.base, **merged)


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


def placeholders(args: tuple[str, ...]) -> set[str]:
    return {f for a in args for _, f, _, _ in string.Formatter().parse(a) if f}


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


class _Checker:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, expected: str, got: Any) -> PirexError:
        return PirexError(f"{self.path}: {key}: expected {expected}, found {got!r}")

    def get(
        self,
        doc: dict,
        key: str,
        kind: type | tuple[type, ...],
        expected: str,
        prefix: str = "",
        required: bool = True,
        default: Any = None,
    ) -> Any:
        if key not in doc:
            if required:
                raise PirexError(f"{self.path}: {prefix}{key}: missing ({expected})")
            return default
        value = doc[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _tuple(kind)):
            raise self.fail(prefix + key, expected, value)
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str | int | float) for a in value):
            raise self.fail(key, "a non-empty list of strings", value)
        return tuple(str(a) for a in value)


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def parse(doc: Any, path: Path) -> Experiment:
    c = _Checker(path)
    if not isinstance(doc, dict):
        raise c.fail("(top level)", "a mapping", doc)
    unknown = sorted(set(doc) - TOP_KEYS)
    if unknown:
        raise PirexError(f"{path}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(TOP_KEYS))})")
    schema = c.get(doc, "schema", int, f"schema version {SCHEMA}")
    if schema != SCHEMA:
        raise c.fail("schema", f"{SCHEMA} (this pirex reads schema {SCHEMA})", schema)
    exp_id = c.get(doc, "id", str, "the experiment's id")
    if exp_id != path.parent.name and path.parent.parent == EXPERIMENTS:
        raise c.fail("id", f"{path.parent.name!r}, the folder's name", exp_id)
    if not NAME.match(exp_id):
        raise c.fail("id", "lowercase letters, digits, - and _", exp_id)
    title = c.get(doc, "title", str, "a one-line title")
    source = c.get(doc, "source", str, "the paper and section", required=False, default="")
    image = c.get(doc, "image", str, "an image name from docker-bake.hcl")
    command = c.strings(c.get(doc, "command", list, "the command, as a list"), "command")

    raw_params = (
        c.get(
            doc, "parameters", dict, "a mapping of name to {type, default, min, max, ...}", required=False, default={}
        )
        or {}
    )
    declared = P.builtin()
    resolvers = {}
    for name, decl in raw_params.items():
        if not isinstance(name, str) or not NAME.match(name) or name in RUNTIME_NAMES:
            raise c.fail(
                f"parameters.{name}",
                f"a lowercase name, not one the runner supplies ({', '.join(RUNTIME_NAMES)})",
                name,
            )
        if isinstance(decl, dict) and "resolve" in decl:
            decl = dict(decl)
            resolvers[name] = _resolver(c, name, decl.pop("resolve"), decl.get("type"))
        declared[name] = P.declare(name, decl, f"{path}: parameters.{name}")
    parameters = {n: p.default for n, p in declared.items() if p.has_default}
    profiles = c.get(doc, "profiles", dict, "a mapping of profile name to parameters")
    if not profiles:
        raise c.fail("profiles", "at least one profile (quick and paper)", profiles)
    for name, values in profiles.items():
        if not isinstance(values, dict):
            raise c.fail(f"profiles.{name}", "a mapping of parameter to value", values)
        P.check_values(declared, values, f"{path}: profiles.{name}")
        unset = sorted(n for n in declared if n not in values and n not in parameters)
        if unset:
            raise PirexError(
                f"{path}: profiles.{name}: no value for {', '.join(unset)} (no default declared under parameters)"
            )
    for required_profile in ("quick", "paper"):
        if required_profile not in profiles:
            raise PirexError(f"{path}: profiles.{required_profile}: missing (every experiment has quick and paper)")

    variants = c.strings(c.get(doc, "variants", list, "a list of variants"), "variants")
    for v in variants:
        if v not in KNOWN_VARIANTS:
            raise c.fail("variants", f"names among {', '.join(KNOWN_VARIANTS)}", v)
    defaults = c.strings(
        c.get(doc, "default_variants", list, "a list of variants", required=False, default=list(variants)),
        "default_variants",
    )
    for v in defaults:
        if v not in variants:
            raise c.fail("default_variants", f"variants listed under variants ({', '.join(variants)})", v)

    services = []
    for name, svc in (
        c.get(doc, "services", dict, "a mapping of service name to {command, ready_line}", required=False, default={})
        or {}
    ).items():
        if not isinstance(svc, dict):
            raise c.fail(f"services.{name}", "a mapping with command and ready_line", svc)
        unknown = sorted(set(svc) - {"command", "ready_line", "port", "remote"})
        if unknown:
            raise c.fail(f"services.{name}", "keys among command, ready_line, port, remote", unknown)
        cmd = c.strings(svc.get("command"), f"services.{name}.command")
        ready = c.get(svc, "ready_line", str, "text the service prints once it is ready", prefix=f"services.{name}.")
        port = c.get(
            svc,
            "port",
            str,
            "the parameter that receives its port",
            prefix=f"services.{name}.",
            required=False,
            default="",
        )
        remote = c.get(
            svc,
            "remote",
            str,
            "the parameter naming another machine that runs it",
            prefix=f"services.{name}.",
            required=False,
            default="",
        )
        if port and (port not in declared or declared[port].type != "int"):
            raise c.fail(f"services.{name}.port", "a declared int parameter", port)
        if remote and (remote not in declared or declared[remote].type != "string"):
            raise c.fail(f"services.{name}.remote", "a declared string parameter", remote)
        services.append(Service(name, cmd, ready, port, remote))

    needs = c.get(
        doc, "needs", dict, "a mapping (memory_mb, disk_mb, io_heavy, capabilities)", required=False, default={}
    )
    for key in ("memory_mb", "disk_mb"):
        if key in needs and (not isinstance(needs[key], int) or needs[key] < 0):
            raise c.fail(f"needs.{key}", "a whole number of MB", needs[key])

    privileges = _privileges(c, needs.get("privileges"))
    outputs = c.get(doc, "outputs", list, "a list of {path, format}")
    for i, out in enumerate(outputs):
        if not isinstance(out, dict) or not isinstance(out.get("path"), str):
            raise c.fail(f"outputs[{i}]", "a mapping with path and format", out)
        if out.get("format") not in OUTPUT_FORMATS:
            raise c.fail(f"outputs[{i}].format", f"one of {', '.join(OUTPUT_FORMATS)}", out.get("format"))

    deployment = _deployment(c, doc.get("deployment"), set(declared))
    known = set(declared) | set(RUNTIME_NAMES) | (deployment.urls() if deployment else set())
    matrices = {
        name: _matrix(c, name, m, declared)
        for name, m in (
            c.get(doc, "matrices", dict, "a mapping of matrix name to {runs_as, cases}", required=False, default={})
            or {}
        ).items()
    }
    for prof_name, values in profiles.items():
        missing = placeholders(command) | {p for s in services for p in placeholders(s.command)}
        missing -= known | set(values)
        if missing:
            raise PirexError(
                f"{path}: command names {', '.join(sorted(missing))}, which neither parameters nor "
                f"profiles.{prof_name} define (nor the runner: {', '.join(sorted(known - set(declared)))})"
            )

    analysis = c.get(doc, "analysis", str, "a module of pirex/analysis/", required=False, default="generic")
    if not ANALYSIS.match(analysis) or not (REPO / "pirex" / "analysis" / f"{analysis}.py").is_file():
        raise c.fail("analysis", "the name of a module in pirex/analysis/ (or leave it out: generic)", analysis)
    durations = _durations(
        c,
        c.get(doc, "durations", dict, "seconds per profile as measured", required=False, default={}),
        profiles,
        matrices,
    )
    metrics_parameter = c.get(
        doc, "metrics_parameter", str, "the name of a list parameter with choices", required=False, default=""
    )
    if metrics_parameter:
        mp = declared.get(metrics_parameter)
        if mp is None or mp.type != "list" or not mp.choices:
            raise c.fail("metrics_parameter", "the name of a declared list parameter with choices", metrics_parameter)
    exp = Experiment(
        exp_id,
        title,
        source,
        image,
        command,
        dict(parameters),
        {k: dict(v) for k, v in profiles.items()},
        variants,
        defaults,
        tuple(services),
        dict(needs),
        tuple(outputs),
        path,
        privileges,
        matrices,
        _tracing(c, doc.get("tracing"), known),
        deployment,
        declared,
        analysis,
        _soak(c, doc.get("soak"), declared),
        dict(durations),
    )
    return replace(exp, metrics_parameter=metrics_parameter, resolvers=resolvers, duet=_duet(c, doc.get("duet")))


def _duet(c: _Checker, doc: Any) -> Fit:
    """duet: {fits: false, why: "..."}: the experiment refuses --design duet with that reason."""
    if doc is None:
        return Fit()
    expected = "a mapping {fits: false, why: a sentence saying why the duet design does not suit it}"
    if not isinstance(doc, dict) or set(doc) - {"fits", "why"} or not isinstance(doc.get("fits"), bool):
        raise c.fail("duet", expected, doc)
    why = doc.get("why", "")
    if not isinstance(why, str) or (not doc["fits"] and not why.strip()):
        raise c.fail("duet.why", "a sentence saying why the duet design does not suit it (pirex run prints it)", why)
    return Fit(doc["fits"], why.strip())


def _resolver(c: _Checker, name: str, resolver: Any, kind: Any) -> str:
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


def _soak(c: _Checker, doc: Any, declared: dict[str, P.Param]) -> Soak | None:
    if doc is None:
        return None
    expected = "a mapping with set, args, exit_codes and why"
    if not isinstance(doc, dict) or set(doc) - {"set", "args", "exit_codes", "why"}:
        raise c.fail("soak", expected, doc)
    sets = P.check_values(
        declared,
        c.get(doc, "set", dict, "parameters to override", prefix="soak.", required=False, default={}),
        f"{c.path}: soak.set",
    )
    args = c.strings(doc.get("args"), "soak.args")
    if placeholders(args) - {"duration"}:
        raise c.fail("soak.args", "placeholders among duration", sorted(placeholders(args)))
    codes = c.get(doc, "exit_codes", list, "exit statuses of a driver stopped by its clock", prefix="soak.")
    if not codes or not all(isinstance(x, int) and not isinstance(x, bool) for x in codes):
        raise c.fail("soak.exit_codes", "a list of exit statuses", codes)
    why = c.get(doc, "why", str, "a sentence saying why (recorded)", prefix="soak.")
    return Soak(sets, args, tuple(codes), why)


ROLE_KEYS = ("image", "command", "port", "environment", "ready_line", "health", "data", "samples")
SETUP_KEYS = ("what", "record", "runs_in", "needs", "command", "timeout_s")


def _deployment(c: _Checker, doc: Any, declared: set[str]) -> Deployment | None:
    if doc is None:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("roles"), dict) or not doc["roles"]:
        raise c.fail("deployment", "a mapping with roles (name -> server, in start order), setup and compose", doc)
    if unknown := sorted(set(doc) - {"roles", "setup", "compose", "swarm"}):
        raise c.fail("deployment", "keys among roles, setup, compose, swarm", unknown)
    for name in doc["roles"]:
        if not isinstance(name, str) or not ANALYSIS.match(name):
            raise c.fail(f"deployment.roles.{name}", "a role name of lowercase letters, digits and _", name)
    names = declared | role_names(doc["roles"])
    roles = {name: _role(c, name, d, names) for name, d in doc["roles"].items()}
    setup = _setup(c, doc.get("setup"), roles, names)
    compose = c.get(
        doc,
        "compose",
        dict,
        "one_host (a compose file) and hosts (role -> compose file)",
        prefix="deployment.",
        required=False,
        default={},
    )
    if unknown := sorted(set(compose) - {"one_host", "hosts"}):
        raise c.fail("deployment.compose", "keys among one_host, hosts", unknown)
    files = [compose.get("one_host")] if "one_host" in compose else []
    files += list((compose.get("hosts") or {}).values())
    for f in files:
        if not isinstance(f, str) or not (REPO / f).is_file():
            raise c.fail("deployment.compose", "paths of compose files in this checkout", f)
    return Deployment(roles, setup, dict(compose), _swarm(c, doc.get("swarm"), roles))


SWARM_KEYS = ("stack", "place", "stages")
STAGE_STATES = ("running", "complete")
SWARM_RECORD = "record"  # the stack file's one-shot service that prints every node's machine record
LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]*=[A-Za-z0-9._-]+$")  # a node label, KEY=VALUE


def _swarm(c: _Checker, doc: Any, roles: dict[str, Role]) -> Swarm | None:
    if doc is None:
        return None
    if not isinstance(doc, dict) or set(doc) - set(SWARM_KEYS):
        raise c.fail("deployment.swarm", f"a mapping with {', '.join(SWARM_KEYS)}", doc)
    stack = c.get(doc, "stack", str, "the stack file (a path in this checkout)", prefix="deployment.swarm.")
    if not (REPO / stack).is_file():
        raise c.fail("deployment.swarm.stack", "a stack file in this checkout", stack)
    try:
        services = set((yaml.safe_load((REPO / stack).read_text()) or {}).get("services") or {})
    except yaml.YAMLError as e:
        raise c.fail("deployment.swarm.stack", "a valid YAML stack file", f"{stack}: {e}") from None
    place = c.get(doc, "place", dict, "role -> node label KEY=VALUE", prefix="deployment.swarm.")
    for role, label in place.items():
        if role not in roles or role not in services:
            raise c.fail(f"deployment.swarm.place.{role}", f"a role of the deployment and a service of {stack}", role)
        if not isinstance(label, str) or not LABEL.match(label):
            raise c.fail(f"deployment.swarm.place.{role}", "a node label KEY=VALUE (e.g. pirex.role=db)", label)
    raw = c.get(doc, "stages", list, "the services in deploy order, each {service, until}", prefix="deployment.swarm.")
    stages = []
    for i, st in enumerate(raw):
        where = f"deployment.swarm.stages[{i}]"
        if not isinstance(st, dict) or set(st) != {"service", "until"}:
            raise c.fail(where, "a mapping {service, until}", st)
        if st["service"] not in services - {SWARM_RECORD}:
            raise c.fail(f"{where}.service", f"a service of {stack} ({', '.join(sorted(services))})", st["service"])
        if st["until"] not in STAGE_STATES:
            raise c.fail(f"{where}.until", f"one of {', '.join(STAGE_STATES)}", st["until"])
        stages.append(Stage(st["service"], st["until"]))
    if not stages:
        raise c.fail("deployment.swarm.stages", "at least one stage (the driver last)", raw)
    if SWARM_RECORD not in services:
        raise c.fail(
            "deployment.swarm.stack", f"a stack file with a {SWARM_RECORD} service (the machine records)", stack
        )
    return Swarm(stack, dict(place), tuple(stages))


def _role(c: _Checker, name: str, d: Any, names: set[str]) -> Role:
    prefix = f"deployment.roles.{name}."
    if not isinstance(d, dict):
        raise c.fail(prefix[:-1], "a mapping (image, command, port, environment, ...)", d)
    if unknown := sorted(set(d) - set(ROLE_KEYS)):
        raise c.fail(prefix[:-1], f"keys among {', '.join(ROLE_KEYS)}", unknown)
    image = c.get(d, "image", str, "an image name from docker-bake.hcl", prefix=prefix)
    command = c.strings(d.get("command"), prefix + "command")
    port = c.get(d, "port", int, "the TCP port it listens on in its container", prefix=prefix)
    env = c.get(d, "environment", dict, "a mapping of name to text", required=False, default={}, prefix=prefix)
    if not all(isinstance(v, str) for v in env.values()):
        raise c.fail(prefix + "environment", "text values (quote numbers)", env)
    ready = {k: c.get(d, k, str, "text", prefix=prefix, required=False, default="") for k in ("ready_line", "health")}
    if bool(ready["ready_line"]) == bool(ready["health"]):
        raise c.fail(prefix + "ready_line", "either ready_line (a log line) or health (an HTTP path), not both", ready)
    samples = tuple(c.get(d, "samples", list, "a list of sampler kinds", prefix=prefix, required=False, default=[]))
    if unknown := [k for k in samples if k not in SAMPLER_KINDS]:
        raise c.fail(prefix + "samples", f"sampler kinds among {', '.join(SAMPLER_KINDS)}", unknown)
    if samples and not ready["health"]:
        raise c.fail(prefix + "samples", "samplers on a role with a health path (they ask its URL)", samples)
    missing = (placeholders(command) | placeholders(tuple(env.values()))) - names
    if missing:
        raise c.fail(prefix + "command", f"placeholders among {', '.join(sorted(names))}", sorted(missing))
    return Role(
        name, image, command, port, dict(env), ready["ready_line"], ready["health"], str(d.get("data", "")), samples
    )


def _setup(c: _Checker, doc: Any, roles: dict[str, Role], names: set[str]) -> Setup | None:
    if doc is None:
        return None
    if not isinstance(doc, dict) or set(doc) - set(SETUP_KEYS):
        raise c.fail("deployment.setup", f"a mapping with {', '.join(SETUP_KEYS)}", doc)
    get = {k: c.get(doc, k, str, "text", prefix="deployment.setup.") for k in ("what", "record", "runs_in")}
    if get["runs_in"] not in roles:
        raise c.fail("deployment.setup.runs_in", f"a role ({', '.join(roles)})", get["runs_in"])
    if not NAME.match(get["record"]):
        raise c.fail("deployment.setup.record", "a file name stem (lowercase letters, digits, - and _)", get["record"])
    needs = c.get(doc, "needs", list, "the roles up while it runs", prefix="deployment.setup.")
    if not all(n in roles for n in needs):
        raise c.fail("deployment.setup.needs", f"roles among {', '.join(roles)}", needs)
    command = c.strings(doc.get("command"), "deployment.setup.command")
    if missing := placeholders(command) - names:
        raise c.fail("deployment.setup.command", f"placeholders among {', '.join(sorted(names))}", sorted(missing))
    timeout = c.get(doc, "timeout_s", int, "seconds it may take at most", prefix="deployment.setup.")
    return Setup(get["what"], get["record"], get["runs_in"], tuple(needs), command, timeout)


def _tracing(c: _Checker, doc: Any, known: set[str]) -> Tracing | None:
    if doc is None:
        return None
    expected = "a mapping with tracer, functions (per uname -m), marker_parameter and output"
    if not isinstance(doc, dict) or not isinstance(doc.get("functions"), dict):
        raise c.fail("tracing", expected, doc)
    for key in ("tracer", "marker_parameter", "output"):
        c.get(doc, key, str, expected, prefix="tracing.")
    if doc["marker_parameter"] not in known:
        raise c.fail("tracing.marker_parameter", "a parameter of the experiment", doc["marker_parameter"])
    functions = {arch: tuple(c.strings(names, f"tracing.functions.{arch}")) for arch, names in doc["functions"].items()}
    return Tracing(doc["tracer"], functions, doc["marker_parameter"], doc["output"])


def _privileges(c: _Checker, doc: Any) -> Privileges:
    if doc is None:
        return Privileges()
    if not isinstance(doc, dict):
        raise c.fail("needs.privileges", "a mapping (root, capabilities, unmask_proc, why)", doc)
    unknown = sorted(set(doc) - {"root", "capabilities", "unmask_proc", "why"})
    if unknown:
        raise c.fail("needs.privileges", "keys among root, capabilities, unmask_proc, why", unknown)
    caps = doc.get("capabilities") or []
    if not isinstance(caps, list) or not all(isinstance(x, str) and re.fullmatch(r"[A-Z_]+", x) for x in caps):
        raise c.fail("needs.privileges.capabilities", "a list of capability names like SYS_ADMIN", caps)
    for key in ("root", "unmask_proc"):
        if not isinstance(doc.get(key, False), bool):
            raise c.fail(f"needs.privileges.{key}", "true or false", doc[key])
    why = doc.get("why", "")
    if not isinstance(why, str) or not why:
        raise c.fail("needs.privileges.why", "a sentence saying why (it goes into the bundle)", why)
    return Privileges(bool(doc.get("root")), tuple(caps), bool(doc.get("unmask_proc")), why)


def _matrix(c: _Checker, name: str, doc: Any, declared: dict[str, P.Param]) -> Matrix:
    key = f"matrices.{name}"
    if not isinstance(doc, dict):
        raise c.fail(key, "a mapping with runs_as and cases", doc)
    runs_as = c.get(doc, "runs_as", str, "native or docker", prefix=f"{key}.", required=False, default="native")
    if runs_as not in ("native", "docker"):
        raise c.fail(f"{key}.runs_as", "native or docker", runs_as)
    params = c.get(doc, "parameters", dict, "parameters of every case", prefix=f"{key}.", required=False, default={})
    P.check_values(declared, params, f"{c.path}: {key}.parameters")
    fallback = c.get(
        doc, "fallback", dict, "{probe, parameters, skip_cases}", prefix=f"{key}.", required=False, default={}
    )
    if fallback and (not isinstance(fallback.get("probe"), list) or not isinstance(fallback.get("reason"), str)):
        raise c.fail(f"{key}.fallback", "a mapping with probe (a command) and reason", fallback)
    profiles = c.get(doc, "profiles", dict, "profile -> parameters", prefix=f"{key}.", required=False, default={})
    for prof, values in profiles.items():
        if not isinstance(values, dict):
            raise c.fail(f"{key}.profiles.{prof}", "a mapping of parameter to value", values)
        P.check_values(declared, values, f"{c.path}: {key}.profiles.{prof}")
    raw_cases = c.get(doc, "cases", list, "a list of cases", prefix=f"{key}.")
    cases: list[Case] = []
    for i, cd in enumerate(raw_cases):
        where = f"{key}.cases[{i}]"
        if not isinstance(cd, dict) or not isinstance(cd.get("name"), str) or not NAME.match(cd["name"]):
            raise c.fail(where, "a mapping with a name (lowercase letters, digits, - and _)", cd)
        unknown = sorted(set(cd) - CASE_KEYS)
        if unknown:
            raise c.fail(where, f"keys among {', '.join(sorted(CASE_KEYS))}", unknown)
        if cd["name"] in KNOWN_VARIANTS or any(x.name == cd["name"] for x in cases):
            raise c.fail(f"{where}.name", "a name not used by another case or variant", cd["name"])
        base = cd.get("base")
        if base is not None and not any(x.name == base for x in cases):
            raise c.fail(f"{where}.base", "an earlier case's name", base)
        sets = cd.get("set") or {}
        if not isinstance(sets, dict):
            raise c.fail(f"{where}.set", "a mapping of parameter to value", sets)
        P.check_values(declared, sets, f"{c.path}: {where}.set")
        if cd.get("governor") is not None and cd["governor"] not in GOVERNORS:
            raise c.fail(f"{where}.governor", f"one of {', '.join(GOVERNORS)}", cd["governor"])
        if cd.get("swap") not in (None, "off"):
            raise c.fail(f"{where}.swap", "off", cd["swap"])
        if cd.get("cpus") is not None and not re.fullmatch(CPU_LIST, str(cd["cpus"])):
            raise c.fail(f"{where}.cpus", "a CPU list like 0 or 0-1", cd["cpus"])
        ram = cd.get("ram_workdir_mb")
        if ram is not None and (not isinstance(ram, int) or ram < 1):
            raise c.fail(f"{where}.ram_workdir_mb", "a whole number of MB", ram)
        cases.append(
            Case(
                cd["name"],
                cd.get("table_id"),
                str(cd.get("title", cd["name"])),
                base,
                dict(sets),
                None if cd.get("cpus") is None else str(cd["cpus"]),
                ram,
                cd.get("governor"),
                cd.get("swap"),
            )
        )
    if not cases:
        raise c.fail(f"{key}.cases", "at least one case", raw_cases)
    return Matrix(
        name,
        str(doc.get("source", "")),
        runs_as,
        tuple(cases),
        dict(params),
        dict(fallback),
        {k: dict(v) for k, v in profiles.items()},
    )
