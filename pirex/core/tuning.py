"""`pirex doctor --fix` and `--undo`: prepare a machine the way the papers learned to, and put it back.

The papers ran their Pis on the performance governor, without swap, with bluetooth, avahi and cron
stopped and the network idle. `fix` makes those changes where they are needed and records each one
with the value it replaced (in <cache>/doctor-fix.json); `undo` restores the recorded values in
reverse order and removes the record. A second `fix` keeps the first one's original values, so
`undo` always returns to the state before the first `fix`.

The system is reached through a `System` (the sysfs and procfs roots, and the commands systemctl,
swapon/swapoff and iw), so the tests run on stand-in trees and stand-in commands.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pirex.core import paths, proc, settings
from pirex.core.errors import PirexError

log = logging.getLogger(__name__)

SCHEMA = "pirex-doctor-fix/1"
COMMAND_TIMEOUT = 60.0

PAPER_SERVICES: dict[str, tuple[str, ...]] = {
    "bluetooth": ("bluetoothd",),
    "avahi-daemon": ("avahi-daemon",),
    "cron": ("cron", "crond"),
}
"""The services the papers stopped before measuring (systemd unit -> its process names). The one
list: the machine record reports which of them run, the preflight warns, `doctor --fix` stops them."""

GOVERNOR = "performance"


@dataclass
class System:
    """Where the machine is read and changed: the real one by default, stand-in trees in tests."""

    sys_root: Path = Path("/sys")
    proc_root: Path = Path("/proc")
    env: dict[str, str] = field(default_factory=dict)  # e.g. PATH with stand-in commands

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH"))

    def cmd(self, args: list[str], *, check: bool = True) -> proc.Result:
        if self.which(args[0]) is None:
            raise PirexError(f"{args[0]} not found: cannot {' '.join(args)}")
        return proc.run(args, timeout=COMMAND_TIMEOUT, check=check, env=self.env or None, what=" ".join(args))


# --- reading ---------------------------------------------------------------------------------


def governor_files(system: System) -> list[Path]:
    return settings.governor_files(system.sys_root / "devices/system/cpu")


def active_swaps(system: System) -> list[str]:
    """Swap areas in use (/proc/swaps), by file name."""
    return list(_swap(system).read())


def _swap(system: System) -> settings.Swap:
    return settings.Swap(system.proc_root / "swaps", run=system.cmd)


def running_processes(proc_root: Path) -> set[str]:
    """The command names (comm) of every process under a procfs root."""
    names = set()
    for d in proc_root.glob("[0-9]*"):
        try:
            names.add((d / "comm").read_text().strip())
        except OSError:
            continue  # the process ended meanwhile
    return names


def running_services(comms: Iterable[str]) -> list[str]:
    """Which of PAPER_SERVICES run, judged by process names (works without systemd, in a chroot too)."""
    comms = set(comms)
    return [unit for unit, names in PAPER_SERVICES.items() if comms & set(names)]


def wireless_interfaces(system: System) -> list[str]:
    return sorted(p.name for p in (system.sys_root / "class/net").glob("*") if (p / "wireless").exists())


def parse_power_save(text: str) -> bool | None:
    """`iw dev wlan0 get power_save` -> `Power save: on` -> True."""
    m = re.search(r"Power save:\s*(on|off)", text)
    return m.group(1) == "on" if m else None


def _unit_active(system: System, unit: str) -> bool:
    return system.cmd(["systemctl", "is-active", "--quiet", unit], check=False).ok


# --- the changes ------------------------------------------------------------------------------


def plan(system: System) -> list[dict[str, Any]]:
    """What `fix` would change here, each with the value it replaces (nothing is changed)."""
    changes: list[dict[str, Any]] = []
    for f in governor_files(system):
        old = f.read_text().strip()
        if old != GOVERNOR:
            changes.append({"kind": "governor", "path": str(f), "old": old, "new": GOVERNOR})
    swaps = _swap(system).read()
    if swaps:
        changes.append({"kind": "swap", "old": list(swaps), "priorities": swaps, "new": []})
    running = running_services(running_processes(system.proc_root))
    if running and system.which("systemctl"):
        for unit in running:
            if _unit_active(system, unit):
                changes.append({"kind": "service", "unit": unit, "old": "active", "new": "inactive"})
    for dev in wireless_interfaces(system):
        if system.which("iw") is None:
            log.warning("Wi-Fi interface %s: iw not found (apt-get install iw), power saving not checked", dev)
            continue
        r = system.cmd(["iw", "dev", dev, "get", "power_save"], check=False)
        if r.ok and parse_power_save(r.stdout):
            changes.append({"kind": "wifi-power-save", "interface": dev, "old": "on", "new": "off"})
    return changes


def _apply(system: System, change: dict[str, Any], value: Any) -> None:
    kind = change["kind"]
    if kind == "governor":
        settings.SysfsFile(change["path"]).write(value)
    elif kind == "swap":
        if value:
            _swap(system).on(value, change.get("priorities"))
        else:
            _swap(system).off(change["old"])
    elif kind == "service":
        system.cmd(["systemctl", "start" if value == "active" else "stop", change["unit"]])
    elif kind == "wifi-power-save":
        system.cmd(["iw", "dev", change["interface"], "set", "power_save", value])
    else:
        raise PirexError(f"unknown change {kind!r} in the doctor --fix record")


def describe(change: dict[str, Any], undo: bool = False) -> str:
    old, new = (change["new"], change["old"]) if undo else (change["old"], change["new"])
    what = {
        "governor": lambda: f"governor {change['path']}",
        "swap": lambda: "swap",
        "service": lambda: f"service {change['unit']}",
        "wifi-power-save": lambda: f"Wi-Fi power saving on {change['interface']}",
    }[change["kind"]]()
    fmt = (lambda v: ", ".join(v) or "off") if change["kind"] == "swap" else str
    return f"{what}: {fmt(old)} -> {fmt(new)}"


def state_file() -> Path:
    return paths.cache_dir() / "doctor-fix.json"


def _load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PirexError(f"cannot read {path} ({e}): restore by hand, then remove it") from None
    if data.get("schema") != SCHEMA:
        raise PirexError(f"{path} is not a doctor --fix record ({SCHEMA})")
    return data["changes"]


def _save(path: Path, changes: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"schema": SCHEMA, "changes": changes}, indent=2) + "\n")
    os.replace(tmp, path)


def _key(change: dict[str, Any]) -> tuple:
    return (change["kind"], change.get("path"), change.get("unit"), change.get("interface"))


def fix(system: System | None = None, record: Path | None = None) -> list[dict[str, Any]]:
    """Make the changes of `plan`, recording each before it is made (so a failure halfway is undoable)."""
    system, record = system or System(), record or state_file()
    done = _load(record)
    todo = plan(system)
    known = {_key(c) for c in done}
    for change in todo:
        if _key(change) not in known:
            done.append(change)
        _save(record, done)
        _apply(system, change, change["new"])
    return todo


def undo(system: System | None = None, record: Path | None = None) -> list[dict[str, Any]]:
    """Restore every recorded change, last first; the record is removed once all are back."""
    system, record = system or System(), record or state_file()
    changes = _load(record)
    if not changes:
        raise PirexError(f"nothing to undo: no `pirex doctor --fix` record at {record}")
    restored = list(reversed(changes))
    while changes:
        change = changes[-1]
        _apply(system, change, change["old"])
        changes.pop()
        _save(record, changes)
    record.unlink()
    return restored
