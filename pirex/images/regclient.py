"""Reading images from a registry without pulling them: manifest lists, per-platform
manifests, configs and layer sizes. Anonymous plain HTTP, which is what the local registry
serves; remote registries are reached through docker/buildx, which hold the credentials.
Not skopeo (which host-setup installs): a manifest or a blob read in the runner's own process, where `skopeo
inspect --raw` would be a process per read and a tool the runner on a Pi does not otherwise need."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from pirex.core.errors import PirexError
from pirex.images.platforms import Platform

INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)


@dataclass(frozen=True)
class PlatformImage:
    platform: Platform
    manifest_digest: str
    config_digest: str  # the image ID once pulled
    layers: tuple[tuple[str, int], ...]  # (digest, compressed size)

    @property
    def compressed_size(self) -> int:
        return sum(size for _, size in self.layers)


def split_ref(ref: str) -> tuple[str, str, str]:
    """localhost:5000/pirex/jvm:tag -> (host, repository, tag or digest)."""
    host, _, rest = ref.partition("/")
    if "@" in rest:
        repo, _, ref_ = rest.partition("@")
    else:
        repo, _, ref_ = rest.rpartition(":") if ":" in rest else (rest, "", "latest")
    return host, repo, ref_


class Registry:
    def __init__(self, host: str):
        self.host = host
        self.base = f"http://{host.replace('localhost', '127.0.0.1')}/v2"

    def _get(self, path: str, accept: str | None = None) -> tuple[bytes, str]:
        req = urllib.request.Request(f"{self.base}/{path}", headers={"Accept": accept} if accept else {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise LookupError(path) from None
            raise PirexError(f"registry {self.host} answered {e.code} for {path}") from None
        except (urllib.error.URLError, OSError) as e:
            raise PirexError(f"registry {self.host} is not reachable: {e}") from None

    def manifest(self, repo: str, ref: str) -> tuple[dict, str, str]:
        """(manifest, media type, digest) of a tag or digest; LookupError if absent."""
        body, ctype = self._get(f"{repo}/manifests/{ref}", ACCEPT)
        doc = json.loads(body)
        return doc, doc.get("mediaType") or ctype, "sha256:" + hashlib.sha256(body).hexdigest()

    def exists(self, repo: str, ref: str) -> bool:
        try:
            self.manifest(repo, ref)
            return True
        except LookupError:
            return False

    def blob_json(self, repo: str, digest: str) -> dict:
        body, _ = self._get(f"{repo}/blobs/{digest}")
        return json.loads(body)

    def platform_images(self, repo: str, ref: str) -> tuple[str, dict[Platform, PlatformImage]]:
        """The digest of ref and its image per platform (attestation manifests left out)."""
        doc, mtype, digest = self.manifest(repo, ref)
        entries = doc["manifests"] if mtype in INDEX_TYPES else [{"digest": digest, "platform": None}]
        out: dict[Platform, PlatformImage] = {}
        for entry in entries:
            plat = entry.get("platform") or {}
            if plat.get("os") == "unknown":  # provenance/SBOM attestations
                continue
            man, _, mdigest = self.manifest(repo, entry["digest"])
            cfg_digest = man["config"]["digest"]
            cfg = self.blob_json(repo, cfg_digest)
            p = Platform(cfg.get("os", ""), cfg.get("architecture", ""), cfg.get("variant", "") or "")
            out[p] = PlatformImage(p, mdigest, cfg_digest, tuple((ly["digest"], ly["size"]) for ly in man["layers"]))
        return digest, out

    def config(self, repo: str, config_digest: str) -> dict:
        return self.blob_json(repo, config_digest)

    def open_blob(self, repo: str, digest: str):
        """A blob as a stream (a response to read and close); the caller checks the digest."""
        try:
            return urllib.request.urlopen(f"{self.base}/{repo}/blobs/{digest}", timeout=600)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise LookupError(f"{repo}/blobs/{digest}") from None
            raise PirexError(f"registry {self.host} answered {e.code} for {repo} blob {digest}") from None
        except (urllib.error.URLError, OSError) as e:
            raise PirexError(f"registry {self.host} is not reachable: {e}") from None

    def manifest_bytes(self, repo: str, ref: str) -> tuple[bytes, str]:
        """A manifest or index exactly as stored (its digest is the sha256 of these bytes), and its media type."""
        body, ctype = self._get(f"{repo}/manifests/{ref}", ACCEPT)
        return body, json.loads(body).get("mediaType") or ctype

    def has_blob(self, repo: str, digest: str) -> bool:
        req = urllib.request.Request(f"{self.base}/{repo}/blobs/{digest}", method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=60):
                return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise PirexError(f"registry {self.host} answered {e.code} for {repo} blob {digest}") from None
        except (urllib.error.URLError, OSError) as e:
            raise PirexError(f"registry {self.host} is not reachable: {e}") from None

    def put_blob(self, repo: str, digest: str, data, size: int) -> None:
        """Upload one blob from bytes or a stream (POST, then one PUT with the digest, which the
        registry checks against what it received); nothing to do if it is there already."""
        if self.has_blob(repo, digest):
            return
        location = self._send("POST", f"{self.base}/{repo}/blobs/uploads/", b"", {}).get("Location", "")
        if location.startswith("/"):
            location = self.base.removesuffix("/v2") + location
        sep = "&" if "?" in location else "?"
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        self._send("PUT", f"{location}{sep}digest={digest}", data, headers)

    def put_manifest(self, repo: str, ref: str, body: bytes, media_type: str) -> None:
        self._send("PUT", f"{self.base}/{repo}/manifests/{ref}", body, {"Content-Type": media_type})

    def _send(self, method: str, url: str, data, headers: dict[str, str]):
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.headers
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:300]
            what = url.split("/v2/", 1)[-1].split("?", 1)[0]
            raise PirexError(f"registry {self.host} refused {method} {what}: {e.code} {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            raise PirexError(f"registry {self.host} is not reachable: {e}") from None
