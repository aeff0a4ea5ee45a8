"""How one step runs under each variant. The same image, the same command, the same user; what
differs is exactly what the variant names.

  native                     the image's own files via chroot on the host disk (native.py)
  docker                     a default `docker run` (bridge network, overlayfs, seccomp profile)
  docker-host-network        ... with --network host (no bridge, no NAT)
  docker-bind-workdir        ... with the working directory bind-mounted from the host disk
  docker-seccomp-unconfined  ... with --security-opt seccomp=unconfined
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from pirex import proc
from pirex.errors import PirexError
from pirex.runner import native

LOOPBACK = "127.0.0.1"


@dataclass
class Variant:
    name: str
    docker_args: list[str] = field(default_factory=list)
    host_network: bool = False
    bind_workdir: bool = False

    @property
    def is_native(self) -> bool:
        return self.name == "native"

    def sink_host(self, bridge_gateway: str) -> str:
        """Where this variant reaches a service on the host (the B6 sink)."""
        return LOOPBACK if self.is_native or self.host_network else bridge_gateway

    def describe(self) -> dict:
        """What the bundle records about how this variant ran."""
        if self.is_native:
            return {"runs": "chroot into the image's exported filesystem, outside any container"}
        return {"runs": "docker run", "extra_docker_args": self.docker_args
                + (["--network", "host"] if self.host_network else [])
                + (["-v", "<host dir>:/work"] if self.bind_workdir else [])}  # fmt: skip


def by_name(name: str) -> Variant:
    known = {
        "native": Variant("native"),
        "docker": Variant("docker"),
        "docker-host-network": Variant("docker-host-network", host_network=True),
        "docker-bind-workdir": Variant("docker-bind-workdir", bind_workdir=True),
        "docker-seccomp-unconfined": Variant("docker-seccomp-unconfined", ["--security-opt", "seccomp=unconfined"]),
    }
    if name not in known:
        raise PirexError(f"no variant {name!r}; known: {', '.join(known)}")
    return known[name]


@dataclass
class StepRun:
    argv: list[str]
    returncode: int
    seconds: float


def run_step(variant: Variant, image_ref: str, argv: list[str], outdir: Path, workdir: Path, timeout: float,
             container_name: str, platform: str | None = None) -> StepRun:  # fmt: skip
    """Run argv once under variant; outputs to outdir (seen as /results), stdout/stderr beside them."""
    outdir.chmod(0o777)  # the image's user writes there
    if variant.is_native:
        root, config = native.rootfs(image_ref)
        binds = {outdir: "/results"}
        with native.mounted(root, binds):
            cmd = native.command(root, config, argv, {})
            return _timed(cmd, outdir, timeout)
    cmd = ["docker", "run", "--rm", "--name", container_name, "-v", f"{outdir}:/results", *variant.docker_args]
    if platform:
        cmd += ["--platform", platform]
    if variant.host_network:
        cmd += ["--network", "host"]
    if variant.bind_workdir:
        workdir.mkdir(parents=True, exist_ok=True)
        workdir.chmod(0o777)
        cmd += ["-v", f"{workdir}:/work"]
    try:
        return _timed([*cmd, image_ref, *argv], outdir, timeout)
    finally:  # a killed client leaves its container running: remove it on every exit path
        proc.run(["docker", "rm", "-f", container_name], timeout=120, check=False)


def _timed(cmd: list[str], outdir: Path, timeout: float) -> StepRun:
    start = time.monotonic()
    r = proc.run(cmd, timeout=timeout, check=False)
    seconds = time.monotonic() - start
    (outdir / "stdout.txt").write_text(r.stdout)
    (outdir / "stderr.txt").write_text(r.stderr)
    return StepRun(cmd, r.returncode, seconds)
