"""A deployment of several servers as a runner experiment (experiment.yaml: deployment; ICPE'18
Experiment 3 is one): for every step the roles (e.g. a database and a web service) start fresh,
in the order declared, under the variant measured, the same driver runs against them, and they
stop again in reverse; their logs, how they ran and what they sample go into the step's folder.

  native               each role chroot-ed into its image's exported files, on loopback ports
  docker               a container each on a network of the run (a role reached by its name,
                       one with a health path published on 127.0.0.1), as compose files do
  docker-host-network  a container each on the host's network (the paper's lesson, section 4.4)

The driver runs in a container on the host network for every variant alike: it stands where the
paper's laptop stood and is not part of what is compared. The roles' data directories live on the
host disk beside the bundle: the setup (a loader) fills them once per run, and every variant's
servers open the same files (the same binaries in both), so the variants meet the same data.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pirex.core import proc
from pirex.core.bundle import Bundle
from pirex.core.bundle_files import write_json
from pirex.core.errors import PirexError
from pirex.core.experiment import Deployment, Role, Setup, render
from pirex.runner import executors, leftovers, samplers, variants
from pirex.runner.container import ContainerSpec, run_labels
from pirex.runner.executors import Started

log = logging.getLogger(__name__)

DRIVER = variants.Variant("driver", host_network=True)  # the same for every variant
LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 300  # a database recovering or a JVM starting on a Pi 3 is ready well within this


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def environment(role: Role, values: dict) -> dict[str, str]:
    return dict(zip(role.environment, render(tuple(role.environment.values()), values), strict=True))


class Servers:
    """What the steps of one run share: the images, a Docker network, the roles' data directories
    filled once by the setup. Entered once per run (and again on --resume)."""

    def __init__(
        self,
        dep: Deployment,
        images: dict[str, dict],
        params: dict,
        bundle: Bundle,
        workdir: Path,
        by_name: dict[str, variants.Variant],
    ):
        self.dep, self.images, self.params, self.bundle = dep, images, params, bundle
        self.workdir, self.by_name = workdir, by_name
        self.prefix = f"pirex-{bundle.run_id}"
        self.network = f"{self.prefix}-net"
        self.data = {name: workdir / f"{name}-data" for name, r in dep.roles.items() if r.data}
        self._stack = ExitStack()

    def __enter__(self) -> Servers:
        try:
            if any(v.bridged for v in self.by_name.values()):
                leftovers.note("network", name=self.network)
                proc.run(["docker", "network", "create", *leftovers.docker_args(), self.network], timeout=120)
                self._stack.callback(proc.run, ["docker", "network", "rm", self.network], timeout=120, check=False)
            if self.dep.setup:
                self._setup(self.dep.setup)
            else:  # data directories without a setup: the servers fill them themselves, kept across steps
                for name, d in self.data.items():
                    if not d.is_dir():
                        prepare_data_dir(d, self.images[self.dep.roles[name].image]["reference"])
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    # --- the data, once per run ---------------------------------------------------------------------------------

    def _setup(self, setup: Setup) -> None:
        """Fill the data directories with the first variant of the plan; record how fast it went."""
        loads = self.bundle.json(f"{setup.record}.json", dict, default={"loads": []}).get("loads") or []
        if loads and all(d.is_dir() and any(d.iterdir()) for d in self.data.values()):
            return  # a resumed run: set up before its interruption
        v = self.by_name[self.bundle.plan[0]["variant"]]
        for name, d in self.data.items():
            proc.run(["rm", "-rf", d], timeout=600)
            prepare_data_dir(d, self.images[self.dep.roles[name].image]["reference"])
        out = self.bundle.path / "setup"
        out.mkdir(exist_ok=True)
        runs_in = self.dep.roles[setup.runs_in]
        with self.deployed(v, out, setup.needs) as where:
            values = {**self.params, **where, "port": 0}
            argv = render(setup.command, values)
            started = time.monotonic()
            r = self._run_to_end(
                v,
                self.images[runs_in.image],
                argv,
                environment(runs_in, values),
                f"{self.prefix}-setup",
                setup.timeout_s,
            )
            seconds = time.monotonic() - started
        result = setup_result(r, out / "setup.log", setup)
        loads.append(
            {
                "variant": v.name,
                "data_dir": "on the host disk beside the bundle, removed after the run",
                "shared_by": list(self.bundle.variants),
                "wall_seconds": round(seconds, 3),
                **result,
            }
        )
        write_json(self.bundle.path / f"{setup.record}.json", {"loads": loads})
        said = ", ".join(f"{k} {v}" for k, v in result.items())
        print(f"{setup.what}: {said or 'done'} in {seconds:.1f} s (once per run, shared by every variant)", flush=True)

    def _run_to_end(
        self, v: variants.Variant, image: dict, argv: list[str], env: dict, name: str, timeout: float
    ) -> proc.Result:
        return v.executor.to_end(image, argv, env, name, timeout, self._network(v))

    def _network(self, v: variants.Variant) -> str:
        return "host" if v.host_network else self.network

    # --- one step -----------------------------------------------------------------------------------------------

    @contextmanager
    def deployed(self, v: variants.Variant, out: Path, only: tuple[str, ...] | None = None) -> Iterator[dict]:
        """The roles (or `only` these) up under v, in order, each ready before the next starts; yields
        where they are: <role>_host and <role>_port as the roles reach each other, <role>_url where
        this host reaches a role with a health path. All stop on every exit path, their logs and how
        they ran in out/."""
        bridged = v.bridged
        roles = [r for r in self.dep.roles.values() if only is None or r.name in only]
        where: dict = {}
        for r in roles:
            where[f"{r.name}_host"] = r.name if bridged else LOOPBACK
            where[f"{r.name}_port"] = r.port if bridged else free_port()
        urls = {}
        how: dict = {"variant": v.name}
        with ExitStack() as stack:
            stack.callback(lambda: write_json(out / "deployment.json", how))
            for r in roles:
                port = where[f"{r.name}_port"]
                values = {**self.params, **where, "port": port, "listen": "*" if bridged else LOOPBACK}
                publish = (free_port(), port) if bridged and r.health else None
                binds = {self.data[r.name]: r.data} if r.data else {}
                s = self._start(stack, r, v, values, out, binds, how, publish)
                if not r.health:
                    wait_line(s, r.ready_line)
                    continue
                url = f"http://{LOOPBACK}:{publish[0] if publish else port}"
                wait_health(s, url + r.health, float(self.params.get("ready_timeout_s", READY_TIMEOUT)))
                for kind in r.samples:
                    stack.enter_context(samplers.sampler(kind, r.name, s.pid(), url, out))
                urls[f"{r.name}_url"] = url
            yield {**where, **urls}

    def _start(
        self,
        stack: ExitStack,
        role: Role,
        v: variants.Variant,
        values: dict,
        out: Path,
        binds: dict[Path, str],
        how: dict,
        publish: tuple[int, int] | None = None,
    ) -> Started:
        name, image = role.name, self.images[role.image]
        argv = render(role.command, values)
        env = environment(role, values)
        where = executors.Serving(
            f"{self.prefix}-{name}",
            self._network(v),
            alias=None if v.host_network else name,
            publish=f"{LOOPBACK}:{publish[0]}:{publish[1]}" if publish else None,
            address=f"{LOOPBACK}:{values['port']}",
        )
        started, how[name] = v.executor.serve(stack, name, image, argv, env, binds, out / f"{name}.log", where)
        return started


def setup_result(r: proc.Result, log_path: Path, setup: Setup) -> dict[str, str]:
    """The setup's output kept in log_path; its closing line `<program>: status=... key=value ...` (the
    loader's: status, rows, rate, the server's version) as a dict, or a clear error when it failed."""
    log_path.write_text(r.stdout + r.stderr)
    if not r.ok:
        raise PirexError(f"the setup ({setup.what}) failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    program = re.escape(Path(setup.command[0]).name)
    found = re.findall(rf"{program}: (status=\S+(?: \w+=\S+)*)", r.stdout + r.stderr)
    return dict(kv.split("=", 1) for kv in found[-1].split()) if found else {}


def prepare_data_dir(data: Path, db_image: str) -> None:
    """A directory owned by the database image's user (PostgreSQL refuses any other), made if missing."""
    data.mkdir(parents=True, exist_ok=True)
    user = image_user(db_image)
    uid, _, gid = user.partition(":")
    try:
        os.chown(data, int(uid), int(gid or uid))
    except PermissionError:
        raise PirexError(
            f"the database's data directory {data} must belong to the image's user {user}, "
            "and only root can give it away: run pirex as root (sudo)"
        ) from None
    data.chmod(0o700)


