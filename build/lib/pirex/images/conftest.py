"""The build graph as bake resolves it, for the tests of docker-bake.hcl and the release
workflow: they need the docker CLI with buildx (no engine), skip without it, and fail instead
when PIREX_REQUIRE_DOCKER=1 (CI)."""

from __future__ import annotations

import os

import pytest

from pirex.core import proc
from pirex.images import bake


@pytest.fixture(scope="session")
def buildx() -> None:
    if proc.which("docker") is None:
        problem = "no docker client on PATH"
    elif not proc.run(["docker", "buildx", "version"], timeout=60, check=False).ok:
        problem = "the docker buildx plugin is missing (make host-setup builds it)"
    else:
        return
    if os.environ.get("PIREX_REQUIRE_DOCKER") == "1":
        pytest.fail(f"PIREX_REQUIRE_DOCKER=1 but {problem}")
    pytest.skip(problem)


@pytest.fixture(scope="session")
def graph(buildx) -> bake.Graph:
    return bake.graph()
