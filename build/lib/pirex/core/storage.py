"""The storage under the work directory for the machine record (pirex/core/machine.py): the file system and block
device it is on (findmnt, lsblk, sysfs), what kind of device that is (an SD card, eMMC, USB, NVMe, virtio), and an
SD card's identity. The parse_* functions take the tools' text; probe reads this machine."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pirex.core.sysread import Reader


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
# Reading the storage under a directory


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _block_device_name(r: Reader, source: str | None, target: Path) -> str | None:
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


def probe(r: Reader, work_dir: Path, dev: Path = Path("/dev")) -> dict[str, Any]:
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
