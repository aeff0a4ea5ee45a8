import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import pytest

from pirex import __version__
from pirex.core import board, capabilities, machine, storage, sysread

DATA = Path(__file__).parent / "testdata" / "machine"


def fixture(name: str) -> str:
    return (DATA / name).read_text()


# --- CPU and board identity -------------------------------------------------------------------


def test_cpuinfo_pi3_on_32_bit_raspbian():
    info = board.parse_cpuinfo(fixture("pi3-raspbian32.cpuinfo"))
    assert info["model_name"] == "ARMv7 Processor rev 4 (v7l)"
    assert info["model"] == "ARMv7 Processor rev 4 (v7l)"
    assert info["core"] == "Cortex-A53"
    assert info["cores"] == 4
    assert (info["hardware"], info["revision"], info["board_model"]) == (
        "BCM2835",
        "a02082",
        "Raspberry Pi 3 Model B Rev 1.2",
    )
    assert info["serial"] == "00000000a1b2c3d4"


def test_cpuinfo_pi4_on_64_bit_kernel_has_no_model_name_nor_hardware():
    info = board.parse_cpuinfo(fixture("pi4-arm64.cpuinfo"))
    assert info["model_name"] is None
    assert info["model"] == info["core"] == "Cortex-A72"
    assert info["cpu_parts"] == ["0xd08"]
    assert info["cores"] == 4
    assert info["hardware"] is None
    assert info["revision"] == "c03114"
    assert info["board_model"] == "Raspberry Pi 4 Model B Rev 1.4"


def test_cpuinfo_x86_server():
    info = board.parse_cpuinfo(fixture("x86-server.cpuinfo"))
    assert info["model"] == "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"
    assert info["core"] is None
    assert info["cores"] == 2
    assert info["revision"] is None and info["serial"] is None and info["board_model"] is None


def test_cpuinfo_old_32_bit_kernel_and_no_blank_line_before_board():
    text = "Processor\t: ARMv7 Processor rev 5 (v7l)\nprocessor\t: 0\nCPU part\t: 0xc07\nHardware\t: BCM2709\n"
    info = board.parse_cpuinfo(text)
    assert info["model"] == "ARMv7 Processor rev 5 (v7l)"
    assert info["core"] == "Cortex-A7"
    assert info["hardware"] == "BCM2709"
    assert board.parse_cpuinfo("")["cores"] == 0


@pytest.mark.parametrize(
    "code, expected",
    [
        (
            "a02082",
            {
                "type": "3B",
                "model": "Raspberry Pi 3 Model B",
                "revision": "1.2",
                "memory": "1GB",
                "memory_mb": 1024,
                "manufacturer": "Sony UK",
                "processor": "BCM2837",
            },
        ),
        (
            "a22082",
            {
                "type": "3B",
                "model": "Raspberry Pi 3 Model B",
                "revision": "1.2",
                "memory": "1GB",
                "memory_mb": 1024,
                "manufacturer": "Embest",
                "processor": "BCM2837",
            },
        ),
        (
            "c03114",
            {
                "type": "4B",
                "model": "Raspberry Pi 4 Model B",
                "revision": "1.4",
                "memory": "4GB",
                "memory_mb": 4096,
                "manufacturer": "Sony UK",
                "processor": "BCM2711",
            },
        ),
    ],
)
def test_revision_codes(code, expected):
    decoded = board.parse_revision(code)
    assert decoded["new_style"] is True
    assert decoded["code"] == code
    assert {k: decoded[k] for k in expected} == expected
    assert decoded["warranty_void"] is False


def test_revision_old_style_and_prefix():
    assert board.parse_revision("000e") == {"code": "000e", "new_style": False}
    assert board.parse_revision("0xA02082")["type"] == "3B"
    with pytest.raises(ValueError):
        board.parse_revision("zz")


