"""A bundle's files as its manifest lists them: the files below a folder, each one's sha256 and size (what
Bundle.finish() records and verify() checks). Reading the manifest itself is pirex/core/bundle.py's alone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pirex.core.bundle_format import MANIFEST


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def files_of(bundle: Path, under: Path | None = None) -> list[str]:
    """Every file below `under` (default: the bundle), as POSIX paths relative to the bundle, manifest.json aside."""
    out = []
    for d, _, files in os.walk(under or bundle):
        for f in files:
            rel = Path(d, f).relative_to(bundle).as_posix()
            if rel != MANIFEST:
                out.append(rel)
    return sorted(out)


def hashed(bundle: Path, rels: list[str]) -> dict[str, dict]:
    return {r: {"sha256": sha256(bundle / r), "size": (bundle / r).stat().st_size} for r in rels}
