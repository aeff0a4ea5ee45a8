"""An emulated Raspberry Pi for the tests: a Debian bookworm rootfs of the Pi's architecture (arm64,
or armhf as a 32-bit Raspberry Pi OS), entered with chroot through QEMU user emulation.

The rootfs is made once by mmdebstrap (the host's Debian sources, as images/bootstrap does, with the
same fallback when the security suite is being synced) and cached under <cache>/pi-rootfs; each test
works on an overlay of it, so the cached tree stays pristine. Every command runs in a private mount
namespace (`unshare --mount`): /proc, /sys, /dev, the Docker socket and the work directory are bound
in there, the Pi's identity is laid over them, and all of it disappears with the command.

The Pi's identity, from ../shared/PI-FACTS.md: /proc/cpuinfo with the board lines of a Pi 3 (a bind
mount over the host's file), the device tree's model and serial (a tmpfs over /sys/firmware), and a
stand-in vcgencmd printing a healthy Pi's readings. The Docker client is the host's binary with the
host's x86-64 loader and libraries beside the Pi's own (the multiarch paths do not collide), talking
to the host's engine, which runs the Pi's images under QEMU too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import bootstrap
from pirex.runner import native

log = logging.getLogger(__name__)

# What `make`'s install step and pirex need on the Pi; Debian's numpy/scipy/matplotlib/yaml only on
# 32-bit (scripts/host-setup.sh installs them there), where PyPI has no wheels. No git: the test's
# checkout is a copy (pirex then records its package version), and git brings perl, a third of the
# packages to install under emulation.
PACKAGES = ["ca-certificates", "make", "python3", "python3-venv"]
DPKG_ARCHES = ("arm64", "armhf")  # the two Pis tests/test_emulated_pi.py runs
DEBIAN_PYTHON = [
    "python3-jinja2",
    "python3-jsonschema",
    "python3-markdown",
    "python3-matplotlib",
    "python3-numpy",
    "python3-scipy",
    "python3-yaml",
]
MMDEBSTRAP_TIMEOUT = 3600
# Under emulation dpkg's fsyncs and Debian's byte-compiling (py3compile in every Python package's
# postinst) are most of a rootfs's time: dpkg runs under eatmydata, py3compile is diverted while the
# packages install, and the tree is byte-compiled afterwards by the host's own Python when it is the
# same version (bytecode does not depend on the CPU), else lazily at import.
NO_BYTECOMPILE = ("py3compile", "py3clean")
DIVERT = 'dpkg-divert --root "$1" --local --rename --divert /usr/bin/{0}.pirex-off {1} /usr/bin/{0}'
ESSENTIAL_HOOK = "; ".join(DIVERT.format(p, "--add") for p in NO_BYTECOMPILE)
CUSTOMIZE_HOOK = "; ".join(f'rm -f "$1/usr/bin/{p}"; ' + DIVERT.format(p, "--remove") for p in NO_BYTECOMPILE)

MODEL = "Raspberry Pi 3 Model B Rev 1.2"
CPUINFO = Path(__file__).resolve().parent.parent / "pirex/core/testdata/machine/pi3-raspbian32.cpuinfo"
VCGENCMD = """#!/bin/sh
# a stand-in for the firmware's vcgencmd: a healthy Pi 3 (readings from PI-FACTS.md)
case "$1" in
get_throttled) echo "throttled=0x0" ;;
measure_temp) echo "temp=47.8'C" ;;
measure_clock) echo "frequency(48)=1200000000" ;;
measure_volts) echo "volt=1.2000V" ;;
get_config) echo "arm_freq=1200" ;;
*) echo "error=1 error_msg=\\"Command not registered\\"" >&2; exit 1 ;;
esac
"""

SETUP = r"""
set -eu
R=$PI_MERGED
mount -t overlay overlay -o "lowerdir=$PI_LOWER,upperdir=$PI_UPPER,workdir=$PI_OVERLAY_WORK" "$R"
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
# the Pi's identity over the host's
mount --bind "$PI_CPUINFO" "$R/proc/cpuinfo"
mount -t tmpfs tmpfs "$R/sys/firmware"
mkdir -p "$R/sys/firmware/devicetree/base"
printf '%s\0' "$PI_MODEL" > "$R/sys/firmware/devicetree/base/model"
# the host's Docker client (x86-64, run natively) and engine
for d in /usr/lib/x86_64-linux-gnu /usr/lib64; do  # a dynamically linked client's loader and libraries
    [ -d "$d" ] || continue
    mkdir -p "$R$d"
    mount --bind "$d" "$R$d"
