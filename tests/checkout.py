"""A committed copy of this checkout, for the tests that add an experiment, an image or a paper the way a user
does (tests/test_adding_an_experiment.py, tests/test_bring_your_own.py): every file git tracks, as it is now."""

from __future__ import annotations

import shutil
from pathlib import Path

from pirex.core import proc
from pirex.core.paths import REPO


def git(cwd: Path, *args: str) -> str:
    return proc.run(["git", "-C", cwd, *args], timeout=60).stdout


def committed_copy(d: Path) -> Path:
    """The tracked files of this checkout as they are now, committed in a repository of their own at d."""
    for rel in git(REPO, "ls-files", "-z").split("\0"):
        if rel and (REPO / rel).is_file():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, d / rel)
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "as checked out")
    return d
