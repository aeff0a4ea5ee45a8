"""A fleet on one machine, for tests/test_fleet.py and scripts/bench_fleet.py: hosts as network
namespaces on a bridge that this machine (the controller) reaches, each with its own sshd and
Docker daemon (tests/netns.py), sharing this machine's disk and hostname (so hostnames collide,
as Pis all called raspberrypi do), and an inventory for them.

Each host's own disk is a directory keyed by its name (its checkout, and PIREX_CACHE: its local
registry's storage), kept between sessions as a real host keeps its disk; the hosts have no route
out, so pip takes the runner's few packages from a directory (PIP_FIND_LINKS), as from a lab's
package mirror. Everything else goes on every exit path: the sshds and their sessions, what the
sessions left running in the namespaces, the daemons, the namespaces, the bridge, the mounts."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import archive, localregistry
from pirex.images import platforms as plat

from . import netns

SITE = 3  # its own bridge, subnet and namespaces (the split test is site 0, swarm 2)
NAMES = ["pi-a", "pi-b", "pi-c"]
RUNNER_WHEELS = [
    "click==8.5.1",
    "jsonschema==3.2.0",
    "PyYAML==6.0.3",
    "setuptools>=68",
    "wheel",
]  # pyproject's dependencies, its build
TOOLS = ("ip", "nsenter", "iptables", "dockerd", "docker-registry", "ssh", "ssh-keygen", "git")


@dataclass
class Lab:
    hosts: dict[str, netns.Host]
    sshds: dict[str, netns.Sshd]
    inventory: Path
    checkouts: dict[str, Path]  # where the playbook puts each host's checkout


def missing() -> list[str]:
    out = [t for t in TOOLS if not shutil.which(t)] + ([] if Path("/usr/sbin/sshd").exists() else ["sshd"])
    return out + ([] if os.geteuid() == 0 else ["root"])


def wheelhouse() -> Path:
    """The runner's packages and its build backend as files, for hosts without a route out."""
    d = paths.cache_dir() / "fleet-hosts" / "wheels"
    have = {f.name.split("-")[0].lower() for f in d.glob("*.whl")}  # wheel names: pyyaml-6.0.3-..., PyYAML pinned
    if not all(w.split("==")[0].lower() in have for w in RUNNER_WHEELS if "==" in w):
        proc.retry(
            lambda: proc.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "-c",
                    str(paths.REPO / "constraints.txt"),
                    "-d",
                    str(d),
                    *RUNNER_WHEELS,
                ],
                timeout=600,
            ),
            attempts=3,
            what="pip download",
        )
    return d


def export_images(file: Path, tag: str, names: tuple[str, ...] = ("jmh",)) -> Path:
    """The images for this machine's platform in one file, as `pirex images export` writes it."""
    with localregistry.local_registry():
        archive.export(file, list(names), tag, [plat.host()], None)
    return file


def kill_namespace_processes(hosts: dict[str, netns.Host], spare: set[int]) -> None:
    """What the sessions left running in the hosts' namespaces (a run abandoned), but the daemons."""
    inodes = {os.stat(f"/run/netns/{h.netns}").st_ino for h in hosts.values()}
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            if p.name.isdigit() and int(p.name) not in spare and os.stat(p / "ns" / "net").st_ino in inodes:
                os.kill(int(p.name), signal.SIGKILL)


