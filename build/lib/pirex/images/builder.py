"""The BuildKit that builds the collection: a current buildkitd served to buildx as a remote
driver, the same BuildKit generation as GitHub's setup-buildx-action, so local builds and the
release workflow behave alike. The engine's own builder is too old (no named contexts, no
multi-platform output) and is not used.

- PIREX_BUILDER=name: use that existing buildx builder as it is.
- buildkitd on PATH (scripts/host-setup.sh builds it) and root: started here for the length of
  the command, state under the cache, plain HTTP allowed for the local registry only.
- otherwise: buildx's docker-container driver (pulls moby/buildkit: needs a container registry).
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import localregistry
from pirex.images.daemon import Daemon

# One builder name per driver, so that a builder made the other way is never reused by mistake.
# Builders are listed under the cache (BUILDX_CONFIG), next to the buildkitd socket they name.
REMOTE = "pirex-remote"
CONTAINER = "pirex-container"

# The build cache is what lets a commit that leaves images/ alone rebuild nothing (issue 40). BuildKit 0.18 reads
# every size with go-units: the former bare `gckeepstorage = 20000` meant 20,000 BYTES, so its garbage collector cut
# the cache to almost nothing after each build and every `make build` re-ran most steps, the emulated apt-get runs
# among them. Now: keep up to 40 GB (the collection for three platforms takes a few), less when the disk has under
# 10 GB free, never under 10 GB (reservedSpace, maxUsedSpace, minFreeSpace: BuildKit 0.17 and later).
CONFIG = """\
# written by pirex
[worker.oci]
  enabled = true
  gc = true
  reservedSpace = "10GB"
  maxUsedSpace = "40GB"
  minFreeSpace = "10GB"
[worker.containerd]
  enabled = false
[registry."{registry}"]
  http = true
  insecure = true
"""


def buildx_env() -> dict[str, str]:
    """buildx keeps its builder list here, apart from the user's (and from a test's DOCKER_CONFIG)."""
    return {"BUILDX_CONFIG": str(paths.cache_dir() / "buildx")}


def buildx(*args: str, timeout: float, **kw) -> proc.Result:
    return proc.run(["docker", "buildx", *args], timeout=timeout, env={**buildx_env(), **kw.pop("env", {})}, **kw)


def _exists(name: str) -> bool:
    return buildx("inspect", name, timeout=60, check=False).ok


@contextmanager
def builder():
    """Yield the name of a ready buildx builder; stop whatever was started for it."""
    if name := os.environ.get("PIREX_BUILDER"):
        yield name
        return
    if proc.which("docker") is None or not proc.run(["docker", "buildx", "version"], timeout=30, check=False).ok:
        raise PirexError("docker buildx is missing: install the buildx plugin (scripts/host-setup.sh builds it)")
    exe = proc.which("buildkitd")
    if exe and os.geteuid() == 0:
        with _remote(exe) as name:
            yield name
    else:
        yield _docker_container()


@contextmanager
def _remote(exe: str):
    state = paths.cache_dir() / "buildkit"
    state.mkdir(parents=True, exist_ok=True)
    cfg = state / "buildkitd.toml"
    cfg.write_text(CONFIG.format(registry=localregistry.HOST))
    sock = state / "buildkitd.sock"
    addr = f"unix://{sock}"
    daemon = Daemon(
        "buildkitd",
        [
            exe,
            "--config",
            cfg,
            "--root",
            state / "root",
            "--addr",
            addr,
            "--oci-worker=true",
            "--containerd-worker=false",
        ],
        state / "buildkitd.log",
        ready=lambda: _accepts(sock),
    )
    with daemon:
        if not _exists(REMOTE):
            buildx("create", "--name", REMOTE, "--driver", "remote", addr, timeout=60)
        buildx("inspect", "--bootstrap", REMOTE, timeout=120)
        yield REMOTE


def _accepts(sock: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(sock))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _docker_container() -> str:
    if not _exists(CONTAINER):
        cfg = Path(paths.cache_dir()) / "buildkitd.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(CONFIG.format(registry=localregistry.HOST))
        buildx(
            "create",
            "--name",
            CONTAINER,
            "--driver",
            "docker-container",
            "--driver-opt",
            "network=host",
            "--buildkitd-config",
            str(cfg),
            timeout=120,
        )
    try:
        buildx("inspect", "--bootstrap", CONTAINER, timeout=300)
    except PirexError as e:
        raise PirexError(
            "could not start a BuildKit container (it needs the moby/buildkit image from a registry). "
            "Without registry access, build buildkitd with scripts/host-setup.sh and run as root, "
            f"or name a builder of yours with PIREX_BUILDER.\n{e}"
        ) from e
    return CONTAINER
