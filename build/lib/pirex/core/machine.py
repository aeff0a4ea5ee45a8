"""The machine record: what this machine is and what state it is in, taken before and after a run.

The record is a JSON-serializable dict stored as machine.json in every result bundle. Reading the
system (files under /proc and /sys, a few short commands) is kept apart from parsing what was read:
the parse_* functions take text and are tested on fixtures of machines that are not at hand
(see ../shared/PI-FACTS.md for what a Raspberry Pi reports about itself). The board and its CPU
(a Pi's revision, serial and firmware) are read in board.py, the storage under the work directory
in storage.py, both through sysread.py's Reader; record() puts the sections together.

Every reader that fails logs a warning and yields null, and the reason goes into the record's
"unavailable" map; a missing /proc or /sys file never stops a run. Sections that cannot exist on
this machine (vcgencmd off a Pi, cpufreq on a VM) are null too, with the reason, but are not warned about.

The board serial is never stored, only its HMAC under a per-install salt (board.py says how).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import os
import re
import shlex
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pirex import __version__
from pirex.core import board, capabilities, storage, tuning
from pirex.core.storage import classify_storage as classify_storage  # pirex.reproduce.claims reads it here
from pirex.core.sysread import Reader

log = logging.getLogger(__name__)

SCHEMA = "pirex-machine/1"
"""Version of the record's layout, stored in the record itself; bump it when a key changes meaning."""


# ---------------------------------------------------------------------------------------------
# Memory, load, OS


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {"MemTotal": bytes, ...}; values in kB are converted to bytes."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([^:]+):\s+(\d+)(?:\s+(kB))?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    return out


def parse_swaps(text: str) -> list[dict[str, Any]]:
    """/proc/swaps -> one dict per swap area, sizes in bytes (the file gives KiB)."""
    out = []
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) >= 5:
            out.append(
                {
                    "filename": f[0],
                    "type": f[1],
                    "size_bytes": int(f[2]) * 1024,
                    "used_bytes": int(f[3]) * 1024,
                    "priority": int(f[4]),
                }
            )
    return out


def memory_summary(meminfo: Mapping[str, int], swaps: list[dict[str, Any]] | None) -> dict[str, Any]:
    swap_total = meminfo.get("SwapTotal")
    swap_free = meminfo.get("SwapFree")
    return {
        "total_bytes": meminfo.get("MemTotal"),
        "available_bytes": meminfo.get("MemAvailable"),
        "free_bytes": meminfo.get("MemFree"),
        "swap_total_bytes": swap_total,
        "swap_free_bytes": swap_free,
        "swap_used_bytes": swap_total - swap_free if swap_total is not None and swap_free is not None else None,
        "swaps": swaps,
    }


def parse_loadavg(text: str) -> dict[str, float]:
    """/proc/loadavg -> {"1m", "5m", "15m"}."""
    f = text.split()
    return {"1m": float(f[0]), "5m": float(f[1]), "15m": float(f[2])}


def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release (shell-style KEY=value, values maybe quoted) -> {"ID": "raspbian", ...}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value.strip("\"'")]
        out[key.strip()] = " ".join(words)
    return out


def parse_cpufreq(files: Mapping[str, str | None]) -> dict[str, Any]:
    """One core's cpufreq directory (file name -> content, None if unreadable); frequencies in kHz."""

    def num(name: str) -> int | None:
        v = files.get(name)
        return int(v.strip()) if v and v.strip().isdigit() else None

    def txt(name: str) -> str | None:
        v = files.get(name)
        return v.strip() if v is not None else None

    available = txt("scaling_available_governors")
    return {
        "governor": txt("scaling_governor"),
        "available_governors": available.split() if available else None,
        "min_khz": num("scaling_min_freq"),
        "max_khz": num("scaling_max_freq"),
        "cur_khz": num("scaling_cur_freq"),
        "driver": txt("scaling_driver"),
    }


# ---------------------------------------------------------------------------------------------
# Docker


