"""fork bundles: tidy rows, the thesis's average/min/max table, notes on what was not measured, figures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pirex.analysis import fork
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError

DATA = Path(__file__).parent / "testdata" / "fork"
PI = {
    "hostname": "pi-a",
    "pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"},
    "storage": {"kind": "sd", "model": "SC64G", "fstype": "ext4"},
}
SERVER = {
    "hostname": "c220g1",
    "cpu": {"model": "Intel(R) Xeon(R) CPU E5-2660 v2 @ 2.20GHz"},
    "storage": {"kind": "ssd", "fstype": "ext4"},
}


# the Pi's single-mode cpu-clock row at 8 MB (6 forks: 2 steps x 3), as the counters table shows it
PI_8MB_CPU_CLOCK = ["cpu-clock", "Raspberry Pi 4 Model B Rev 1.4 (pi-a)", "native", "single", "8", "6"]
PI_8MB_CPU_CLOCK += ["82,010", "82,000", "82,020"]

PARAMS = {"fork_repetitions": 3}  # as testdata/fork's files hold


def make_bundle(
    tmp_path: Path, source: str, machine: dict, variants=("native", "docker"), reps: int = 2, params: dict | None = None
) -> Path:
    plan = [(v, r) for r in range(reps) for v in variants]
    b = Bundle.create(
        tmp_path / source,
        "fork",
        "quick",
        {**PARAMS, **(params or {})},
        list(variants),
        plan,
        {},
        {"version": "t", "commit": "c"},
    )
    b.write_machine(before=machine, after=machine)
    for v, r in plan:
        with b.step(v, r) as d:
            for mode in (DATA / source).iterdir():
                if mode.is_dir():
                    shutil.copytree(mode, d / mode.name)
    b.finish()
    return b.path


@pytest.fixture
def pi(tmp_path):
    return make_bundle(tmp_path, "pi4", PI)


@pytest.fixture
def server(tmp_path):
    return make_bundle(tmp_path, "server", SERVER)


def test_rows_are_tidy_and_skip_unsupported_counters(pi):
    rows = fork.rows(pi)
    assert {r.mode for r in rows} == set(fork.MODES)
    assert {r.device for r in rows} == {"Raspberry Pi 4 Model B Rev 1.4 (pi-a)"}
    counters = {r.counter for r in rows}
    assert "LLC-load-misses" not in counters and "LLC-loads" not in counters  # unsupported: no row, never 0
    assert {"wall_ns", "cpu-clock", "cycles", "branch-misses"} <= counters
    # 2 variants x 2 steps x (1 + 1 + 4 + 2 processes) x 3 sizes x 3 repetitions, per counter
    assert sum(r.counter == "cpu-clock" for r in rows) == 2 * 2 * 8 * 3 * 3
    assert {r.setup for r in rows} == {"3 forks per size and mode in a step"}


def test_table_mean_min_max(pi, server):
    lines = fork.table(fork.rows(pi) + fork.rows(server))
    got = {(ln.device.split()[0], ln.variant, ln.mode, ln.size_mb, ln.counter): ln for ln in lines}
    ln = got[("Raspberry", "native", "single", 8, "cpu-clock")]
    # 50000 + 4000 * 8 + 10 r, r = 0..2, in 2 steps
    assert (ln.n, ln.mean, ln.min, ln.max, ln.unit) == (6, 82010.0, 82000.0, 82020.0, "ns")
    ln = got[("Intel(R)", "docker", "single-migrate", 64, "cpu-clock")]
    base = int(0.6 * 1.2 * (50000 + 4000 * 64))
    assert ln.mean == pytest.approx(base + 10) and ln.min == base and ln.max == base + 20
    # concurrent: every process pooled by default, or one as the thesis's figures
    assert got[("Raspberry", "native", "concurrent", 1, "page-faults")].n == 2 * 3 * 4
    one = {(ln.device, ln.mode, ln.size_mb, ln.counter): ln.n for ln in fork.table(fork.rows(pi), process=0)}
    assert one[("Raspberry Pi 4 Model B Rev 1.4 (pi-a)", "concurrent", 1, "page-faults")] == 2 * 3
    # the thesis's counters come first
    assert lines[0].counter == "wall_ns" and lines[-1].counter == "cpu-migrations"


def test_notes(pi):
    notes = fork.notes(pi)
    subjects = {(n.variant, n.mode, n.subject) for n in notes}
    assert ("native", "single", "LLC-load-misses") in subjects and ("docker", "concurrent", "size 1024 MB") in subjects
    llc = next(n for n in notes if n.subject == "LLC-load-misses")
    assert llc.reason.startswith("perf_event_open: ENOENT")
    assert any(n.subject == "size 1024 MB" and n.reason.startswith("needs 4096 MB") for n in notes)


def test_real_vm_output_hardware_unsupported_and_mode_skipped(tmp_path):
    b = make_bundle(tmp_path, "vm-x86_64", {"hostname": "vm", "cpu": {"model": "QEMU vCPU"}}, ("native",), 1)
    rows = fork.rows(b)
    assert {r.counter for r in rows} == {
        "wall_ns",
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    }
    assert {r.mode for r in rows} == {"single", "single-migrate", "concurrent"}
    assert all(r.kernel_included for r in rows)
    notes = {(n.mode, n.subject): n.reason for n in fork.notes(b)}
    assert "needs 4 CPUs" in notes[("concurrent-migrate", "mode")]
    assert "ENOENT" in notes[("single", "cycles")]


def test_not_a_fork_bundle(tmp_path):
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["native"], [("native", 0)], {}, {"version": "t", "commit": "c"})
    b.write_machine(before=PI, after=PI)
    b.finish()
    with pytest.raises(PirexError, match="not fork"):
        fork.rows(b.path)


def test_plot_every_counter_with_notes(pi, server, tmp_path):
    pytest.importorskip("matplotlib")
    paths = fork.plot([pi, server], tmp_path / "fig", counters=["wall_ns", "cpu-clock", "LLC-load-misses"])
    names = {p.name for p in paths}
    assert names == {f"fork-{c}.{e}" for c in ("wall_ns", "cpu-clock", "LLC-load-misses") for e in ("png", "svg")}
    assert all(p.stat().st_size > 0 for p in paths)
    svg = (tmp_path / "fig" / "fork-LLC-load-misses.svg").read_text()
    assert "No line for" in svg  # the Pi's unsupported LL events are named, not drawn as 0


# --- the common analysis interface ---------------------------------------------------------------------------------

FTRACE = Path(__file__).parent / "testdata" / "ftrace"


def test_run_values_one_per_step_mode_size_and_counter(pi):
    values = fork.run_values([pi])
    wall = [v for v in values if v.metric == "wall_ns/single/8"]
    assert sorted((v.variant, v.repetition) for v in wall) == [(v, r) for v in ("docker", "native") for r in (0, 1)]
    v = wall[0]
    assert v.experiment == "fork" and v.device == "Raspberry Pi 4 Model B Rev 1.4 (pi-a)" and v.unit == "ns"
    assert len(v.inner) == 3 and v.value == pytest.approx(sum(v.inner) / 3)  # the step's mean over its forks
    clock = next(v for v in values if v.metric == "cpu-clock/single/8" and (v.variant, v.repetition) == ("native", 0))
    assert clock.inner == (82000.0, 82010.0, 82020.0) and clock.value == 82010.0
    concurrent = next(v for v in values if v.metric == "cpu-clock/concurrent/1")
    assert len(concurrent.inner) == 3 * 4  # every process's forks
    assert not any(v.metric.startswith("LLC-load-misses/") for v in values)  # unsupported: no value, never 0
    with pytest.raises(PirexError, match="no view"):
        fork.run_values([pi], view="fluctuation")


def test_tables_counters_with_the_core_count_note(pi, tmp_path):
    (named,) = fork.tables([pi])
    assert named.name == "counters" and fork.VIEWS == {}
    t = named.table
    assert t.columns[:5] == ["Counter", "Device", "Variant", "Mode", "Size (MB)"]
    row = PI_8MB_CPU_CLOCK
    assert row + ["ns"] in t.rows
    notes = "\n".join(t.notes)
    assert "concurrent: processes: 4 processes on cores 0,1,2,3" in notes
    assert "LLC-load-misses: perf_event_open: ENOENT" in notes
    # fewer cores than the thesis's four: pirex-fork's note reaches the table
    two = make_bundle(tmp_path / "two", "pi4", PI, ("native",), 1)
    (Bundle.open(two).step_dir("native", 0) / "concurrent" / "cores-note.txt").write_text(
        "cores 0,1,2,3 asked (thesis: the first four); this machine lets us use 2, so one process runs on each of 0,1\n"
    )
    assert "concurrent: cores: cores 0,1,2,3 asked" in "\n".join(fork.tables([two])[0].table.notes)


def test_two_fork_counts_are_two_setups(pi, tmp_path):
    more = make_bundle(tmp_path / "more", "pi4", PI, ("native",), 1, {"fork_repetitions": 100})
    named = {nt.name: nt.table for nt in fork.tables([pi, more])}
    assert list(named) == ["counters-setup1", "counters-setup2"]
    assert named["counters-setup1"].title.endswith("; 100 forks per size and mode in a step")
    assert named["counters-setup2"].title.endswith("; 3 forks per size and mode in a step")
    row = PI_8MB_CPU_CLOCK
    assert row + ["ns"] in named["counters-setup2"].rows  # the 3-fork bundle's alone
    assert ["cpu-clock", "Raspberry Pi 4 Model B Rev 1.4 (pi-a)", "native", "single", "8", "3"] in [
        r[:6] for r in named["counters-setup1"].rows
    ]


@pytest.fixture
def traced(tmp_path):
    """A Pi bundle whose step traced the migration subtype (the thesis's), from the handmade thesis-shaped trace."""
    b = make_bundle(tmp_path, "pi4", PI, ("native",), 1)
    shutil.copy(FTRACE / "arm64-thesis.txt", Bundle.open(b).step_dir("native", 0) / "trace.txt")
    return b


def test_tables_with_traces_give_table_6_1_at_depth_7(traced):
    named = {nt.name: nt.table for nt in fork.tables([traced])}
    name = "table6-1-migration-native-Raspberry-Pi-4-Model-B-Rev-1-4--pi-a-"
    assert list(named) == ["counters", name]
    t = named[name]
    assert "concurrent-migrate minus single-migrate" in t.title and "stack depth 7" in t.title
    assert t.columns == ["Function", "1_MB", "8_MB"]
    assert ["vm_normal_page", "2.800", "11.200"] in t.rows
    assert "__arm64_sys_clone" in t.notes[0] and "1 MB 1 single / 2 concurrent" in t.notes[1]
    assert {r["depth"] for r in t.records} == {7}


def test_figures_flame_graph_per_size_and_stack_graphs(traced, tmp_path):
    """What figures() adds to the counter figures (test_plot_every_counter_with_notes) when there are traces."""
    pytest.importorskip("matplotlib")
    calls = fork.trace_calls([traced])
    assert sorted(m for _, _, m in calls) == ["concurrent-migrate", "single-migrate"]  # not the header's "unknown"
    paths = fork.flame_graphs(calls, tmp_path / "fig" / "flamegraphs")
    paths += fork.depth_figures(calls, tmp_path / "fig" / "stacks")
    names = sorted(p.relative_to(tmp_path / "fig").as_posix() for p in paths)
    dev = "Raspberry-Pi-4-Model-B-Rev-1-4--pi-a--native"
    assert [n for n in names if n.startswith("flamegraphs/")] == [
        f"flamegraphs/flamegraph-{dev}-{m}-{s}MB.svg" for m in ("concurrent-migrate", "single-migrate") for s in (1, 8)
    ]
    stacks = {n for n in names if n.startswith("stacks/")}
    for mode in ("single-migrate", "concurrent-migrate"):
        for stem in ("stack-depth6", "stack-depth7", "stack-depth8-__pte_alloc"):
            assert f"stacks/{stem}-{dev}-{mode}.svg" in stacks
    svg = (tmp_path / "fig" / "stacks" / f"stack-depth7-{dev}-single-migrate.svg").read_text()
    assert "vm_normal_page" in svg and "__pte_alloc" not in svg  # only what depends on the size


def test_raw_events_are_named_in_the_notes(tmp_path):
    """The manifest holds the codes `raw_events: auto` resolved to; the notes name Arm's events, or say why none."""
    pi = {**PI, "cpu": {"model": None, "core": "Cortex-A72", "cpu_parts": ["0xd08"]}}
    b = make_bundle(tmp_path, "pi4", pi, ("native",), 1, {"raw_events": "LLC-loads=0x50,LLC-load-misses=0x52"})
    text = "\n".join(fork.tables([b])[0].table.notes)
    assert "raw event 2: LLC-load-misses = raw event 0x52 (L2D_CACHE_REFILL_RD: L2 data refills, reads" in text
    server = make_bundle(tmp_path, "server", SERVER, ("native",), 1, {"raw_events": "none"})
    (note,) = [n for n in fork.notes(server) if n.subject == "raw events"]
    assert note.reason.startswith("no raw PMU events for Intel(R) Xeon(R) CPU E5-2660 v2")
