"""doctor --fix and --undo on stand-in sysfs and procfs trees, with stand-in systemctl, swapon,
swapoff and iw that change those trees as the real ones change the machine."""

import json
import os
import stat
from pathlib import Path

import pytest

from pirex.core import settings, tuning
from pirex.core.errors import PirexError

SERVICES = {"bluetooth": ("100", "bluetoothd"), "avahi-daemon": ("101", "avahi-daemon"), "cron": ("102", "cron")}

# Each stand-in edits the trees under $ROOT: units/<unit> exists while a unit is active, and its
# process (pids/<unit> names it) is in proc/ only then.
SYSTEMCTL = """#!/bin/sh
set -e
case $1 in
is-active) [ -e "$ROOT/units/$3" ] ;;
stop) rm -f "$ROOT/units/$2"; rm -rf "$ROOT/proc/$(cut -d' ' -f1 "$ROOT/pids/$2")" ;;
start) touch "$ROOT/units/$2"; read -r pid comm < "$ROOT/pids/$2"; mkdir -p "$ROOT/proc/$pid";
       echo "$comm" > "$ROOT/proc/$pid/comm" ;;
*) exit 2 ;;
esac
"""
SWAPOFF = """#!/bin/sh
head -1 "$ROOT/proc/swaps" > "$ROOT/proc/swaps.new"; mv "$ROOT/proc/swaps.new" "$ROOT/proc/swaps"
"""
SWAPON = """#!/bin/sh
# swapon [-p PRIORITY] AREA; without -p the kernel gives the next negative priority (-2 here)
if [ "$1" = -p ]; then prio=$2; shift 2; else prio=-2; fi
printf '%s\\tfile\\t\\t102396\\t0\\t%s\\n' "$1" "$prio" >> "$ROOT/proc/swaps"
"""
IW = """#!/bin/sh
# iw dev IFACE get|set power_save [on|off]
f="$ROOT/iw-$2"
if [ "$3" = get ]; then echo "Power save: $(cat "$f")"; else echo "$5" > "$f"; fi
"""
SWAPS_HEADER = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


def script(d: Path, name: str, text: str) -> None:
    p = d / name
    p.write_text(text)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def pi(tmp_path):
    """A Pi 3 as Raspberry Pi OS leaves it: ondemand, 100 MB swap file, the three services, Wi-Fi power saving on."""
    root = tmp_path / "pi"
    for cpu in range(4):
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("ondemand\n")
    (root / "sys/devices/system/cpu/cpufreq").mkdir()  # not a core
    (root / "sys/class/net/wlan0/wireless").mkdir(parents=True)
    (root / "sys/class/net/eth0").mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "proc/swaps").write_text(SWAPS_HEADER + "/var/swap\tfile\t\t102396\t0\t-2\n")
    (root / "proc/1").mkdir()
    (root / "proc/1/comm").write_text("systemd\n")
    (root / "units").mkdir()
    (root / "pids").mkdir()
    for unit, (pid, comm) in SERVICES.items():
        (root / "pids" / unit).write_text(f"{pid} {comm}\n")
        (root / "units" / unit).touch()
        (root / "proc" / pid).mkdir()
        (root / "proc" / pid / "comm").write_text(comm + "\n")
    (root / "iw-wlan0").write_text("on\n")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in {"systemctl": SYSTEMCTL, "swapoff": SWAPOFF, "swapon": SWAPON, "iw": IW}.items():
        script(bin_, name, text)
    env = {"PATH": f"{bin_}:{os.environ['PATH']}", "ROOT": str(root)}
    return tuning.System(root / "sys", root / "proc", env), root


