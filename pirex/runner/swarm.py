"""An experiment with a swarm deployment (experiment.yaml: deployment.swarm; ICPE'18 Experiment 3 is one) on a
Docker Swarm, from the swarm's manager (the laptop): the node labels checked, every node's machine record taken
(a one-shot global service), then the stages in their declared order, each waited for (e.g. the database
healthy, its table loaded, the service healthy), the last one (the driver, on the manager) to its end while the
roles' samplers run; each role's record, the services' logs and the driver's results in one run folder; the
stack removed on every exit path.

The stack file holds no number of the experiment: `environment()` takes them from its experiment.yaml (the
profile, and --set) and `docker stack deploy` reads them from its environment. Swarm ignores depends_on
conditions, so the stages are ordered here: each deploys the same stack file with only the services started
so far (a deploy without --prune leaves the others alone). A task that fails or is rejected (an image missing
on its node, say) stops the run with its node and the engine's reason."""

from __future__ import annotations

import ast
import base64
import contextlib
import json
import logging
import shlex
import time
import zipfile
import zlib
from pathlib import Path

import yaml

from pirex.core import experiment, machine, proc
from pirex.core.bundle import Bundle, sha256
from pirex.core.bundle_files import write_json
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.images import localregistry, publish, settings
from pirex.runner import deployment_bundle, executors, leftovers, lock, outputs, samplers

log = logging.getLogger(__name__)

STACK = "pirex"
DRIVER = "driver"  # the experiment's own image and command, on the manager
NETWORKS = ("host", "overlay")
OVERLAY = "pirex-overlay"
TIMEOUT = {"quick": 1800, "paper": 6 * 3600}
READER = "core/machine"  # the module the record service runs; it and what it imports of pirex go into the .pyz
RECORD_TAG = "pirex-record"
NODE_ROOT = "/node"  # where compose/stack.yml's record service mounts the node's / (read-only)
CHUNK = 3000  # characters per log line of a record: far below the 16 KiB at which engines split lines
FAILED = ("failed", "rejected", "shutdown", "orphaned", "remove")


# --- the experiment, its numbers and the environment ------------------------------------------


def swarm_of(experiment_id: str) -> tuple[experiment.Experiment, experiment.Swarm]:
    """The experiment and its swarm deployment, or an error naming the experiments that have one."""
    exp = experiment.load(experiment_id)
    if exp.deployment is None or exp.deployment.swarm is None:
        offered = [e for e in experiment.available() if (d := experiment.load(e).deployment) and d.swarm]
        raise PirexError(
            f"{exp.id} declares no swarm deployment (experiment.yaml: deployment.swarm); "
            f"experiments that do: {', '.join(offered) or 'none'}"
        )
    return exp, exp.deployment.swarm


def stack_file(sw: experiment.Swarm) -> Path:
    return REPO / sw.stack


def environment(
    exp: experiment.Experiment,
    profile: str,
    sets: tuple[str, ...] = (),
    network: str = "host",
    tag: str = "",
    images: str = "",
    results: Path | None = None,
    reader: Path | None = None,
    hosts: dict[str, str] | None = None,
) -> dict[str, str]:
    """What `docker stack deploy -c compose/stack.yml` reads: the experiment's parameters for the
    profile (overridden by --set, checked against their declarations), the images, the hosts."""
    if network not in NETWORKS:
        raise PirexError(f"--network {network!r}: expected one of {', '.join(NETWORKS)}")
    env = {
        **settings.of(exp, profile, sets),
        "PIREX_TAG": tag,
        "NETWORK": "host" if network == "host" else OVERLAY,
        "PIREX_IMAGES": images or f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}",
    }
    placed = exp.deployment.swarm.place if exp.deployment and exp.deployment.swarm else {}
    if network == "overlay":  # service names (each role's) resolve on the overlay
        env.update({f"{role.upper()}_HOST": role for role in placed})
    elif hosts:
        env.update({f"{role.upper()}_HOST": hosts[role] for role in placed})
    if results is not None:
        env["RESULTS_DIR"] = str(results.resolve())
    if reader is not None:
        env["MACHINE_READER"] = str(reader.resolve())
    return {k: str(v) for k, v in env.items() if v != ""}


