"""Building the whole collection into the local registry: the one path that `make build`,
`make test` and CI share."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import bake, bootstrap, builder, publish
from pirex.images import platforms as plat

log = logging.getLogger(__name__)


@dataclass
class Built:
    tag: str
    platforms: list[plat.Platform]
    digests: dict[str, str]  # image name -> manifest-list digest in the local registry
    bases: dict[str, str]  # the *_IMAGE build arguments used (empty: the pinned public bases)
    metadata: dict[str, dict]  # bake's metadata of each image (what `pirex images record` reads)
    platforms_of: dict[str, list[plat.Platform]] = field(default_factory=dict)  # images built for fewer

    def platforms_for(self, name: str) -> list[plat.Platform]:
        """The platforms image name was built for: all of platforms unless it was narrowed."""
        return self.platforms_of.get(name, self.platforms)


def offline_wanted(mode: str, default_debian: str) -> bool:
    """OFFLINE=1/0 decide; auto probes the public registry and says what it fell back to."""
    if mode in ("1", "yes", "true"):
        return True
    if mode in ("0", "no", "false"):
        return False
    r = proc.run(
        ["docker", "buildx", "imagetools", "inspect", default_debian], timeout=30, check=False, env=builder.buildx_env()
    )
    if r.ok:
        log.info("the public base images are reachable: building from them")
        return False
    log.warning(
        "no container registry reachable (could not read %s): building OFFLINE from Debian packages "
        "(OFFLINE=0 insists on the public bases)",
        default_debian,
    )
    return True


def build(
    builder_name: str,
    registry_host: str,
    *,
    platforms: list[plat.Platform],
    offline: str,
    tag: str,
    version: str,
    revision: str,
    targets: list[str] | None = None,
    refresh_bootstrap: bool = False,
    platforms_of: dict[str, list[plat.Platform]] | None = None,
) -> Built:
    """Build targets (default: every image) for platforms and push them to the local registry;
    platforms_of builds some images for a subset of platforms only (the test suite's host-only images)."""
    catalog = bake.catalog()
    names = targets or [t.name for t in catalog]
    unknown = set(names) - {t.name for t in catalog}
    if unknown:
        raise PirexError(
            f"no image named {', '.join(sorted(unknown))} in docker-bake.hcl "
            f"(images: {', '.join(t.name for t in catalog)})"
        )
    narrowed = {n: ps for n, ps in (platforms_of or {}).items() if n in names}
    wider = {n: sorted(set(map(str, ps)) - set(map(str, platforms))) for n, ps in narrowed.items()}
    if any(wider.values()) or not all(narrowed.values()):
        raise PirexError(f"images narrowed to platforms outside {', '.join(map(str, platforms))}, or to none: {wider}")
    default_debian = next(t.args["DEBIAN_IMAGE"] for t in catalog if "DEBIAN_IMAGE" in t.args)
    bases = {}
    if offline_wanted(offline, default_debian):
        bases = bootstrap.bootstrap(platforms, plat.host(), builder_name, refresh_bootstrap)
    variables = bake.bake_vars(
        registry=f"{registry_host}/{publish.LOCAL_NAMESPACE}",
        tag=tag,
        platforms=platforms,
        version=version,
        revision=revision,
        bases=bases,
    )
    metadata = bake.build(builder_name, variables, names, platforms_of=narrowed)
    return Built(tag, platforms, bake.digests(metadata), bases, metadata, narrowed)