def test_device_tree_model_is_nul_terminated():
    assert board.parse_device_tree_model(b"Raspberry Pi 4 Model B Rev 1.4\x00") == "Raspberry Pi 4 Model B Rev 1.4"


def test_pi_identity_hashes_the_serial_and_never_stores_it():
    info = board.parse_cpuinfo(fixture("pi3-raspbian32.cpuinfo"))
    salt = b"s" * 32
    pi = board.pi_identity(info, "Raspberry Pi 3 Model B Rev 1.2", info["serial"], salt)
    assert pi["model"] == "Raspberry Pi 3 Model B Rev 1.2"
    assert pi["revision"]["type"] == "3B"
    assert pi["serial_hmac_sha256"] == board.serial_digest("00000000a1b2c3d4", salt)
    assert pi["serial_hmac_sha256"] != board.serial_digest("00000000a1b2c3d4", b"t" * 32)
    assert "a1b2c3d4" not in json.dumps(pi)
    # The board model from cpuinfo suffices when the device tree is not readable.
    assert board.pi_identity(info, None, None, None)["serial_hmac_sha256"] is None
    assert board.pi_identity(board.parse_cpuinfo(fixture("x86-server.cpuinfo")), None, None, None) is None


def test_serial_salt_is_created_once_and_private(tmp_path, monkeypatch):
    monkeypatch.setenv("PIREX_CACHE", str(tmp_path / "cache"))
    first = board.serial_salt()
    assert first is not None and len(first) == 32
    assert board.serial_salt() == first
    path = tmp_path / "cache" / "serial-salt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --- Firmware readings ------------------------------------------------------------------------


def test_throttled_0x50005():
    t = board.parse_throttled("throttled=0x50005\n")
    assert t["value"] == 0x50005 and t["hex"] == "0x50005" and t["raw"] == "throttled=0x50005"
    assert t["now"] == {"under_voltage": True, "arm_freq_capped": False, "throttled": True, "soft_temp_limit": False}
    assert t["since_boot"] == {
        "under_voltage": True,
        "arm_freq_capped": False,
        "throttled": True,
        "soft_temp_limit": False,
    }


def test_throttled_0x0():
    t = board.parse_throttled("throttled=0x0")
    assert t["value"] == 0
    assert not any(t["now"].values()) and not any(t["since_boot"].values())


def test_throttled_since_boot_only():
    t = board.parse_throttled("throttled=0x10000")
    assert not any(t["now"].values())
    assert t["since_boot"]["under_voltage"] and not t["since_boot"]["throttled"]


@pytest.mark.parametrize("bad", ["", 'error=1 error_msg="Command not registered"', "throttled="])
def test_throttled_rejects_other_text(bad):
    with pytest.raises(ValueError):
        board.parse_throttled(bad)


def test_other_vcgencmd_readings():
    assert board.parse_vcgencmd_temp("temp=47.8'C\n") == 47.8
    assert board.parse_measure_clock("frequency(48)=1200000000\n") == 1_200_000_000
    assert board.parse_measure_volts("volt=1.2000V\n") == 1.2
    with pytest.raises(ValueError):
        board.parse_vcgencmd_temp("VCHI initialization failed")


def test_vcgencmd_readings_keep_raw_and_survive_failures():
    raw = {
        "get_throttled": "throttled=0x0\n",
        "measure_temp": "temp=52.1'C\n",
        "measure_clock_arm": None,
        "measure_volts_core": "garbage",
    }
    v = board.vcgencmd_readings(raw)
    assert v["throttled"]["value"] == 0
    assert v["temp_c"] == 52.1
    assert v["arm_hz"] is None and v["core_volts"] is None
    assert v["raw"] == raw


# --- Memory, load, OS, cpufreq ----------------------------------------------------------------