_DOCKER_KEYS = {
    "ServerVersion": "server_version",
    "Driver": "storage_driver",
    "DriverStatus": "driver_status",
    "CgroupVersion": "cgroup_version",
    "CgroupDriver": "cgroup_driver",
    "DefaultRuntime": "default_runtime",
    "SecurityOptions": "security_options",
    "OperatingSystem": "operating_system",
    "OSType": "os_type",
    "Architecture": "architecture",
    "KernelVersion": "kernel_version",
    "NCPU": "ncpu",
    "MemTotal": "mem_total_bytes",
    "DockerRootDir": "root_dir",
}


def parse_docker_info(text: str) -> dict[str, Any]:
    """`docker info --format '{{json .}}'` -> the server facts that can shift a measurement.

    Raises ValueError when the output is not JSON or the server could not be reached."""
    info = json.loads(text)
    if not isinstance(info, dict):
        raise ValueError("docker info did not print a JSON object")
    if info.get("ServerErrors"):
        raise ValueError("; ".join(map(str, info["ServerErrors"])))
    if not info.get("ServerVersion"):
        raise ValueError("docker info has no ServerVersion (no server reached)")
    return {ours: info.get(theirs) for theirs, ours in _DOCKER_KEYS.items()}


# ---------------------------------------------------------------------------------------------
# Network: the interface, link speed and duplex of the route to each peer; Wi-Fi


def parse_route_get(text: str) -> dict[str, Any]:
    """`ip -j route get ADDR` -> {"interface", "gateway", "source", "local"} (local: the peer is this host)."""
    routes = json.loads(text)
    if not routes:
        raise ValueError("ip route get printed no route")
    r = routes[0]
    return {
        "interface": r.get("dev"),
        "gateway": r.get("gateway"),
        "source": r.get("prefsrc"),
        "local": r.get("type") == "local" or r.get("dev") == "lo",
    }


def parse_link(files: Mapping[str, str | None]) -> dict[str, Any]:
    """One /sys/class/net/IFACE directory (file -> content, None if unreadable) -> its link facts.

    speed is in Mbit/s; virtual links (veth, bridges, loopback) have none (the file reads -1 or fails)."""

    def txt(name: str) -> str | None:
        v = files.get(name)
        return v.strip() if v is not None and v.strip() else None

    speed = txt("speed")
    speed_mbps = int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None
    duplex = txt("duplex")
    return {
        "operstate": txt("operstate"),
        "speed_mbps": speed_mbps,
        "duplex": duplex if duplex in ("full", "half") else None,
        "wireless": files.get("wireless") is not None,
    }


def _link(r: Reader, iface: str, sys_net: Path = Path("/sys/class/net")) -> dict[str, Any]:
    d = sys_net / iface
    files = {k: r.text(d / k, f"network.{iface}.{k}", expected=True) for k in ("operstate", "speed", "duplex")}
    files["wireless"] = "" if (d / "wireless").exists() or (d / "phy80211").exists() else None
    return {"interface": iface, **parse_link(files)}


# Docker's and other virtual links: not the machine's way out.
_VIRTUAL = re.compile(r"^(lo|docker\d*|br-.*|veth.*|virbr.*|ifb\d*|cni.*|flannel.*|tun.*|tap.*)$")


def _network(r: Reader, peers: list[str]) -> dict[str, Any]:
    sys_net = Path("/sys/class/net")
    names = sorted(p.name for p in sys_net.glob("*")) if sys_net.is_dir() else []
    out: dict[str, Any] = {"interfaces": [_link(r, n) for n in names if not _VIRTUAL.match(n)], "peers": []}
    out["wifi"] = [i["interface"] for i in out["interfaces"] if i["wireless"]]
    for peer in peers:
        entry: dict[str, Any] = {"peer": peer, "interface": None}
        text = r.command(["ip", "-j", "route", "get", peer], f"network.peer.{peer}")
        if text:
            try:
                entry.update(parse_route_get(text))
            except ValueError as e:
                r.note(f"network.peer.{peer}", str(e))
        if entry.get("interface"):
            entry.update(_link(r, entry["interface"], sys_net))
        out["peers"].append(entry)
    return out


