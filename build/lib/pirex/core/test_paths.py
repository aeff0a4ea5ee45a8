"""paths.git_version where there is no git (a checkout carried as an archive onto a Pi without git)."""

from __future__ import annotations

from pirex import __version__
from pirex.core import paths


def test_without_git_the_version_is_the_package_s(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git on PATH
    assert paths.git_version() == (__version__, "unknown")
