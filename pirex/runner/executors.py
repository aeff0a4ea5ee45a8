"""How a variant's processes run, behind one interface: a measured step, a command run to its end (a
deployment's setup), a server held until its stack closes (a deployment's role). What differs between
running natively and in Docker lives here and nowhere else; a Variant (variants.py) names which of the
two runs it and with what changes, and `Variant.executor` is the one place that chooses.

  Native   chroot into the image's exported files on the host disk (native.py), outside any container
  Docker   `docker run`, with what the variant adds to a default one (ContainerSpec)

Every process is started under a timeout or onto an ExitStack that stops it, and noted in leftovers
before it starts, so that a run killed with SIGKILL leaves nothing `pirex doctor --reap` cannot find.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pirex.core import proc
from pirex.core.bundle import STDOUT, STDOUT_TIMES
from pirex.runner import duet, faults, leftovers, native
from pirex.runner.container import ContainerSpec, run_labels

STOP_GRACE = 60  # seconds between SIGTERM and SIGKILL: PostgreSQL's shutdown checkpoint, Tomcat's graceful stop
SECRET = re.compile(r"PASSWORD|SECRET|TOKEN", re.I)  # settings whose values no record shows


@dataclass
class StepRun:
    argv: list[str]
    returncode: int
    seconds: float


@dataclass(frozen=True)
class Serving:
    """Where a role's server runs: in Docker its container's name, the network it joins ("host": none of its
    own) under which name and what it publishes (host address:port:its port); natively the address it listens
    on, as the record shows it."""

    container: str = ""
    network: str = ""
    alias: str | None = None
    publish: str | None = None
    address: str = ""


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


class Executor(ABC):
    """One variant's way of running processes. `variant` is a variants.Variant (not imported: it imports this)."""

    kind: ClassVar[str]  # "native" or "docker", as a matrix case or an A/A copy records what it runs as

    def __init__(self, variant):
        self.variant = variant

    @abstractmethod
    def step(self, image: dict, argv: list[str], outdir: Path, workdir: Path, timeout: float, name: str) -> StepRun:
        """argv once, its outputs in outdir (seen as /results), stdout, stderr and the lines' times beside them;
        `name` is the container's, when there is one."""

    @abstractmethod
    def to_end(
        self, image: dict, argv: list[str], env: dict[str, str], name: str, timeout: float, network: str
    ) -> proc.Result:
        """A command run to its end (a deployment's setup), its output returned."""

    @abstractmethod
    def serve(
        self,
        stack: ExitStack,
        name: str,
        image: dict,
        argv: list[str],
        env: dict[str, str],
        binds: dict[Path, str],
        log_path: Path,
        where: Serving,
    ) -> tuple[Started, dict]:
        """A role's server started in the background and stopped when the stack closes (its log kept in
        log_path); with how it ran, for the step's deployment.json."""

    @abstractmethod
    def describe(self) -> dict:
        """What the bundle records about how the variant's steps run."""

    @abstractmethod
    def beside(
        self, kin: int, image: dict, own: Path, name: str, container: str
    ) -> tuple[Executor, Callable[[], None] | None]:
        """This executor as side `name` of a duet in which `kin` sides (itself included) run the same way, their
        work directories under `own`; and what the side must do in its own process before it starts (None:
        nothing). Called in the runner before any side starts."""


