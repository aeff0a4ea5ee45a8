"""One role of a split run natively (e.g. ICPE'18 Experiment 3 over two Pis and a laptop): a
server of the experiment's deployment, as its host's compose file (compose/db.yml, web.yml) runs it,
from the same image and .env file, chroot-ed into the image's exported files on the host's own
network, as the runner's `native` variant runs it. With the docker compose roles this gives the
paper's configurations both ways: web and database native (1, 3, 5) or in containers (2, 4, 6),
on whichever host each role is started.

`pirex compose EXPERIMENT --role ROLE --native --env-file F` starts the role in the background and
returns once it serves (ready, and the deployment's setup done where its last needed role runs: the
database loaded), like `up -d --wait`; `--down` stops it. The background process is pirex itself
(`--foreground`): it holds the server, its mounts and its samplers, and undoes them all when it is
stopped. Its pid, log and readiness are files in the run's results folder beside the host's machine
record (native-<role>.pid, native-<role>.log, native-<role>.json).

The .env file gives the experiment's parameters by their upper-case names (over the profile named
by PROFILE), each role's address and port as <ROLE>_HOST and <ROLE>_PORT (default: the port in
experiment.yaml), and per role <ROLE>_DATA_DIR (its data directory, kept: default
/var/lib/pirex/<experiment>-<role>), <ROLE>_JAVA_OPTS and <ROLE>_HEALTH_TIMEOUT_S (default 180)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, suppress
from pathlib import Path

from pirex.core import experiment, machine, proc
from pirex.core.bundle import utcnow
from pirex.core.bundle_files import write_json
from pirex.core.errors import PirexError
from pirex.core.experiment_deployment import Deployment, Role
from pirex.images import settings
from pirex.runner import compose, deployment, executors, leftovers, native, samplers, variants

NATIVE = variants.by_name("native").executor  # a role run here as the native variant runs its servers
HEALTH_TIMEOUT = 180  # seconds: a clear error, not a hang, when the database stays away


def _files(out: Path, role: str) -> dict[str, Path]:
    return {k: out / f"native-{role}.{k}" for k in ("pid", "log", "json")}


def _settings(exp: experiment.Experiment, role: str, env: dict[str, str]) -> dict:
    """The values a role's command and environment take: the parameters (the .env file's over the
    profile's), every role's host and port; a missing or malformed setting named."""
    dep = exp.deployment
    values = settings.parameters(exp, env, env.get("PROFILE", "quick"))
    needed = ["PIREX_TAG"] + [n.upper() for n in exp.declared if executors.SECRET.search(n)]
    used = experiment.placeholders(dep.roles[role].command + tuple(dep.roles[role].environment.values()))
    needed += [f"{r.upper()}_HOST" for r in dep.roles if r != role and f"{r}_host" in used]
    for name in needed:
        if not env.get(name):
            raise PirexError(f"set {name} in the .env file (compose/example.env documents it)")
    for r in dep.roles.values():
        port = env.get(f"{r.name.upper()}_PORT", str(r.port))
        if not port.isdigit():
            raise PirexError(f"{r.name.upper()}_PORT in the .env file must be a positive integer, not {port!r}")
        values.update({f"{r.name}_host": env.get(f"{r.name.upper()}_HOST", ""), f"{r.name}_port": int(port)})
    return values


def _image(env: dict[str, str], name: str) -> dict:
    """The image as compose names it (PIREX_IMAGES/<name>:PIREX_TAG), which must be in this host's engine: its
    reference, ID and digests."""
    ref = f"{env.get('PIREX_IMAGES', 'localhost:5000/pirex')}/{name}:{env['PIREX_TAG']}"
    r = proc.run(["docker", "image", "inspect", ref], timeout=60, check=False)
    if r.returncode != 0:
        raise PirexError(
            f"{ref} is not in this host's Docker engine: `make build PLATFORMS=host && make load` "
            "(or `docker pull` a published tag) first"
        )
    info = json.loads(r.stdout)[0]
    return {"reference": ref, "image_id": info["Id"], "digests": info.get("RepoDigests") or []}


def start(experiment_id: str, role: str, env_file: Path) -> Path:
    """Start the role in the background; return the results folder once it serves."""
    if reason := native.unavailable_reason():
        raise PirexError(reason)
    exp = _experiment(experiment_id, role)
    env = compose.read_env_file(env_file)
    _settings(exp, role, env)  # bad settings fail here, not in the background
    out = compose.results_dir_of(exp.id, env)
    setup = exp.deployment.setup
    timeout = setup.timeout_s if setup and role == setup.needs[-1] else deployment.READY_TIMEOUT + HEALTH_TIMEOUT
    out.mkdir(parents=True, exist_ok=True)
    files = _files(out, role)
    if files["pid"].exists() and _alive(int(files["pid"].read_text())):
        raise PirexError(
            f"the native {role} role already runs here (pid {files['pid'].read_text().strip()}): "
            "stop it with --down first"
        )
    files["json"].unlink(missing_ok=True)
    with open(files["log"], "wb") as log:
        p = proc.start(
            [
                sys.executable,
                "-m",
                "pirex",
                "compose",
                exp.id,
                "--role",
                role,
                "--native",
                "--foreground",
                "--env-file",
                str(env_file.resolve()),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    files["pid"].write_text(f"{p.pid}\n")

    def up() -> str | None:
        if files["json"].exists() and json.loads(files["json"].read_text()).get("state") == "serving":
            return "serving"
        return None if p.poll() is None else "exited"

    if proc.wait_until(up, timeout, 0.5) == "serving":
        return out
    if p.poll() is None:
        _stop_pid(p.pid)
    files["pid"].unlink(missing_ok=True)
    tail = "\n".join(files["log"].read_text(errors="replace").splitlines()[-25:])
    raise PirexError(f"the native {role} role did not come up; its log ({files['log']}) ends:\n{tail}")


def stop(experiment_id: str, role: str, env_file: Path) -> bool:
    """Stop the native role started here with this .env file; False when none runs."""
    out = compose.results_dir_of(experiment_id, compose.read_env_file(env_file))
    pid_file = _files(out, role)["pid"]
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text())
    if _alive(pid):
        _stop_pid(pid)
    pid_file.unlink(missing_ok=True)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_pid(pid: int) -> None:
    """SIGTERM: the foreground pirex undoes everything (its servers get STOP_GRACE each); SIGKILL to the
    group only when it does not end in time."""
    os.kill(pid, signal.SIGTERM)

    def gone() -> bool:
        with suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # our own child when started by this process (tests)
        return not _alive(pid)

    if not proc.wait_until(gone, 2 * executors.STOP_GRACE + 60, 0.5):
        os.killpg(pid, signal.SIGKILL)


def _experiment(experiment_id: str, role: str) -> experiment.Experiment:
    exp, dep = compose.deployment_of(experiment_id)
    if role not in dep.roles:
        raise PirexError(f"--native runs a server of the deployment ({', '.join(dep.roles)}), not {role!r}")
    return exp


def serve(experiment_id: str, role: str, env_file: Path) -> None:
    """The role in the foreground until SIGTERM or SIGINT: start, wait until it serves, record, hold, undo."""
    exp = _experiment(experiment_id, role)
    env = compose.read_env_file(env_file)
    values = _settings(exp, role, env)
    out = compose.results_dir_of(exp.id, env)
    files = _files(out, role)
    stopping = threading.Event()

    def on_signal(signum, _frame):  # while starting: unwind what was started; once serving: stop holding
        if ran.get("state") != "serving":
            raise SystemExit(128 + signum)
        stopping.set()

    ran: dict = {
        "role": role,
        "variant": "native",
        "settings": str(env_file.resolve()),
        "environment": executors.masked(env),
        "started": utcnow().isoformat(),
        "images": {},
    }
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    record = {"role": role, "variant": "native", "before": machine.record(out)}
    write_json(out / f"machine-{role}.json", record)
    with ExitStack() as stack:
        # its servers and mounts recorded: a SIGKILL leaves them to `pirex doctor --reap`
        stack.enter_context(leftovers.Owner(f"native-{role}-{os.getpid()}"))
        _serve(stack, exp, exp.deployment.roles[role], env, values, out, ran)
        ran["state"] = "serving"
        write_json(files["json"], ran)
        print(f"{role}: serving natively; stop with `pirex compose {exp.id} --role {role} --down`", flush=True)
        while not stopping.wait(1):
            pass
        print(f"{role}: stopping", flush=True)
    ran["state"] = "stopped"
    ran["stopped"] = utcnow().isoformat()
    write_json(files["json"], ran)


def _serve(
    stack: ExitStack, exp: experiment.Experiment, role: Role, env: dict, values: dict, out: Path, ran: dict
) -> None:
    """The role's server on every address of the host (as the compose file publishes it), ready; then the
    deployment's setup when this is the last role it needs (e.g. the loader, once the database is up)."""
    dep: Deployment = exp.deployment
    key = role.name.upper()
    image = _image(env, role.image)
    port = values[f"{role.name}_port"]
    role_values = {**values, "port": port, "listen": "*"}
    role_env = deployment.environment(role, role_values)
    if env.get(f"{key}_JAVA_OPTS"):
        role_env["JAVA_OPTS"] = env[f"{key}_JAVA_OPTS"]
    binds: dict[Path, str] = {}
    if role.data:
        data = Path(env.get(f"{key}_DATA_DIR") or f"/var/lib/pirex/{exp.id}-{role.name}")  # kept: set up once
        if not data.is_dir() or not any(data.iterdir()):
            deployment.prepare_data_dir(data, image["reference"])
        binds = {data: role.data}
    argv = experiment.render(role.command, role_values)
    where = executors.Serving(address=f"*:{port}")
    server, how = NATIVE.serve(stack, role.name, image, argv, role_env, binds, out / f"{role.name}.log", where)
    ran["listens"] = how["listens"]
    ran["images"] = {role.name: image}
    ran["argv"] = argv
    if role.health:
        url = f"http://{deployment.LOOPBACK}:{port}"
        deployment.wait_health(server, url + role.health, float(env.get(f"{key}_HEALTH_TIMEOUT_S", HEALTH_TIMEOUT)))
        for kind in role.samples:
            stack.enter_context(samplers.sampler(kind, role.name, server.pid(), url, out))
    else:
        deployment.wait_line(server, role.ready_line)
    setup = dep.setup
    if setup and setup.needs[-1] == role.name:
        runs_in = dep.roles[setup.runs_in]
        setup_image = _image(env, runs_in.image)
        setup_values = {**values, f"{role.name}_host": deployment.LOOPBACK, f"{role.name}_port": port, "port": 0}
        setup_argv = experiment.render(setup.command, setup_values)
        setup_env = deployment.environment(runs_in, setup_values)
        started = time.monotonic()
        r = NATIVE.to_end(setup_image, setup_argv, setup_env, "setup", setup.timeout_s, "host")
        result = deployment.setup_result(r, out / "setup.log", setup)
        ran["load"] = {
            "wall_seconds": round(time.monotonic() - started, 3),
            "data_dir": ", ".join(map(str, binds)),
            **result,
        }
        ran["images"]["setup"] = setup_image