def snapshot(root: Path) -> dict[str, str]:
    """Every file under the stand-in trees with its content (what fix changes and undo restores)."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_fix_records_every_change_and_undo_restores_every_value(pi, tmp_path):
    system, root = pi
    before = snapshot(root)
    record = tmp_path / "doctor-fix.json"
    changes = tuning.fix(system, record)
    assert [c["kind"] for c in changes] == ["governor"] * 4 + ["swap"] + ["service"] * 3 + ["wifi-power-save"]
    assert all(f.read_text() == "performance\n" for f in tuning.governor_files(system))
    assert tuning.active_swaps(system) == []
    assert tuning.running_services(tuning.running_processes(system.proc_root)) == []
    assert (root / "iw-wlan0").read_text() == "off\n"
    saved = json.loads(record.read_text())
    assert saved["schema"] == tuning.SCHEMA and saved["changes"] == changes
    assert "governor" in tuning.describe(changes[0]) and "ondemand -> performance" in tuning.describe(changes[0])

    assert tuning.plan(system) == []  # a prepared machine needs nothing
    restored = tuning.undo(system, record)
    assert [c["kind"] for c in restored] == ["wifi-power-save"] + ["service"] * 3 + ["swap"] + ["governor"] * 4
    assert snapshot(root) == before
    assert not record.exists()
    with pytest.raises(PirexError, match="nothing to undo"):
        tuning.undo(system, record)


def test_a_second_fix_keeps_the_first_ones_original_values(pi, tmp_path):
    system, root = pi
    before = snapshot(root)
    record = tmp_path / "doctor-fix.json"
    tuning.fix(system, record)
    (root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").write_text("powersave\n")  # someone changed it
    [again] = tuning.fix(system, record)
    assert again["old"] == "powersave"
    tuning.undo(system, record)
    assert snapshot(root) == before  # back to ondemand, as before the first fix


def test_a_machine_without_cpufreq_swap_services_or_wifi_needs_nothing(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/swaps").write_text(SWAPS_HEADER)
    system = tuning.System(tmp_path / "sys", tmp_path / "proc", {"PATH": str(tmp_path)})
    assert tuning.plan(system) == []
    assert tuning.fix(system, tmp_path / "rec.json") == []


def test_a_broken_record_is_a_clear_error(tmp_path, pi):
    system, _ = pi
    record = tmp_path / "doctor-fix.json"
    record.write_text("{not json")
    with pytest.raises(PirexError, match="cannot read .*restore by hand"):
        tuning.undo(system, record)


def test_power_save_and_running_services_parsing():
    assert tuning.parse_power_save("Power save: on\n") is True
    assert tuning.parse_power_save("Power save: off") is False
    assert tuning.parse_power_save("command failed: Operation not supported (-95)") is None
    assert tuning.running_services(["systemd", "crond", "sshd"]) == ["cron"]


def test_undo_turns_swap_back_on_at_the_priority_it_had(pi, tmp_path):
    """A zram area at priority 100 beside the swap file: undo gives each its own back (swapon -p), not the kernel's
    next negative one (the runner's matrix cases and a kill's recovery do the same: tuning.swapon_args)."""
    system, root = pi
    (root / "proc/swaps").write_text(
        SWAPS_HEADER + "/dev/zram0\tpartition\t102396\t0\t100\n/var/swap\tfile\t\t102396\t0\t-2\n"
    )
    before = snapshot(root)
    record = tmp_path / "doctor-fix.json"
    [swap] = [c for c in tuning.fix(system, record) if c["kind"] == "swap"]
    assert swap["priorities"] == {"/dev/zram0": 100, "/var/swap": -2} and tuning.active_swaps(system) == []
    tuning.undo(system, record)
    assert settings.Swap(root / "proc/swaps").read() == {"/dev/zram0": 100, "/var/swap": -2}
    after = snapshot(root)
    assert {k: v for k, v in after.items() if k != "proc/swaps"} == {
        k: v for k, v in before.items() if k != "proc/swaps"
    }


def test_swapon_args_give_a_recorded_priority_and_leave_the_kernels_own():
    assert settings.swapon_args("/dev/zram0", 100) == ["swapon", "-p", "100", "/dev/zram0"]
    assert settings.swapon_args("/var/swap", -2) == settings.swapon_args("/var/swap", None) == ["swapon", "/var/swap"]
