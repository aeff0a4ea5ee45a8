"""The machine record: what this machine is and what state it is in, taken before and after a run.

The record is a JSON-serializable dict stored as machine.json in every result bundle. Reading the
system (files under /proc and /sys, a few short commands) is kept apart from parsing what was read:
the parse_* functions take text and are tested on fixtures of machines that are not at hand
(see ../shared/PI-FACTS.md for what a Raspberry Pi reports about itself).

Every reader that fails logs a warning and yields null, and the reason goes into the record's
"unavailable" map; a missing /proc or /sys file never stops a run. Sections that cannot exist on
this machine (vcgencmd off a Pi, cpufreq on a VM) are null too, with the reason, but are not warned about.

The board serial is never stored. `pi.serial_hmac_sha256` is HMAC-SHA256 of the serial keyed with a
random salt kept per install in <cache>/serial-salt ($PIREX_CACHE, else ~/.cache/pirex): stable
across the runs of one install, so bundles tell whether they came from the same Pi, but not
reversible by trying all 2^32 serials (a bare hash of a 32-bit serial is). Bundles from different
installs cannot be matched by serial.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pirex import __version__
from pirex.core import capabilities, paths, proc, tuning
from pirex.core.errors import PirexError

log = logging.getLogger(__name__)

SCHEMA = "pirex-machine/1"
"""Version of the record's layout, stored in the record itself; bump it when a key changes meaning."""

COMMAND_TIMEOUT = 10.0
"""Seconds any one external command may take (vcgencmd, findmnt, lsblk, dpkg, docker info)."""

# ---------------------------------------------------------------------------------------------
# CPU and board identity

# ARM Ltd. (implementer 0x41) parts of the Raspberry Pis: Pi 3, Pi 4, Pi 5 (and the Pi 2 v1.2 / Zero 2 W A53).
ARM_PARTS = {"0xd03": "Cortex-A53", "0xd08": "Cortex-A72", "0xd0b": "Cortex-A76", "0xc07": "Cortex-A7"}


