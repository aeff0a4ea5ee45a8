"""Hosts on one machine for tests: network namespaces with their own addresses on one Linux
bridge (no shared loopback), each with its own Docker daemon (the default daemon cannot place
containers in them). Everything is undone on exit: daemons, namespaces, the bridge and the
FORWARD rule that lets bridged traffic pass Docker's DROP policy (ENVIRONMENT.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.errors import PirexError

BRIDGE = "pirexbr0"
SUBNET = "10.77.0"


@dataclass
class Host:
    name: str
    address: str
    socket: str
    netns: str = ""  # the namespace's name (ip netns), pirex-<name> on the default site

    @property
    def env(self) -> dict[str, str]:
        return {"DOCKER_HOST": f"unix://{self.socket}"}

    def docker(self, *args: str, timeout: float = 300, check: bool = True, env: dict | None = None) -> proc.Result:
        return proc.run(["docker", *args], timeout=timeout, check=check, env={**self.env, **(env or {})})


def _ip(*args: str, check: bool = True) -> proc.Result:
    return proc.run(["ip", *args], timeout=30, check=check)


def _remove_run_dir(run: Path) -> None:
    """dockerd bind-mounts its namespace under the exec root and leaves it there: unmount it, or
    the namespace (and its veth) outlives the test."""
    with open("/proc/self/mountinfo") as f:
        points = [ln.split()[4] for ln in f if ln.split()[4].startswith(f"{run}/")]
    for point in sorted(points, key=len, reverse=True):
        proc.run(["umount", "-l", point], timeout=30, check=False)
    proc.run(["rm", "-rf", str(run)], timeout=60, check=False)


RUN = Path("/run/pirex-netns")


CONTROLLER = 254  # with controller=True: this machine's own address on the bridge, SUBNET.254


@contextlib.contextmanager
def hosts(
    names: list[str], site: int = 0, hostnames: bool = False, controller: bool = False, docker_bridge: bool = False
):
    """{name: Host} with addresses SUBNET.1, .2, ... on BRIDGE, each running a dockerd. Another
    `site` (1, 2, ...) is a second such set of its own (bridge, subnet, namespaces, run and data
    directories), so that tests of different files do not meet; `hostnames`: each daemon in a UTS
    namespace of its own with the host's name as its hostname (as real hosts have, and as swarm
    names its nodes); `controller`: the bridge gets SUBNET.254, so that this machine (a fleet's
    controller) reaches the hosts; `docker_bridge`: each daemon keeps Docker's default bridge
    network (in its own namespace), which `pirex run` puts containers on."""
    bridge, subnet = f"pirexbr{site}", f"10.77.{site}"
    ns_prefix, run_base = ("pirex", RUN) if site == 0 else (f"pirex{site}", Path(f"{RUN}{site}"))
    if run_base.exists():  # a killed earlier run
        for d in run_base.iterdir():
            _remove_run_dir(d)
    made: list[str] = []
    daemons: list[tuple[subprocess.Popen, Path]] = []
    rule = ["iptables", "-I", "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    try:
        _ip("link", "add", bridge, "type", "bridge")
        made.append("bridge")
        _ip("link", "set", bridge, "up")
        if controller:
            _ip("addr", "add", f"{subnet}.{CONTROLLER}/24", "dev", bridge)
        proc.run(rule, timeout=30)
        made.append("rule")
        out: dict[str, Host] = {}
        for i, name in enumerate(names, 1):
            ns = f"{ns_prefix}-{name}"
            _ip("netns", "add", ns)
            made.append(ns)
            veth = f"pxv{site or ''}{i}"
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", bridge, "up")
            _ip("-n", ns, "addr", "add", f"{subnet}.{i}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            run = run_base / name
            d = _dockerd(
                name, ns, paths.cache_dir() / f"netns-docker{site or ''}" / name, run, hostnames, docker_bridge
            )
            daemons.append((d, run))
            out[name] = Host(name, f"{subnet}.{i}", str(run / "docker.sock"), ns)
        for h in out.values():
            proc.wait_until(
                lambda h=h: h.docker("info", timeout=30, check=False).returncode == 0,
                120,
                1,
                f"the dockerd of {h.name} did not answer: {Path(h.socket).parent}/dockerd.log",
            )
        yield out
    finally:
        for d, run in daemons:
            proc.terminate_group(d, 60, kill_grace=30)
            _remove_run_dir(run)
        for what in reversed(made):
            if what == "rule":
                proc.run(["iptables", "-D", *rule[2:]], timeout=30, check=False)
            elif what == "bridge":
                _ip("link", "del", bridge, check=False)
            else:
                _ip("netns", "del", what, check=False)


def _dockerd(name: str, ns: str, root: Path, run: Path, hostnames: bool, docker_bridge: bool) -> subprocess.Popen:
    """A dockerd in the namespace ns (its own process group), its image layers under root (they survive for the
    next run), its socket, pid file and log in run."""
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o755)  # whatever the umask: a non-root user of the docker group reaches the socket
    run.parent.chmod(0o755)
    uts = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name] if hostnames else []
    with open(run / "dockerd.log", "w") as log:  # the daemon keeps its own descriptor
        return subprocess.Popen(
            [
                "nsenter",
                f"--net=/run/netns/{ns}",
                *uts,
                "dockerd",
                "--data-root",
                str(root / "data"),
                "--exec-root",
                str(run / "exec"),
                "--pidfile",
                str(run / "dockerd.pid"),
                "-H",
                f"unix://{run / 'docker.sock'}",
                *([] if docker_bridge else ["--bridge=none"]),
                "--iptables=false",
                "--ip6tables=false",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def copy_images(host: Host, refs: list[str]) -> None:
    """Images from the default engine into a host's daemon (those it lacks; its data root is kept)."""

    def image_id(ref: str, env: dict | None = None) -> str:
        r = proc.run(["docker", "image", "inspect", "-f", "{{.Id}}", ref], timeout=60, check=False, env=env)
        return r.stdout.strip() if r.ok else ""

    missing = [r for r in refs if image_id(r) != image_id(r, host.env)]
    if missing:
        proc.run(
            [
                "bash",
                "-o",
                "pipefail",
                "-c",
                'docker save "$@" | DOCKER_HOST="$0" docker load -q',
                f"unix://{host.socket}",
                *missing,
            ],
            timeout=900,
            what=f"copying images to {host.name}",
        )


