"""The settings on stand-in files and a stand-in command runner: what each reads, how it restores itself from its
record, and what it says is still changed (the words a killed run's recovery lists)."""

from __future__ import annotations

import os

import pytest

from pirex.core import settings
from pirex.core.errors import PirexError

HEADER = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


def test_a_sysfs_file_reads_writes_and_says_how_it_differs_from_its_record(tmp_path):
    f = tmp_path / "scaling_governor"
    f.write_text("ondemand\n")
    s = settings.SysfsFile(f)
    assert s.read() == "ondemand" and s.record("ondemand") == {"path": str(f), "was": "ondemand"}
    s.write("performance")
    assert f.read_text() == "performance\n"
    assert s.changed("ondemand") == f"{f} = 'performance' (was 'ondemand')" and s.changed("performance") is None
    assert settings.SysfsFile(tmp_path / "gone").changed("ondemand") is None  # nothing left to put back


def test_a_sysfs_file_that_cannot_be_written_says_so(tmp_path):
    with pytest.raises(PirexError, match=r"cannot write 'performance' to .*missing/scaling_governor"):
        settings.SysfsFile(tmp_path / "missing" / "scaling_governor").write("performance")
    if os.geteuid() != 0:
        f = tmp_path / "ro"
        f.write_text("x\n")
        f.chmod(0o444)
        with pytest.raises(PirexError, match="run as root"):
            settings.SysfsFile(f).write("y")


def test_swap_comes_back_only_where_it_is_off_each_area_at_its_priority(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text(HEADER + "/dev/zram0\tpartition\t102396\t0\t100\n/my\\040swap\tfile\t\t102396\t0\t-2\n")
    ran = []
    s = settings.Swap(swaps, run=ran.append)
    assert s.read() == {"/dev/zram0": 100, "/my swap": -2}
    assert s.record(s.read()) == {
        "areas": ["/dev/zram0", "/my swap"],
        "priorities": {"/dev/zram0": 100, "/my swap": -2},
    }
    assert s.changed(["/dev/zram0", "/my swap"]) is None
    swaps.write_text(HEADER + "/dev/zram0\tpartition\t102396\t0\t100\n")  # the file's area went off
    assert s.changed(["/dev/zram0", "/my swap", "/var/swap"]) == "swap areas off: /my swap, /var/swap"
    s.on(["/dev/zram0", "/my swap", "/var/swap"], {"/dev/zram0": 100, "/my swap": -2, "/var/swap": 5})
    assert ran == [["swapon", "/my swap"], ["swapon", "-p", "5", "/var/swap"]]  # the active one left alone
    s.off([])
    s.off(["/dev/zram0"])
    assert ran[-1] == ["swapoff", "/dev/zram0"] and len(ran) == 3
    assert settings.Swap(tmp_path / "none").read() == {}


def test_the_governor_files_in_cpu_order(tmp_path):
    for n in (10, 2, 0):
        d = tmp_path / f"cpu{n}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("ondemand\n")
    (tmp_path / "cpufreq").mkdir()  # not a CPU
    (tmp_path / "cpu3").mkdir()  # a CPU without cpufreq
    assert [f.parent.parent.name for f in settings.governor_files(tmp_path)] == ["cpu0", "cpu2", "cpu10"]


def test_every_swap_area_is_tried_and_the_failed_ones_named_together(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text(HEADER)
    ran = []

    def run(args):
        ran.append(args[-1])
        if args[-1] == "/a":
            raise PirexError("swapon /a: Invalid argument\nmore")

    with pytest.raises(PirexError, match=r"^could not turn swap back on: /a: swapon /a: Invalid argument$"):
        settings.Swap(swaps, run=run).on(["/a", "/b"])
    assert ran == ["/a", "/b"]