# Board lines, after the per-core blocks (usually past a blank line); "Processor" is old 32-bit kernels' model line.
_BOARD_KEYS = {"Hardware", "Revision", "Serial", "Model", "Processor"}


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Summarize /proc/cpuinfo of x86, 32-bit ARM and 64-bit ARM kernels.

    Returns model_name (None on 64-bit ARM, which has no such line), core (the ARM core named by
    CPU part, e.g. Cortex-A72), model (model_name, else core), cores (processor entries), cpu_parts,
    and the board lines hardware, revision, serial and board_model (each None when absent)."""
    blocks: list[dict[str, str]] = []
    board: dict[str, str] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line:
            if current:
                blocks.append(current)
                current = {}
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in _BOARD_KEYS:
            board[key] = value
        elif key == "processor":
            if current:
                blocks.append(current)
            current = {"processor": value}
        elif current:
            current[key] = value
        else:
            board[key] = value
    if current:
        blocks.append(current)
    cores = [b for b in blocks if "processor" in b]

    def first(key: str) -> str | None:
        for b in cores:
            if b.get(key):
                return b[key]
        return None

    # Old 32-bit ARM kernels put "Processor : ARMv7 Processor rev 4 (v7l)" in the board part.
    model_name = first("model name") or board.get("Processor")
    parts = sorted({b["CPU part"].lower() for b in cores if b.get("CPU part")})
    implementer = (first("CPU implementer") or "").lower()
    core = None
    if parts and implementer in ("0x41", ""):
        core = " + ".join(ARM_PARTS.get(p, f"ARM part {p}") for p in parts)
    return {
        "model_name": model_name,
        "core": core,
        "model": model_name or core,
        "cores": len(cores),
        "cpu_parts": parts,
        "implementer": implementer or None,
        "hardware": board.get("Hardware"),
        "revision": board.get("Revision"),
        "serial": board.get("Serial"),
        "board_model": board.get("Model"),
    }


_MEMORY = {0: "256MB", 1: "512MB", 2: "1GB", 3: "2GB", 4: "4GB", 5: "8GB", 6: "16GB"}
_MEMORY_MB = {0: 256, 1: 512, 2: 1024, 3: 2048, 4: 4096, 5: 8192, 6: 16384}
_MANUFACTURER = {0: "Sony UK", 1: "Egoman", 2: "Embest", 3: "Sony Japan", 4: "Embest", 5: "Stadium"}
_PROCESSOR = {0: "BCM2835", 1: "BCM2836", 2: "BCM2837", 3: "BCM2711", 4: "BCM2712"}
# Type field of new-style codes: short name and the model as /proc/device-tree/model spells it.
# https://www.raspberrypi.com/documentation/computers/raspberry-pi.html#new-style-revision-codes
_TYPE = {
    0x00: ("A", "Raspberry Pi Model A"),
    0x01: ("B", "Raspberry Pi Model B"),
    0x02: ("A+", "Raspberry Pi Model A Plus"),
    0x03: ("B+", "Raspberry Pi Model B Plus"),
    0x04: ("2B", "Raspberry Pi 2 Model B"),
    0x06: ("CM1", "Raspberry Pi Compute Module"),
    0x08: ("3B", "Raspberry Pi 3 Model B"),
    0x09: ("Zero", "Raspberry Pi Zero"),
    0x0A: ("CM3", "Raspberry Pi Compute Module 3"),
    0x0C: ("Zero W", "Raspberry Pi Zero W"),
    0x0D: ("3B+", "Raspberry Pi 3 Model B Plus"),
    0x0E: ("3A+", "Raspberry Pi 3 Model A Plus"),
    0x10: ("CM3+", "Raspberry Pi Compute Module 3 Plus"),
    0x11: ("4B", "Raspberry Pi 4 Model B"),
    0x12: ("Zero 2 W", "Raspberry Pi Zero 2 W"),
    0x13: ("400", "Raspberry Pi 400"),
    0x14: ("CM4", "Raspberry Pi Compute Module 4"),
    0x15: ("CM4S", "Raspberry Pi Compute Module 4S"),
    0x17: ("5", "Raspberry Pi 5"),
    0x18: ("CM5", "Raspberry Pi Compute Module 5"),
    0x19: ("500", "Raspberry Pi 500"),
    0x1A: ("CM5 Lite", "Raspberry Pi Compute Module 5 Lite"),
}


def parse_revision(code: str) -> dict[str, Any]:
    """Decode a board revision code (cpuinfo "Revision"), e.g. a02082 -> 3B rev 1.2, 1GB, Sony UK.

    New-style codes (bit 23 set) are a bit field; old-style codes (original Pi 1) only say so."""
    text = code.strip().lower().removeprefix("0x")
    value = int(text, 16)
    if not value & (1 << 23):
        return {"code": text, "new_style": False}
    mem = (value >> 20) & 0x7
    maker = (value >> 16) & 0xF
    cpu = (value >> 12) & 0xF
    kind = (value >> 4) & 0xFF
    rev = value & 0xF
    short, model = _TYPE.get(kind, (None, None))
    return {
        "code": text,
        "new_style": True,
        "type": short,
        "type_code": f"0x{kind:02x}",
        "model": model,
        "revision": f"1.{rev}",
        "memory": _MEMORY.get(mem),
        "memory_mb": _MEMORY_MB.get(mem),
        "manufacturer": _MANUFACTURER.get(maker),
        "processor": _PROCESSOR.get(cpu),
        "warranty_void": bool(value & (1 << 25)),
    }


def serial_digest(serial: str, salt: bytes) -> str:
    """HMAC-SHA256 of a board serial under a per-install salt (see the module docstring)."""
    return hmac.new(salt, serial.strip().lower().encode(), hashlib.sha256).hexdigest()


def parse_device_tree_model(data: bytes) -> str:
    """/proc/device-tree/model is NUL-terminated."""
    return data.split(b"\0", 1)[0].decode("utf-8", "replace").strip()


def pi_identity(
    cpuinfo: Mapping[str, Any], dt_model: str | None, serial: str | None, salt: bytes | None
) -> dict | None:
    """The Pi section from what was read; None when this is not a Raspberry Pi."""
    model = dt_model or cpuinfo.get("board_model")
    if not (model and model.startswith("Raspberry Pi")):
        return None
    code = cpuinfo.get("revision")
    decoded = None
    if code:
        try:
            decoded = parse_revision(code)
        except ValueError:
            log.warning("cannot decode Pi revision code %r", code)
    return {
        "model": model,
        "hardware": cpuinfo.get("hardware"),
        "revision_code": code,
        "revision": decoded,
        "serial_hmac_sha256": serial_digest(serial, salt) if serial and salt else None,
    }


# ---------------------------------------------------------------------------------------------
# Firmware readings (vcgencmd)

THROTTLE_BITS = {0: "under_voltage", 1: "arm_freq_capped", 2: "throttled", 3: "soft_temp_limit"}
"""get_throttled bits 0-3 are the state now; bits 16-19 are the same conditions since boot."""


def parse_throttled(text: str) -> dict[str, Any]:
    """`throttled=0x50005` -> {"raw", "value", "now": {under_voltage: True, ...}, "since_boot": {...}}."""
    m = re.search(r"throttled=(0x[0-9a-fA-F]+|\d+)", text)
    if not m:
        raise ValueError(f"not a get_throttled reading: {text.strip()!r}")
    value = int(m.group(1), 0)
    return {
        "raw": text.strip(),
        "value": value,
        "hex": f"0x{value:x}",
        "now": {name: bool(value & (1 << bit)) for bit, name in THROTTLE_BITS.items()},
        "since_boot": {name: bool(value & (1 << (bit + 16))) for bit, name in THROTTLE_BITS.items()},
    }


def parse_vcgencmd_temp(text: str) -> float:
    """`temp=47.8'C` -> 47.8 (degrees Celsius)."""
    m = re.search(r"temp=([-\d.]+)", text)
    if not m:
        raise ValueError(f"not a measure_temp reading: {text.strip()!r}")
    return float(m.group(1))


def parse_measure_clock(text: str) -> int:
    """`frequency(48)=1200000000` -> 1200000000 (Hz)."""
    m = re.search(r"frequency\(\d+\)=(\d+)", text)
    if not m:
        raise ValueError(f"not a measure_clock reading: {text.strip()!r}")
    return int(m.group(1))


def parse_measure_volts(text: str) -> float:
    """`volt=1.2000V` -> 1.2 (volts)."""
    m = re.search(r"volt=([\d.]+)", text)
    if not m:
        raise ValueError(f"not a measure_volts reading: {text.strip()!r}")
    return float(m.group(1))


VCGENCMD = {
    "get_throttled": (["get_throttled"], parse_throttled),
    "measure_temp": (["measure_temp"], parse_vcgencmd_temp),
    "measure_clock_arm": (["measure_clock", "arm"], parse_measure_clock),
    "measure_volts_core": (["measure_volts", "core"], parse_measure_volts),
}
_VCGENCMD_KEYS = {
    "get_throttled": "throttled",
    "measure_temp": "temp_c",
    "measure_clock_arm": "arm_hz",
    "measure_volts_core": "core_volts",
}


def vcgencmd_readings(raw: Mapping[str, str | None]) -> dict[str, Any]:
    """The vcgencmd section from the raw outputs (None where a call failed); raw text is kept too."""
    out: dict[str, Any] = {key: None for key in _VCGENCMD_KEYS.values()}
    for name, (_, parse) in VCGENCMD.items():
        text = raw.get(name)
        if text is None:
            continue
        try:
            out[_VCGENCMD_KEYS[name]] = parse(text)
        except ValueError as e:
            log.warning("vcgencmd %s: %s", name, e)
    out["raw"] = dict(raw)
    return out


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
# Storage under the work directory


def parse_findmnt(text: str) -> dict[str, str | None]:
    """`findmnt -no SOURCE,FSTYPE --target DIR` -> {"source", "fstype"}.

    A bind mount or btrfs subvolume shows as /dev/sda1[/sub]: the bracket part is dropped."""
    f = text.strip().splitlines()[0].split() if text.strip() else []
    if not f:
        raise ValueError("empty findmnt output")
    source = re.sub(r"\[.*\]$", "", f[0])
    return {"source": source, "fstype": f[1] if len(f) > 1 else None}


_TRANSPORTS = {"usb", "sata", "ata", "nvme", "scsi", "sas", "mmc", "spi", "pcie", "fc", "iscsi", "ieee1394", "virtio"}


def parse_lsblk(text: str) -> dict[str, Any]:
    """`lsblk -dn[b][P] -o NAME,TRAN,MODEL,ROTA,SIZE` -> {"name", "transport", "model", "rotational", "size"}.

    Takes the KEY="value" form (-P) and the plain form, whose empty columns are just blanks: there the
    first word is the name, the last two ROTA and SIZE, and a known transport may follow the name."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if not line:
        raise ValueError("empty lsblk output")
    pairs = dict(re.findall(r'([A-Z:-]+)="([^"]*)"', line))
    if pairs:
        name, tran, model, rota, size = (pairs.get(k, "") for k in ("NAME", "TRAN", "MODEL", "ROTA", "SIZE"))
    else:
        f = line.split()
        if len(f) < 3:
            raise ValueError(f"unexpected lsblk line: {line!r}")
        name, rota, size = f[0], f[-2], f[-1]
        middle = f[1:-2]
        tran = middle.pop(0) if middle and middle[0].lower() in _TRANSPORTS else ""
        model = " ".join(middle)
    size_value: int | str | None = int(size) if size.isdigit() else (size or None)
    return {
        "name": name,
        "transport": tran.strip() or None,
        "model": model.strip() or None,
        "rotational": rota.strip() == "1" if rota.strip() in ("0", "1") else None,
        "size": size_value,
    }