class Sshd:
    """An sshd in a host's network namespace on its address, port 22: root logs in with the key
    authorized, and every session gets `env` (what a real host has of its own: its Docker daemon,
    its cache directory on its own disk...). stop() is the host dropping off the network: the
    listener and every connection's process go; what the sessions started in the background stays."""

    def __init__(self, host: Host, directory: Path, authorized_key: Path, env: dict[str, str]):
        self.host, self.dir, self.proc = host, directory, None
        directory.mkdir(parents=True, exist_ok=True)
        key = directory / "host_ed25519"
        if not key.exists():
            proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], timeout=60)
        set_env = " ".join(f"{k}={v}" for k, v in env.items())
        (directory / "sshd_config").write_text(
            f"ListenAddress {host.address}\nPort 22\nHostKey {key}\nPidFile {directory / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {authorized_key}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\n"
            f"Subsystem sftp internal-sftp\nSetEnv {set_env}\n"
        )

    def start(self) -> None:
        Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory
        log = open(self.dir / "sshd.log", "a")  # noqa: SIM115 (closed when it stops)
        self.proc = subprocess.Popen(
            [
                "nsenter",
                f"--net=/run/netns/{self.host.netns}",
                "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
                str(self.dir / "sshd_config"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not _listening(self.host.address, 22):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise PirexError(f"the sshd of {self.host.name} did not start: {self.dir / 'sshd.log'}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None:
            return
        doomed = [self.proc.pid, *_descendants(self.proc.pid, "sshd")]  # the listener and each connection's sshd
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None


def _listening(address: str, port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((address, port)) == 0


def _descendants(pid: int, comm: str) -> list[int]:
    """Every live process below pid whose name is comm."""
    parent: dict[int, int] = {}
    names: dict[int, str] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                head, _, rest = (p / "stat").read_text().rpartition(")")
                parent[int(p.name)], names[int(p.name)] = int(rest.split()[1]), head.partition("(")[2]
    out, todo = [], [pid]
    while todo:
        me = todo.pop()
        kids = [c for c, pp in parent.items() if pp == me]
        out += [c for c in kids if names.get(c) == comm]
        todo += kids
    return out
