"""`pirex images export` / `import`: the collection in one file, for labs without any registry access.

The file is an OCI image layout in a tar (https://github.com/opencontainers/image-spec/blob/main/image-layout.md):
per image its manifest list exactly as built or published (so its digest is the one registry.yaml
names), and for each exported platform that platform's manifest, config and layers. Layers shared
between images (base, jvm) are stored once.

Import checks every blob's digest, checks each manifest list against registry.yaml, and puts this
machine's platform into the local registry (127.0.0.1:5000), where the runner takes its images from:
the platform manifest under pirex/<image>:<tag>, and the manifest list as a blob beside it, so the
runner also finds the published image by registry.yaml's digest (pirex.images.sources).

Not `skopeo copy` to an oci-archive: skopeo (Debian bookworm's 1.9) copies one platform of an image or all of them
(--multi-arch system|all|index-only), where the archive holds the chosen platforms under the published list kept byte
for byte, and the import puts one platform under the tag with the list as a blob beside it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pirex.core.errors import PirexError
from pirex.images import localregistry, publish, regclient, registryfile
from pirex.images.platforms import Platform

log = logging.getLogger(__name__)

INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"
IMAGE = "io.pirex.image"
PLATFORMS = "io.pirex.platforms"


@dataclass(frozen=True)
class Imported:
    name: str
    tag: str
    index_digest: str
    manifest_digest: str
    image_id: str  # the config digest: the image ID once pulled


def _platform_of(entry: dict) -> Platform | None:
    p = entry.get("platform") or {}
    if not p or p.get("os") == "unknown":  # attestations
        return None
    return Platform(p.get("os", ""), p.get("architecture", ""), p.get("variant", "") or "")


def _blob_path(digest: str) -> str:
    algo, _, hexd = digest.partition(":")
    return f"blobs/{algo}/{hexd}"


class _Writer:
    """An OCI layout written into a tar, each blob once."""

    def __init__(self, tar: tarfile.TarFile):
        self.tar, self.written, self.sizes = tar, set(), {}

    def add_bytes(self, digest: str, data: bytes) -> None:
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise PirexError(f"blob {digest}: content does not match its digest")
        self._add(digest, io.BytesIO(data), len(data))

    def add_stream(self, digest: str, stream, size: int) -> None:
        if digest in self.written:  # a layer shared by two platforms or images: once, and nothing read to hash
            return
        hashing = _Hashing(stream)
        self._add(digest, hashing, size)
        if hashing.digest() != digest:
            raise PirexError(f"blob {digest}: the local registry served other content")

    def _add(self, digest: str, fileobj, size: int) -> None:
        if digest in self.written:
            return
        info = tarfile.TarInfo(_blob_path(digest))
        info.size, info.mode = size, 0o644
        self.tar.addfile(info, fileobj)
        self.written.add(digest)
        self.sizes[digest] = size

    def add_file(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        self.tar.addfile(info, io.BytesIO(data))


class _Hashing:
    def __init__(self, stream):
        self.stream, self.h = stream, hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n)
        self.h.update(data)
        return data

    def digest(self) -> str:
        return "sha256:" + self.h.hexdigest()


def _index_bytes(local: regclient.Registry, name: str, tag: str, entry: registryfile.Entry | None) -> bytes:
    """The manifest list to ship: the published one when registry.yaml names it, else the local build's."""
    repo = f"{publish.LOCAL_NAMESPACE}/{name}"
    try:
        body, _ = local.manifest_bytes(repo, tag)
    except LookupError:
        raise PirexError(
            f"{publish.local_ref(name, tag)} is not in the local registry: build it first (make build TAG={tag})"
        ) from None
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    if entry and entry.digest and digest != entry.digest:
        if local.has_blob(repo, entry.digest):  # imported before: the published list is kept as a blob
            with local.open_blob(repo, entry.digest) as r:
                body = r.read()
        else:
            body = publish.remote_bytes(entry.ref)
        if "sha256:" + hashlib.sha256(body).hexdigest() != entry.digest:
            raise PirexError(f"{entry.ref}: served content is not the digest registry.yaml names")
    return body


def export(file: Path, names: list[str], tag: str, platforms: list[Platform], regfile: Path | None) -> dict[str, int]:
    """Write the archive; returns the bytes stored per platform (shared layers counted for each)."""
    entries = registryfile.load(regfile) if regfile and regfile.exists() else {}
    local = regclient.Registry(localregistry.HOST)
    part = file.with_name(file.name + ".part")
    per_platform = {str(p): 0 for p in platforms}
    descriptors = []
    try:
        with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as tar:
            w = _Writer(tar)
            w.add_file("oci-layout", b'{"imageLayoutVersion": "1.0.0"}\n')
            for name in names:
                repo = f"{publish.LOCAL_NAMESPACE}/{name}"
                body = _index_bytes(local, name, tag, entries.get(name))
                index = json.loads(body)
                digest = "sha256:" + hashlib.sha256(body).hexdigest()
                w.add_bytes(digest, body)
                have = {_platform_of(m): m for m in index.get("manifests", []) if _platform_of(m)}
                missing = [str(p) for p in platforms if p not in have]
                if missing:
                    raise PirexError(
                        f"{name}:{tag} has no image for {', '.join(missing)} "
                        f"(it has {', '.join(map(str, have))}): build those platforms first"
                    )
                for p in platforms:
                    mdigest = have[p]["digest"]
                    try:
                        mbody, _ = local.manifest_bytes(repo, mdigest)
                    except LookupError:
                        raise PirexError(
                            f"the local registry lacks {name}@{mdigest} ({p}) of {entries[name].ref}: "
                            "pull it first (make pull)"
                        ) from None
                    w.add_bytes(mdigest, mbody)
                    manifest = json.loads(mbody)
                    for blob in [manifest["config"], *manifest["layers"]]:
                        with local.open_blob(repo, blob["digest"]) as r:
                            w.add_stream(blob["digest"], r, blob["size"])
                    per_platform[str(p)] += len(mbody) + sum(
                        b["size"] for b in [manifest["config"], *manifest["layers"]]
                    )
                descriptors.append(
                    {
                        "mediaType": index.get("mediaType") or INDEX,
                        "digest": digest,
                        "size": len(body),
                        "annotations": {
                            REF_NAME: f"{name}:{tag}",
                            IMAGE: name,
                            PLATFORMS: ",".join(map(str, platforms)),
                        },
                    }
                )
            w.add_file(
                "index.json",
                json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": descriptors}, indent=2).encode(),
            )
        os.replace(part, file)
    finally:
        part.unlink(missing_ok=True)
    return per_platform


