"""A client-server experiment as a runner experiment (ICPE'18 Experiment 3, experiments/jpa-rest):
for every step the database and the web service start fresh under the variant measured, the
same driver runs against them, and both stop again; their logs, how they ran and the service's
heap and RSS over time go into the step's folder.

  native               each role chroot-ed into its image's exported files, on loopback ports
  docker               a container each on a network of the run (the database reached by name,
                       the service's port published on 127.0.0.1), as compose/jpa-rest.yml does
  docker-host-network  a container each on the host's network (the paper's lesson, section 4.4)

The driver runs in a container on the host network for every variant alike: it stands where the
paper's laptop stood and is not part of what is compared. The database's data directory lives on
the host disk beside the bundle: the loader fills it once per run, and every variant's database
opens the same files (the same PostgreSQL binaries in both), so the variants meet the same table.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pirex import proc
from pirex.bundle import Bundle
from pirex.errors import PirexError
from pirex.experiment import Deployment, Role, render
from pirex.runner import leftovers, native, variants

log = logging.getLogger(__name__)

DRIVER = variants.Variant("driver", host_network=True)  # the same for every variant
LOOPBACK = "127.0.0.1"
LOAD_TIMEOUT = 6 * 3600  # the loader: the paper's 10,000,000 rows on a Pi with a hard disk
READY_TIMEOUT = 300  # a database recovering or a JVM starting on a Pi 3 is ready well within this
STOP_GRACE = 60  # seconds between SIGTERM and SIGKILL: PostgreSQL's shutdown checkpoint, Tomcat's graceful stop
SAMPLE_S = 5  # the service's heap and RSS, every this many seconds
SECRET = re.compile(r"PASSWORD|SECRET|TOKEN", re.I)  # settings whose values no record shows
LOAD_LINE = re.compile(r"pirex-load-customers: (status=\S+(?: \w+=\S+)*)")
MEMORY_COLUMNS = ("t_s", "rss_bytes", "heap_used_bytes", "heap_committed_bytes")


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def environment(role: Role, values: dict) -> dict[str, str]:
    return dict(zip(role.environment, render(tuple(role.environment.values()), values), strict=True))


class Started:
    """A role's server, running in the background: its log, whether it still runs, its pid."""

    def __init__(self, name: str, log_path: Path, popen: subprocess.Popen | None = None, container: str = ""):
        self.name, self.log_path, self.popen, self.container = name, log_path, popen, container

    def logs(self) -> str:
        if self.container:
            r = proc.run(["docker", "logs", self.container], timeout=60, check=False)
            return r.stdout + r.stderr
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def running(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        r = proc.run(["docker", "inspect", "-f", "{{.State.Running}}", self.container], timeout=60, check=False)
        return r.stdout.strip() == "true"

    def pid(self) -> int | None:
        if self.popen is not None:
            return self.popen.pid
        r = proc.run(["docker", "inspect", "-f", "{{.State.Pid}}", self.container], timeout=60, check=False)
        return int(r.stdout.strip()) if r.ok and r.stdout.strip().isdigit() else None


class Servers:
    """What the steps of one run share: the images, a Docker network, the database's data
    directory with the table loaded once. Entered once per run (and again on --resume)."""

    def __init__(self, dep: Deployment, images: dict[str, dict], params: dict, bundle: Bundle,
                 workdir: Path, by_name: dict[str, variants.Variant]):  # fmt: skip
        self.dep, self.images, self.params, self.bundle = dep, images, params, bundle
        self.workdir, self.by_name = workdir, by_name
        self.prefix = f"pirex-{bundle.run_id}"
        self.network = f"{self.prefix}-net"
        self.data = workdir / "db-data"
        self._stack = ExitStack()

    def __enter__(self) -> Servers:
        try:
            if any(not v.is_native and not v.host_network for v in self.by_name.values()):
                leftovers.note("network", name=self.network)
                proc.run(["docker", "network", "create", *leftovers.docker_args(), self.network], timeout=120)
                self._stack.callback(proc.run, ["docker", "network", "rm", self.network], timeout=120, check=False)
            self._load()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    # --- the table, once per run --------------------------------------------------------------------------------

    def _load(self) -> None:
        """Fill the data directory with the first variant of the plan; record how fast it went."""
        record = self.bundle.path / "db-load.json"
        loads = json.loads(record.read_text())["loads"] if record.exists() else []
        if (self.data / "PG_VERSION").exists() and loads:
            return
        v = self.by_name[self.bundle.manifest["plan"][0]["variant"]]
        self._prepare_data_dir()
        out = self.bundle.path / "load"
        out.mkdir(exist_ok=True)
        with self.deployed(v, out, web=False) as ports:
            values = {**self.params, **ports, "port": 0}
            argv = render(self.dep.loader, values)
            env = environment(self.dep.web, values)
            started = time.monotonic()
            r = self._run_to_end(v, self.images[self.dep.web.image], argv, env, f"{self.prefix}-loader")
            seconds = time.monotonic() - started
        result = load_result(r, out / "loader.log")
        loads.append({"variant": v.name, "data_dir": "on the host disk beside the bundle, removed after the run",
                      "shared_by": list(self.bundle.manifest["variants"]), "wall_seconds": round(seconds, 3),
                      **result})  # fmt: skip
        record.write_text(json.dumps({"loads": loads}, indent=2) + "\n")
        print(f"customer table: {result.get('status', '?')}, {result.get('rows', '?')} rows, "
              f"{result.get('rows_per_s', '?')} rows/s (loaded once, shared by every variant)", flush=True)  # fmt: skip

    def _prepare_data_dir(self) -> None:
        proc.run(["rm", "-rf", self.data], timeout=600)
        prepare_data_dir(self.data, self.images[self.dep.db.image]["reference"])

    def _run_to_end(self, v: variants.Variant, image: dict, argv: list[str], env: dict, name: str) -> proc.Result:
        if v.is_native:
            return run_native(image["reference"], argv, env, LOAD_TIMEOUT)
        cmd = ["docker", "run", "--rm", "--name", name, *leftovers.docker_args(), "--platform", image["platform"],
               *self._network_args(v)]  # fmt: skip
        leftovers.note("container", name=name)
        for k, val in env.items():
            cmd += ["-e", f"{k}={val}"]
        try:
            return proc.run([*cmd, image["reference"], *argv], timeout=LOAD_TIMEOUT, check=False)
        finally:
            proc.run(["docker", "rm", "-f", name], timeout=120, check=False)

    def _network_args(self, v: variants.Variant) -> list[str]:
        return ["--network", "host"] if v.host_network else ["--network", self.network]

    # --- one step -----------------------------------------------------------------------------------------------

    @contextmanager
    def deployed(self, v: variants.Variant, out: Path, web: bool = True) -> Iterator[dict]:
        """The database (and the web service) up under v; yields the ports and, with web, the URL the
        driver uses. Both stop on every exit path, their logs and how they ran in out/."""
        bridged = not v.is_native and not v.host_network
        db_port = self.dep.db.port if bridged else free_port()
        ports = {"db_host": "db" if bridged else LOOPBACK, "db_port": db_port}
        how: dict = {"variant": v.name}
        with ExitStack() as stack:
            stack.callback(lambda: (out / "deployment.json").write_text(json.dumps(how, indent=2) + "\n"))
            db_values = {**self.params, "port": db_port, "listen": "*" if bridged else LOOPBACK, **ports}
            db = self._start(stack, "db", self.dep.db, v, db_values, out, {self.data: self.dep.db.data}, how)
            self._wait_line(db, self.dep.db.ready_line)
            if web:
                web_port = self.dep.web.port if bridged else free_port()
                host_port = free_port() if bridged else web_port
                w = self._start(stack, "web", self.dep.web, v, {**self.params, **ports, "port": web_port}, out, {},
                                how, publish=(host_port, web_port) if bridged else None)  # fmt: skip
                url = f"http://{LOOPBACK}:{host_port}"
                self._wait_health(w, url + self.dep.web.health)
                stack.enter_context(MemorySampler(w, url, out / "web-memory.csv"))
                ports["web_url"] = url
            yield ports

    def _start(self, stack: ExitStack, name: str, role: Role, v: variants.Variant, values: dict, out: Path,
               binds: dict[Path, str], how: dict, publish: tuple[int, int] | None = None) -> Started:  # fmt: skip
        image = self.images[role.image]
        argv = render(role.command, values)
        env = environment(role, values)
        log_path = out / f"{name}.log"
        if v.is_native:
            how[name] = {"runs": "chroot into the image's exported files", "argv": argv, "image": image["reference"],
                         "listens": f"{LOOPBACK}:{values['port']}"}  # fmt: skip
            return start_native(stack, name, image["reference"], argv, env, binds, log_path)
        container = f"{self.prefix}-{name}"
        cmd = ["docker", "run", "-d", "--name", container, *leftovers.docker_args(), "--platform", image["platform"],
               *v.docker_args, *self._network_args(v)]  # fmt: skip
        if not v.host_network:
            cmd += ["--network-alias", name]
        if publish:
            cmd += ["-p", f"{LOOPBACK}:{publish[0]}:{publish[1]}"]
        for src, inside in binds.items():
            cmd += ["-v", f"{src}:{inside}"]
        for k, val in env.items():
            cmd += ["-e", f"{k}={val}"]
        proc.run(["docker", "rm", "-f", container], timeout=120, check=False)  # left by a killed run
        leftovers.note("container", name=container)
        stack.callback(_stop_container, container, log_path)
        proc.run([*cmd, image["reference"], *argv], timeout=300, what=f"starting the {name} container")
        how[name] = {"runs": "docker run", "docker_args": [_masked(a) for a in cmd[2:]], "image": image["reference"],
                     "argv": argv}  # fmt: skip
        return Started(name, log_path, container=container)

    def _wait_line(self, s: Started, line: str) -> None:
        wait_line(s, line)

    def _wait_health(self, s: Started, url: str) -> None:
        wait_health(s, url, float(self.params.get("ready_timeout_s", READY_TIMEOUT)))


def run_native(reference: str, argv: list[str], env: dict[str, str], timeout: float) -> proc.Result:
    """A command run to its end chroot-ed into the image's exported files (its mounts undone after)."""
    root, config = native.rootfs(reference)
    with native.mounted(root, {}):
        return proc.run(native.command(root, config, argv, env), timeout=timeout, check=False,
                        started=lambda pid: leftovers.note_process(pid, f"native {argv[0]}"))  # fmt: skip


def load_result(r: proc.Result, log_path: Path) -> dict[str, str]:
    """The loader's output kept in log_path; its closing line (status, rows, rate, PostgreSQL's version...)
    as a dict, or a clear error when it failed."""
    log_path.write_text(r.stdout + r.stderr)
    if not r.ok:
        raise PirexError(f"loading the customer table failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    m = LOAD_LINE.search(r.stdout + r.stderr)
    return dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}


def masked(env: dict[str, str]) -> dict[str, str]:
    """Settings as recorded: a secret's value shows "(set)"."""
    return {k: ("(set)" if SECRET.search(k) else v) for k, v in env.items()}


def prepare_data_dir(data: Path, db_image: str) -> None:
    """A directory owned by the database image's user (PostgreSQL refuses any other), made if missing."""
    data.mkdir(parents=True, exist_ok=True)
    user = image_user(db_image)
    uid, _, gid = user.partition(":")
    try:
        os.chown(data, int(uid), int(gid or uid))
    except PermissionError:
        raise PirexError(f"the database's data directory {data} must belong to the image's user {user}, "
                         "and only root can give it away: run pirex as root (sudo)") from None  # fmt: skip
    data.chmod(0o700)


def image_user(reference: str) -> str:
    """uid:gid the image runs as."""
    r = proc.run(["docker", "run", "--rm", *leftovers.docker_args(), "--entrypoint", "sh", reference, "-c",
                  'echo "$(id -u):$(id -g)"'], timeout=300)  # fmt: skip
    return r.stdout.strip()


def start_native(stack: ExitStack, name: str, reference: str, argv: list[str], env: dict[str, str],
                 binds: dict[Path, str], log_path: Path) -> Started:  # fmt: skip
    """A role's server chroot-ed into its image's exported files, in its own process group; stopped
    (SIGTERM, then SIGKILL after STOP_GRACE) and its mounts undone when the stack closes."""
    root, config = native.rootfs(reference)
    stack.enter_context(native.mounted(root, binds))
    logf = stack.enter_context(open(log_path, "wb"))
    p = subprocess.Popen(native.command(root, config, argv, env), stdout=logf, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    stack.callback(proc.stop_group, p, STOP_GRACE)
    leftovers.note_process(p.pid, f"native {name}")
    return Started(name, log_path, popen=p)


def wait_line(s: Started, line: str, timeout: float = READY_TIMEOUT) -> None:
    """Until the server's log shows `line`; a clear error when it stops or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if line in s.logs():
            return
        if not s.running():
            break
        time.sleep(0.5)
    why = "stopped" if not s.running() else f"did not print {line!r} within {timeout:.0f} s"
    raise PirexError(f"the {s.name} {why}; its log ends:\n{_tail(s.logs())}")


def wait_health(s: Started, url: str, timeout: float = READY_TIMEOUT) -> None:
    last = wait_healthy(url, timeout, s.running)
    if last is not None:
        raise PirexError(f"the {s.name} service did not report UP at {url} within {timeout:.0f} s "
                         f"(last answer: {last}); its log ends:\n{_tail(s.logs())}")  # fmt: skip


def wait_healthy(url: str, timeout: float, running=lambda: True) -> str | None:
    """Poll a health URL until it answers {"status":"UP"}: None when it did, else the last answer."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                body = r.read().decode(errors="replace")
            if json.loads(body).get("status") == "UP":
                return None
            last = body[:500]
        except urllib.error.HTTPError as e:  # 503 while a component (the database) is DOWN
            last = f"HTTP {e.code}: {e.read().decode(errors='replace')[:500]}"
        except (OSError, ValueError) as e:
            last = str(e)
        if not running():
            return f"{last} (the process has stopped)"
        time.sleep(1)
    return last


def _stop_container(name: str, log_path: Path) -> None:
    proc.run(["docker", "stop", "-t", str(STOP_GRACE), name], timeout=STOP_GRACE + 60, check=False)
    r = proc.run(["docker", "logs", name], timeout=60, check=False)
    if r.ok:
        log_path.write_text(r.stdout + r.stderr)
    proc.run(["docker", "rm", "-f", name], timeout=120, check=False)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])


