"""Machine-wide settings of matrix cases: what a machine without them is told, and that every
setting is put back, also when the step fails."""

import pytest

from pirex.experiment import Case
from pirex.runner import host


def case(**kw) -> Case:
    return Case("c", None, "c", None, {}, **kw)


@pytest.fixture
def cpufreq(tmp_path):
    for n in (0, 1):
        d = tmp_path / f"cpu{n}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("ondemand\n")
        (d / "scaling_available_governors").write_text("ondemand performance powersave\n")
    return tmp_path


def test_a_machine_without_cpufreq_skips_clock_cases(tmp_path):
    why = host.unavailable_reason(case(governor="performance"), cpu_root=tmp_path)
    assert "no cpufreq" in why


def test_a_governor_the_machine_lacks_is_named(cpufreq):
    assert "'schedutil' is not offered" in host.unavailable_reason(case(governor="schedutil"), cpu_root=cpufreq)


def test_cpus_beyond_the_machine_are_named():
    why = host.unavailable_reason(case(cpus="0-4095"))
    assert "pins to CPUs 0-4095" in why
    assert host.unavailable_reason(case(cpus=str(min(host.online_cpus())))) is None


def test_the_governor_is_set_for_the_step_and_restored_even_when_it_fails(cpufreq):
    files = host.governor_files(cpufreq)
    with pytest.raises(RuntimeError), host.applied(case(governor="powersave"), cpu_root=cpufreq):
        assert {f.read_text().strip() for f in files} == {"powersave"}
        raise RuntimeError("the step failed")
    assert {f.read_text().strip() for f in files} == {"ondemand"}


def test_cpu_lists():
    assert host.parse_cpus("0") == {0}
    assert host.parse_cpus("0-2,5") == {0, 1, 2, 5}


def test_swaps_are_read_from_proc_swaps(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n/var/swap file\t102396\t0\t-2\n")
    assert host.active_swaps(swaps) == ["/var/swap"]
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n")
    assert host.active_swaps(swaps) == []


def test_swap_priorities_are_kept_for_the_restore(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n"
                     "/var/swap file\t102396\t0\t-2\n/dev/zram0 partition\t1024\t0\t100\n")  # fmt: skip
    assert host.swap_priorities(swaps) == {"/var/swap": -2, "/dev/zram0": 100}
