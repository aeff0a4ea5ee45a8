"""Driving docker buildx bake over docker-bake.hcl: the catalog of images, and the build."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import builder
from pirex.images.platforms import Platform

log = logging.getLogger(__name__)

BAKE_FILE = paths.REPO / "docker-bake.hcl"
BUILD_TIMEOUT = 3 * 3600


def variable_default(name: str) -> str:
    """A variable's default as docker-bake.hcl writes it (no buildx needed)."""
    m = re.search(rf'variable "{name}" \{{\s*default = "([^"]+)"', BAKE_FILE.read_text())
    if not m:
        raise KeyError(f"{name} is not a variable with a default in {BAKE_FILE}")
    return m[1]


@dataclass(frozen=True)
class Target:
    name: str
    context: str
    tags: tuple[str, ...]
    args: dict
    dockerfile: str = "Dockerfile"
    contexts: dict = field(default_factory=dict)
    platforms: tuple[str, ...] = ()

    def dockerfile_path(self, cwd: Path = paths.REPO) -> Path:
        """The Dockerfile bake builds this target from (bake resolves it within the context)."""
        return cwd / self.context / self.dockerfile


@dataclass(frozen=True)
class Graph:
    """The build graph as `docker buildx bake --print` resolves it."""

    images: list[str]  # the group's targets, in build order: the images of the collection
    targets: dict[str, Target]  # the images and every target they link (shared build stages)

    def catalog(self) -> list[Target]:
        return [self.targets[n] for n in self.images]


def graph(
    group: str = "default",
    *,
    files: tuple[Path | str, ...] = (BAKE_FILE,),
    env: dict[str, str] | None = None,
    cwd: Path = paths.REPO,
) -> Graph:
    """Resolve group (with any extra bake files, such as docker/metadata-action's) as bake does."""
    if proc.which("docker") is None:
        raise PirexError("docker is not on PATH: the build graph (docker-bake.hcl) is read by docker buildx bake")
    out = builder.buildx(
        "bake",
        *(a for f in files for a in ("-f", f)),
        "--print",
        group,
        timeout=60,
        env=env or {},
        cwd=cwd,
        what="docker buildx bake --print",
    ).stdout
    doc = json.loads(out)
    targets = {
        n: Target(
            n,
            t.get("context", "."),
            tuple(t.get("tags", [])),
            t.get("args", {}),
            t.get("dockerfile", "Dockerfile"),
            t.get("contexts", {}),
            tuple(t.get("platforms", [])),
        )
        for n, t in doc["target"].items()
    }
    return Graph(doc["group"][group]["targets"], targets)


def catalog(group: str = "default", env: dict[str, str] | None = None) -> list[Target]:
    """The images of the collection, as the build graph declares them (in build order)."""
    return graph(group, env=env).catalog()


EXTRA_CA_SYSTEM = Path("/usr/local/share/ca-certificates")


def extra_ca_dir() -> Path:
    """The CAs Maven must trust in Java build stages: the host's locally added ones, if any."""
    if any(EXTRA_CA_SYSTEM.glob("*.crt")):
        log.info("Java build stages trust the extra CAs in %s as well", EXTRA_CA_SYSTEM)
        return EXTRA_CA_SYSTEM
    return paths.REPO / "images" / "extra-ca"


def bake_vars(
    *,
    registry: str,
    tag: str,
    platforms: list[Platform],
    version: str,
    revision: str,
    bases: dict[str, str] | None = None,
) -> dict[str, str]:
    return {
        "REGISTRY": registry,
        "TAG": tag,
        "VERSION": version,
        "REVISION": revision,
        "PLATFORMS": ",".join(map(str, platforms)),
        "EXTRA_CA_DIR": str(extra_ca_dir()),
        **(bases or {}),
    }


def build(
    builder_name: str,
    variables: dict[str, str],
    targets: list[str],
    *,
    sbom: bool = False,
    files: tuple[Path | str, ...] = (BAKE_FILE,),
    platforms_of: dict[str, list[Platform]] | None = None,
) -> dict[str, dict]:
    """Build targets for every platform (PLATFORMS; platforms_of narrows a target to its own) and push
    them to the registry in REGISTRY, with provenance. Returns bake's metadata of each target (its
    manifest-list digest is "containerimage.digest"), as the release workflow's bake-action reports it too."""
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "metadata.json"
        outside = [v for k, v in variables.items() if k.endswith("_DIR") and not Path(v).is_relative_to(paths.REPO)]
        cmd = [
            "bake",
            *(f"--allow=fs.read={d}" for d in outside),  # bake asks before reading outside the repository
            "--builder",
            builder_name,
            *(a for f in files for a in ("-f", f)),
            "--push",
            "--provenance",
            "mode=max",
            *(["--sbom", "true"] if sbom else []),
            *(a for t, ps in (platforms_of or {}).items() for a in ("--set", f"{t}.platform={','.join(map(str, ps))}")),
            "--metadata-file",
            meta,
            *targets,
        ]
        log.info("building %s for %s", ", ".join(targets), variables["PLATFORMS"])
        for t, ps in (platforms_of or {}).items():
            log.info("building %s for %s only", t, ", ".join(map(str, ps)))
        builder.buildx(
            *cmd, timeout=BUILD_TIMEOUT, env=variables, cwd=paths.REPO, capture=False, what="docker buildx bake"
        )
        data = json.loads(meta.read_text())
    return {t: data[t] for t in targets if t in data}


def digests(metadata: dict[str, dict]) -> dict[str, str]:
    """{target: manifest-list digest} of what bake pushed."""
    return {t: m["containerimage.digest"] for t, m in metadata.items() if "containerimage.digest" in m}
