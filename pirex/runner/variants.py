"""How one step runs under each variant. The same image, the same command, the same user; what
differs is exactly what the variant names.

  native                     the image's own files via chroot on the host disk (native.py)
  docker                     a default `docker run` (bridge network, overlayfs, seccomp profile)
  docker-host-network        ... with --network host (no bridge, no NAT)
  docker-bind-workdir        ... with the working directory bind-mounted from the host disk
  docker-seccomp-unconfined  ... with --security-opt seccomp=unconfined

An experiment's privileges (experiment.Privileges) are granted to every variant alike, and a
matrix case (ICPE'18 Table 5) runs on top of one of these with its changes: CPUs, a RAM drive
as working directory, parameters; machine-wide settings (governor, swap) are host.py's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pirex.core import proc
from pirex.core.bundle import STDOUT, STDOUT_TIMES
from pirex.core.errors import PirexError
from pirex.core.experiment import Case, Privileges, aa_base
from pirex.runner import faults, leftovers, native
from pirex.runner.container import ContainerSpec, run_labels

LOOPBACK = "127.0.0.1"


@dataclass
class Variant:
    name: str
    docker_args: list[str] = field(default_factory=list)
    host_network: bool = False
    bind_workdir: bool = False
    runs_as: str = ""  # native or docker; empty: as the name says
    user: str | None = None  # instead of the image's user (an experiment that needs root)
    cpus: str | None = None  # CPU list: docker --cpuset-cpus, native taskset
    ram_workdir_mb: int | None = None  # working directory on a RAM drive (tmpfs) of this size
    parameters: dict = field(default_factory=dict)  # a matrix case's parameters
    granted: dict = field(default_factory=dict)  # the experiment's privileges, as recorded

    @property
    def is_native(self) -> bool:
        return (self.runs_as or self.name) == "native"

    @property
    def bridged(self) -> bool:
        """In a container on a Docker network of its own (not native, not --network host): its servers are reached
        by name on that network, and published to this host."""
        return not self.is_native and not self.host_network

    def with_privileges(self, priv: Privileges) -> Variant:
        if not (priv.root or priv.capabilities or priv.unmask_proc):
            return self
        granted = {
            "why": priv.why,
            "native": "runs as root" if priv.root else "the image's user",
            "docker_args": priv.docker_args(),
        }
        return replace(
            self,
            user="0:0" if priv.root else self.user,
            docker_args=[*self.docker_args, *priv.docker_args()],
            granted=granted,
        )

    def for_case(self, case: Case) -> Variant:
        """This variant running a matrix case: the case's name, with its changes."""
        return replace(
            self,
            name=case.name,
            runs_as="native" if self.is_native else "docker",
            cpus=case.cpus,
            ram_workdir_mb=case.ram_workdir_mb,
            parameters=dict(case.set),
        )

    def host_address(self, bridge_gateway: str) -> str:
        """Where this variant reaches a service on this host (B6's sink)."""
        return bridge_gateway if self.bridged else LOOPBACK

    def describe(self) -> dict:
        """What the bundle records about how this variant ran."""
        if self.is_native:
            d = {"runs": "chroot into the image's exported filesystem, outside any container"}
            d |= {"user": self.user} if self.user else {}
            d |= {"taskset": self.cpus} if self.cpus else {}
            d |= {"workdir": f"tmpfs of {self.ram_workdir_mb} MB"} if self.ram_workdir_mb else {}
        else:
            d = {"runs": "docker run", "extra_docker_args": self.extra_docker_args()}
        if self.parameters:
            d["parameters"] = self.parameters
        if self.granted:
            d["privileges"] = self.granted
        return d

    def extra_docker_args(self, workdir: Path | str = "<host dir>") -> list[str]:
        """What this variant adds to a default `docker run`; the record shows the work directory
        bind as `<host dir>`, a step passes the real one."""
        args = list(self.docker_args)
        args += ["--network", "host"] if self.host_network else []
        args += ["-v", f"{workdir}:/work"] if self.bind_workdir else []
        args += ["--cpuset-cpus", self.cpus] if self.cpus else []
        if self.ram_workdir_mb:
            # Docker makes it root's 0755 whatever mode= says (it copies the image's /work up onto it): the
            # entrypoint (images/base/pirex-entrypoint) hands it to the workload's user
            args += ["--tmpfs", f"/work:rw,exec,size={self.ram_workdir_mb}m,mode=1777"]
        return args


def by_name(name: str) -> Variant:
    known = {
        "native": Variant("native"),
        "docker": Variant("docker"),
        "docker-host-network": Variant("docker-host-network", host_network=True),
        "docker-bind-workdir": Variant("docker-bind-workdir", bind_workdir=True),
        "docker-seccomp-unconfined": Variant("docker-seccomp-unconfined", ["--security-opt", "seccomp=unconfined"]),
    }
    base = aa_base(name)
    if base not in known:
        raise PirexError(f"no variant {name!r}; known: {', '.join(known)} (and <variant>-aa, an A/A copy of one)")
    if base != name:  # the A/A copy: the same variant under its own name
        return replace(known[base], name=name, runs_as="native" if base == "native" else "docker")
    return known[name]


@dataclass
class StepRun:
    argv: list[str]
    returncode: int
    seconds: float


def run_step(
    variant: Variant,
    image_ref: str,
    argv: list[str],
    outdir: Path,
    workdir: Path,
    timeout: float,
    container_name: str,
    platform: str | None = None,
) -> StepRun:
    """Run argv once under variant; outputs to outdir (seen as /results), stdout/stderr beside them."""
    outdir.chmod(0o777)  # the image's user writes there
    if variant.is_native:
        root, config = native.rootfs(image_ref)
        if variant.user:
            config = {**config, "User": variant.user}
        tmpfs = {"/work": variant.ram_workdir_mb} if variant.ram_workdir_mb else {}
        binds = {outdir: "/results"}
        if variant.bind_workdir:  # the work directory on a given storage device, as docker's -v does it
            workdir.mkdir(parents=True, exist_ok=True)
            workdir.chmod(0o777)
            binds[workdir] = "/work"
        with native.mounted(root, binds, tmpfs):
            cmd = native.command(root, config, argv, {})
            if variant.cpus:
                cmd = ["taskset", "-c", variant.cpus, *cmd]
            what = f"native {variant.name}"
            return _timed(cmd, outdir, timeout, started=lambda pid: leftovers.note_process(pid, what))
    # no --rm: the container is inspected (killed? OOM?) and removed below, on every exit path
    spec = ContainerSpec(
        image_ref,
        tuple(argv),
        name=container_name,
        labels=run_labels(),
        results=outdir,
        platform=platform or None,
        extra=tuple(variant.extra_docker_args(workdir)),
    )
    if variant.bind_workdir:
        workdir.mkdir(parents=True, exist_ok=True)
        workdir.chmod(0o777)
    leftovers.note("container", name=container_name)
    try:
        r = _timed(spec.argv(), outdir, timeout)
        _explain_end(r, container_name, outdir)
        return r
    finally:  # a killed client leaves its container running: remove it on every exit path
        proc.run(["docker", "rm", "-f", container_name], timeout=120, check=False)


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
