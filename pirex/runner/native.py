"""The `native` variant: the image's own filesystem, exported to the host disk (cached by image
ID and host), run with chroot outside any container: no namespaces, cgroups, overlayfs or bridge
network, so that only Docker differs between `native` and `docker`. The image's user,
environment and working directory are applied; /proc, /sys and /dev are bind-mounted for the
length of a step and unmounted on every exit path."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pirex.core import capabilities, paths, proc
from pirex.core.errors import PirexError
from pirex.runner import leftovers, lock

log = logging.getLogger(__name__)

# <image id>@<host identity>: an export per image and host. Hosts on one disk (the fleet tests' network
# namespaces) would otherwise remove and refill one another's export while it runs (lock.host_identity).
HOST_MARK = "@"
EXPORT_INFO = ".export.json"  # the image's name and how long its export took


def unavailable_reason() -> str | None:
    """Why this machine cannot run the native variant, or None."""
    if not capabilities.is_root():
        return "the native variant needs root (chroot and bind mounts): run pirex as root, e.g. with sudo"
    for tool in ("chroot", "mount", "umount", "tar"):
        if not shutil.which(tool):
            return f"the native variant needs {tool}"
    return None


def rootfs(image_ref: str) -> tuple[Path, dict]:
    """The image's filesystem on the host disk and its config (user, env, working directory)."""
    info = json.loads(proc.run(["docker", "image", "inspect", image_ref], timeout=60).stdout)[0]
    image_id = info["Id"].split(":", 1)[1]
    root = paths.cache_dir() / "native" / f"{image_id[:16]}{HOST_MARK}{lock.host_identity()}"
    grew = False
    if not (root / ".complete").exists():
        log.info("exporting %s to %s for the native variant", image_ref, root)
        remove_tree(root)
        root.mkdir(parents=True)
        started = time.monotonic()
        cid = proc.run(["docker", "create", *leftovers.docker_args(), image_ref, "true"], timeout=120).stdout.strip()
        try:
            proc.run(
                ["bash", "-o", "pipefail", "-c", 'docker export "$0" | tar -x -C "$1" --numeric-owner', cid, root],
                timeout=900,
                what=f"exporting {image_ref}",
            )
        finally:
            proc.run(["docker", "rm", "-f", cid], timeout=120, check=False)
        took = round(time.monotonic() - started, 1)  # what a first run's plan adds (exported(), durations: first)
        (root / EXPORT_INFO).write_text(json.dumps({"image": image_name(image_ref), "seconds": took}) + "\n")
        (root / ".complete").write_text(info["Id"] + "\n")
        grew = True
    os.utime(root / ".complete")  # the least recently used go first
    _mark_used(root, paths.REPO)
    if grew:  # only then can the cache be over its size; this checkout's older build of the image is no longer used
        _prune(root.parent, keep=root)
    return root, info["Config"]


def image_name(image_ref: str) -> str:
    """An image's name without registry, namespace, tag or digest: localhost:5000/pirex/jmh@sha256:... -> jmh."""
    return image_ref.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def exported(name: str) -> bool:
    """Whether this host has an export of an image of this name (any build of it): a plan on a machine without
    one adds the first export's time (plan.estimate)."""
    directory = paths.cache_dir() / "native"
    mine = f"{HOST_MARK}{lock.host_identity()}"
    for info in directory.glob(f"*{mine}/{EXPORT_INFO}") if directory.is_dir() else ():
        try:
            if json.loads(info.read_text()).get("image") == name and (info.parent / ".complete").exists():
                return True
        except (OSError, ValueError):
            continue
    return False


# The exports are a cache, machine-wide (every checkout's runs share it), bounded in size: PIREX_NATIVE_CACHE_MB,
# default 3,000 MB (about ten images' exports). Past it the least recently used go, never one a checkout still uses:
# each checkout's newest export of each image it ran (its bundles and plans name that build; an older build of the
# same image is the one a new commit replaced), one mounted by a run, or the one just made.
CACHE_MB = "PIREX_NATIVE_CACHE_MB"
DEFAULT_CACHE_MB = 3000
USERS = ".users"  # in an export: a file per checkout that ran it, its mtime that checkout's last use


def _cache_bytes() -> int:
    raw = os.environ.get(CACHE_MB, str(DEFAULT_CACHE_MB))
    if not raw.isdigit():
        raise PirexError(f"{CACHE_MB}={raw!r}: a whole number of megabytes (the native exports' cache), e.g. 3000")
    return int(raw) * 2**20


def _mark_used(root: Path, checkout: Path) -> None:
    """This checkout uses this export now (rootfs): its file under .users/ names the checkout, touched."""
    users = root / USERS
    users.mkdir(exist_ok=True)
    mark = users / hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:16]
    mark.write_text(str(checkout.resolve()) + "\n")  # rewritten: its mtime is the last use


def _size(root: Path) -> int:
    """An export's bytes on disk: measured once (os.walk, symlinks not followed) and kept in its EXPORT_INFO."""
    info = root / EXPORT_INFO
    try:
        doc = json.loads(info.read_text())
    except (OSError, ValueError):
        doc = {}
    if not isinstance(doc.get("bytes"), int):
        total = 0
        for d, _, files in os.walk(root):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(d, f)).st_blocks * 512
        doc["bytes"] = total
        with contextlib.suppress(OSError):
            info.write_text(json.dumps(doc) + "\n")
    return doc["bytes"]