def write_reader(path: Path) -> Path:
    """pirex's machine reader as a zip Python runs (`python machine-reader.pyz`): it prints this
    node's record, compressed, in numbered log lines tagged with the node's ID. Its storage is the
    node's root file system (bind-mounted at NODE_ROOT), not the container's overlay."""
    main = f'''import base64, json, os, zlib
from pathlib import Path
from pirex.core import machine
node = Path("{NODE_ROOT}")  # the node's / (read-only): its root disk, where the container's / is an overlay
if (node / "proc").is_dir():
    record = machine.record(node, docker=False, dev=node / "dev")
    record["storage"]["work_dir"] = "/ (the node's root file system, bind-mounted read-only at {NODE_ROOT})"
else:
    record = machine.record(Path("/"), docker=False)
data = base64.b64encode(zlib.compress(json.dumps(record).encode())).decode()
parts = [data[i:i + {CHUNK}] for i in range(0, len(data), {CHUNK})]
for i, part in enumerate(parts, 1):
    print("{RECORD_TAG}", os.environ.get("PIREX_NODE_ID", "?"), f"{{i}}/{{len(parts)}}", part, flush=True)
'''
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("__main__.py", main)
        for m in reader_modules():
            z.write(REPO / "pirex" / f"{m}.py", f"pirex/{m}.py")
    return path


def reader_modules(start: str = READER) -> list[str]:
    """The machine reader and every pirex module it imports, however deep, with their packages' __init__ (found
    from the sources: a hand-kept list broke silently when machine.py's imports changed)."""

    def module(dotted: str) -> str | None:  # pirex.core.proc -> core/proc; a package -> its __init__
        rel = dotted.removeprefix("pirex").lstrip(".").replace(".", "/")
        for m in (rel, f"{rel}/__init__".lstrip("/")):
            if m and (REPO / "pirex" / f"{m}.py").is_file():
                return m
        return None

    found, todo = {"__init__"}, [start]
    while todo:
        m = todo.pop()
        if m in found:
            continue
        found.add(m)
        parts = m.split("/")
        found |= {"/".join([*parts[:i], "__init__"]) for i in range(1, len(parts))}
        for node in ast.walk(ast.parse((REPO / "pirex" / f"{m}.py").read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "pirex":
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] == "pirex"]
            todo += [x for n in names if (x := module(n))]
    return sorted(found)


def records_from_log(text: str) -> dict[str, dict]:
    """node ID -> machine record, from the record service's log lines (other lines are ignored)."""
    parts: dict[str, dict[int, str]] = {}
    counts: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if RECORD_TAG not in fields:
            continue
        _, node, pos, *data = fields[fields.index(RECORD_TAG) :]
        i, _, n = pos.partition("/")
        parts.setdefault(node, {})[int(i)] = data[0] if data else ""
        counts[node] = int(n)
    out = {}
    for node, got in parts.items():
        if len(got) == counts[node]:
            out[node] = json.loads(zlib.decompress(base64.b64decode("".join(got[i] for i in sorted(got)))))
    return out


# --- the swarm ---------------------------------------------------------------------------------


def _docker(*args: str, timeout: float = 120, check: bool = True, env: dict | None = None) -> proc.Result:
    return proc.run(["docker", *args], timeout=timeout, check=check, env=env)


def nodes() -> list[dict]:
    """Every node: id, hostname, role, address, platform, engine, labels, state."""
    if _docker("info", "--format", "{{.Swarm.ControlAvailable}}").stdout.strip() != "true":
        raise PirexError(
            "this Docker engine is not a swarm manager: run `docker swarm init` here (the laptop) and "
            "`docker swarm join` on each Pi (compose/stack.yml says how)"
        )
    ids = _docker("node", "ls", "-q").stdout.split()
    out = []
    for n in json.loads(_docker("node", "inspect", *ids).stdout):
        d, s = n.get("Description") or {}, n.get("Spec") or {}
        out.append(
            {
                "id": n["ID"],
                "hostname": d.get("Hostname"),
                "role": s.get("Role"),
                "address": (n.get("Status") or {}).get("Addr"),
                "state": (n.get("Status") or {}).get("State"),
                "platform": d.get("Platform"),
                "engine": (d.get("Engine") or {}).get("EngineVersion"),
                "labels": s.get("Labels") or {},
            }
        )
    return out