def parent_disk(name: str) -> str:
    """The whole disk of a partition by kernel naming: mmcblk0p2 -> mmcblk0, nvme0n1p1 -> nvme0n1, sda1 -> sda."""
    m = re.fullmatch(r"((?:mmcblk|nvme\d+n|loop|md)\d+)p\d+", name)
    if m:
        return m.group(1)
    m = re.fullmatch(r"((?:sd|vd|xvd|hd)[a-z]+)\d+", name)
    if m:
        return m.group(1)
    return name


def classify_storage(disk: str | None, transport: str | None, mmc_type: str | None = None) -> str | None:
    """sd-card, emmc, usb, nvme, virtio or other; None when there is no block device (overlay, tmpfs)."""
    if not disk:
        return None
    if disk.startswith("mmcblk"):
        return "emmc" if (mmc_type or "").strip().upper() == "MMC" else "sd-card"
    if (transport or "").lower() == "usb":
        return "usb"
    if disk.startswith("nvme") or (transport or "").lower() == "nvme":
        return "nvme"
    if disk.startswith(("vd", "xvd")) or (transport or "").lower() == "virtio":
        return "virtio"
    return "other"


# Card manufacturer IDs (CID MID) that are well established; others are recorded as the raw id.
_SD_MANUFACTURERS = {0x03: "SanDisk", 0x1B: "Samsung"}