# ---------------------------------------------------------------------------------------------
# Services the papers stopped (the list is pirex.core.tuning.PAPER_SERVICES, shared with doctor --fix)


def _services(r: Reader) -> dict[str, Any]:
    running = tuning.running_services(tuning.running_processes(Path("/proc")))
    return {"checked": list(tuning.PAPER_SERVICES), "running": running}


# ---------------------------------------------------------------------------------------------
# Interrupts (ICPE'18 Figure 3): /proc/interrupts before and after each step


def parse_interrupts(text: str) -> dict[str, Any]:
    """/proc/interrupts -> {"cpus": n, "lines": {irq: {"counts": [per CPU], "description": str}}}.

    Summary lines (ERR, MIS) carry one count and no CPU columns."""
    lines = text.splitlines()
    if not lines:
        return {"cpus": 0, "lines": {}}
    cpus = len(lines[0].split())
    out: dict[str, Any] = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        fields = rest.split()
        counts = []
        for f in fields[:cpus]:
            if not f.isdigit():
                break
            counts.append(int(f))
        out[name.strip()] = {"counts": counts, "description": " ".join(fields[len(counts) :])}
    return {"cpus": cpus, "lines": out}


def interrupts(path: Path = Path("/proc/interrupts")) -> dict[str, Any] | None:
    """This machine's interrupt counters now (None where /proc/interrupts cannot be read)."""
    try:
        text = path.read_text()
    except OSError as e:
        log.warning("cannot read %s: %s", path, e)
        return None
    return {
        "taken_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        **parse_interrupts(text),
    }


