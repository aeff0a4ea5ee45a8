"""Machine-wide settings of matrix cases: what a machine without them is told, and that every
setting is put back, also when the step fails."""

import pytest

from pirex.core.experiment_matrix import Case
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
    why = host.unavailable_reason(case(governor="performance"), cpu_root=tmp_path, base=case(governor="ondemand"))
    assert "no cpufreq" in why


def test_a_governor_the_machine_lacks_is_named(cpufreq):
    why = host.unavailable_reason(case(governor="schedutil"), cpu_root=cpufreq, base=case(governor="ondemand"))
    assert "'schedutil' is not offered" in why


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


def test_swaps_are_read_from_proc_swaps(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n/var/swap file\t102396\t0\t-2\n")
    assert host.active_swaps(swaps) == ["/var/swap"]
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n")
    assert host.active_swaps(swaps) == []


def test_swap_priorities_are_kept_for_the_restore(tmp_path):
    swaps = tmp_path / "swaps"
    swaps.write_text(
        "Filename\tType\tSize\tUsed\tPriority\n/var/swap file\t102396\t0\t-2\n/dev/zram0 partition\t1024\t0\t100\n"
    )
    assert host.swap_priorities(swaps) == {"/var/swap": -2, "/dev/zram0": 100}


# --- the fluctuation matrix's base: the paper's ondemand governor and serial collector ---------------------------


def intel_pstate(tmp_path, now="performance"):
    """A stand-in sysfs whose cpufreq offers no ondemand (as intel_pstate), running `now`."""
    for n in (0, 1):
        d = tmp_path / f"cpu{n}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(now + "\n")
        (d / "scaling_available_governors").write_text("performance powersave\n")
    return tmp_path


def fluctuation():
    from pirex.core import experiment

    return experiment.load("moobench").matrices["fluctuation"]


def test_the_base_pins_the_serial_collector_and_parallel_gc_changes_only_that():
    m = fluctuation()
    base, gc = m.resolved("base"), m.resolved("parallel-gc")
    assert base.set["jvm_options"] == "-XX:+UseSerialGC" and base.governor == "ondemand"
    assert gc.set == {**base.set, "jvm_options": "-XX:+UseParallelGC"}
    assert (gc.cpus, gc.ram_workdir_mb, gc.governor, gc.swap) == (
        base.cpus,
        base.ram_workdir_mb,
        base.governor,
        base.swap,
    )
    for name in ("ram-drive", "one-core", "max-clock", "depth-1"):  # every later case keeps the serial collector
        assert m.resolved(name).set["jvm_options"] == "-XX:+UseSerialGC"


def test_the_base_sets_ondemand_where_cpufreq_exists_and_restores_it(tmp_path):
    root = intel_pstate(tmp_path / "x", "performance")
    cpufreq = tmp_path / "pi"
    for n in (0, 1):
        d = cpufreq / f"cpu{n}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("performance\n")
        (d / "scaling_available_governors").write_text("ondemand performance powersave\n")
    m = fluctuation()
    base = m.resolved("base")
    files = host.governor_files(cpufreq)
    if host.governor_problem("ondemand", cpufreq) is None:  # root: the stand-in files are written
        with host.applied(base, cpu_root=cpufreq):
            assert {f.read_text().strip() for f in files} == {"ondemand"}
        assert {f.read_text().strip() for f in files} == {"performance"}
        assert host.notes(base, cpu_root=cpufreq, base=None) == host.Notes()
    # without ondemand on offer the base still runs, with the governor it has, and says so
    assert host.unavailable_reason(base, cpu_root=root, base=None) is None
    (note,) = host.notes(base, cpu_root=root, base=None).lines
    assert "ondemand governor was not set" in note and "ran with performance" in note
    assert not host.notes(base, cpu_root=root, base=None).same_as_base  # it ran, with another governor
    with host.applied(base, cpu_root=root):
        assert {f.read_text().strip() for f in host.governor_files(root)} == {"performance"}


def test_a_case_equal_to_its_base_on_this_machine_is_noted(tmp_path):
    m = fluctuation()
    root = intel_pstate(tmp_path, "performance")
    max_clock, base = m.resolved("max-clock"), host.base_of(m, "max-clock")
    assert base.name == "ram-drive" and base.governor == "ondemand"
    if host.governor_problem("performance", root) is None:  # root: max-clock runs, equal to its base here
        assert host.unavailable_reason(max_clock, cpu_root=root, base=base) is None
        assert host.notes(max_clock, cpu_root=root, base=base) == host.Notes(
            ("same as its base here: the performance governor is in effect for both",), same_as_base=True
        )
    # with ondemand on offer, the case differs from its base: no note
    pi = tmp_path / "pi"
    for n in (0,):
        d = pi / f"cpu{n}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("performance\n")
        (d / "scaling_available_governors").write_text("ondemand performance powersave\n")
    if host.governor_problem("performance", pi) is None:
        assert host.notes(max_clock, cpu_root=pi, base=base) == host.Notes()
    # no cpufreq: the clock cases are skipped, the others run and say the base's governor was not set
    assert "no cpufreq" in host.unavailable_reason(max_clock, cpu_root=tmp_path / "none", base=base)
    ram = m.resolved("ram-drive")
    assert host.unavailable_reason(ram, cpu_root=tmp_path / "none", base=host.base_of(m, "ram-drive")) is None
    # no swap to turn off, or CPUs 0-1 on a two-CPU machine: the case is its base
    empty = tmp_path / "swaps"
    empty.write_text("Filename\tType\tSize\tUsed\tPriority\n")
    nos = m.resolved("no-swap")
    swapless = host.notes(nos, cpu_root=root, base=host.base_of(m, "no-swap"), swaps=empty)
    assert f"{host.SAME_AS_BASE}: no swap area was active on this machine" in swapless.lines
    assert swapless.same_as_base
    two = m.resolved("two-cores")
    every = host.notes(two, cpu_root=root, base=ram, cpus={0, 1})
    assert every.same_as_base and any("every CPU this machine has" in n for n in every.lines)
    assert host.notes(two, cpu_root=root, base=ram, cpus={0, 1, 2, 3}) == host.Notes()