def parse_sd_card(files: Mapping[str, str | None]) -> dict[str, Any]:
    """/sys/block/mmcblkN/device/{name,manfid,oemid,date,type} -> the card's identity (no serial)."""

    def txt(key: str) -> str | None:
        v = files.get(key)
        return v.strip() if v is not None and v.strip() else None

    manfid, oemid = txt("manfid"), txt("oemid")
    maker = None
    if manfid:
        try:
            maker = _SD_MANUFACTURERS.get(int(manfid, 16))
        except ValueError:
            pass
    oem_ascii = None
    if oemid:
        try:
            raw = int(oemid, 16).to_bytes(2, "big")
            if all(32 < b < 127 for b in raw):
                oem_ascii = raw.decode()
        except (ValueError, OverflowError):
            pass
    return {
        "name": txt("name"),
        "manfid": manfid,
        "manufacturer": maker,
        "oemid": oemid,
        "oemid_ascii": oem_ascii,
        "date": txt("date"),
        "type": txt("type"),
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


def _link(r: _Reader, iface: str, sys_net: Path = Path("/sys/class/net")) -> dict[str, Any]:
    d = sys_net / iface
    files = {k: r.text(d / k, f"network.{iface}.{k}", expected=True) for k in ("operstate", "speed", "duplex")}
    files["wireless"] = "" if (d / "wireless").exists() or (d / "phy80211").exists() else None
    return {"interface": iface, **parse_link(files)}


# Docker's and other virtual links: not the machine's way out.
_VIRTUAL = re.compile(r"^(lo|docker\d*|br-.*|veth.*|virbr.*|ifb\d*|cni.*|flannel.*|tun.*|tap.*)$")


def _network(r: _Reader, peers: list[str]) -> dict[str, Any]:
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


def _services(r: _Reader) -> dict[str, Any]:
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


class _Reader:
    """File and command reads that never raise: failures log and are noted in `unavailable`."""

    def __init__(self) -> None:
        self.unavailable: dict[str, str] = {}

    def note(self, key: str, reason: str, *, expected: bool = False) -> None:
        self.unavailable.setdefault(key, reason)
        (log.debug if expected else log.warning)("machine record: %s unavailable: %s", key, reason)

    def text(self, path: str | Path, key: str, *, expected: bool = False) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except FileNotFoundError:
            self.note(key, f"{path} does not exist", expected=expected)
        except OSError as e:
            self.note(key, f"cannot read {path}: {e}")
        return None

    def command(self, args: list[str], key: str, *, expected_missing: bool = False) -> str | None:
        if proc.which(args[0]) is None:
            self.note(key, f"{args[0]} not found", expected=expected_missing)
            return None
        try:
            result = proc.run(args, timeout=COMMAND_TIMEOUT, check=False)
        except (PirexError, OSError) as e:
            self.note(key, str(e))
            return None
        if not result.ok:
            tail = (result.stderr or result.stdout).strip().splitlines()
            self.note(key, f"{' '.join(args)} exited {result.returncode}" + (f": {tail[-1]}" if tail else ""))
            return None
        return result.stdout

    def section(self, key: str, fn: Callable[[], Any]) -> Any:
        """Run one section's reader; a bug or surprise in one section costs only that section."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - the record must never stop a run
            self.note(key, f"{type(e).__name__}: {e}")
            return None


def serial_salt() -> bytes | None:
    """The per-install salt for serial digests, created on first use (mode 0600)."""
    path = paths.cache_dir() / "serial-salt"
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as e:
        log.warning("cannot read %s (%s): the Pi serial is not recorded", path, e)
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    except FileExistsError:
        pass  # another pirex created it meanwhile
    except OSError as e:
        log.warning("cannot create %s (%s): the Pi serial is not recorded", path, e)
        return None
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError) as e:
        log.warning("cannot read %s (%s): the Pi serial is not recorded", path, e)
        return None


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _block_device_name(r: _Reader, source: str | None, target: Path) -> str | None:
    """Kernel name of the block device under target: from findmnt's SOURCE, else from st_dev via sysfs
    (Raspberry Pi OS may report the root file system as /dev/root)."""
    if source and source.startswith("/dev/") and source != "/dev/root":
        real = os.path.realpath(source)
        if os.path.exists(real):
            return os.path.basename(real)
    try:
        st = os.stat(target)
        link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        if link.exists():
            return Path(os.path.realpath(link)).name
    except OSError as e:
        r.note("storage.device", f"cannot stat {target}: {e}")
    if source and source.startswith("/dev/") and source != "/dev/root":
        return os.path.basename(source)
    return None


def _disk_of(name: str) -> str:
    sys_path = Path("/sys/class/block") / name
    if (sys_path / "partition").exists():
        return Path(os.path.realpath(sys_path)).parent.name
    if sys_path.exists():
        return name
    return parent_disk(name)


def _storage(r: _Reader, work_dir: Path, dev: Path = Path("/dev")) -> dict[str, Any]:
    target = _existing(work_dir)
    out: dict[str, Any] = {
        "work_dir": str(Path(work_dir).resolve()),
        "source": None,
        "fstype": None,
        "device": None,
        "disk": None,
        "kind": None,
        "transport": None,
        "model": None,
        "rotational": None,
        "size_bytes": None,
        "sd_card": None,
        "free_bytes": None,
        "total_bytes": None,
    }
    try:
        usage = shutil.disk_usage(target)
        out["free_bytes"], out["total_bytes"] = usage.free, usage.total
    except OSError as e:
        r.note("storage.free_bytes", f"cannot stat {target}: {e}")
    text = r.command(["findmnt", "-no", "SOURCE,FSTYPE", "--target", str(target)], "storage.findmnt")
    if text:
        out.update(parse_findmnt(text))
    device = _block_device_name(r, out["source"], target)
    if not device:
        r.note("storage.device", f"no block device under {target} (source {out['source']}, {out['fstype']})")
        return out
    disk = _disk_of(device)
    out["device"], out["disk"] = device, disk
    text = r.command(["lsblk", "-dnbP", "-o", "NAME,TRAN,MODEL,ROTA,SIZE", str(dev / disk)], "storage.lsblk")
    if text:
        info = parse_lsblk(text)
        out.update(
            transport=info["transport"],
            model=info["model"],
            rotational=info["rotational"],
            size_bytes=info["size"] if isinstance(info["size"], int) else None,
        )
    if disk.startswith("mmcblk"):
        base = Path("/sys/block") / disk / "device"
        out["sd_card"] = parse_sd_card(
            {k: r.text(base / k, f"storage.sd_card.{k}") for k in ("name", "manfid", "oemid", "date", "type")}
        )
    out["kind"] = classify_storage(disk, out["transport"], (out["sd_card"] or {}).get("type"))
    return out


def _cpufreq(r: _Reader) -> list[dict[str, Any]] | None:
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


def _device_tree(name: str) -> str | None:
    """A device-tree property: /proc/device-tree is a link to /sys/firmware/devicetree/base."""
    for base in ("/proc/device-tree", "/sys/firmware/devicetree/base"):
        try:
            return parse_device_tree_model(Path(base, name).read_bytes()) or None
        except OSError:
            continue
    return None


def record(
    work_dir: Path, docker: bool = True, peers: list[str] | None = None, dev: Path = Path("/dev")
) -> dict[str, Any]:
    """Read this machine: identity, CPU, frequency, memory, load, Pi firmware state, the storage under
    work_dir, the network (and the route to each peer: another host the experiment talks to), the
    services the papers stopped, and Docker. Never raises for an unreadable source: its key is null
    and `unavailable` says why. `dev`: where the block device nodes are (a container that has the
    host's / bind-mounted reads the host's disk through <mount>/dev)."""
    r = _Reader()
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

    text = r.text("/etc/os-release", "os") or r.text("/usr/lib/os-release", "os")
    osr = parse_os_release(text) if text is not None else None
    rec["os"] = (
        {
            "id": osr.get("ID"),
            "version_id": osr.get("VERSION_ID"),
            "version_codename": osr.get("VERSION_CODENAME"),
            "pretty_name": osr.get("PRETTY_NAME"),
        }
        if osr is not None
        else None
    )

    cpuinfo_text = r.text("/proc/cpuinfo", "cpu")
    cpuinfo = r.section("cpu", lambda: parse_cpuinfo(cpuinfo_text)) if cpuinfo_text is not None else None
    usable = r.section("cpu.usable", lambda: len(os.sched_getaffinity(0)))
    rec["cpu"] = {
        "model": (cpuinfo or {}).get("model"),
        "model_name": (cpuinfo or {}).get("model_name"),
        "core": (cpuinfo or {}).get("core"),
        "cpu_parts": (cpuinfo or {}).get("cpu_parts"),
        "cores": os.cpu_count() or (cpuinfo or {}).get("cores"),
        "usable_cores": usable,
    }
    rec["cpufreq"] = r.section("cpufreq", lambda: _cpufreq(r))

    def memory() -> dict[str, Any] | None:
        text = r.text("/proc/meminfo", "memory")
        if text is None:
            return None
        swaps_text = r.text("/proc/swaps", "memory.swaps", expected=True)
        return memory_summary(parse_meminfo(text), parse_swaps(swaps_text) if swaps_text is not None else None)

    rec["memory"] = r.section("memory", memory)
    load = r.text("/proc/loadavg", "load")
    rec["load"] = r.section("load", lambda: parse_loadavg(load)) if load is not None else None

    def pi() -> dict[str, Any] | None:
        dt = _device_tree("model")
        serial = (cpuinfo or {}).get("serial") or _device_tree("serial-number")
        model = dt or (cpuinfo or {}).get("board_model")
        if not (model and model.startswith("Raspberry Pi")):
            r.note("pi", "not a Raspberry Pi", expected=True)
            return None
        return pi_identity(cpuinfo or {}, dt, serial, serial_salt() if serial else None)

    rec["pi"] = r.section("pi", pi)

    def vcgencmd() -> dict[str, Any] | None:
        if proc.which("vcgencmd") is None:
            r.note("vcgencmd", "vcgencmd not found (not a Pi, or inside a container)", expected=rec["pi"] is None)
            return None
        raw = {name: r.command(["vcgencmd", *args], f"vcgencmd.{name}") for name, (args, _) in VCGENCMD.items()}
        return vcgencmd_readings(raw)

    rec["vcgencmd"] = r.section("vcgencmd", vcgencmd)

    def thermal() -> float | None:
        text = r.text("/sys/class/thermal/thermal_zone0/temp", "thermal_zone0_c", expected=True)
        return int(text.strip()) / 1000 if text is not None else None

    rec["thermal_zone0_c"] = r.section("thermal_zone0_c", thermal)
    rec["storage"] = r.section("storage", lambda: _storage(r, work_dir, dev))
    rec["network"] = r.section("network", lambda: _network(r, list(peers or [])))
    rec["services"] = r.section("services", lambda: _services(r))

    def docker_info() -> dict[str, Any] | None:
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

    rec["docker"] = r.section("docker", docker_info)
    # what the machine can do for an experiment (cpufreq, PMU, tracers, swap, root, storage devices): read
    # here once, so that `pirex reproduce` and the tables take it from the record instead of probing again
    rec["capabilities"] = r.section("capabilities", lambda: capabilities.probe(work_dir))
    rec["unavailable"] = r.unavailable
    return rec