done
[ -e "$R/lib64" ] || ln -s usr/lib64 "$R/lib64"
mkdir -p "$R/run"
touch "$R/usr/local/bin/docker" "$R/run/docker.sock"
mount --bind "$PI_DOCKER" "$R/usr/local/bin/docker"
mount --bind /run/docker.sock "$R/run/docker.sock"
# the host's certificate bundle (pip reaches its index through whatever the host trusts)
mount --bind /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
cp /etc/resolv.conf "$R/etc/resolv.conf"
mkdir -p "$R$PI_WORK" "$R/root/.cache/pip"
mount --bind "$PI_WORK" "$R$PI_WORK"
mount --bind "$PI_PIP_CACHE" "$R/root/.cache/pip"
cd /
exec chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
    PIREX_CACHE=/var/cache/pirex PIREX_TEST_TAG="$PI_TAG" \
    /bin/sh -c 'cd "$0" && exec "$@"' "$PI_WORK" "$@"
"""


# The process groups the Pis' commands run in: the two Pis are prepared side by side in threads, their rootfs trees
# made beside the image build, and an interrupted test or session stops them all (the main thread gets the signal,
# the threads would wait), none started after that (proc.Groups).
_GROUPS = proc.Groups()


def _run(args: list, **kw) -> proc.Result:
    return _GROUPS.run(args, **kw)


def stop_all(grace: float = 30) -> None:
    """SIGTERM every running Pi command's process group (mmdebstrap and pirex clean up after
    themselves on it), SIGKILL what is left after grace seconds; no Pi command starts after it."""
    _GROUPS.stop(grace)


def stop_making() -> None:
    """The session's end (conftest.built's finalizer): every Pi command ended, the rootfs makers' threads joined,
    so that neither an mmdebstrap under QEMU nor a thread outlives the session however it ended."""
    stop_all()
    _MAKERS.shutdown(wait=True, cancel_futures=True)


# Each architecture's rootfs is made once per session, in a thread of its own (rootfs_soon), and waited for by rootfs()
_MAKING: dict[str, Future[Path]] = {}
_MAKING_LOCK = threading.Lock()
_MAKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pi-rootfs")


def rootfs_soon(dpkg_arches: list[str]) -> None:
    """Start making each missing rootfs and return at once: on a fresh machine mmdebstrap under QEMU (minutes for
    both Pis, most of it emulated package scripts) then runs beside the image build instead of after it. A cached
    rootfs costs nothing here. rootfs() waits for it and raises what making it raised."""
    for arch in dpkg_arches:
        _making(arch)


def _making(dpkg_arch: str) -> Future[Path]:
    with _MAKING_LOCK:
        if dpkg_arch not in _MAKING:
            _MAKING[dpkg_arch] = _MAKERS.submit(_make_rootfs, dpkg_arch)
        return _MAKING[dpkg_arch]


def rootfs(dpkg_arch: str) -> Path:
    """The cached rootfs directory for one architecture, made when missing (a changed recipe or changed
    sources make a new one); one making of it per session, however many ask."""
    return _making(dpkg_arch).result()


def _make_rootfs(dpkg_arch: str) -> Path:
    packages = PACKAGES + (DEBIAN_PYTHON if dpkg_arch == "armhf" else [])
    options = [
        "--variant=minbase",
        bootstrap.MERGED_USR_HOOK,
        bootstrap.EATMYDATA_HOOK,
        f"--essential-hook={ESSENTIAL_HOOK}",
        f"--customize-hook={CUSTOMIZE_HOOK}",
        '--aptopt=APT::Install-Recommends "false"',
        f"--include={','.join(packages)}",
        *(f"--dpkgopt={o}" for o in bootstrap.SLIM_DPKG_OPTS),
    ]
    cands = bootstrap.source_candidates()
    key = hashlib.sha256("\0".join([dpkg_arch, *options, cands[0][1]]).encode()).hexdigest()[:8]
    base = paths.cache_dir() / "pi-rootfs"
    root = base / f"{dpkg_arch}-{key}"
    if (root / ".pirex-complete").exists():
        return root
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob(f"{dpkg_arch}-*"):  # a killed mmdebstrap leaves its /sys mounted there: detached first
        native.remove_tree(stale)
    for n, (desc, text) in enumerate(cands):
        src = base / f"sources-{dpkg_arch}-{n}.sources"
        src.write_text(text)
        native.remove_tree(root)
        args = ["mmdebstrap", *options, f"--arch={dpkg_arch}", bootstrap.SUITE, root, src]
        log.info("making the emulated Pi's %s rootfs from %s", dpkg_arch, desc)
        try:
            proc.retry(
                lambda args=args: _run(args, timeout=MMDEBSTRAP_TIMEOUT, what=f"mmdebstrap {dpkg_arch}"),
                attempts=2,
                what=f"mmdebstrap {dpkg_arch}",
                delay=10,
                retry_if=lambda _: not _GROUPS.stopping,
            )
        except PirexError:
            native.remove_tree(root)
            if n + 1 < len(cands) and not _GROUPS.stopping:
                log.warning("mmdebstrap failed with %s; falling back to %s", desc, cands[n + 1][0])
                continue
            raise
        byte_compile(root)
        vcgencmd = root / "usr/local/bin/vcgencmd"
        vcgencmd.write_text(VCGENCMD)
        vcgencmd.chmod(0o755)
        (root / ".pirex-complete").write_text(json.dumps({"sources": desc, "fallback": n > 0}) + "\n")
        return root
    raise AssertionError("unreachable")


def byte_compile(root: Path) -> None:
    """Byte-compile the rootfs's Python packages with the host's Python, as py3compile would have,
    when the host's Python is the rootfs's version; otherwise they compile at their first import."""
    here = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if not (root / "usr/bin" / here).exists():
        log.info("the rootfs has no %s: its modules compile at their first import", here)
        return
    dirs = [str(d) for d in (root / "usr/lib" / here, root / "usr/lib/python3/dist-packages") if d.is_dir()]
    # -s/-p: the paths compiled in are the rootfs's own, as inside the chroot
    r = _run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "-s", str(root), "-p", "/", *dirs],
        timeout=900,
        check=False,
        what="compileall",
    )
    if not r.ok:  # a few of Debian's files are not Python 3 (test data): the rest is compiled
        log.info("compileall: %s", (r.stdout + r.stderr).strip().splitlines()[-1:])


@dataclass
class Pi:
    """One emulated Pi: an overlay over the cached rootfs and a work directory seen at the same path
    inside and outside (so that paths pirex hands the host's Docker engine are right on both sides)."""

    lower: Path
    scratch: Path
    work: Path
    tag: str

    @classmethod
    def create(cls, dpkg_arch: str, scratch: Path, tag: str) -> Pi:
        for d in ("upper", "overlay-work", "merged", "work"):
            (scratch / d).mkdir(parents=True, exist_ok=True)
        return cls(rootfs(dpkg_arch), scratch, scratch / "work", tag)

    def run(self, *argv: str, timeout: float, check: bool = True) -> proc.Result:
        pip_cache = paths.cache_dir() / "pi-rootfs" / f"pip-cache-{self.lower.name.split('-')[0]}"
        pip_cache.mkdir(parents=True, exist_ok=True)
        env = {
            "PI_MERGED": str(self.scratch / "merged"),
            "PI_LOWER": str(self.lower),
            "PI_UPPER": str(self.scratch / "upper"),
            "PI_OVERLAY_WORK": str(self.scratch / "overlay-work"),
            "PI_CPUINFO": str(CPUINFO),
            "PI_MODEL": MODEL,
            "PI_DOCKER": shutil.which("docker") or "/usr/bin/docker",
            "PI_WORK": str(self.work),
            "PI_PIP_CACHE": str(pip_cache),
            "PI_TAG": self.tag,
        }
        args = ["unshare", "--mount", "--propagation", "private", "sh", "-c", SETUP, "pi-setup", *argv]
        return _run(args, timeout=timeout, check=check, env=env, what=" ".join(argv[:3]))

    def copy_checkout(self) -> Path:
        """The repository's files (tracked and new, not ignored: no virtualenv, no results) into the work dir."""
        files = proc.run(
            ["git", "-C", paths.REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], timeout=60
        ).stdout.split("\0")
        dest = self.work / "pirex"
        for f in filter(None, files):
            src = paths.REPO / f
            if src.is_file():
                (dest / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / f)
        return dest


def have_tools() -> str | None:
    """Why the emulated Pi cannot run here, or None."""
    for tool in ("mmdebstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            return f"{tool} not found (scripts/host-setup.sh installs mmdebstrap)"
    if os.geteuid() != 0:
        return "needs root (mmdebstrap into a directory, mounts)"
    for a in ("qemu-aarch64", "qemu-arm"):
        if not Path(f"/proc/sys/fs/binfmt_misc/{a}").exists():
            return f"no binfmt entry {a} (scripts/host-setup.sh registers QEMU)"
    return None