def _in_use(exports: list[Path]) -> set[Path]:
    """Each live checkout's newest export of each image it ran: what its bundles and plans name (a checkout that
    is gone names nothing)."""
    newest: dict[tuple[str, str], tuple[float, Path]] = {}
    for root in exports:
        try:
            image = json.loads((root / EXPORT_INFO).read_text()).get("image", root.name)
        except (OSError, ValueError):
            image = root.name
        for mark in (root / USERS).glob("*") if (root / USERS).is_dir() else ():
            try:
                checkout, used = mark.read_text().strip(), mark.stat().st_mtime
            except OSError:
                continue
            if Path(checkout).is_dir() and used > newest.get((checkout, image), (-1.0, root))[0]:
                newest[(checkout, image)] = (used, root)
    return {root for _, root in newest.values()}


def _prune(directory: Path, keep: Path) -> None:
    """Past the cache's size, this host's least recently used exports go (hosts simulated in network namespaces
    share the disk, and one's export is not another's), except those in use (_in_use), mounted, or keep."""
    mine = keep.name.partition(HOST_MARK)[2]
    exports = sorted(
        (
            p
            for p in directory.iterdir()
            if (p / ".complete").exists() and p.name.partition(HOST_MARK)[2] in (mine, "")
        ),  # "": from before exports were per host
        key=lambda p: (p / ".complete").stat().st_mtime,
        reverse=True,
    )
    total, bound = sum(_size(p) for p in exports), _cache_bytes()
    kept = _in_use(exports) | {keep}
    for old in reversed(exports):  # the least recently used first
        if total <= bound:
            break
        if old in kept or _mounts_under(old):
            continue  # a checkout's current build, or in use by a run
        log.info("removing the native export of an image no checkout uses now (cache over %d MB): %s", bound >> 20, old)
        total -= _size(old)
        remove_tree(old)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()) + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].replace("\\040", " ") for line in f]
    return [p for p in points if p.startswith(prefix)]


def remove_tree(path: Path) -> None:
    """rmtree would walk into a bind-mounted /dev or /sys left by a killed run and delete the
    host's files: detach every mount under path first, and refuse if any stays."""
    if not path.exists():
        return
    for point in sorted(_mounts_under(path), key=len, reverse=True):
        proc.run(["umount", "-R", "-l", point], timeout=60, check=False)
    if left := _mounts_under(path):
        raise PirexError(f"{path} still has mounts ({', '.join(left)}); unmount them, then remove it")
    shutil.rmtree(path)


@contextmanager
def mounted(root: Path, binds: dict[Path, str], tmpfs: dict[str, int] | None = None):
    """/proc, /sys, /dev, the given host directories and RAM drives (path -> MB) mounted into
    root; all undone on exit."""
    targets: list[Path] = []
    leftovers.note("mount", root=str(root))  # a kill leaves these mounts: the record says whose they are
    with ExitStack() as stack:
        stack.callback(_unmount_all, targets)
        for src, fstype, dest in (("proc", "proc", "proc"), ("/sys", None, "sys"), ("/dev", None, "dev")):
            t = root / dest
            t.mkdir(exist_ok=True)
            if fstype:
                proc.run(["mount", "-t", fstype, src, t], timeout=30)
            else:
                proc.run(["mount", "--rbind", src, t], timeout=30)
                proc.run(["mount", "--make-rslave", t], timeout=30)
            targets.append(t)
        for host_dir, inside in binds.items():
            t = root / inside.lstrip("/")
            t.mkdir(parents=True, exist_ok=True)
            proc.run(["mount", "--bind", host_dir, t], timeout=30)
            targets.append(t)
        for inside, mb in (tmpfs or {}).items():
            t = root / inside.lstrip("/")
            t.mkdir(parents=True, exist_ok=True)
            proc.run(["mount", "-t", "tmpfs", "-o", f"size={mb}m,mode=1777", "pirex-ramdrive", t], timeout=30)
            targets.append(t)
        yield


def _unmount_all(targets: list[Path]) -> None:
    for t in reversed(targets):
        r = proc.run(["umount", "-R", t], timeout=60, check=False)
        if not r.ok:  # busy: detach now, the kernel finishes when the last user goes
            proc.run(["umount", "-R", "-l", t], timeout=60, check=False)


def command(root: Path, config: dict, argv: list[str], extra_env: dict[str, str]) -> list[str]:
    """chroot with the image's user, environment and working directory."""
    user = workload_user(config)
    workdir = config.get("WorkingDir") or "/"
    env = [e for e in config.get("Env") or []] + [f"{k}={v}" for k, v in extra_env.items()]
    return [
        "chroot",
        f"--userspec={user}",
        str(root),
        "/usr/bin/env",
        "-i",
        *env,
        "/bin/sh",
        "-c",
        'cd "$0" && exec "$@"',
        workdir,
        *argv,
    ]


def workload_user(config: dict) -> str:
    """The user the image's workload runs as. An image that starts as uid 0 in another group has its
    entrypoint (images/base/pirex-entrypoint) drop to PIREX_USER; chroot skips the entrypoint, so here too."""
    user = config.get("User") or "0:0"
    uid, _, gid = user.partition(":")
    if uid in ("0", "root") and gid not in ("", "0", "root"):
        env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
        return env.get("PIREX_USER", "1000:1000")
    return user