def test_meminfo_and_swaps():
    mem = machine.parse_meminfo(fixture("meminfo-pi3.txt"))
    assert mem["MemTotal"] == 949448 * 1024
    assert mem["HugePages_Total"] == 0
    swaps = machine.parse_swaps(fixture("swaps-pi3.txt"))
    assert swaps == [
        {
            "filename": "/var/swap",
            "type": "file",
            "size_bytes": 102396 * 1024,
            "used_bytes": 10240 * 1024,
            "priority": -2,
        }
    ]
    summary = machine.memory_summary(mem, swaps)
    assert summary["available_bytes"] == 759896 * 1024
    assert summary["swap_used_bytes"] == (102396 - 92156) * 1024
    assert machine.memory_summary({}, None)["swap_used_bytes"] is None
    assert machine.parse_swaps("Filename\tType\tSize\tUsed\tPriority\n") == []


def test_loadavg_and_os_release():
    assert machine.parse_loadavg("0.52 0.58 0.59 1/389 12345\n") == {"1m": 0.52, "5m": 0.58, "15m": 0.59}
    osr = machine.parse_os_release(fixture("os-release-raspbian.txt"))
    assert osr["ID"] == "raspbian"
    assert osr["VERSION_CODENAME"] == "stretch"
    assert osr["PRETTY_NAME"] == "Raspbian GNU/Linux 9 (stretch)"


def test_cpufreq_of_one_core():
    files = {
        "scaling_governor": "ondemand\n",
        "scaling_available_governors": "conservative ondemand userspace powersave performance schedutil \n",
        "scaling_min_freq": "600000\n",
        "scaling_max_freq": "1200000\n",
        "scaling_cur_freq": None,
        "scaling_driver": "cpufreq-dt\n",
    }
    c = machine.parse_cpufreq(files)
    assert c["governor"] == "ondemand"
    assert "performance" in c["available_governors"]
    assert (c["min_khz"], c["max_khz"], c["cur_khz"]) == (600000, 1200000, None)


# --- Storage ----------------------------------------------------------------------------------


def test_sd_card_storage():
    mnt = storage.parse_findmnt(fixture("findmnt-sd.txt"))
    assert mnt == {"source": "/dev/mmcblk0p2", "fstype": "ext4"}
    disk = storage.parent_disk("mmcblk0p2")
    assert disk == "mmcblk0"
    for name in ("lsblk-sd.txt", "lsblk-sd-pairs.txt"):
        blk = storage.parse_lsblk(fixture(name))
        assert blk == {"name": "mmcblk0", "transport": None, "model": None, "rotational": False, "size": 7948206080}
    card = storage.parse_sd_card(
        {k: (DATA / "sd-card" / k).read_text() for k in ("name", "manfid", "oemid", "date", "type")}
    )
    assert card == {
        "name": "SL08G",
        "manfid": "0x000003",
        "manufacturer": "SanDisk",
        "oemid": "0x5344",
        "oemid_ascii": "SD",
        "date": "11/2017",
        "type": "SD",
    }
    assert storage.classify_storage(disk, None, card["type"]) == "sd-card"
    assert storage.classify_storage(disk, None, "MMC") == "emmc"


def test_usb_hdd_storage():
    mnt = storage.parse_findmnt(fixture("findmnt-usb.txt"))
    assert mnt == {"source": "/dev/sda1", "fstype": "ext4"}  # the bind-mount [/pirex] part is dropped
    assert storage.parent_disk("sda1") == "sda"
    for name in ("lsblk-usb.txt", "lsblk-usb-pairs.txt"):
        blk = storage.parse_lsblk(fixture(name))
        assert blk == {
            "name": "sda",
            "transport": "usb",
            "model": "WDC WD5000LPVX-22V0TT0",
            "rotational": True,
            "size": 500107862016,
        }
    assert storage.classify_storage("sda", "usb") == "usb"


@pytest.mark.parametrize(
    "name, disk, tran, kind",
    [
        ("nvme0n1p2", "nvme0n1", "nvme", "nvme"),
        ("vda1", "vda", None, "virtio"),
        ("vda", "vda", None, "virtio"),
        ("sdb3", "sdb", "sata", "other"),
        ("dm-0", "dm-0", None, "other"),
    ],
)
def test_storage_classes(name, disk, tran, kind):
    assert storage.parent_disk(name) == disk
    assert storage.classify_storage(disk, tran) == kind