def image_user(reference: str) -> str:
    """uid:gid the image runs as."""
    spec = ContainerSpec(reference, ("-c", 'echo "$(id -u):$(id -g)"'), rm=True, labels=run_labels(), entrypoint="sh")
    r = proc.run(spec.argv(), timeout=300)
    return r.stdout.strip()


def wait_line(s: Started, line: str, timeout: float = READY_TIMEOUT) -> None:
    """Until the server's log shows `line`; a clear error when it stops or the time is up."""

    def seen() -> str | None:
        if line in s.logs():
            return "printed"
        return None if s.running() else "stopped"

    if proc.wait_until(seen, timeout, 0.5) == "printed":
        return
    why = "stopped" if not s.running() else f"did not print {line!r} within {timeout:.0f} s"
    raise PirexError(f"the {s.name} {why}; its log ends:\n{_tail(s.logs())}")


def wait_health(s: Started, url: str, timeout: float = READY_TIMEOUT) -> None:
    last = wait_healthy(url, timeout, s.running)
    if last is not None:
        raise PirexError(
            f"the {s.name} service did not report UP at {url} within {timeout:.0f} s "
            f"(last answer: {last}); its log ends:\n{_tail(s.logs())}"
        )


def wait_healthy(url: str, timeout: float, running=lambda: True) -> str | None:
    """Poll a health URL until it answers {"status":"UP"}: None when it did, else the last answer."""
    last, stopped = "no answer", False

    def answered() -> bool:
        """UP, or the process has stopped: no use asking again."""
        nonlocal last, stopped
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                body = r.read().decode(errors="replace")
            if json.loads(body).get("status") == "UP":
                return True
            last = body[:500]
        except urllib.error.HTTPError as e:  # 503 while a component (the database) is DOWN
            last = f"HTTP {e.code}: {e.read().decode(errors='replace')[:500]}"
        except (OSError, ValueError) as e:
            last = str(e)
        stopped = not running()
        return stopped

    if proc.wait_until(answered, timeout, 1) and not stopped:
        return None
    return f"{last} (the process has stopped)" if stopped else last


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])