def write_interrupts(path: Path, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    """A step's interrupts.json: the counters before and after it (the runner calls this per step)."""
    path.write_text(json.dumps({"before": before, "after": after}) + "\n")


# ---------------------------------------------------------------------------------------------
# Reading a record


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class MachineRecord:
    """A machine record read: record()'s dict, or the "before" of a machine.json (Bundle.machine_before,
    pirex.core.bundle.read_machine). The one reader of the record's keys: the other modules ask it, not the dict.

    An older record lacks keys (device before `pirex fleet`, capabilities before they were probed), and a
    section this machine has not (pi off a Pi, cpufreq on a VM) is null: a section reads as empty ({} or []) and
    a value as None then, so a reader tells "unknown" from a value without a KeyError. `doc` is the record itself,
    as record() wrote it."""

    doc: Mapping[str, Any]

    @classmethod
    def of(cls, doc: MachineRecord | Mapping[str, Any]) -> MachineRecord:
        """The record read from a dict (record()'s, a test's), or the one given."""
        if isinstance(doc, MachineRecord):
            return doc
        if not isinstance(doc, Mapping):
            raise TypeError(f"a machine record is a mapping, not {type(doc).__name__}")
        return cls(doc)

    def __bool__(self) -> bool:
        """False for a record without any key, as its dict is."""
        return bool(self.doc)

    # --- identity

    @property
    def hostname(self) -> str | None:
        return self.doc.get("hostname")

    @property
    def machine_id(self) -> str | None:
        """This installation's app-specific id (machine_id()); None in records before it, or without the file."""
        return self.doc.get("machine_id")

    @property
    def device_name(self) -> str | None:
        """The inventory name `pirex fleet` gave the device (device_identity()); None outside a fleet run."""
        return _mapping(self.doc.get("device")).get("name")

    # --- CPU, board, system

    @property
    def cpu(self) -> Mapping[str, Any]:
        """The cpu section: model, model_name, core, cpu_parts, cores, usable_cores ({} without it)."""
        return _mapping(self.doc.get("cpu"))

    @property
    def cpu_model(self) -> str | None:
        return self.cpu.get("model")

    @property
    def cpu_parts(self) -> list[str]:
        """The Arm CPU parts (MIDR part numbers, e.g. ["0xd08"]) as the record has them; [] elsewhere."""
        return list(self.cpu.get("cpu_parts") or [])

    @property
    def cores(self) -> int | None:
        return self.cpu.get("cores")

    @property
    def arch(self) -> str | None:
        """uname -m (x86_64, aarch64, armv7l)."""
        return _mapping(self.doc.get("architecture")).get("uname_machine")

    @property
    def os_name(self) -> str | None:
        """The operating system's PRETTY_NAME."""
        return _mapping(self.doc.get("os")).get("pretty_name")

    @property
    def pi(self) -> Mapping[str, Any]:
        """The Raspberry Pi section (model, revision, serial_hmac_sha256, ...); {} off a Pi."""
        return _mapping(self.doc.get("pi"))

    @property
    def pi_model(self) -> str | None:
        """The Pi's model ("Raspberry Pi 4 Model B Rev 1.4"), None off a Pi."""
        return self.pi.get("model")

    # --- state

    @property
    def core_governors(self) -> list[str | None]:
        """Each core's cpufreq governor, in the record's order (None where it could not be read); [] without
        cpufreq (a VM, a container)."""
        cores = self.doc.get("cpufreq")
        return [_mapping(c).get("governor") for c in cores] if isinstance(cores, list) else []

    @property
    def governors(self) -> list[str]:
        """The cores' cpufreq governors, each once, sorted; [] without cpufreq."""
        return sorted(set(self.core_governors) - {None})

    @property
    def memory(self) -> Mapping[str, Any]:
        """The memory section in bytes: total_bytes, available_bytes, free_bytes, swap_*_bytes ({} without it)."""
        return _mapping(self.doc.get("memory"))

    @property
    def load_1m(self) -> float | None:
        return _mapping(self.doc.get("load")).get("1m")

    @property
    def throttled(self) -> Mapping[str, Any] | None:
        """vcgencmd get_throttled, parsed (parse_throttled); None off a Pi or where it could not be read."""
        t = _mapping(self.doc.get("vcgencmd")).get("throttled")
        return t or None

    @property
    def temp_c(self) -> float | None:
        """The SoC temperature by vcgencmd (a Pi's firmware)."""
        return _mapping(self.doc.get("vcgencmd")).get("temp_c")

    @property
    def thermal_zone0_c(self) -> float | None:
        return self.doc.get("thermal_zone0_c")

    @property
    def storage(self) -> Mapping[str, Any]:
        """The storage under the work directory: work_dir, source, fstype, device, kind, model, free_bytes, ...
        ({} without it)."""
        return _mapping(self.doc.get("storage"))

    @property
    def storage_kind(self) -> str | None:
        """sd-card, emmc, usb, nvme, virtio or other (classify_storage); None without a block device."""
        return self.storage.get("kind")

    @property
    def work_dir(self) -> str | None:
        """The work directory whose storage the record describes."""
        return self.storage.get("work_dir")

    @property
    def peers(self) -> list[Mapping[str, Any]]:
        """The route to each peer the run talks to (network.peers); []."""
        return list(_mapping(self.doc.get("network")).get("peers") or [])

    @property
    def services(self) -> Mapping[str, Any]:
        """The papers' services: checked and running ({} in a record without them)."""
        return _mapping(self.doc.get("services"))

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        """What the machine can do (pirex.core.capabilities.probe); None in a record taken before they were
        recorded (probe them, where the record is this machine's)."""
        return self.doc.get("capabilities")


RecordLike = MachineRecord | Mapping[str, Any]
"""What the readers of a record take: a MachineRecord, or the dict record() returns (they read it through
MachineRecord.of)."""


# ---------------------------------------------------------------------------------------------
# Reading the system


DEVICE_ENV, LABELS_ENV = "PIREX_DEVICE", "PIREX_DEVICE_LABELS"


def machine_id(path: Path = Path("/etc/machine-id")) -> str | None:
    """This installation's identity, app-specific: HMAC-SHA256 keyed with /etc/machine-id of "pirex" (the raw
    ID is confidential, machine-id(5); systemd's sd_id128_get_machine_app_specific does the same), so that
    bundles of two machines with one hostname (raspberrypi) are told apart. None without the file."""
    try:
        raw = path.read_text().strip()
    except OSError:
        return None
    return hmac.new(raw.encode(), b"pirex", hashlib.sha256).hexdigest()[:32] if raw else None


def device_identity(env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The name this machine has in an inventory, and its labels: `pirex fleet` sets PIREX_DEVICE to
    the host's inventory name (Pis' hostnames often collide: raspberrypi) and PIREX_DEVICE_LABELS to
    its labels (a JSON object); tables name the device by it. None when unset."""
    env = os.environ if env is None else env
    name = env.get(DEVICE_ENV, "").strip()
    if not name:
        return None
    labels = json.loads(env.get(LABELS_ENV) or "{}")
    if not isinstance(labels, dict):
        raise ValueError(f"{LABELS_ENV} is not a JSON object: {env.get(LABELS_ENV)!r}")
    return {"name": name, "labels": {str(k): v for k, v in labels.items()}}


def _cpufreq(r: Reader) -> list[dict[str, Any]] | None:
    base = Path("/sys/devices/system/cpu")
    cpus = sorted(
        (p for p in base.glob("cpu[0-9]*") if p.name[3:].isdigit()),
        key=lambda p: int(p.name[3:]),
    )
    cores = []
    for cpu in cpus:
        d = cpu / "cpufreq"
        if not d.is_dir():
            continue
        files = {}
        for name in (
            "scaling_governor",
            "scaling_available_governors",
            "scaling_min_freq",
            "scaling_max_freq",
            "scaling_cur_freq",
            "scaling_driver",
        ):
            # scaling_cur_freq is missing with some drivers; none of these is worth a warning alone.
            files[name] = r.text(d / name, f"cpufreq.{cpu.name}.{name}", expected=True)
        cores.append({"cpu": int(cpu.name[3:]), **parse_cpufreq(files)})
    if not cores:
        r.note("cpufreq", "no cpufreq in /sys/devices/system/cpu (a VM or container?)", expected=True)
        return None
    return cores


def _in_container() -> dict[str, Any]:
    """What suggests a container, as evidence rather than a verdict: some VM images carry a stray
    /.dockerenv (this project's build machines do), so a reader can weigh it."""
    evidence = [p for p in ("/.dockerenv", "/run/.containerenv") if Path(p).exists()]
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
        evidence += [f"/proc/1/cgroup: {w}" for w in ("docker", "containerd", "kubepods", "libpod") if w in cgroup]
    except OSError:
        pass
    return {"likely": bool(evidence), "evidence": evidence}


def record(
    work_dir: Path, docker: bool = True, peers: list[str] | None = None, dev: Path = Path("/dev")
) -> dict[str, Any]:
    """Read this machine: identity, CPU, frequency, memory, load, Pi firmware state, the storage under
    work_dir, the network (and the route to each peer: another host the experiment talks to), the
    services the papers stopped, and Docker. Never raises for an unreadable source: its key is null
    and `unavailable` says why. `dev`: where the block device nodes are (a container that has the
    host's / bind-mounted reads the host's disk through <mount>/dev)."""
    r = Reader()
    rec = _identity(r)
    rec["os"] = _os(r)
    cpuinfo, rec["cpu"] = _cpu(r)
    rec["cpufreq"] = r.section("cpufreq", lambda: _cpufreq(r))
    rec["memory"] = r.section("memory", lambda: _memory(r))
    load = r.text("/proc/loadavg", "load")
    rec["load"] = r.section("load", lambda: parse_loadavg(load)) if load is not None else None
    rec["pi"] = r.section("pi", lambda: board.pi_section(r, cpuinfo))
    rec["vcgencmd"] = r.section("vcgencmd", lambda: board.vcgencmd_section(r, expected_missing=rec["pi"] is None))
    rec["thermal_zone0_c"] = r.section("thermal_zone0_c", lambda: _thermal(r))
    rec["storage"] = r.section("storage", lambda: storage.probe(r, work_dir, dev))
    rec["network"] = r.section("network", lambda: _network(r, list(peers or [])))
    rec["services"] = r.section("services", lambda: _services(r))
    rec["docker"] = r.section("docker", lambda: _docker(r, docker))
    # what the machine can do for an experiment (cpufreq, PMU, tracers, swap, root, storage devices): read
    # here once, so that `pirex reproduce` and the tables take it from the record instead of probing again
    rec["capabilities"] = r.section("capabilities", lambda: capabilities.probe(work_dir))
    rec["unavailable"] = r.unavailable
    return rec


def _identity(r: Reader) -> dict[str, Any]:
    """The record's first keys: its layout and time, this pirex, the host, kernel and architecture."""
    rec: dict[str, Any] = {
        "schema": SCHEMA,
        "taken_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "pirex_version": __version__,
        "hostname": r.section("hostname", socket.gethostname),
        "device": r.section("device", device_identity),
        "machine_id": r.section("machine_id", machine_id),
    }
    uname = os.uname()
    rec["kernel"] = {"sysname": uname.sysname, "release": uname.release, "version": uname.version}
    dpkg = r.command(["dpkg", "--print-architecture"], "architecture.userland", expected_missing=True)
    rec["architecture"] = {
        "uname_machine": uname.machine,
        "userland": dpkg.strip() if dpkg else None,
        "pointer_bits": struct.calcsize("P") * 8,
    }
    rec["in_container"] = r.section("in_container", _in_container)
    return rec


def _os(r: Reader) -> dict[str, Any] | None:
    text = r.text("/etc/os-release", "os") or r.text("/usr/lib/os-release", "os")
    osr = parse_os_release(text) if text is not None else None
    if osr is None:
        return None
    return {
        "id": osr.get("ID"),
        "version_id": osr.get("VERSION_ID"),
        "version_codename": osr.get("VERSION_CODENAME"),
        "pretty_name": osr.get("PRETTY_NAME"),
    }


def _cpu(r: Reader) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """/proc/cpuinfo's summary (board.parse_cpuinfo; None where it cannot be read) and the record's cpu section."""
    cpuinfo_text = r.text("/proc/cpuinfo", "cpu")
    cpuinfo = r.section("cpu", lambda: board.parse_cpuinfo(cpuinfo_text)) if cpuinfo_text is not None else None
    usable = r.section("cpu.usable", lambda: len(os.sched_getaffinity(0)))
    return cpuinfo, {
        "model": (cpuinfo or {}).get("model"),
        "model_name": (cpuinfo or {}).get("model_name"),
        "core": (cpuinfo or {}).get("core"),
        "cpu_parts": (cpuinfo or {}).get("cpu_parts"),
        "cores": os.cpu_count() or (cpuinfo or {}).get("cores"),
        "usable_cores": usable,
    }


def _memory(r: Reader) -> dict[str, Any] | None:
    text = r.text("/proc/meminfo", "memory")
    if text is None:
        return None
    swaps_text = r.text("/proc/swaps", "memory.swaps", expected=True)
    return memory_summary(parse_meminfo(text), parse_swaps(swaps_text) if swaps_text is not None else None)


def _thermal(r: Reader) -> float | None:
    text = r.text("/sys/class/thermal/thermal_zone0/temp", "thermal_zone0_c", expected=True)
    return int(text.strip()) / 1000 if text is not None else None


def _docker(r: Reader, docker: bool) -> dict[str, Any] | None:
    if not docker:
        r.note("docker", "not requested", expected=True)
        return None
    text = r.command(["docker", "info", "--format", "{{json .}}"], "docker")
    if text is None:
        return None
    try:
        return parse_docker_info(text)
    except ValueError as e:
        r.note("docker", f"docker info: {e}")
        return None
