"""The board and its CPU for the machine record (pirex/core/machine.py): /proc/cpuinfo of x86 and ARM kernels, a
Raspberry Pi's revision code, model and serial, and its firmware's readings (vcgencmd). The parse_* functions take
text and are tested on fixtures of machines that are not at hand (see ../shared/PI-FACTS.md for what a Raspberry
Pi reports about itself); pi_section and vcgencmd_section read this machine.

The board serial is never stored. `pi.serial_hmac_sha256` is HMAC-SHA256 of the serial keyed with a
random salt kept per install in <cache>/serial-salt ($PIREX_CACHE, else ~/.cache/pirex): stable
across the runs of one install, so bundles tell whether they came from the same Pi, but not
reversible by trying all 2^32 serials (a bare hash of a 32-bit serial is). Bundles from different
installs cannot be matched by serial.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pirex.core import paths, proc
from pirex.core.sysread import Reader

log = logging.getLogger(__name__)

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
# Reading this board


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


def _device_tree(name: str) -> str | None:
    """A device-tree property: /proc/device-tree is a link to /sys/firmware/devicetree/base."""
    for base in ("/proc/device-tree", "/sys/firmware/devicetree/base"):
        try:
            return parse_device_tree_model(Path(base, name).read_bytes()) or None
        except OSError:
            continue
    return None


def pi_section(r: Reader, cpuinfo: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The record's pi section, from /proc/cpuinfo's summary (parse_cpuinfo) and the device tree; None off a Pi."""
    dt = _device_tree("model")
    serial = (cpuinfo or {}).get("serial") or _device_tree("serial-number")
    model = dt or (cpuinfo or {}).get("board_model")
    if not (model and model.startswith("Raspberry Pi")):
        r.note("pi", "not a Raspberry Pi", expected=True)
        return None
    return pi_identity(cpuinfo or {}, dt, serial, serial_salt() if serial else None)


def vcgencmd_section(r: Reader, *, expected_missing: bool) -> dict[str, Any] | None:
    """The record's vcgencmd section; None without vcgencmd (expected_missing: off a Pi, so no warning)."""
    if proc.which("vcgencmd") is None:
        r.note("vcgencmd", "vcgencmd not found (not a Pi, or inside a container)", expected=expected_missing)
        return None
    raw = {name: r.command(["vcgencmd", *args], f"vcgencmd.{name}") for name, (args, _) in VCGENCMD.items()}
    return vcgencmd_readings(raw)
