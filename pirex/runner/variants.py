"""How one step runs under each variant. The same image, the same command, the same user; what
differs is exactly what the variant names.

  native                     the image's own files via chroot on the host disk (native.py, executors.Native)
  docker                     a default `docker run` (bridge network, overlayfs, seccomp profile)
  docker-host-network        ... with --network host (no bridge, no NAT)
  docker-bind-workdir        ... with the working directory bind-mounted from the host disk
  docker-seccomp-unconfined  ... with --security-opt seccomp=unconfined

An experiment's privileges (experiment.Privileges) are granted to every variant alike, and a
matrix case (ICPE'18 Table 5) runs on top of one of these with its changes: CPUs, a RAM drive
as working directory, parameters; machine-wide settings (governor, swap) are host.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from pirex.core.errors import PirexError
from pirex.core.experiment import Case, Privileges, aa_base
from pirex.runner import executors
from pirex.runner.executors import StepRun

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
            runs_as=self.executor.kind,
            cpus=case.cpus,
            ram_workdir_mb=case.ram_workdir_mb,
            parameters=dict(case.set),
        )

    def host_address(self, bridge_gateway: str) -> str:
        """Where this variant reaches a service on this host (B6's sink)."""
        return bridge_gateway if self.bridged else LOOPBACK

    @property
    def executor(self) -> executors.Executor:
        """What runs this variant's processes: the one place that chooses between native and Docker."""
        return (executors.Native if self.is_native else executors.Docker)(self)

    def describe(self) -> dict:
        """What the bundle records about how this variant ran."""
        d = self.executor.describe()
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
    image = {"reference": image_ref, "platform": platform}
    return variant.executor.step(image, argv, outdir, workdir, timeout, container_name)
