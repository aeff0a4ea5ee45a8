"""Where pirex finds the repository and keeps its machine-wide cache."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Machine-wide cache: bootstrap rootfs tarballs, local registry storage, BuildKit state.

    Lives outside the clone so that a fresh clone (CI) reuses it; PIREX_CACHE overrides."""
    if env := os.environ.get("PIREX_CACHE"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/pirex")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pirex"