def placement(all_nodes: list[dict], place: dict[str, str]) -> dict[str, dict]:
    """role -> node: each placed role on the node with its label (exactly one ready node each), the driver
    on this manager."""
    out = {}
    for role, label in place.items():
        key, _, value = label.partition("=")
        found = [n for n in all_nodes if n["labels"].get(key) == value]
        if len(found) != 1:
            names = ", ".join(n["hostname"] for n in found)
            what = f"{len(found)} nodes ({names}) have" if found else "no node has"
            raise PirexError(
                f"{what} the label {label}: give it to exactly one node (docker node update --label-add {label} NODE)"
            )
        if found[0]["state"] != "ready":
            raise PirexError(
                f"node {found[0]['hostname']} ({found[0]['id'][:12]}), the {role} node, is "
                f"{found[0]['state']}: start its Docker engine, or label another node"
            )
        out[role] = found[0]
    me = _docker("info", "--format", "{{.Swarm.NodeID}}").stdout.strip()
    out[DRIVER] = next(n for n in all_nodes if n["id"] == me)
    return out


class Stack:
    """A stack file deployed stage by stage as the stack `pirex`; its tasks watched."""

    def __init__(self, file: Path, env: dict[str, str], out: Path, nodes_by_id: dict[str, dict]):
        self.env, self.out, self.nodes = env, out, nodes_by_id
        self.doc = yaml.safe_load(file.read_text())
        self.deployed: list[str] = []

    def deploy(self, *services: str) -> None:
        """The stack file with only these services (anchors resolved): a deploy leaves the services
        already up alone, and re-deploying a finished one-shot service would update (restart) it."""
        self.deployed += services
        doc = {k: v for k, v in self.doc.items() if not k.startswith("x-")}
        doc["services"] = {s: self.doc["services"][s] for s in services}
        if experiment.SWARM_RECORD not in services:
            doc.pop("configs", None)
        stage = self.out / "stack" / f"stage-{len(self.deployed)}-{'-'.join(services)}.yml"
        stage.parent.mkdir(exist_ok=True)
        stage.write_text(yaml.safe_dump(doc, sort_keys=False))
        _docker(
            "stack",
            "deploy",
            "--resolve-image",
            "always",
            "-c",
            str(stage),
            STACK,
            timeout=300,
            env=self.env,
            check=True,
        )

    def tasks(self, service: str) -> list[dict]:
        r = _docker("service", "ps", "--no-trunc", "--format", "{{json .}}", f"{STACK}_{service}", check=False)
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

    def failure(self, service: str) -> str | None:
        for t in self.tasks(service):
            state = t.get("CurrentState", "").split()[0].lower() if t.get("CurrentState") else ""
            if state in FAILED or (t.get("Error") and state not in ("complete", "running")):
                node = self._node_text(t.get("Node", ""))
                return f"the {service} role failed on node {node}: {state}: {t.get('Error') or 'no error given'}"
        return None

    def _node_text(self, name: str) -> str:
        n = next((n for n in self.nodes.values() if name in (n["hostname"], n["id"])), None)
        return f"{n['hostname']} ({n['id'][:12]})" if n else name or "(none)"

    def wait(self, service: str, state: str, count: int, timeout: float) -> None:
        """Until `count` tasks of the service are in `state` (running = healthy, complete); PirexError on a
        failed task or the time limit."""
        tasks: list[dict] = []

        def done() -> bool:
            if why := self.failure(service):
                raise PirexError(why + self._log_end(service))
            tasks[:] = self.tasks(service)
            return sum(1 for t in tasks if t.get("CurrentState", "").lower().startswith(state)) >= count

        if not proc.wait_until(done, timeout, 2):
            now = "; ".join(f"{self._node_text(t.get('Node', ''))}: {t.get('CurrentState')}" for t in tasks)
            raise PirexError(
                f"the {service} role was not {state} after {timeout:.0f} s ({now or 'no task'}): "
                f"see {self.out / 'stack'} for the services' logs"
            )

    def _log_end(self, service: str) -> str:
        """The last lines the service's task printed (its own reason, e.g. a database that never answered)."""
        lines = [ln.split("|", 1)[-1].strip() for ln in self.logs(service).splitlines() if ln.strip()]
        return f"; its log ends: {' / '.join(lines[-2:])}" if lines else ""

    def logs(self, service: str) -> str:
        r = _docker("service", "logs", "--no-trunc", "--timestamps", f"{STACK}_{service}", timeout=120, check=False)
        return r.stdout + r.stderr

    def keep_logs(self) -> None:
        for s in self.deployed:
            (self.out / "stack" / f"{s}.log").write_text(self.logs(s))
        tasks = {s: self.tasks(s) for s in self.deployed}
        write_json(self.out / "stack" / "tasks.json", tasks)

    def remove(self) -> None:
        """docker stack rm, then until its services and tasks are gone (rm returns at once); the
        containers on the nodes go with their tasks."""
        leftovers.remove_stack(STACK)


