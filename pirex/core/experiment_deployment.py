"""The deployment of a client-server experiment (experiment.yaml's `deployment`, ICPE'18 Experiment 3): its roles
(servers), the one-shot setup, its docker compose files and its swarm stack, read and checked (pirex/core/experiment.py
reads the rest of the file)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from pirex.core.experiment_check import NAME, Checker, placeholders, strings
from pirex.core.paths import REPO

# Names the runner fills in for a role of a deployment: its own port and listen address; beside
# them <role>_host and <role>_port of every role (where the other roles reach it), and for the
# experiment's command <role>_url of every role with an HTTP health check (where this host reaches it).
ROLE_NAMES = ("port", "listen")
# What a deployment role's `samples` may name: the kinds runner/samplers.py runs (its KINDS has these keys).
SAMPLER_KINDS = ("spring-actuator-memory",)


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


def parse_deployment(c: Checker, doc: Any, declared: set[str]) -> Deployment | None:
    """A deployment whose shapes experiment.schema.json has checked: what its keys name is checked here."""
    if doc is None:
        return None
    names = declared | role_names(doc["roles"])
    roles = {name: _role(c, name, d, names) for name, d in doc["roles"].items()}
    setup = _setup(c, doc.get("setup"), roles, names)
    compose = doc.get("compose", {})
    files = [compose.get("one_host")] if "one_host" in compose else []
    files += list((compose.get("hosts") or {}).values())
    for f in files:
        if not isinstance(f, str) or not (REPO / f).is_file():
            raise c.fail("deployment.compose", "paths of compose files in this checkout", f)
    return Deployment(roles, setup, dict(compose), _swarm(c, doc.get("swarm"), roles))


SWARM_RECORD = "record"  # the stack file's one-shot service that prints every node's machine record
LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]*=[A-Za-z0-9._-]+$")  # a node label, KEY=VALUE


def _swarm(c: Checker, doc: Any, roles: dict[str, Role]) -> Swarm | None:
    if doc is None:
        return None
    stack = doc["stack"]
    if not (REPO / stack).is_file():
        raise c.fail("deployment.swarm.stack", "a stack file in this checkout", stack)
    try:
        services = set((yaml.safe_load((REPO / stack).read_text()) or {}).get("services") or {})
    except yaml.YAMLError as e:
        raise c.fail("deployment.swarm.stack", "a valid YAML stack file", f"{stack}: {e}") from None
    place = doc["place"]
    for role, label in place.items():
        if role not in roles or role not in services:
            raise c.fail(f"deployment.swarm.place.{role}", f"a role of the deployment and a service of {stack}", role)
        if not isinstance(label, str) or not LABEL.match(label):
            raise c.fail(f"deployment.swarm.place.{role}", "a node label KEY=VALUE (e.g. pirex.role=db)", label)
    stages = []
    for i, st in enumerate(doc["stages"]):  # at least one, each {service, until: running or complete}
        if not isinstance(st["service"], str) or st["service"] not in services - {SWARM_RECORD}:
            where = f"deployment.swarm.stages[{i}].service"
            raise c.fail(where, f"a service of {stack} ({', '.join(sorted(services))})", st["service"])
        stages.append(Stage(st["service"], st["until"]))
    if SWARM_RECORD not in services:
        raise c.fail(
            "deployment.swarm.stack", f"a stack file with a {SWARM_RECORD} service (the machine records)", stack
        )
    return Swarm(stack, dict(place), tuple(stages))


def _role(c: Checker, name: str, d: Any, names: set[str]) -> Role:
    """A role: the placeholders, the sampler kinds and its readiness; its shapes: the schema."""
    prefix = f"deployment.roles.{name}."
    image, port, env = d["image"], d["port"], d.get("environment", {})
    command = strings(d["command"])
    ready = {k: d.get(k, "") for k in ("ready_line", "health")}
    if bool(ready["ready_line"]) == bool(ready["health"]):
        raise c.fail(prefix + "ready_line", "either ready_line (a log line) or health (an HTTP path), not both", ready)
    samples = tuple(d.get("samples", []))
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


def _setup(c: Checker, doc: Any, roles: dict[str, Role], names: set[str]) -> Setup | None:
    if doc is None:
        return None
    get = {k: doc[k] for k in ("what", "record", "runs_in")}  # the shapes: the schema
    if get["runs_in"] not in roles:
        raise c.fail("deployment.setup.runs_in", f"a role ({', '.join(roles)})", get["runs_in"])
    if not NAME.match(get["record"]):
        raise c.fail("deployment.setup.record", "a file name stem (lowercase letters, digits, - and _)", get["record"])
    needs = doc["needs"]
    if not all(isinstance(n, str) and n in roles for n in needs):
        raise c.fail("deployment.setup.needs", f"roles among {', '.join(roles)}", needs)
    command = strings(doc["command"])
    if missing := placeholders(command) - names:
        raise c.fail("deployment.setup.command", f"placeholders among {', '.join(sorted(names))}", sorted(missing))
    return Setup(get["what"], get["record"], get["runs_in"], tuple(needs), command, doc["timeout_s"])