class Native(Executor):
    kind = "native"

    def step(self, image, argv, outdir, workdir, timeout, name):
        v = self.variant
        outdir.chmod(0o777)  # the image's user writes there
        root, config = native.rootfs(image["reference"])
        if v.user:
            config = {**config, "User": v.user}
        tmpfs = {"/work": v.ram_workdir_mb} if v.ram_workdir_mb else {}
        binds = {outdir: "/results"}
        if v.bind_workdir:  # the work directory on a given storage device, as docker's -v does it
            _open_workdir(workdir)
            binds[workdir] = "/work"
        with native.mounted(root, binds, tmpfs):
            cmd = native.command(root, config, argv, {})
            if v.cpus:
                cmd = ["taskset", "-c", v.cpus, *cmd]
            what = f"native {v.name}"
            return _timed(cmd, outdir, timeout, started=lambda pid: leftovers.note_process(pid, what))

    def to_end(self, image, argv, env, name, timeout, network):
        root, config = native.rootfs(image["reference"])
        with native.mounted(root, {}):  # undone after
            return proc.run(
                native.command(root, config, argv, env),
                timeout=timeout,
                check=False,
                started=lambda pid: leftovers.note_process(pid, f"native {argv[0]}"),
            )

    def serve(self, stack, name, image, argv, env, binds, log_path, where):
        """In its own process group; stopped (SIGTERM, then SIGKILL after STOP_GRACE) and its mounts undone when
        the stack closes."""
        root, config = native.rootfs(image["reference"])
        stack.enter_context(native.mounted(root, binds))
        logf = stack.enter_context(open(log_path, "wb"))
        cmd = native.command(root, config, argv, env)
        p = proc.start(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        stack.callback(proc.stop_group, p, STOP_GRACE)
        leftovers.note_process(p.pid, f"native {name}")
        how = {"runs": "chroot into the image's exported files", "argv": argv, "image": image["reference"]}
        return Started(name, log_path, popen=p), how | {"listens": where.address}

    def describe(self):
        v = self.variant
        d = {"runs": "chroot into the image's exported filesystem, outside any container"}
        d |= {"user": v.user} if v.user else {}
        d |= {"taskset": v.cpus} if v.cpus else {}
        d |= {"workdir": f"tmpfs of {v.ram_workdir_mb} MB"} if v.ram_workdir_mb else {}
        return d

    def beside(self, kin, image, own, name, container):
        root = native.rootfs(image["reference"])[0]  # the image's export made once, before the sides start
        if kin < 2:
            return self, None
        # two sides in one exported root: each its own mounts, /tmp and /work
        binds = {own / f"{name}-tmp": root / "tmp"}
        return Native(dataclasses.replace(self.variant, bind_workdir=True)), lambda: duet.own_mounts(binds)


class Docker(Executor):
    kind = "docker"

    def step(self, image, argv, outdir, workdir, timeout, name):
        v = self.variant
        outdir.chmod(0o777)  # the image's user writes there
        # no --rm: the container is inspected (killed? OOM?) and removed below, on every exit path
        spec = ContainerSpec(
            image["reference"],
            tuple(argv),
            name=name,
            labels=run_labels(),
            results=outdir,
            platform=image.get("platform") or None,
            extra=tuple(v.extra_docker_args(workdir)),
        )
        if v.bind_workdir:
            _open_workdir(workdir)
        leftovers.note("container", name=name)
        try:
            r = _timed(spec.argv(), outdir, timeout)
            _explain_end(r, name, outdir)
            return r
        finally:  # a killed client leaves its container running: remove it on every exit path
            _remove(name)

    def to_end(self, image, argv, env, name, timeout, network):
        spec = ContainerSpec(
            image["reference"],
            tuple(argv),
            rm=True,
            name=name,
            labels=run_labels(),
            platform=image["platform"],
            network=network,
            env=tuple(env.items()),
        )
        leftovers.note("container", name=name)
        try:
            return proc.run(spec.argv(), timeout=timeout, check=False)
        finally:
            _remove(name)

    def serve(self, stack, name, image, argv, env, binds, log_path, where):
        spec = ContainerSpec(
            image["reference"],
            tuple(argv),
            detach=True,
            name=where.container,
            labels=run_labels(),
            platform=image["platform"],
            extra=tuple(self.variant.docker_args),
            network=where.network,
            network_alias=where.alias,
            publish=where.publish,
            volumes=tuple(binds.items()),
            env=tuple(env.items()),
        )
        cmd = spec.argv()
        _remove(where.container)  # left by a killed run
        leftovers.note("container", name=where.container)
        stack.callback(_stop_container, where.container, log_path)
        proc.run(cmd, timeout=300, what=f"starting the {name} container")
        how = {
            "runs": "docker run",
            "docker_args": [_masked(a) for a in cmd[2 : -1 - len(spec.command)]],  # between `docker run` and the image
            "image": image["reference"],
            "argv": argv,
        }
        return Started(name, log_path, container=where.container), how

    def describe(self):
        return {"runs": "docker run", "extra_docker_args": self.variant.extra_docker_args()}

    def beside(self, kin, image, own, name, container):
        leftovers.note("container", name=container)  # before the side starts: the side's own note may be lost
        return self, None


def masked(env: dict[str, str]) -> dict[str, str]:
    """Settings as recorded: a secret's value shows "(set)"."""
    return {k: ("(set)" if SECRET.search(k) else v) for k, v in env.items()}


def _masked(arg: str) -> str:
    """A docker run argument as recorded: an environment setting of a secret shows "(set)", not its value."""
    key, sep, _ = arg.partition("=")
    return f"{key}=(set)" if sep and SECRET.search(key) and "-" not in key else arg


def _stop_container(name: str, log_path: Path) -> None:
    proc.run(["docker", "stop", "-t", str(STOP_GRACE), name], timeout=STOP_GRACE + 60, check=False)
    r = proc.run(["docker", "logs", name], timeout=60, check=False)
    if r.ok:
        log_path.write_text(r.stdout + r.stderr)
    _remove(name)


def _open_workdir(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    workdir.chmod(0o777)


def _remove(container: str) -> None:
    proc.run(["docker", "rm", "-f", container], timeout=120, check=False)


def _explain_end(r: StepRun, container: str, outdir: Path) -> None:
    """A container ended by something outside the workload (docker kill, the OOM killer, the daemon
    gone): say so at the end of stderr.txt, where the runner's error message quotes it."""
    if r.returncode == 0:
        return
    stderr = (outdir / "stderr.txt").read_text(errors="replace")
    if faults.docker_down(stderr):
        why = "the Docker daemon stopped answering: start it again, then resume the run"
    else:
        state = proc.run(["docker", "inspect", "-f", "{{.State.OOMKilled}}", container], timeout=60, check=False)
        why = faults.container_end(r.returncode, state.stdout.strip() == "true" if state.ok else None)
    if why:
        with open(outdir / "stderr.txt", "a") as f:
            f.write(f"\npirex: {why}\n")


def _timed(cmd: list[str], outdir: Path, timeout: float, started=None) -> StepRun:
    start = time.monotonic()  # monotonic: a step's duration survives the wall clock jumping
    r = proc.run(cmd, timeout=timeout, check=False, started=started, stamp_lines=True)
    seconds = time.monotonic() - start
    (outdir / STDOUT).write_text(r.stdout)
    (outdir / "stderr.txt").write_text(r.stderr)
    # when each line arrived: a benchmark's iterations in time, to pair those of a duet's two sides that overlapped
    (outdir / STDOUT_TIMES).write_text("".join(f"{t:.3f}\n" for t in r.stdout_times or []))
    return StepRun(cmd, r.returncode, seconds)