def platform_digests(file: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(image, platform) -> (its manifest list's digest, the platform manifest's), of every image and platform an
    archive holds."""
    out = {}
    try:
        with tarfile.open(file, "r:") as tar:
            for d in json.loads(tar.extractfile("index.json").read()).get("manifests", []):
                name = (d.get("annotations") or {}).get(IMAGE)
                index = json.loads(tar.extractfile(_blob_path(d["digest"])).read())
                for m in index.get("manifests", []):
                    if name and (p := _platform_of(m)):
                        out[name, str(p)] = (d["digest"], m["digest"])
    except (tarfile.TarError, EOFError, json.JSONDecodeError, KeyError, OSError, AttributeError) as e:
        raise _damaged(file, e) from None
    return out


def _damaged(file: Path, e: Exception) -> PirexError:
    return PirexError(
        f"{file} is truncated or damaged ({e}): copy it again from where it was exported "
        "(`pirex images export` prints its size)"
    )


def import_(file: Path, platform: Platform, regfile: Path | None, tag: bool = True) -> list[Imported]:
    """Put this machine's platform of every image in the archive into the local registry, every
    blob's digest checked and every manifest list checked against registry.yaml; tagged as in the
    archive unless tag is False (by digest only: a local build under that tag stays what the tag names)."""
    if not file.is_file():
        raise PirexError(f"{file} does not exist")
    entries = registryfile.load(regfile) if regfile and regfile.exists() else {}
    local = regclient.Registry(localregistry.HOST)
    out = []
    try:
        with tarfile.open(file, "r:") as tar:
            members = {m.name: m for m in tar.getmembers()}  # reads to the end: a truncated file fails here

            def read(name: str) -> bytes:
                if name not in members:
                    raise PirexError(f"{file} is not a pirex image archive: it has no {name}")
                return tar.extractfile(members[name]).read()

            def blob(digest: str) -> bytes:
                data = read(_blob_path(digest))
                if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
                    raise PirexError(f"{file}: blob {digest} does not match its digest: the archive is damaged")
                return data

            layout = json.loads(read("index.json"))
            for d in layout.get("manifests", []):
                ann = d.get("annotations") or {}
                name, ref_name = ann.get(IMAGE), ann.get(REF_NAME, "")
                if not name:
                    continue
                ref_tag = ref_name.rpartition(":")[2] or "latest"
                entry = entries.get(name)
                if entry and entry.digest and entry.digest != d["digest"]:
                    raise PirexError(
                        f"{file}: {name} is {d['digest']}, but {regfile} names {entry.digest}: "
                        "not the published image, refused"
                    )
                if not (entry and entry.digest):
                    log.warning(
                        "%s names no digest for %s: checked against the archive's own digests only", regfile, name
                    )
                body = blob(d["digest"])
                index = json.loads(body)
                have = {_platform_of(m): m for m in index.get("manifests", []) if _platform_of(m)}
                exported = ann.get(PLATFORMS, "")
                if platform not in have or str(platform) not in exported.split(","):
                    raise PirexError(
                        f"{file} holds {name} for {exported or 'no platform'}, not for this machine "
                        f"({platform}): export it with --platforms {platform}"
                    )
                m = have[platform]
                mbody = blob(m["digest"])
                manifest = json.loads(mbody)
                repo = f"{publish.LOCAL_NAMESPACE}/{name}"
                for b in [*manifest["layers"], manifest["config"]]:
                    if local.has_blob(repo, b["digest"]):
                        continue
                    member = members.get(_blob_path(b["digest"]))
                    if member is None or member.size != b["size"]:
                        raise PirexError(f"{file}: blob {b['digest']} of {name} is missing or cut short")
                    with tar.extractfile(member) as f:  # the registry checks the digest on upload
                        local.put_blob(repo, b["digest"], f, member.size)
                media = manifest.get("mediaType") or m.get("mediaType")
                local.put_manifest(repo, m["digest"], mbody, media)
                if tag:
                    local.put_manifest(repo, ref_tag, mbody, media)
                local.put_blob(repo, d["digest"], body, len(body))  # the list itself, for lookups by its digest
                out.append(Imported(name, ref_tag, d["digest"], m["digest"], manifest["config"]["digest"]))
    except (tarfile.TarError, EOFError, json.JSONDecodeError, KeyError, OSError) as e:
        raise _damaged(file, e) from None
    if not out:
        raise PirexError(f"{file} holds no pirex image")
    return out
