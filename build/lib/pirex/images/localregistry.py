"""The local registry on 127.0.0.1:5000 that holds what `make build` produced (every platform
of every image as one manifest list) and, offline, the bootstrap roles the builds start FROM.

It is Debian's docker-registry (CNCF distribution 2.8) started as a plain process for the
length of a pirex command, storage under the cache so images survive between commands."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from pirex.core import paths
from pirex.core.errors import PirexError
from pirex.core.proc import which
from pirex.images.daemon import Daemon

HOST = os.environ.get("PIREX_LOCAL_REGISTRY", "localhost:5000")
LISTEN = HOST.replace("localhost", "127.0.0.1")

CONFIG = """\
# written by pirex: the local registry of offline builds (plain HTTP, loopback only, no auth)
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: {addr}
"""


def answers(addr: str = LISTEN, timeout: float = 2) -> bool:
    try:
        with urllib.request.urlopen(f"http://{addr}/v2/", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def write_config(directory: Path, addr: str, htpasswd: Path | None = None) -> Path:
    """A registry config; with htpasswd the registry requires credentials (for tests)."""
    directory.mkdir(parents=True, exist_ok=True)
    text = CONFIG.format(root=directory / "data", addr=addr)
    if htpasswd:
        text += f"auth:\n  htpasswd:\n    realm: pirex\n    path: {htpasswd}\n"
    cfg = directory / "config.yml"
    cfg.write_text(text)
    return cfg


def registry_daemon(directory: Path, addr: str, htpasswd: Path | None = None) -> Daemon:
    exe = which("docker-registry") or which("registry")
    if not exe:
        raise PirexError(
            "no registry program found: install Debian's docker-registry (apt-get install docker-registry; "
            "scripts/host-setup.sh does it), or run a registry on 127.0.0.1:5000 yourself"
        )
    cfg = write_config(directory, addr, htpasswd)
    return Daemon(f"registry {addr}", [exe, "serve", cfg], directory / "registry.log", ready=lambda: _answers_any(addr))


def _answers_any(addr: str) -> bool:
    """With auth on, /v2/ answers 401: still up."""
    try:
        with urllib.request.urlopen(f"http://{addr}/v2/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def local_registry():
    """The local registry for the length of a block: the running one, or one started here."""
    if _answers_any(LISTEN) and not answers(LISTEN):
        raise PirexError(
            f"a registry on {LISTEN} requires credentials, so it is not one pirex can build into; on Debian "
            "the docker-registry package starts one as a service: `systemctl disable --now docker-registry`"
        )
    if answers(LISTEN):  # one is running (another pirex, or the host's seen from a chroot): no program needed
        yield HOST
        return
    with registry_daemon(paths.cache_dir() / "registry", LISTEN):
        yield HOST
