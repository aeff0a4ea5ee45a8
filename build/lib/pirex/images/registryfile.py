"""registry.yaml: the published images (repository, tag, platforms, manifest-list digest).

`make push` writes it, `make pull` trusts nothing else. Loading validates every entry and
names the exact problem; saving is atomic, so a failed push leaves the file as it was."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pirex.core.errors import PirexError
from pirex.images import platforms as plat

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
HEADER = """\
# The published pirex images. Written by `make push` (pirex images push); read by `make pull`,
# which pulls each image by its digest and checks that what arrived is what is named here.
# digest: the manifest list (one entry per platform); null until the image is published.
"""


@dataclass
class Entry:
    repository: str
    tag: str
    platforms: list[str]
    digest: str | None = None
    extra: dict = field(default_factory=dict)  # context, description, license, ...

    @property
    def ref(self) -> str:
        return f"{self.repository}@{self.digest}" if self.digest else f"{self.repository}:{self.tag}"

    def to_dict(self) -> dict:
        return {
            "repository": self.repository,
            "tag": self.tag,
            "platforms": list(self.platforms),
            "digest": self.digest,
            **self.extra,
        }


def _problem(path: Path, key: str, expected: str, got: object) -> PirexError:
    return PirexError(f"{path}: {key}: expected {expected}, found {got!r}")


def load(path: Path) -> dict[str, Entry]:
    if not path.exists():
        raise PirexError(f"{path} does not exist: it lists the published images (docs/images.md, 'Publish and pull')")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise PirexError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("images"), dict):
        raise _problem(
            path,
            "images",
            "a mapping of image name to {repository, tag, platforms, digest}",
            doc if not isinstance(doc, dict) else doc.get("images"),
        )
    out: dict[str, Entry] = {}
    for name, e in doc["images"].items():
        k = f"images.{name}"
        if not isinstance(e, dict):
            raise _problem(path, k, "a mapping", e)
        for key in ("repository", "tag"):
            if not isinstance(e.get(key), str) or not e[key]:
                raise _problem(path, f"{k}.{key}", "a non-empty string", e.get(key))
        if "@" in e["repository"] or ":" in e["repository"].rsplit("/", 1)[-1]:
            raise _problem(path, f"{k}.repository", "a repository without tag or digest", e["repository"])
        ps = e.get("platforms")
        if not isinstance(ps, list) or not ps:
            raise _problem(
                path, f"{k}.platforms", "a non-empty list such as [linux/amd64, linux/arm64, linux/arm/v7]", ps
            )
        canonical = []
        for p in ps:
            try:
                canonical.append(str(plat.parse(str(p))))
            except PirexError as err:
                raise PirexError(f"{path}: {k}.platforms: {err}") from None
        digest = e.get("digest")
        if digest is not None and not (isinstance(digest, str) and DIGEST.match(digest)):
            raise _problem(path, f"{k}.digest", "null or sha256:<64 hex digits>", digest)
        extra = {x: v for x, v in e.items() if x not in ("repository", "tag", "platforms", "digest")}
        out[name] = Entry(e["repository"], e["tag"], canonical, digest, extra)
    return out


def save(path: Path, entries: dict[str, Entry]) -> None:
    body = yaml.safe_dump(
        {"images": {n: e.to_dict() for n, e in entries.items()}}, sort_keys=False, default_flow_style=None, width=100
    )
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(HEADER + body)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp makes it owner-only
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
