"""`make push` and `make pull`: copying what `make build` put in the local registry to a
registry where users pull from, recording each manifest-list digest in registry.yaml, and
pulling by those digests with a check that what arrived is what registry.yaml names. The
release workflow pushes with bake itself and records the same way (`record`)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import builder, localregistry, regclient, registryfile
from pirex.images import platforms as plat
from pirex.images.platforms import Platform
from pirex.images.registryfile import Entry

log = logging.getLogger(__name__)

LOCAL_NAMESPACE = "pirex"
AUTH_ERROR = re.compile(
    r"unauthori[sz]ed|authentication required|no basic auth credentials|\b401\b|denied", re.IGNORECASE
)
DEST = re.compile(r"^(?P<host>[a-z0-9.-]+(:\d+)?)/(?P<ns>[a-z0-9._/-]+)$")
TIMEOUT = 1800


def local_ref(name: str, tag: str) -> str:
    return f"{localregistry.HOST}/{LOCAL_NAMESPACE}/{name}:{tag}"


def _host(ref: str) -> str:
    return ref.split("/", 1)[0]


def _registry_call(args: list[str], ref: str, action: str, timeout: float = TIMEOUT) -> proc.Result:
    """docker/buildx talking to a registry: network retries, and a clear word on missing credentials."""

    def once() -> proc.Result:
        r = proc.run(args, timeout=timeout, check=False, env=builder.buildx_env())
        if r.ok:
            return r
        if AUTH_ERROR.search(r.stderr + r.stdout):
            host = _host(ref)
            raise PirexError(
                f"{host} refused to {action} {ref}: it requires credentials (or these lack the right). "
                f"Run `docker login {host}` and try again.\n{proc.gist(proc.CommandFailed(r))}"
            )
        raise proc.CommandFailed(r, f"{action} {ref}")

    return proc.retry(once, attempts=3, what=f"{action} {ref}", retry_if=lambda e: isinstance(e, proc.CommandFailed))


def remote_bytes(ref: str) -> bytes:
    """A manifest or index exactly as the registry serves it."""
    r = _registry_call(["docker", "buildx", "imagetools", "inspect", "--raw", ref], ref, "read", timeout=300)
    return r.stdout.encode()


def remote_raw(ref: str) -> tuple[dict, str]:
    """A manifest or index as the registry serves it, and its digest (sha256 of those bytes)."""
    body = remote_bytes(ref)
    return json.loads(body), "sha256:" + hashlib.sha256(body).hexdigest()


def parse_destination(dest: str) -> str:
    dest = dest.strip().rstrip("/")
    if not DEST.match(dest):
        raise PirexError(
            f"REGISTRY={dest!r} is not host[:port]/namespace (lowercase), e.g. ghcr.io/your-lab or 192.0.2.7:5000/pirex"
        )
    return dest


def push(dest: str, tag: str, names: list[str], regfile: Path) -> dict[str, Entry]:
    """Copy every image (all platforms, attestations included) to dest and record the digests.

    registry.yaml is written only when every image went through."""
    dest = parse_destination(dest)
    entries = registryfile.load(regfile) if regfile.exists() else {}
    local = regclient.Registry(localregistry.HOST)
    updated = dict(entries)
    for name in names:
        repo = f"{LOCAL_NAMESPACE}/{name}"
        if not local.exists(repo, tag):
            raise PirexError(f"{local_ref(name, tag)} is not in the local registry: run `make build TAG={tag}` first")
        local_digest, per_platform = local.platform_images(repo, tag)
        target = f"{dest}/{name}:{tag}"
        log.info("pushing %s -> %s", local_ref(name, tag), target)
        _registry_call(
            ["docker", "buildx", "imagetools", "create", "-t", target, local_ref(name, tag)], target, "push to"
        )
        _, digest = remote_raw(target)
        if digest != local_digest:
            log.info(
                "%s: the registry re-encoded the manifest list (%s locally); per-platform images are unchanged",
                name,
                local_digest,
            )
        old = entries.get(name)
        updated[name] = Entry(
            f"{dest}/{name}", tag, [str(p) for p in sorted(per_platform)], digest, old.extra if old else {}
        )
        print(f"{name}: {dest}/{name}@{digest}")
    registryfile.save(regfile, updated)
    return updated


def record(metadata: Path, tag: str, names: list[str], regfile: Path) -> dict[str, Entry]:
    """registry.yaml from what `docker buildx bake --push` reported in its metadata file (the
    release workflow's docker/bake-action output): each image's manifest-list digest, checked
    against what the registry serves, and the platforms in it.

    registry.yaml is written only when every image in names was pushed."""
    try:
        pushed = json.loads(metadata.read_text())
    except (OSError, ValueError) as e:
        raise PirexError(f"cannot read the bake metadata file {metadata}: {e}") from None
    entries = registryfile.load(regfile) if regfile.exists() else {}
    updated = dict(entries)
    for name in names:
        m = pushed.get(name) or {}
        digest = m.get("containerimage.digest")
        refs = [r for r in m.get("image.name", "").split(",") if r.endswith(f":{tag}")]
        if not digest or not refs:
            raise PirexError(
                f"{metadata} names no image {name} pushed with tag {tag}: build and push the whole "
                "group of docker-bake.hcl with --metadata-file, then record"
            )
        repository = refs[0].removesuffix(f":{tag}")
        index, served = remote_raw(f"{repository}@{digest}")
        if served != digest:
            raise PirexError(f"{repository}@{digest}: the registry served content with digest {served}")
        old = entries.get(name)
        updated[name] = Entry(repository, tag, _platforms(index), digest, old.extra if old else {})
        print(f"{name}: {repository}@{digest}")
    registryfile.save(regfile, updated)
    return updated


def _platforms(index: dict) -> list[str]:
    """The platforms of a manifest list, without its attestations (platform unknown/unknown)."""
    found = {
        Platform(p["os"], p["architecture"], p.get("variant", "") or "")
        for m in index.get("manifests", [])
        if (p := m.get("platform") or {}).get("os", "unknown") != "unknown"
    }
    return [str(p) for p in sorted({plat.parse(str(p)) for p in found})]


def pull(regfile: Path, platform: Platform, names: list[str] | None = None) -> dict[str, str]:
    """Pull each image by the digest registry.yaml names, for platform; verify it; tag it.

    Returns {name: image ID}."""
    entries = registryfile.load(regfile)
    unknown = sorted(set(names or []) - set(entries))
    if unknown:
        raise PirexError(f"{regfile} lists no image named {', '.join(unknown)} (it lists {', '.join(entries)})")
    unpublished = [n for n, e in entries.items() if not e.digest and (names is None or n in names)]
    if unpublished:
        raise PirexError(
            f"{regfile} has no digest for {', '.join(unpublished)}: nothing published yet. "
            "Build locally with `make build`, or publish with `make push REGISTRY=...`"
        )
    ids: dict[str, str] = {}
    for name, e in entries.items():
        if names is not None and name not in names:
            continue
        if str(platform) not in e.platforms:
            raise PirexError(f"{name} is published for {', '.join(e.platforms)}, not for this machine ({platform})")
        ref = f"{e.repository}@{e.digest}"
        index, served = remote_raw(ref)
        if served != e.digest:
            raise PirexError(f"{ref}: the registry served content with digest {served}: not what registry.yaml names")
        expected = _config_digest(e.repository, index, platform)
        _forget_other_platform(ref, platform)
        _registry_call(["docker", "pull", "--platform", str(platform), ref], ref, "pull")
        info = json.loads(proc.run(["docker", "image", "inspect", ref], timeout=60).stdout)[0]
        got = Platform.of_image(info)
        if info["Id"] != expected or got != platform or ref not in info.get("RepoDigests", []):
            raise PirexError(f"{name}: pulled image {info['Id']} ({got}) is not {expected} ({platform}) named by {ref}")
        proc.run(["docker", "tag", ref, f"{e.repository}:{e.tag}"], timeout=60)
        ids[name] = info["Id"]
        print(f"{name}: {ref} ({platform}) -> {info['Id']} verified")
    return ids


def _forget_other_platform(ref: str, platform: Platform) -> None:
    """The engine keeps one image per digest reference: to pull another platform of the same
    manifest list ("Cannot overwrite digest"), drop the reference to the one it has."""
    r = proc.run(["docker", "image", "inspect", ref], timeout=60, check=False)
    if not r.ok:
        return
    info = json.loads(r.stdout)[0]
    if Platform.of_image(info) != platform:
        proc.run(["docker", "image", "rm", ref], timeout=120)


def _config_digest(repository: str, index: dict, platform: Platform) -> str:
    for m in index.get("manifests", []):
        p = m.get("platform") or {}
        if Platform(p.get("os", ""), p.get("architecture", ""), p.get("variant", "") or "") == platform:
            manifest, digest = remote_raw(f"{repository}@{m['digest']}")
            if digest != m["digest"]:
                raise PirexError(f"{repository}@{m['digest']}: the registry served content with digest {digest}")
            return manifest["config"]["digest"]
    raise PirexError(f"{repository}: the manifest list has no image for {platform}")


def load_local(name: str, tag: str, platform: Platform) -> tuple[str, str]:
    """pull_local, then tagged as in the local registry (compose files name images by tag):
    returns (reference by digest, local tag)."""
    ref = pull_local(name, tag, platform)
    proc.run(["docker", "tag", ref, local_ref(name, tag)], timeout=60)
    return ref, local_ref(name, tag)


def pull_local(name: str, tag: str, platform: Platform) -> str:
    """Pull one platform of a locally built image into the engine, by that platform's manifest
    digest (the engine keeps one platform per tag); returns the reference to run."""
    local = regclient.Registry(localregistry.HOST)
    repo = f"{LOCAL_NAMESPACE}/{name}"
    if not local.exists(repo, tag):
        raise PirexError(f"{local_ref(name, tag)} is not in the local registry: run `make build` first")
    _, images = local.platform_images(repo, tag)
    if platform not in images:
        raise PirexError(f"{local_ref(name, tag)} was not built for {platform} (built: {', '.join(map(str, images))})")
    ref = f"{localregistry.HOST}/{repo}@{images[platform].manifest_digest}"
    proc.retry(
        lambda: proc.run(["docker", "pull", "-q", ref], timeout=TIMEOUT, what=f"docker pull {ref}"),
        attempts=2,
        what=f"pull {ref}",
    )
    return ref
