"""Shared fixtures: the Docker gate, and the collection built once per test session.

Docker tests skip where no engine answers, and fail instead when PIREX_REQUIRE_DOCKER=1 (CI),
so that a broken engine can never pass as a skipped test."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

from pirex.core import proc
from pirex.core.paths import git_version
from pirex.images import bake, builder, collection, localregistry, publish
from pirex.images import platforms as plat
from pirex.runner import compose

from . import emulated_pi, netns

TEST_TAG = os.environ.get("PIREX_TEST_TAG", "pirex-test")  # a worktree of its own: its own tag


def interrupt(signum, _frame):
    """A signal handler that unwinds like Ctrl-C (the test sessions and tests/prebuild.py)."""
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    # SIGTERM (a CI time limit, a killed make) unwinds like Ctrl-C: pytest then runs the fixture
    # teardowns that stop buildkitd and the registries, and proc.run kills its children.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)


def docker_problem() -> str | None:
    if proc.which("docker") is None:
        return "no docker client on PATH"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        return "no Docker engine answers (make host-setup starts one)"
    if subprocess.run(["docker", "buildx", "version"], capture_output=True, timeout=60).returncode != 0:
        return "the docker buildx plugin is missing (make host-setup builds it)"
    if not (proc.which("docker-registry") or localregistry.answers()):
        return "no registry program (apt-get install docker-registry) and none on 127.0.0.1:5000"
    return None


@pytest.fixture(scope="session")
def docker() -> None:
    problem = docker_problem()
    if problem:
        if os.environ.get("PIREX_REQUIRE_DOCKER") == "1":
            pytest.fail(f"PIREX_REQUIRE_DOCKER=1 but {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="session")
def infra(docker):
    """The local registry and a BuildKit builder, up for the whole session, stopped after it."""
    with localregistry.local_registry() as host, builder.builder() as name:
        yield host, name


# The images whose arm platforms the suite runs: jmh on both emulated Pis and on arm64 (tests/test_emulated_pi.py,
# test_jmh_image.py, test_run_jmh.py), moobench and fork on arm64 (test_run_moobench.py, test_run_fork.py), and the
# two they stand on. Every
# other image is built for this machine's platform only: its tests check pirex's logic, not a platform, and its arm
# builds (PostgreSQL's and the drivers' packages installed under QEMU) were most of a fresh machine's build time.
# `make build` and the release still build every platform of every image; PIREX_TEST_PLATFORMS=all does so here too.
EMULATED_IMAGES = ("base", "jvm", "jmh", "moobench", "fork")


def host_only_images() -> dict[str, list[plat.Platform]]:
    if os.environ.get("PIREX_TEST_PLATFORMS") == "all":
        return {}
    return {t.name: [plat.host()] for t in bake.catalog() if t.name not in EMULATED_IMAGES}


@pytest.fixture(scope="session")
def built(infra, request) -> collection.Built:
    """Every image, built exactly as `make build` builds them (offline where OFFLINE=1 or no registry
    answers; warm runs reuse the cache): for every platform those of EMULATED_IMAGES, for this machine's
    the others (`built.platforms_for(name)`). The emulated Pis' rootfs trees, when this session runs them, are
    made meanwhile (on a fresh machine, minutes of mmdebstrap beside the build rather than after it)."""
    if any(item.get_closest_marker("emulated_pi") for item in request.session.items) and not emulated_pi.have_tools():
        emulated_pi.rootfs_soon(list(emulated_pi.DPKG_ARCHES))
        request.addfinalizer(emulated_pi.stop_making)  # at the session's end, however it ends: nothing left running
    return build_images(*infra)


def build_images(host: str, name: str) -> collection.Built:
    """The `built` fixture's build; tests/prebuild.py runs the same one ahead of the Docker session."""
    version, revision = git_version()
    return collection.build(
        name,
        host,
        platforms=list(plat.SUPPORTED),
        offline=os.environ.get("OFFLINE", "auto"),
        tag=TEST_TAG,
        version=version,
        revision=revision,
        platforms_of=host_only_images(),
    )


@pytest.fixture(scope="session")
def built_host(infra) -> collection.Built:
    """This machine's platform of every image, under a tag of its own (`built` is every platform
    under TEST_TAG): what `make run` builds, for tests of the images as a user gets them."""
    host, name = infra
    version, revision = git_version()
    return collection.build(
        name,
        host,
        platforms=[plat.host()],
        offline=os.environ.get("OFFLINE", "auto"),
        tag=f"{TEST_TAG}-host",
        version=version,
        revision=revision,
    )


# ICPE'18 Experiment 3's hosts: the per-role compose file each runs, and the images it needs
ROLES = {
    "pi-b": ("db.yml", ["postgres", "jpa-rest"]),
    "pi-a": ("web.yml", ["jpa-rest"]),
    "laptop": ("driver.yml", ["locust"]),
}


@pytest.fixture
def three_hosts(built):
    """Three hosts as network namespaces on a bridge, each with its own Docker daemon holding its role's images
    (tests/netns.py): the database on pi-b, the service on pi-a, the driver on the laptop."""
    missing = [t for t in ("ip", "nsenter", "iptables", "dockerd") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        pytest.fail(f"the three-host test needs root and {', '.join(missing) or 'nothing else'}")
    with localregistry.local_registry():
        for name in compose.images("jpa-rest"):
            publish.load_local(name, TEST_TAG, plat.host())
    with netns.hosts(list(ROLES)) as hosts:
        for name, (_, images) in ROLES.items():
            netns.copy_images(hosts[name], [publish.local_ref(i, TEST_TAG) for i in images])
        yield hosts
        for h in hosts.values():  # the data roots are kept for the next run: not the images a new build replaced
            h.docker("image", "prune", "-f", check=False)
