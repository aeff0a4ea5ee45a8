"""A fleet run's folder as pirex fleet leaves it (results/<experiment>/fleet-<time>-<hex>/): fleet.json, its
manifest (what was asked; per host its state, why, and where its bundle is), and a bundle per host. Read here,
below the analysis and reproduce that take a fleet run for its hosts' bundles; pirex/fleet.py drives the runs."""

from __future__ import annotations

import json
from pathlib import Path

from pirex.core import bundle as B
from pirex.core.errors import PirexError

MANIFEST = "fleet.json"
SCHEMA = "pirex-fleet/1"
VERIFIED, FAILED, UNREACHABLE, MISSING = "verified", "failed", "unreachable", "missing"  # a host's state


def is_fleet_run(path: Path) -> bool:
    """A fleet run's folder, not a bundle (a bundle has manifest.json)."""
    return not (Path(path) / B.MANIFEST).exists() and (Path(path) / MANIFEST).is_file()


def read_manifest(fleet_dir: Path) -> dict:
    f = Path(fleet_dir) / MANIFEST
    if not f.is_file():
        raise PirexError(f"--resume {fleet_dir}: not a fleet run (no {MANIFEST}); give results/<experiment>/fleet-...")
    doc = B.read_json(f, dict)
    if doc.get("schema") != SCHEMA:
        raise PirexError(f"{f}: schema {doc.get('schema')!r} is not {SCHEMA}: use the pirex that wrote it")
    return doc


def write_manifest(fleet_dir: Path, doc: dict) -> None:
    B._write_atomic(Path(fleet_dir) / MANIFEST, json.dumps(doc, indent=2, default=str) + "\n")


def bundles(fleet_dir: Path) -> list[Path]:
    """The hosts' bundles fetched into a fleet run (what `pirex table EXPERIMENT FLEET_RUN` reads)."""
    found = sorted(d for d in Path(fleet_dir).iterdir() if (d / B.MANIFEST).is_file())
    if not found:
        raise PirexError(f"{fleet_dir}: no host's bundle has been fetched yet: `pirex fleet run --resume {fleet_dir}`")
    return found
