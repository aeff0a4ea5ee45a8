import copy

import pytest

from pirex.core import board, preflight
from pirex.core.preflight import Finding

GIB = 2**30


def clean_pi() -> dict:
    """A well-prepared Pi 3: performance governor, no swap, cool, USB disk, idle."""
    return {
        "cpu": {"cores": 4},
        "cpufreq": [
            {"cpu": i, "governor": "performance", "min_khz": 600000, "max_khz": 1200000, "cur_khz": 1200000}
            for i in range(4)
        ],
        "memory": {
            "total_bytes": 1 * GIB,
            "available_bytes": int(0.7 * GIB),
            "free_bytes": int(0.5 * GIB),
            "swap_total_bytes": 0,
            "swap_free_bytes": 0,
            "swap_used_bytes": 0,
            "swaps": [],
        },
        "load": {"1m": 0.1, "5m": 0.1, "15m": 0.1},
        "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
        "vcgencmd": {"throttled": board.parse_throttled("throttled=0x0"), "temp_c": 45.0},
        "thermal_zone0_c": 45.1,
        "storage": {
            "work_dir": "/mnt/usb/results",
            "source": "/dev/sda1",
            "device": "sda1",
            "fstype": "ext4",
            "kind": "usb",
            "free_bytes": 100 * GIB,
        },
        "network": {"peers": [peer("192.0.2.7", speed=1000)]},
        "services": {"checked": ["bluetooth", "avahi-daemon", "cron"], "running": []},
    }


def peer(addr: str, *, speed: int | None = None, duplex: str | None = "full", wireless: bool = False) -> dict:
    return {
        "peer": addr,
        "interface": "wlan0" if wireless else "eth0",
        "local": False,
        "speed_mbps": speed,
        "duplex": duplex if speed else None,
        "wireless": wireless,
    }


def by_check(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.check, []).append(f)
    return out


def levels(findings: list[Finding], check: str) -> list[str]:
    return [f.level for f in findings if f.check == check]


