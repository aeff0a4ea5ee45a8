"""Where pirex finds the repository and keeps its machine-wide cache."""

from __future__ import annotations

import os
from pathlib import Path

from pirex import __version__
from pirex.core import proc

REPO = Path(__file__).resolve().parents[2]
# The papers: per paper (icpe18, ssp17, fork24) its published tables and its claims.
PAPERS = REPO / "analysis"


def cache_dir() -> Path:
    """Machine-wide cache: bootstrap rootfs tarballs, local registry storage, BuildKit state.

    Lives outside the clone so that a fresh clone (CI) reuses it; PIREX_CACHE overrides."""
    if env := os.environ.get("PIREX_CACHE"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/pirex")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pirex"


def git_version() -> tuple[str, str]:
    """(version, revision) of the checkout: what the OCI labels and the default tag record."""

    def git(*a: str) -> str:
        try:
            r = proc.run(["git", "-C", REPO, *a], timeout=30, check=False)
        except FileNotFoundError:  # no git (a checkout carried as an archive): the package's version
            return ""
        return r.stdout.strip() if r.ok else ""

    revision = git("rev-parse", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    version = git("describe", "--tags", "--always", "--dirty") or __version__
    return version, revision + ("-dirty" if dirty and revision != "unknown" else "")
