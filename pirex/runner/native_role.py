"""One role of the split run (two Pis and a laptop) natively: the database or the web service of
compose/db.yml or web.yml, from the same image and .env file, chroot-ed into the image's exported
files on the host's own network, as the runner's `native` variant runs it. With the docker
compose roles this gives the paper's configurations both ways: web and database native (1, 3,
5) or in containers (2, 4, 6), on whichever host each role is started.

`pirex compose jpa-rest --role db|web --native --env-file F` starts the role in the background
and returns once it serves (the database loaded, the service healthy), like `up -d --wait`;
`--down` stops it. The background process is pirex itself (`--foreground`): it holds the
server, its mounts and the service's memory sampler, and undoes them all when it is stopped.
Its pid, log and readiness are files in the run's results folder beside the host's machine
record (native-<role>.pid, native-<role>.log, native-<role>.json)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from pirex import experiment, machine, proc
from pirex.bundle import utcnow
from pirex.errors import PirexError
from pirex.runner import compose, deployment, leftovers, native

DEFAULT_DATA_DIR = "/var/lib/pirex/jpa-rest-db"  # per database host, kept: the table is loaded once
READY_TIMEOUT = deployment.LOAD_TIMEOUT  # the database role loads the table before it serves


def _files(out: Path, role: str) -> dict[str, Path]:
    return {k: out / f"native-{role}.{k}" for k in ("pid", "log", "json")}


def _settings(env: dict[str, str]) -> dict:
    """The .env file's settings (compose/example.env), with compose's defaults."""
    values = {
        "db_user": env.get("DB_USER", "pirex"), "db_name": env.get("DB_NAME", "pirex"),
        "db_password": env.get("DB_PASSWORD", ""), "pool_size": env.get("DB_POOL_SIZE", "16"),
        "customers": env.get("CUSTOMERS", "10000"), "db_host": env.get("DB_HOST", ""),
        "db_port": env.get("DB_PORT", "5432"), "web_port": env.get("WEB_PORT", "8080"),
    }  # fmt: skip
    for name in ("PIREX_TAG", "DB_PASSWORD", "DB_HOST"):
        if not env.get(name):
            raise PirexError(f"set {name} in the .env file (compose/example.env documents it)")
    for key in ("db_port", "web_port", "customers", "pool_size"):
        if not values[key].isdigit():
            raise PirexError(f"{key.upper()} in the .env file must be a positive integer, not {values[key]!r}")
    return values


def _image(env: dict[str, str], name: str) -> dict:
    """The image as compose names it (PIREX_IMAGES/<name>:PIREX_TAG), which must be in this host's engine: its
    reference, ID and digests."""
    ref = f"{env.get('PIREX_IMAGES', 'localhost:5000/pirex')}/{name}:{env['PIREX_TAG']}"
    r = proc.run(["docker", "image", "inspect", ref], timeout=60, check=False)
    if r.returncode != 0:
        raise PirexError(f"{ref} is not in this host's Docker engine: `make build PLATFORMS=host && make load` "
                         "(or `docker pull` a published tag) first")  # fmt: skip
    info = json.loads(r.stdout)[0]
    return {"reference": ref, "image_id": info["Id"], "digests": info.get("RepoDigests") or []}


def start(role: str, env_file: Path, timeout: float = READY_TIMEOUT) -> Path:
    """Start the role in the background; return the results folder once it serves."""
    if reason := native.unavailable_reason():
        raise PirexError(reason)
    env = compose.read_env_file(env_file)
    _settings(env)  # bad settings fail here, not in the background
    out = compose.results_dir_of(env)
    out.mkdir(parents=True, exist_ok=True)
    files = _files(out, role)
    if files["pid"].exists() and _alive(int(files["pid"].read_text())):
        raise PirexError(f"the native {role} role already runs here (pid {files['pid'].read_text().strip()}): "
                         "stop it with --down first")  # fmt: skip
    files["json"].unlink(missing_ok=True)
    with open(files["log"], "wb") as log:
        p = subprocess.Popen([sys.executable, "-m", "pirex", "compose", "jpa-rest", "--role", role, "--native",
                              "--foreground", "--env-file", str(env_file.resolve())],
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    files["pid"].write_text(f"{p.pid}\n")
    deadline = time.monotonic() + timeout
    while True:
        if files["json"].exists() and json.loads(files["json"].read_text()).get("state") == "serving":
            return out
        if p.poll() is not None or time.monotonic() > deadline:
            if p.poll() is None:
                _stop_pid(p.pid)
            files["pid"].unlink(missing_ok=True)
            tail = "\n".join(files["log"].read_text(errors="replace").splitlines()[-25:])
            raise PirexError(f"the native {role} role did not come up; its log ({files['log']}) ends:\n{tail}")
        time.sleep(0.5)


def stop(role: str, env_file: Path) -> bool:
    """Stop the native role started here with this .env file; False when none runs."""
    out = compose.results_dir_of(compose.read_env_file(env_file))
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
    deadline = time.monotonic() + 2 * deployment.STOP_GRACE + 60
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            os.waitpid(pid, os.WNOHANG)  # our own child when started by this process (tests)
        except ChildProcessError:
            pass
    if _alive(pid):
        os.killpg(pid, signal.SIGKILL)


def serve(role: str, env_file: Path) -> None:
    """The role in the foreground until SIGTERM or SIGINT: start, wait until it serves, record, hold, undo."""
    env = compose.read_env_file(env_file)
    values = _settings(env)
    out = compose.results_dir_of(env)
    files = _files(out, role)
    dep = experiment.load("jpa-rest").deployment
    stopping = threading.Event()

    def on_signal(signum, _frame):  # while starting: unwind what was started; once serving: stop holding
        if ran.get("state") != "serving":
            raise SystemExit(128 + signum)
        stopping.set()

    ran: dict = {"role": role, "variant": "native", "settings": str(env_file.resolve()),
                 "environment": deployment.masked(env),
                 "started": utcnow().isoformat(), "images": {}}  # fmt: skip
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    record = {"role": role, "variant": "native", "before": machine.record(out)}
    (out / f"machine-{role}.json").write_text(json.dumps(record, indent=2) + "\n")
    with ExitStack() as stack:
        # its servers and mounts recorded: a SIGKILL leaves them to `pirex doctor --reap`
        stack.enter_context(leftovers.Owner(f"native-{role}-{os.getpid()}"))
        if role == "db":
            _serve_db(stack, dep, env, values, out, ran)
        else:
            _serve_web(stack, dep, env, values, out, ran)
        ran["state"] = "serving"
        files["json"].write_text(json.dumps(ran, indent=2) + "\n")
        print(f"{role}: serving natively; stop with `pirex compose jpa-rest --role {role} --down`", flush=True)
        while not stopping.wait(1):
            pass
        print(f"{role}: stopping", flush=True)
    ran["state"] = "stopped"
    ran["stopped"] = utcnow().isoformat()
    files["json"].write_text(json.dumps(ran, indent=2) + "\n")


def _serve_db(stack: ExitStack, dep, env: dict, values: dict, out: Path, ran: dict) -> None:
    db_image, web_image = _image(env, dep.db.image), _image(env, dep.web.image)
    data = Path(env.get("DB_DATA_DIR") or DEFAULT_DATA_DIR)
    if not (data / "PG_VERSION").exists():
        deployment.prepare_data_dir(data, db_image["reference"])
    port = int(values["db_port"])
    db_values = {**values, "port": port, "listen": "*"}  # every address of the host, as compose's db publishes
    argv = experiment.render(dep.db.command, db_values)
    db = deployment.start_native(stack, "db", db_image["reference"], argv, deployment.environment(dep.db, db_values),
                                 {data: dep.db.data}, out / "db.log")  # fmt: skip
    deployment.wait_line(db, dep.db.ready_line)
    load_values = {**values, "db_host": deployment.LOOPBACK, "db_port": port, "port": 0}
    started = time.monotonic()
    r = deployment.run_native(web_image["reference"], experiment.render(dep.loader, load_values),
                              deployment.environment(dep.web, load_values), deployment.LOAD_TIMEOUT)  # fmt: skip
    result = deployment.load_result(r, out / "loader.log")
    ran["load"] = {"wall_seconds": round(time.monotonic() - started, 3), "data_dir": str(data), **result}
    ran["listens"] = f"*:{port}"
    ran["images"] = {"db": db_image, "loader": web_image}
    ran["argv"] = argv


def _serve_web(stack: ExitStack, dep, env: dict, values: dict, out: Path, ran: dict) -> None:
    image = _image(env, dep.web.image)
    port = int(values["web_port"])
    web_values = {**values, "port": port}
    web_env = deployment.environment(dep.web, web_values)
    if env.get("WEB_JAVA_OPTS"):
        web_env["JAVA_OPTS"] = env["WEB_JAVA_OPTS"]
    argv = experiment.render(dep.web.command, web_values)
    w = deployment.start_native(stack, "web", image["reference"], argv, web_env, {}, out / "web.log")
    url = f"http://{deployment.LOOPBACK}:{port}"
    deployment.wait_health(w, url + dep.web.health, float(env.get("WEB_HEALTH_TIMEOUT_S", 180)))
    stack.enter_context(deployment.MemorySampler(w, url, out / "web-memory.csv"))
    ran["listens"] = f"*:{port}"
    ran["images"] = {"web": image}
    ran["argv"] = argv
