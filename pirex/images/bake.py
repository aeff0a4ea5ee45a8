"""Driving docker buildx bake over docker-bake.hcl: the catalog of images, and the build."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pirex import paths
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


def catalog(group: str = "default", env: dict[str, str] | None = None) -> list[Target]:
    """The images of the collection, as the build graph declares them (in build order)."""
    out = builder.buildx(
        "bake",
        "-f",
        BAKE_FILE,
        "--print",
        group,
        timeout=60,
        env=env or {},
        cwd=paths.REPO,
        what="docker buildx bake --print",
    ).stdout
    doc = json.loads(out)
    names = doc["group"][group]["targets"]
    return [
        Target(
            n, doc["target"][n]["context"], tuple(doc["target"][n].get("tags", [])), doc["target"][n].get("args", {})
        )
        for n in names
    ]


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


def build(builder_name: str, variables: dict[str, str], targets: list[str], *, sbom: bool = False) -> dict[str, str]:
    """Build targets for every platform and push them to the registry in REGISTRY, with
    provenance. Returns {target: manifest-list digest}."""
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp) / "metadata.json"
        outside = [v for k, v in variables.items() if k.endswith("_DIR") and not Path(v).is_relative_to(paths.REPO)]
        cmd = [
            "bake",
            *(f"--allow=fs.read={d}" for d in outside),  # bake asks before reading outside the repository
            "--builder",
            builder_name,
            "-f",
            BAKE_FILE,
            "--push",
            "--provenance",
            "mode=max",
            *(["--sbom", "true"] if sbom else []),
            "--metadata-file",
            meta,
            *targets,
        ]
        log.info("building %s for %s", ", ".join(targets), variables["PLATFORMS"])
        builder.buildx(
            *cmd, timeout=BUILD_TIMEOUT, env=variables, cwd=paths.REPO, capture=False, what="docker buildx bake"
        )
        data = json.loads(meta.read_text())
    return {t: data[t]["containerimage.digest"] for t in targets if t in data}