def test_clean_machine_is_all_ok():
    findings = preflight.check(clean_pi(), min_free_disk_bytes=10 * GIB, min_free_mem_bytes=GIB // 2, io_heavy=True)
    assert {f.check for f in findings} == {
        "governor",
        "swap",
        "throttling",
        "temperature",
        "storage",
        "free-disk",
        "free-memory",
        "load",
        "network",
        "services",
    }
    assert [f for f in findings if f.level != "ok"] == []
    assert preflight.worst(findings) == "ok"


def test_governor_not_performance():
    rec = clean_pi()
    rec["cpufreq"][2]["governor"] = "ondemand"
    [f] = preflight.check_governor(rec)
    assert f.level == "warn"
    assert "ondemand" in f.message and "performance" in f.message
    assert f.fix == "echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"


def test_no_cpufreq_on_a_vm_is_not_a_problem():
    rec = clean_pi()
    rec["cpufreq"] = None
    assert levels(preflight.check_governor(rec), "governor") == ["ok"]


def test_swap_enabled_or_in_use():
    rec = clean_pi()
    rec["memory"].update(swap_total_bytes=100 * 2**20, swap_free_bytes=100 * 2**20, swap_used_bytes=0)
    [f] = preflight.check_swap(rec)
    assert f.level == "warn" and "enabled" in f.message and f.fix == "sudo swapoff -a"
    rec["memory"].update(swap_free_bytes=90 * 2**20, swap_used_bytes=10 * 2**20)
    [f] = preflight.check_swap(rec)
    assert f.level == "warn" and "in use" in f.message


def test_throttling_now_fails_and_since_boot_warns():
    rec = clean_pi()
    rec["vcgencmd"]["throttled"] = board.parse_throttled("throttled=0x50005")
    findings = preflight.check_throttling(rec)
    assert [f.level for f in findings] == ["fail", "warn"]
    assert "under-voltage" in findings[0].message and "throttled" in findings[0].message
    assert "power" in findings[0].fix
    assert "since boot" in findings[1].message and "reboot" in findings[1].fix
    assert preflight.worst(preflight.check(rec)) == "fail"


def test_under_voltage_since_boot_only_warns():
    rec = clean_pi()
    rec["vcgencmd"]["throttled"] = board.parse_throttled("throttled=0x10000")
    [f] = preflight.check_throttling(rec)
    assert f.level == "warn" and "under-voltage has occurred since boot" in f.message


def test_throttling_unknown_on_a_pi_warns_and_off_a_pi_is_ok():
    rec = clean_pi()
    rec["vcgencmd"] = None
    assert levels(preflight.check_throttling(rec), "throttling") == ["warn"]
    rec["pi"] = None
    assert levels(preflight.check_throttling(rec), "throttling") == ["ok"]


@pytest.mark.parametrize("temp, level", [(69.9, "ok"), (70.0, "ok"), (72.5, "warn"), (80.0, "warn"), (81.1, "fail")])
def test_temperature(temp, level):
    rec = clean_pi()
    rec["vcgencmd"]["temp_c"] = temp
    [f] = preflight.check_temperature(rec)
    assert f.level == level


def test_temperature_from_thermal_zone_off_a_pi():
    rec = clean_pi()
    rec["vcgencmd"] = None
    rec["thermal_zone0_c"] = 85.0
    [f] = preflight.check_temperature(rec)
    assert f.level == "fail" and "thermal_zone0" in f.message
    rec["thermal_zone0_c"] = None
    assert levels(preflight.check_temperature(rec), "temperature") == ["ok"]


def test_sd_card_warns_for_io_experiments_only():
    rec = clean_pi()
    rec["storage"].update(source="/dev/mmcblk0p2", device="mmcblk0p2", kind="sd-card")
    [f] = preflight.check_storage(rec, io_heavy=True)
    assert f.level == "warn" and "SD card" in f.message and f.fix
    [f] = preflight.check_storage(rec, io_heavy=False)
    assert f.level == "ok"


def test_free_disk_and_memory_below_needs_fail():
    rec = clean_pi()
    findings = preflight.check(rec, min_free_disk_bytes=200 * GIB, min_free_mem_bytes=GIB)
    assert levels(findings, "free-disk") == ["fail"]
    assert levels(findings, "free-memory") == ["fail"]
    assert "needs 200.0 GiB" in by_check(findings)["free-disk"][0].message


def test_unknown_free_space_warns_only_when_needed():
    rec = clean_pi()
    rec["storage"] = None
    rec["memory"] = None
    assert levels(preflight.check_free_disk(rec, GIB), "free-disk") == ["warn"]
    assert levels(preflight.check_free_disk(rec, 0), "free-disk") == ["ok"]
    assert levels(preflight.check_free_memory(rec, GIB), "free-memory") == ["warn"]
    assert levels(preflight.check_swap(rec), "swap") == ["warn"]


def test_load_above_half_the_cores_warns():
    rec = clean_pi()
    rec["load"]["1m"] = 2.0
    assert levels(preflight.check_load(rec), "load") == ["ok"]
    rec["load"]["1m"] = 2.1
    assert levels(preflight.check_load(rec), "load") == ["warn"]


def test_an_empty_record_does_not_crash():
    findings = preflight.check({}, min_free_disk_bytes=1, min_free_mem_bytes=1)
    assert preflight.worst(findings) == "warn"
    assert preflight.compare({}, {}) == []


def test_finding_as_dict():
    f = Finding("warn", "swap", "x", "sudo swapoff -a")
    assert f.to_dict() == {"level": "warn", "check": "swap", "message": "x", "fix": "sudo swapoff -a"}
    assert preflight.worst([]) == "ok"


# --- before and after a run -------------------------------------------------------------------


def test_compare_quiet_run():
    before, after = clean_pi(), clean_pi()
    after["vcgencmd"]["temp_c"] = 52.0
    findings = preflight.compare(before, after)
    assert [(f.check, f.level) for f in findings] == [("throttling", "ok"), ("temperature", "ok")]


def test_compare_flags_throttling_that_appeared_during_the_run():
    before, after = clean_pi(), clean_pi()
    before["vcgencmd"]["throttled"] = board.parse_throttled("throttled=0x20000")  # capped once, before the run
    after["vcgencmd"]["throttled"] = board.parse_throttled("throttled=0x30000")
    [f] = [f for f in preflight.compare(before, after) if f.check == "throttling"]
    assert f.level == "warn"
    assert f.message.startswith("under-voltage occurred during the run (0x20000 -> 0x30000)")


def test_compare_flags_throttling_at_the_end():
    before, after = clean_pi(), clean_pi()
    after["vcgencmd"]["throttled"] = board.parse_throttled("throttled=0x50005")
    findings = [f for f in preflight.compare(before, after) if f.check == "throttling"]
    assert [f.level for f in findings] == ["warn", "warn"]
    assert "at the end of the run" in findings[1].message


def test_compare_flags_temperature_rise_swap_and_governor_change():
    before = clean_pi()
    after = copy.deepcopy(before)
    after["vcgencmd"]["temp_c"] = 58.0
    after["memory"]["swap_used_bytes"] = 50 * 2**20
    for c in after["cpufreq"]:
        c["governor"] = "ondemand"
    found = by_check(preflight.compare(before, after))
    assert found["temperature"][0].level == "warn" and "45.0 C to 58.0 C" in found["temperature"][0].message
    assert found["swap"][0].level == "warn"
    assert found["governor"][0].message == "governor changed during the run: performance -> ondemand"


def test_compare_hot_at_the_end_without_large_rise():
    before, after = clean_pi(), clean_pi()
    before["vcgencmd"]["temp_c"] = 66.0
    after["vcgencmd"]["temp_c"] = 71.0
    assert levels(preflight.compare(before, after), "temperature") == ["warn"]


def test_remote_peer_over_a_slow_link_or_wifi_warns():
    rec = clean_pi()
    assert levels(preflight.check_network(rec), "network") == ["ok"]
    rec["network"]["peers"] = [peer("192.0.2.7", speed=100)]
    [f] = preflight.check_network(rec)
    assert f.level == "warn" and "100 Mbit/s" in f.message and "Gigabit" in f.fix
    rec["network"]["peers"] = [peer("192.0.2.7", speed=1000, duplex="half")]
    assert levels(preflight.check_network(rec), "network") == ["warn"]
    rec["network"]["peers"] = [peer("192.0.2.8", wireless=True)]
    [f] = preflight.check_network(rec)
    assert f.level == "warn" and "Wi-Fi" in f.message
    rec["network"]["peers"] = [{"peer": "192.0.2.9", "interface": None, "local": False}]
    assert levels(preflight.check_network(rec), "network") == ["warn"]


def test_no_remote_peer_or_an_unknown_link_speed_is_fine():
    rec = clean_pi()
    rec["network"]["peers"] = [{"peer": "127.0.0.1", "interface": "lo", "local": True}]
    [f] = preflight.check_network(rec)
    assert f.level == "ok" and "no remote peer" in f.message
    rec["network"]["peers"] = [peer("192.0.2.7")]  # veth, virtio: no speed in sysfs
    [f] = preflight.check_network(rec)
    assert f.level == "ok" and "not reported" in f.message


def test_running_services_the_papers_stopped_warn():
    rec = clean_pi()
    rec["services"]["running"] = ["avahi-daemon", "cron"]
    [f] = preflight.check_services(rec)
    assert f.level == "warn" and "avahi-daemon, cron" in f.message and "doctor --fix" in f.fix
    del rec["services"]
    assert levels(preflight.check_services(rec), "services") == ["ok"]