@contextlib.contextmanager
def lab(tmp: Path, names: list[str] = NAMES):
    """The hosts up, each reachable by ssh as root with a key of this lab; a Lab."""
    if missing():
        raise PirexError(f"the fleet lab needs {', '.join(missing())}")
    key = tmp / "id_ed25519"
    proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], timeout=60)
    wheels = wheelhouse()
    disks = {n: paths.cache_dir() / "fleet-hosts" / n for n in names}
    with contextlib.ExitStack() as stack:
        hosts = stack.enter_context(netns.hosts(names, site=SITE, controller=True, docker_bridge=True))
        daemons = {int(Path(f"{netns.RUN}{SITE}/{n}/dockerd.pid").read_text()) for n in names}
        stack.callback(kill_namespace_processes, hosts, daemons)
        sshds = {}
        for n, h in hosts.items():
            shutil.rmtree(disks[n] / "pirex" / "results", ignore_errors=True)  # an earlier session's fleet runs
            env = {
                "DOCKER_HOST": f"unix://{h.socket}",
                "PIREX_CACHE": str(disks[n] / "cache"),
                "PIREX_LOCK_DIR": os.environ.get("PIREX_LOCK_DIR", "/run/pirex"),
                "PIP_NO_INDEX": "1",
                "PIP_FIND_LINKS": str(wheels),
            }
            sshds[n] = netns.Sshd(h, tmp / f"sshd-{n}", key.with_suffix(".pub"), env)
            stack.callback(sshds[n].stop)
            sshds[n].start()
        inventory = tmp / "hosts.yml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "all": {
                        "vars": {
                            "ansible_user": "root",
                            "ansible_ssh_private_key_file": str(key),
                            "ansible_ssh_common_args": f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                            f"-o ControlPath={tmp}/cp-%C",
                            "ansible_python_interpreter": "/usr/bin/python3",
                            "pirex_host_setup": False,
                        },
                        "hosts": {
                            n: {
                                "ansible_host": h.address,
                                "pirex_dir": str(disks[n] / "pirex"),
                                "pirex_device_labels": {"site": "namespace"},
                            }
                            for n, h in hosts.items()
                        },
                    }
                }
            )
        )
        yield Lab(hosts, sshds, inventory, {n: disks[n] / "pirex" for n in names})


THROTTLE = "pirex-lab-throttle"  # the prefix of the cgroup a throttled host's sessions run in (one per host)


def _cpu_cgroups() -> tuple[Path, bool]:
    """The cpu controller's root and whether it is cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us)."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return Path("/sys/fs/cgroup"), True
    return Path("/sys/fs/cgroup/cpu"), False


@contextlib.contextmanager
def throttled(sshd: netns.Sshd, share: float):
    """A host whose CPU is cut to `share` of one CPU (a Pi throttled by heat): its sshd started again inside a
    cgroup with a CPU quota, so that every session's processes (a native workload) inherit it; undone on exit
    (sshd started again outside, the cgroup removed)."""
    root, v2 = _cpu_cgroups()
    cg = root / f"{THROTTLE}-{sshd.host.name}"
    cg.mkdir(exist_ok=True)
    period = 100_000
    if v2:
        (root / "cgroup.subtree_control").write_text("+cpu")
        (cg / "cpu.max").write_text(f"{int(share * period)} {period}")
    else:
        (cg / "cpu.cfs_period_us").write_text(str(period))
        (cg / "cpu.cfs_quota_us").write_text(str(int(share * period)))
    try:
        sshd.stop()
        sshd.start()
        (cg / "cgroup.procs").write_text(str(sshd.proc.pid))
        yield
    finally:
        sshd.stop()
        _remove_cgroup(root, cg)
        sshd.start()


def _remove_cgroup(root: Path, cg: Path) -> None:
    """Every process still in the cgroup moved back to the root, then the cgroup removed."""
    if not cg.exists():
        return
    for pid in (cg / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            (root / "cgroup.procs").write_text(pid)
    with contextlib.suppress(OSError):
        cg.rmdir()


def leftovers() -> list[str]:
    """What the lab could leave on this machine: namespaces, the bridge, the FORWARD rule, mounts, sshds."""
    out = [ns for ns in proc.run(["ip", "netns", "list"], timeout=30).stdout.split() if ns.startswith(f"pirex{SITE}-")]
    if proc.run(["ip", "link", "show", f"pirexbr{SITE}"], timeout=30, check=False).ok:
        out.append(f"bridge pirexbr{SITE}")
    out += [r for r in proc.run(["iptables", "-S", "FORWARD"], timeout=30).stdout.splitlines() if f"pirexbr{SITE}" in r]
    with open("/proc/self/mountinfo") as f:
        out += [ln.split()[4] for ln in f if f"/run/pirex-netns{SITE}/" in ln.split()[4]]
    root, _ = _cpu_cgroups()
    out += [f"cgroup {cg}" for cg in root.glob(f"{THROTTLE}*")]
    for p in Path("/proc").iterdir():  # the hosts' sshds (another sshd on this machine is none of ours)
        with contextlib.suppress(OSError):
            if p.name.isdigit() and b"/sshd-pi-" in (p / "cmdline").read_bytes():
                out.append(f"sshd {p.name}")
    return out
