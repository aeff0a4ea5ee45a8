"""Where the runner's images come from, in order: this checkout's build in the local registry; the
published image named by registry.yaml's digest, imported from an archive into the local registry or
pulled from its registry (verified as `make pull` does); else an error that says how to get it.

`ensure` is `make run`'s first step: it pulls what registry.yaml publishes for this platform and
builds only the rest, also when the registry cannot be reached (saying so). A digest the registry
does not know is refused, never replaced by a build: registry.yaml is what the bundle vouches for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import localregistry, publish, regclient, registryfile
from pirex.images.platforms import Platform

log = logging.getLogger(__name__)

NOT_FOUND = re.compile(r"manifest unknown|not found|MANIFEST_UNKNOWN|NAME_UNKNOWN", re.IGNORECASE)


def registry_file() -> Path:
    return Path(os.environ.get("PIREX_REGISTRY_FILE", paths.REPO / "registry.yaml"))


@dataclass(frozen=True)
class Source:
    reference: str  # what `docker run` is given, pinned by digest
    origin: dict  # how it got here: built, imported or pulled, with the published digest


def _published(name: str, platform: Platform, regfile: Path) -> registryfile.Entry | None:
    if not regfile.exists():
        return None
    e = registryfile.load(regfile).get(name)
    return e if e and e.digest and str(platform) in e.platforms else None


def _imported(name: str, entry: registryfile.Entry, platform: Platform) -> str | None:
    """The platform manifest digest of the published image if an import put it in the local registry."""
    local = regclient.Registry(localregistry.HOST)
    repo = f"{publish.LOCAL_NAMESPACE}/{name}"
    if not local.has_blob(repo, entry.digest):
        return None
    with local.open_blob(repo, entry.digest) as r:
        body = r.read()
    if "sha256:" + hashlib.sha256(body).hexdigest() != entry.digest:
        raise PirexError(f"the local registry's copy of {entry.ref} does not match its digest: import it again")
    for m in json.loads(body).get("manifests", []):
        p = m.get("platform") or {}
        if Platform(p.get("os", ""), p.get("architecture", ""), p.get("variant", "") or "") == platform:
            return m["digest"] if local.exists(repo, m["digest"]) else None
    return None


def _in_engine(ref: str, platform: Platform) -> bool:
    r = proc.run(["docker", "image", "inspect", ref], timeout=60, check=False)
    return r.ok and Platform.of_image(json.loads(r.stdout)[0]) == platform


def _local_build(name: str, tag: str, platform: Platform) -> bool:
    local = regclient.Registry(localregistry.HOST)
    repo = f"{publish.LOCAL_NAMESPACE}/{name}"
    if not local.exists(repo, tag):
        return False
    _, images = local.platform_images(repo, tag)
    return platform in images


def resolve(name: str, tag: str, platform: Platform, regfile: Path | None = None) -> Source:
    """The image to run (the local registry must be up)."""
    regfile = regfile or registry_file()
    if _local_build(name, tag, platform):
        return Source(publish.pull_local(name, tag, platform), {"kind": "built", "tag": tag})
    entry = _published(name, platform, regfile)
    if entry is None:
        raise PirexError(
            f"{publish.local_ref(name, tag)} is not in the local registry and {regfile.name} publishes no "
            f"{name} for {platform}: run `make build` first (or `pirex images import FILE`)"
        )
    origin = {"kind": "published", "repository": entry.repository, "tag": entry.tag, "index_digest": entry.digest}
    if entry.extra.get("artifact"):  # a rerun of an artifact (artifact/rerun.py): the images came in it
        origin["artifact"] = entry.extra["artifact"]
    if mdigest := _imported(name, entry, platform):
        ref = f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}/{name}@{mdigest}"
        proc.run(["docker", "pull", "-q", ref], timeout=publish.TIMEOUT, what=f"docker pull {ref}")
        return Source(ref, {**origin, "kind": "imported", "manifest_digest": mdigest})
    if not _in_engine(entry.ref, platform):
        pull(name, platform, regfile)
    return Source(entry.ref, {**origin, "kind": "pulled"})


def tagged_locally(name: str, tag: str, platform: Platform) -> dict:
    """The image `resolve` gives, also tagged in the engine under the local registry's name (the compose
    files name images by tag); what ran: the tag, the pinned reference and its origin."""
    src = resolve(name, tag, platform)
    local = publish.local_ref(name, tag)
    proc.run(["docker", "tag", src.reference, local], timeout=60)
    return {
        "reference": local,
        "digest": src.reference.split("@", 1)[1],
        "pinned": src.reference,
        "platform": str(platform),
        "origin": src.origin,
    }


def pull(name: str, platform: Platform, regfile: Path) -> None:
    """Pull one published image by digest, verified; a digest its registry does not know is refused."""
    try:
        publish.pull(regfile, platform, [name])
    except proc.CommandFailed as e:
        if NOT_FOUND.search(str(e)):
            entry = registryfile.load(regfile)[name]
            raise PirexError(
                f"{entry.repository} has no {entry.digest}: the digest in {regfile} is wrong or was tampered "
                "with; refused (nothing is built in its place)"
            ) from None
        raise


def ensure(names: list[str], tag: str, platform: Platform, regfile: Path | None = None) -> list[str]:
    """Pull every published image this run needs; return the names left to build (unpublished for
    this platform, or published where the registry cannot be reached)."""
    regfile = regfile or registry_file()
    to_build = []
    for name in names:
        entry = _published(name, platform, regfile)
        if entry is None:
            to_build.append(name)
            continue
        if _imported(name, entry, platform) or _in_engine(entry.ref, platform):
            print(f"{name}: {entry.ref} ({platform}) is here already")
            continue
        try:
            pull(name, platform, regfile)
        except proc.CommandFailed as e:
            log.warning("%s cannot be reached (%s): building %s here instead", entry.repository, proc.gist(e), name)
            to_build.append(name)
    return to_build
