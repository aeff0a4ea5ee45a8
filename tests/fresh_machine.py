"""A fresh Debian 12 machine on this one, for the README's two commands from nothing (no Docker engine,
no pirex caches): a Debian bookworm amd64 rootfs from mmdebstrap with what a new user adds before
`git clone` (git, make) and a user account without sudo, entered with chroot in mount and PID namespaces
of its own, optionally in a network namespace of its own that reaches the package registries through
this machine (a veth, NAT).

What it shares with this machine is only the machine kind's own set-up: the local CA certificates and pip
configuration (this machine's package registries are reached through them), Go in /usr/local/go
(scripts/host-setup.sh builds buildx, compose and buildkitd with it), the kernel (binfmt, cgroups). Its
Docker engine, registry and buildkitd are its own: /run is a tmpfs (no way to this machine's
/var/run/docker.sock), its data roots are in its own tree, its bridge and iptables rules in its network
namespace. The PID namespace ends every process started inside when the command ends or is killed; the
mount namespace takes every mount with it; the network namespace, veth and NAT rules are removed on every
exit path (and a killed earlier run's leftovers first).

The rootfs is cached under <cache>/fresh-rootfs (a changed recipe or changed sources make a new one);
each machine is a copy of it on disk, not an overlay (a dockerd or buildkitd inside needs a filesystem
that takes overlay mounts)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import bootstrap
from pirex.runner import native

log = logging.getLogger(__name__)

PACKAGES = ["ca-certificates", "git", "make"]  # what the README's first line (`git clone`, `make`) needs
USER = "user"  # uid 1000, no sudo
MMDEBSTRAP_TIMEOUT = 1800
NETNS = "pirex-fresh"
VETH = ("pxfresh0", "eth0")  # this machine's end, the namespace's end
SUBNET = "10.79.0"
RULE_COMMENT = "pirex-fresh"
# The machine kind's own set-up that a fresh VM of it has: its CAs (registries are reached through them), pip's
# configuration, Go (ENVIRONMENT.md: host-setup.sh builds the Docker plugins and buildkitd with it).
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
PIP_CONF = Path("/etc/pip.conf")
GO = Path("/usr/local/go")

CUSTOMIZE = r"""
set -eu
R=$1
# no service starts in a chroot (a VM would start docker.io's and docker-registry's through systemd;
# here scripts/host-setup.sh starts dockerd itself, as in CI)
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
if [ -d "$PIREX_LOCAL_CAS" ]; then
    cp "$PIREX_LOCAL_CAS"/*.crt "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
    chroot "$R" update-ca-certificates >/dev/null
fi
[ ! -f "$PIREX_PIP_CONF" ] || cp "$PIREX_PIP_CONF" "$R/etc/pip.conf"
chroot "$R" useradd --create-home --uid 1000 --shell /bin/bash "$PIREX_USER"
mkdir -p "$R/usr/local/go"
"""

SETUP = r"""
set -eu
R=$FRESH_ROOT
# the tree a mount point of its own, as a machine's root is: a buildkitd or dockerd inside makes / rslave
# (mount --make-rslave /), which the kernel refuses (EINVAL) on a directory that is not a mount point
mount --bind "$R" "$R"
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount -t tmpfs -o mode=755 tmpfs "$R/run"
mkdir -p "$R/run/lock"
[ ! -d "$FRESH_GO" ] || mount --bind -o ro "$FRESH_GO" "$R/usr/local/go"
cp /etc/resolv.conf "$R/etc/resolv.conf"
cd /
exec chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin \
    /bin/bash -c "$@"
"""


def rootfs() -> Path:
    """The cached fresh rootfs, made when missing (about a minute: a native mmdebstrap)."""
    options = [
        "--variant=minbase",
        bootstrap.MERGED_USR_HOOK,
        '--aptopt=APT::Install-Recommends "false"',
        f"--include={','.join(PACKAGES)}",
    ]
    cands = bootstrap.source_candidates()
    key = hashlib.sha256("\0".join(["amd64", *options, CUSTOMIZE, cands[0][1]]).encode()).hexdigest()[:8]
    base = paths.cache_dir() / "fresh-rootfs"
    root = base / f"amd64-{key}"
    if (root / ".pirex-complete").exists():
        return root
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob("amd64-*"):  # a killed mmdebstrap leaves its /sys mounted there: detached first
        native.remove_tree(stale)
    env = {"PIREX_LOCAL_CAS": str(LOCAL_CAS), "PIREX_PIP_CONF": str(PIP_CONF), "PIREX_USER": USER}
    for n, (desc, text) in enumerate(cands):
        src = base / f"sources-{n}.sources"
        src.write_text(text)
        native.remove_tree(root)
        args = ["mmdebstrap", *options, f"--customize-hook={CUSTOMIZE}", "--arch=amd64", bootstrap.SUITE, root, src]
        log.info("making the fresh machine's rootfs from %s", desc)
        try:
            proc.retry(
                lambda args=args: proc.run(args, timeout=MMDEBSTRAP_TIMEOUT, env=env, what="mmdebstrap amd64"),
                attempts=2,
                what="mmdebstrap amd64",
                delay=10,
            )
        except PirexError:
            native.remove_tree(root)
            if n + 1 < len(cands):
                log.warning("mmdebstrap failed with %s; falling back to %s", desc, cands[n + 1][0])
                continue
            raise
        (root / ".pirex-complete").write_text(json.dumps({"sources": desc, "fallback": n > 0}) + "\n")
        return root
    raise AssertionError("unreachable")


def _iptables(*rule: str, delete: bool = False) -> proc.Result:
    table, rest = (rule[:2], rule[2:]) if rule[0] == "-t" else ((), rule)
    target = "ACCEPT" if rest[0] == "FORWARD" else "MASQUERADE"
    return proc.run(
        ["iptables", *table, "-D" if delete else "-I", *rest, "-m", "comment", "--comment", RULE_COMMENT, "-j", target],
        timeout=30,
        check=not delete,
    )


RULES = (
    ("FORWARD", "-i", VETH[0]),
    ("FORWARD", "-o", VETH[0]),
    ("-t", "nat", "POSTROUTING", "-s", f"{SUBNET}.0/24", "!", "-o", VETH[0]),
)


def _teardown_network() -> None:
    """What a network namespace of this module leaves when its owner was killed: rules, veth, namespace."""
    for rule in RULES:
        while _iptables(*rule, delete=True).ok:  # inserted once per run; a killed run may have left one
            pass
    proc.run(["ip", "link", "del", VETH[0]], timeout=30, check=False)
    proc.run(["ip", "netns", "del", NETNS], timeout=30, check=False)


@contextlib.contextmanager
def network() -> Iterator[str]:
    """A network namespace whose only way out is a veth to this machine, NATed: the package registries
    are reached as from this machine, nothing of this machine's network (its Docker bridge, its loopback
    services such as the local registry) is."""
    _teardown_network()
    try:
        proc.run(["ip", "netns", "add", NETNS], timeout=30)
        proc.run(["ip", "link", "add", VETH[0], "type", "veth", "peer", "name", VETH[1], "netns", NETNS], timeout=30)
        proc.run(["ip", "addr", "add", f"{SUBNET}.1/24", "dev", VETH[0]], timeout=30)
        proc.run(["ip", "link", "set", VETH[0], "up"], timeout=30)
        for args in (
            ["addr", "add", f"{SUBNET}.2/24", "dev", VETH[1]],
            ["link", "set", VETH[1], "up"],
            ["link", "set", "lo", "up"],
            ["route", "add", "default", "via", f"{SUBNET}.1"],
        ):
            proc.run(["ip", "-n", NETNS, *args], timeout=30)
        for rule in RULES:
            _iptables(*rule)
        if Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() != "1":
            raise PirexError("IPv4 forwarding is off on this machine: the fresh machine could not reach any registry")
        yield NETNS
    finally:
        _teardown_network()


@dataclass
class Machine:
    """One fresh machine: a copy of the cached rootfs in a scratch directory."""

    root: Path
    REMOTE = "/srv/pirex.git"  # what it clones: this checkout's committed HEAD, as a bare repository

    @classmethod
    @contextlib.contextmanager
    def create(cls, source: Path, scratch: Path | None = None, owner: str = "root") -> Iterator[Machine]:
        """A machine whose REMOTE holds `source`'s committed HEAD, owned by `owner` (git refuses to read a
        repository of another user)."""
        with tempfile.TemporaryDirectory(prefix="pirex-fresh-", dir=scratch or "/var/tmp") as d:
            root = Path(d) / "root"
            proc.run(["cp", "-a", "--reflink=auto", str(rootfs()), str(root)], timeout=600)
            try:
                proc.run(
                    ["git", "clone", "-q", "--bare", "--no-hardlinks", str(source), f"{root}{cls.REMOTE}"], timeout=300
                )
                uid = 0 if owner == "root" else 1000
                proc.run(["chown", "-R", f"{uid}:{uid}", f"{root}{cls.REMOTE}"], timeout=60)
                yield cls(root)
            finally:
                # everything inside ended with its PID namespace and its mounts with the mount namespace
                proc.run(["rm", "-rf", "--one-file-system", str(root)], timeout=1800, check=False)

    def run(
        self, script: str, *, timeout: float, user: str | None = None, netns: str | None = None, check: bool = False
    ) -> proc.Result:
        """bash -c SCRIPT inside, as root or as `user` (HOME its own), in `netns` or with no network at all."""
        if user:
            as_user = f"setpriv --reuid={user} --regid={user} --init-groups env HOME=/home/{user}"
            script = f"exec {as_user} bash -c {_q(script)}"
        env = {"FRESH_ROOT": str(self.root), "FRESH_GO": str(GO)}
        net = ["nsenter", f"--net=/run/netns/{netns}"] if netns else ["unshare", "--net"]
        args = [
            *net,
            "unshare",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            SETUP,
            "fresh-setup",
            script,
        ]
        return proc.run(args, timeout=timeout, check=check, env=env, what="the fresh machine")


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def have_tools() -> str | None:
    """Why a fresh machine cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (mmdebstrap into a directory, namespaces, mounts)"
    for tool in ("mmdebstrap", "unshare", "nsenter", "chroot", "ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    return None
