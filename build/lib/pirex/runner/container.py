"""One `docker run` as data: what the runner's containers are started with (a step under a variant, a deployment's
role and its setup, a service, the probes of an image), and the one place that spells it as an argv.

The flags come in one fixed order, each only when set: -d, --rm, --name, the labels, the step's /results, --platform,
the variant's own arguments, --network, --network-alias, -p, -v, -e, --entrypoint; then the image and its command.
Every caller's argv is the same, flag for flag, as the one it wrote out by hand before (test_container.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pirex.runner import leftovers


@dataclass(frozen=True)
class ContainerSpec:
    image: str  # the reference the container runs
    command: tuple[str, ...] = ()  # after the image: its arguments, or the command instead of the image's own
    detach: bool = False  # -d: started in the background
    rm: bool = False  # --rm: removed by Docker when it ends
    name: str | None = None
    labels: tuple[str, ...] = ()  # key=value, each a --label (run_labels(): what the current run starts)
    results: Path | None = None  # a step's outputs folder on the host, seen as /results (its -v before --platform)
    platform: str | None = None
    extra: tuple[str, ...] = ()  # a variant's own arguments (Variant.docker_args, Variant.extra_docker_args)
    network: str | None = None  # "host", or a network of the run
    network_alias: str | None = None  # the name the other containers of the network reach it by
    publish: str | None = None  # -p: [address:]host-port:container-port
    volumes: tuple[tuple[Path | str, str], ...] = ()  # (host path, path inside), each a -v
    env: tuple[tuple[str, str], ...] = ()  # (name, value), each a -e
    entrypoint: str | None = None

    def argv(self) -> list[str]:
        """`docker run ...` with this spec's flags, the image and its command."""
        cmd = ["docker", "run"]
        cmd += ["-d"] if self.detach else []
        cmd += ["--rm"] if self.rm else []
        cmd += ["--name", self.name] if self.name is not None else []
        for label in self.labels:
            cmd += ["--label", label]
        cmd += ["-v", f"{self.results}:/results"] if self.results is not None else []
        cmd += ["--platform", self.platform] if self.platform is not None else []
        cmd += self.extra
        cmd += ["--network", self.network] if self.network is not None else []
        cmd += ["--network-alias", self.network_alias] if self.network_alias is not None else []
        cmd += ["-p", self.publish] if self.publish is not None else []
        for src, inside in self.volumes:
            cmd += ["-v", f"{src}:{inside}"]
        for k, val in self.env:
            cmd += ["-e", f"{k}={val}"]
        cmd += ["--entrypoint", self.entrypoint] if self.entrypoint is not None else []
        return [*cmd, self.image, *self.command]


def run_labels() -> tuple[str, ...]:
    """The labels of what the current run starts, as leftovers.docker_args() gives them (none outside a run)."""
    return tuple(leftovers.docker_args()[1::2])  # ["--label", "pirex.run=<run-id>"]: test_container.py says so
