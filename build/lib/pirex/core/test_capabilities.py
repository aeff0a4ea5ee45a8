"""Capabilities probed from a stand-in root file system: what each one finds, and why one is missing."""

from pathlib import Path

from pirex.core import capabilities


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def test_a_pi_with_cpufreq_pmu_function_graph_and_swap(tmp_path):
    write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "ondemand\n")
    write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors", "ondemand performance\n")
    write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "ondemand\n")
    (tmp_path / "sys/bus/event_source/devices/armv8_pmuv3_0").mkdir(parents=True)
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "2\n")
    write(tmp_path, "sys/kernel/tracing/available_tracers", "function_graph function nop\n")
    write(tmp_path, "proc/swaps", "Filename Type Size Used Priority\n/var/swap file 102396 0 -2\n")
    assert capabilities.cpufreq(tmp_path) == {
        "available": True,
        "cores": 2,
        "governors": ["ondemand", "performance"],
    }
    assert capabilities.pmu(tmp_path) == {"available": True, "pmus": ["armv8_pmuv3_0"], "perf_event_paranoid": 2}
    assert capabilities.tracer("function_graph", tmp_path)["available"]
    assert capabilities.swap(tmp_path) == {"available": True, "areas": ["/var/swap"]}


def test_a_vm_without_them_says_why(tmp_path):
    write(tmp_path, "sys/kernel/debug/tracing/available_tracers", "blk function nop\n")
    write(tmp_path, "proc/swaps", "Filename Type Size Used Priority\n")
    found = {
        "cpufreq": capabilities.cpufreq(tmp_path),
        "pmu": capabilities.pmu(tmp_path),
        "function_graph": capabilities.tracer("function_graph", tmp_path),
        "swap": capabilities.swap(tmp_path),
    }
    missing = capabilities.missing(found)
    assert set(missing) == set(found)
    assert "no cpufreq" in missing["cpufreq"] and "no PMU" in missing["pmu"] and "no swap" in missing["swap"]
    assert missing["function_graph"] == "no function_graph tracer in this kernel's tracefs (it offers blk function nop)"
    assert "no tracefs" in capabilities.tracer("function_graph", tmp_path / "none")["why"]


def test_the_storage_devices_under_the_results_dir(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    results = tmp_path / "results"
    (results / "usb").mkdir(parents=True)
    lines = [
        "22 1 179:2 / / rw - ext4 /dev/mmcblk0p2 rw",
        f"40 22 8:1 / {results / 'usb'} rw - ext4 /dev/sda1 rw",
        f"41 22 0:40 / {tmp_path / 'elsewhere'} rw - ext4 /dev/sdb1 rw",
        f"42 22 0:41 / {results / 'ram'} rw - tmpfs tmpfs rw",
    ]
    mountinfo.write_text("\n".join(lines) + "\n")
    # the SD card holds the results directory, a USB disk is mounted in it; the disk elsewhere is not
    assert capabilities.block_devices(results, mountinfo) == ["/dev/mmcblk0p2", "/dev/sda1"]
    assert capabilities.block_devices(results / "usb" / "not-yet", mountinfo) == ["/dev/sda1"]
    mountinfo.write_text("1 0 0:1 / / rw - overlay overlay rw\n")
    assert "no block device" in capabilities.storage(results, mountinfo)["why"]


def test_every_name_is_probed(tmp_path):
    assert set(capabilities.probe(tmp_path)) == set(capabilities.NAMES)