def reap_killed(say=log.warning) -> None:
    """The stack (and overlay network) of a pirex swarm that was killed (its record in leftovers), removed
    before this run deploys its own; `pirex doctor --reap` does the same."""
    ours = [x for x in leftovers.find() if (x.kind, x.what) in (("stack", STACK), ("network", OVERLAY))]
    for x in ours:
        say("removing what a killed pirex swarm left: %s %s (run %s)", x.kind, x.what, x.run_id)
    if failed := leftovers.reap(ours):
        raise PirexError("could not remove what a killed pirex swarm left: " + "; ".join(failed))
    if ours:
        leftovers.forget_dead()


def _overlay(create: bool) -> None:
    if create:
        r = _docker("network", "inspect", OVERLAY, check=False)
        if not r.ok:
            _docker("network", "create", "--driver", "overlay", "--attachable", OVERLAY)
    else:
        _docker("network", "rm", OVERLAY, check=False)


def run(
    experiment_id: str,
    results_dir: Path,
    tag: str,
    profile: str = "quick",
    sets: tuple[str, ...] = (),
    network: str = "host",
    images: str = "",
    timeout: float | None = None,
) -> Path:
    """The whole run; returns its bundle (runner/deployment_bundle.py): the step swarm/0/ with the experiment's
    outputs and the samplers' CSVs; machine.json (this manager's), machine-node-<id>.json, machine-<role>.json,
    compose-<role>.json, nodes.json, stack/ with each stage's file and the services' logs at its top."""
    exp, sw = swarm_of(experiment_id)
    if profile not in TIMEOUT:
        raise PirexError(f"--profile {profile!r}: expected one of {', '.join(TIMEOUT)}")
    environment(exp, profile, sets, network)  # the parameters checked before anything starts
    all_nodes = nodes()
    roles = placement(all_nodes, sw.place)
    reap_killed()
    if STACK in _docker("stack", "ls", "--format", "{{.Name}}").stdout.split():
        raise PirexError(
            f"a stack named {STACK} is already deployed (by hand, or a run still going): "
            f"`docker stack rm {STACK}` first"
        )
    used = {"registry": images or f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}", "tag": tag}
    with deployment_bundle.writing(results_dir, exp, profile, sets, "swarm", used) as bundle:
        out = bundle.path  # records, stage files, logs; the driver's results go into the step
        bundle.write_machine(before=machine.record(out))
        reader = write_reader(out / "machine-reader.pyz")
        write_json(out / "nodes.json", {"nodes": all_nodes, "placement": {r: n["id"] for r, n in roles.items()}})
        with deployment_bundle.driver_step(bundle) as step, lock.measuring():
            hosts = {r: n["address"] for r, n in roles.items()}
            env = environment(exp, profile, sets, network, tag, images, step, reader, hosts)
            stack = Stack(stack_file(sw), env, out, {n["id"]: n for n in all_nodes})
            with leftovers.Owner(out.name, out):  # the stack recorded: a kill leaves it to be reaped
                leftovers.note("stack", name=STACK)
                if network == "overlay":
                    leftovers.note("network", name=OVERLAY)
                    _overlay(True)
                try:
                    _run_stages(exp, stack, roles, all_nodes, out, step, env, network, timeout or TIMEOUT[profile])
                finally:
                    stack.keep_logs()
                    stack.remove()
                    if network == "overlay":
                        _overlay(False)
            if why := outputs.problem(exp.outputs, step):
                raise PirexError(f"the driver {why}: see {out / 'stack' / f'{DRIVER}.log'}")
        bundle.write_machine(after=machine.record(out))
    return out