def test_storage_without_block_device_and_bad_output():
    assert storage.parse_findmnt("overlay overlay\n") == {"source": "overlay", "fstype": "overlay"}
    assert storage.classify_storage(None, None) is None
    with pytest.raises(ValueError):
        storage.parse_findmnt("")
    with pytest.raises(ValueError):
        storage.parse_lsblk("\n")


# --- Docker -----------------------------------------------------------------------------------


def test_docker_info():
    info = machine.parse_docker_info(fixture("docker-info.json"))
    assert info["server_version"] == "27.3.1"
    assert info["storage_driver"] == "overlay2"
    assert info["cgroup_version"] == "2"
    assert info["architecture"] == "aarch64"


def test_docker_info_without_server():
    with pytest.raises(ValueError, match="Cannot connect"):
        machine.parse_docker_info(fixture("docker-info-noserver.json"))
    with pytest.raises(ValueError):
        machine.parse_docker_info("not json")


# --- Reading this machine ---------------------------------------------------------------------

KEYS = {
    "schema",
    "taken_at",
    "pirex_version",
    "hostname",
    "device",
    "machine_id",
    "kernel",
    "architecture",
    "in_container",
    "os",
    "cpu",
    "cpufreq",
    "memory",
    "load",
    "network",
    "services",
    "pi",
    "vcgencmd",
    "thermal_zone0_c",
    "storage",
    "docker",
    "capabilities",
    "unavailable",
}