def tree_rss_bytes(pid: int, procfs: Path = Path("/proc")) -> int | None:
    """Resident memory of a process and all its descendants (a container's init and the JVM)."""
    pids, i, total = [pid], 0, 0
    while i < len(pids):
        for children in (procfs / str(pids[i]) / "task").glob("*/children"):
            try:
                pids += [int(c) for c in children.read_text().split()]
            except OSError:
                pass
        i += 1
    found = False
    for p in pids:
        try:
            for line in (procfs / str(p) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    found = True
        except OSError:
            continue  # gone meanwhile
    return total if found else None


def jvm_heap(url: str) -> tuple[float | None, float | None]:
    """Heap used and committed, bytes, from Spring Boot actuator's metrics endpoint."""
    out = []
    for metric in ("jvm.memory.used", "jvm.memory.committed"):
        try:
            with urllib.request.urlopen(f"{url}/actuator/metrics/{metric}?tag=area:heap", timeout=5) as r:
                out.append(float(json.loads(r.read())["measurements"][0]["value"]))
        except (OSError, ValueError, KeyError, IndexError):
            out.append(None)
    return out[0], out[1]


class MemorySampler:
    """The service's RSS (process tree) and JVM heap every SAMPLE_S seconds while the step runs,
    into web-memory.csv (a soak run shows them flat or growing)."""

    def __init__(self, s: Started, url: str, path: Path, every: float = SAMPLE_S):
        self.s, self.url, self.path, self.every = s, url, path, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pirex-memory-sampler")

    def __enter__(self) -> MemorySampler:
        self.pid = self.s.pid()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        start = time.monotonic()
        with open(self.path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(MEMORY_COLUMNS)
            while True:
                rss = tree_rss_bytes(self.pid) if self.pid else None
                used, committed = jvm_heap(self.url)
                w.writerow([round(time.monotonic() - start, 1), rss, used, committed])
                f.flush()
                if self._stop.wait(self.every):
                    return


def _masked(arg: str) -> str:
    """A docker run argument as recorded: an environment setting of a secret shows "(set)", not its value."""
    key, sep, _ = arg.partition("=")
    return f"{key}=(set)" if sep and SECRET.search(key) and "-" not in key else arg