def _run_stages(
    exp: experiment.Experiment,
    stack: Stack,
    roles: dict[str, dict],
    all_nodes: list[dict],
    out: Path,
    step: Path,
    env: dict,
    network: str,
    limit: float,
) -> None:
    sw = exp.deployment.swarm
    started = time.monotonic()

    def left() -> float:
        return max(limit - (time.monotonic() - started), 1)

    record = experiment.SWARM_RECORD
    stack.deploy(record)  # every node's machine, before the roles start
    stack.wait(record, "complete", len(all_nodes), min(left(), 600))
    records = records_from_log(stack.logs(record))
    missing = [n["hostname"] for n in all_nodes if n["id"] not in records]
    if missing:
        raise PirexError(f"no machine record from node(s) {', '.join(missing)}: see {out / 'stack' / f'{record}.log'}")
    for n in all_nodes:
        write_json(out / f"machine-node-{n['id'][:12]}.json", {"node": n, "before": records[n["id"]]})
    for role, n in roles.items():
        how = {"variant": "docker", "network": "host" if network == "host" else "overlay"}
        write_json(out / f"machine-{role}.json", {"role": role, **how, "node": n, "before": records[n["id"]]})
        write_json(
            out / f"compose-{role}.json",
            {
                "role": role,
                "compose_file": sw.stack,
                "compose_file_sha256": sha256(stack_file(sw)),
                "deployment": "docker swarm stack",
                "node": n["id"],
                "hostname": n["hostname"],
                "environment": executors.masked({**env, "NETWORK_MODE": "host" if network == "host" else "overlay"}),
            },
        )
    *first, last = sw.stages
    for stage in first:  # running: a task with a health check runs once healthy; complete: a one-shot's end
        stack.deploy(stage.service)
        stack.wait(stage.service, stage.until, 1, left())
    stack.deploy(last.service)
    with _sampled(exp, env, step) if network == "host" else contextlib.nullcontext():
        stack.wait(last.service, last.until, 1, left())
    if why := next(filter(None, map(stack.failure, sw.servers)), None):  # a role that died under load spoils the run
        raise PirexError(why)


@contextlib.contextmanager
def _sampled(exp: experiment.Experiment, env: dict, out: Path):
    """The placed roles' samplers while the last stage runs. A role's process is on another node: what its
    URL tells only (its heap), no RSS (pid None)."""
    with contextlib.ExitStack() as running:
        for role in exp.deployment.swarm.place:
            url = f"http://{env[f'{role.upper()}_HOST']}:{env[f'{role.upper()}_PORT']}"
            for kind in exp.deployment.roles[role].samples:
                running.enter_context(samplers.sampler(kind, role, None, url, out))
        yield


def print_env(
    experiment_id: str,
    results_dir: Path,
    tag: str,
    profile: str = "quick",
    sets: tuple[str, ...] = (),
    network: str = "host",
    images: str = "",
) -> str:
    """`export NAME=VALUE` lines for a plain `docker stack deploy -c STACK_FILE pirex` on this manager: the
    experiment's numbers, the nodes' addresses, a results folder and the machine reader."""
    exp, sw = swarm_of(experiment_id)
    roles = placement(nodes(), sw.place)
    out = results_dir / exp.id / "swarm-by-hand"
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o777)
    env = environment(
        exp,
        profile,
        sets,
        network,
        tag,
        images,
        out,
        write_reader(out / "machine-reader.pyz"),
        {r: n["address"] for r, n in roles.items()},
    )
    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())


def describe(run_dir: Path) -> str:
    """Which node ran which role, from the bundle's nodes.json."""
    doc = Bundle.open(run_dir).json("nodes.json")
    by_id = {n["id"]: n for n in doc["nodes"]}
    return ", ".join(
        f"{role} on {by_id[i]['hostname']} ({i[:12]}, {by_id[i]['address']})" for role, i in doc["placement"].items()
    )