def test_record_of_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("PIREX_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "results" / "not-yet-created"
    rec = machine.record(work, docker=False)
    assert set(rec) == KEYS
    assert rec["schema"] == machine.SCHEMA
    assert rec["pirex_version"] == __version__
    assert rec["taken_at"].endswith("+00:00")
    assert rec["architecture"]["uname_machine"]
    assert rec["cpu"]["cores"] >= 1
    assert rec["storage"]["work_dir"] == str(work)
    assert rec["storage"]["free_bytes"] > 0
    assert rec["docker"] is None and rec["unavailable"]["docker"] == "not requested"
    assert set(rec["capabilities"]) == set(capabilities.NAMES)
    assert rec["capabilities"]["root"]["available"] == (os.geteuid() == 0)
    assert json.loads(json.dumps(rec)) == rec


def test_reader_notes_missing_files_instead_of_raising(tmp_path):
    r = sysread.Reader()
    assert r.text(tmp_path / "absent", "x") is None
    assert "does not exist" in r.unavailable["x"]
    assert r.command(["pirex-no-such-command"], "y") is None
    assert r.unavailable["y"] == "pirex-no-such-command not found"
    assert r.command(["sh", "-c", "echo oops >&2; exit 3"], "z") is None
    assert r.unavailable["z"] == "sh -c echo oops >&2; exit 3 exited 3: oops"
    assert r.section("s", lambda: 1 / 0) is None
    assert r.unavailable["s"].startswith("ZeroDivisionError")


# --- network, services, interrupts ------------------------------------------------------------


def test_route_get_to_a_remote_peer_and_to_this_host():
    remote = machine.parse_route_get(
        '[{"dst":"10.0.0.1","gateway":"192.0.2.1","dev":"eth0","prefsrc":"192.0.2.2","flags":[],"cache":[]}]'
    )
    assert remote == {"interface": "eth0", "gateway": "192.0.2.1", "source": "192.0.2.2", "local": False}
    local = machine.parse_route_get('[{"type":"local","dst":"127.0.0.1","dev":"lo","prefsrc":"127.0.0.1"}]')
    assert local["local"] is True
    with pytest.raises(ValueError):
        machine.parse_route_get("[]")


def test_link_of_a_gigabit_port_a_virtual_link_and_wifi():
    assert machine.parse_link({"operstate": "up\n", "speed": "1000\n", "duplex": "full\n", "wireless": None}) == {
        "operstate": "up",
        "speed_mbps": 1000,
        "duplex": "full",
        "wireless": False,
    }
    # virtio and veth report -1 or fail with EINVAL; a link that is down says "unknown" duplex
    virtual = machine.parse_link({"operstate": "up", "speed": "-1", "duplex": "unknown", "wireless": None})
    assert virtual["speed_mbps"] is None and virtual["duplex"] is None
    assert machine.parse_link({"operstate": "up", "speed": None, "duplex": None, "wireless": ""})["wireless"] is True


def test_record_names_the_route_to_each_peer_and_the_services(tmp_path):
    rec = machine.record(tmp_path, docker=False, peers=["127.0.0.1"])
    [peer] = rec["network"]["peers"]
    assert peer["peer"] == "127.0.0.1" and peer["local"] is True and peer["interface"] == "lo"
    assert rec["services"]["checked"] == ["bluetooth", "avahi-daemon", "cron"]
    assert isinstance(rec["services"]["running"], list)


def test_interrupts_of_a_pi3():
    irq = machine.parse_interrupts(fixture("interrupts-pi3.txt"))
    assert irq["cpus"] == 4
    assert irq["lines"]["62"] == {
        "counts": [123449113, 0, 0, 0],
        "description": "ARMCTRL-level 64 Edge dwc_otg, dwc_otg_pcd, dwc_otg_hcd:usb1",
    }
    assert irq["lines"]["IPI2"]["counts"] == [2413211, 2906744, 3050711, 3183420]
    assert irq["lines"]["FIQ"] == {"counts": [], "description": "usb_fiq"}
    assert irq["lines"]["Err"]["counts"] == [0]
    assert machine.parse_interrupts("") == {"cpus": 0, "lines": {}}


def test_interrupts_before_and_after_a_step(tmp_path):
    before = machine.interrupts()
    after = machine.interrupts()
    machine.write_interrupts(tmp_path / "interrupts.json", before, after)
    saved = json.loads((tmp_path / "interrupts.json").read_text())
    assert saved["before"]["cpus"] == saved["after"]["cpus"] > 0
    assert machine.interrupts(tmp_path / "missing") is None


def test_machine_id_is_app_specific_and_stable(tmp_path):
    f = tmp_path / "machine-id"
    f.write_text("0123456789abcdef0123456789abcdef\n")
    want = hmac.new(b"0123456789abcdef0123456789abcdef", b"pirex", hashlib.sha256).hexdigest()[:32]
    assert machine.machine_id(f) == want
    assert "0123456789abcdef" not in want  # the raw id is never stored
    assert machine.machine_id(tmp_path / "absent") is None


# --- reading a record ---------------------------------------------------------------------------


def test_a_record_reads_its_sections_and_values(tmp_path):
    rec = machine.record(tmp_path, docker=False)
    got = machine.MachineRecord.of(rec)
    assert machine.MachineRecord.of(got) is got and got.doc is rec
    assert got.hostname == rec["hostname"] and got.machine_id == rec["machine_id"]
    assert got.cpu_model == rec["cpu"]["model"] and got.cores == rec["cpu"]["cores"]
    assert got.arch == rec["architecture"]["uname_machine"] and got.work_dir == str(tmp_path.resolve())
    assert got.storage == rec["storage"] and got.capabilities == rec["capabilities"]
    assert got.governors == sorted({c["governor"] for c in rec["cpufreq"] or []} - {None})


PI_RECORD = {
    "hostname": "raspberrypi",
    "device": {"name": "pi-a", "labels": {}},
    "cpu": {"model": "Cortex-A72", "core": "Cortex-A72", "cpu_parts": ["0xd08"], "cores": 4},
    "architecture": {"uname_machine": "aarch64"},
    "os": {"pretty_name": "Debian GNU/Linux 12 (bookworm)"},
    "pi": {"model": "Raspberry Pi 4 Model B Rev 1.4", "serial_hmac_sha256": "ab" * 32},
    "cpufreq": [
        {"cpu": 0, "governor": "performance"},
        {"cpu": 1, "governor": "ondemand"},
        {"cpu": 2, "governor": None},
    ],
    "memory": {"total_bytes": 4 << 30, "swap_total_bytes": 0},
    "load": {"1m": 0.5, "5m": 0.4, "15m": 0.3},
    "vcgencmd": {"throttled": board.parse_throttled("throttled=0x0"), "temp_c": 47.8},
    "thermal_zone0_c": 47.2,
    "storage": {"work_dir": "/mnt/usb", "kind": "usb", "fstype": "ext4"},
    "network": {"interfaces": [], "peers": [{"peer": "10.0.0.2", "interface": "eth0"}]},
    "services": {"checked": ["cron"], "running": []},
    "capabilities": {"cpufreq": {"available": True}},
}


def test_a_pi_record_reads_as_written():
    got = machine.MachineRecord.of(PI_RECORD)
    assert (got.hostname, got.device_name, got.pi_model) == ("raspberrypi", "pi-a", "Raspberry Pi 4 Model B Rev 1.4")
    assert (got.cpu_model, got.cpu_parts, got.cores, got.arch) == ("Cortex-A72", ["0xd08"], 4, "aarch64")
    assert got.os_name == "Debian GNU/Linux 12 (bookworm)" and got.pi["serial_hmac_sha256"] == "ab" * 32
    assert got.core_governors == ["performance", "ondemand", None]
    assert got.governors == ["ondemand", "performance"]  # a core without one: no name
    assert got.memory["total_bytes"] == 4 << 30 and got.load_1m == 0.5
    assert got.throttled["hex"] == "0x0" and (got.temp_c, got.thermal_zone0_c) == (47.8, 47.2)
    assert (got.storage_kind, got.work_dir, got.storage["fstype"]) == ("usb", "/mnt/usb", "ext4")
    assert got.peers == [{"peer": "10.0.0.2", "interface": "eth0"}]
    assert got.services == {"checked": ["cron"], "running": []}
    assert got.capabilities == {"cpufreq": {"available": True}} and got


@pytest.mark.parametrize(
    "old",
    [
        {},  # nothing recorded
        {"hostname": "h"},  # a record of an older pirex: most sections absent
        # sections this machine has not, as record() writes them: null
        {"hostname": "h", "device": None, "cpu": None, "architecture": None, "os": None, "pi": None, "cpufreq": None}
        | {"memory": None, "load": None, "vcgencmd": None, "storage": None, "network": None, "services": None},
    ],
)
def test_an_old_or_sparse_record_reads_as_unknown_not_as_an_error(old):
    got = machine.MachineRecord.of(old)
    assert got.hostname == old.get("hostname") and got.machine_id is None and got.device_name is None
    assert (got.cpu, got.cpu_model, got.cpu_parts, got.cores, got.arch, got.os_name) == ({}, None, [], None, None, None)
    assert (got.pi, got.pi_model) == ({}, None)
    assert (got.core_governors, got.governors, got.memory, got.load_1m) == ([], [], {}, None)
    assert (got.throttled, got.temp_c, got.thermal_zone0_c) == (None, None, None)
    assert (got.storage, got.storage_kind, got.work_dir, got.peers, got.services) == ({}, None, None, [], {})
    assert got.capabilities is None  # taken before capabilities were recorded: the reader probes them (reproduce)
    assert bool(got) == bool(old)  # an empty record is as empty as its dict


def test_only_a_mapping_is_a_record():
    with pytest.raises(TypeError, match="a machine record is a mapping, not list"):
        machine.MachineRecord.of([])  # type: ignore[arg-type]
