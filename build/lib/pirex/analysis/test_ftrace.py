"""function_graph traces: parsing inside the fork markers, CSV, folded stacks, Table 6.1, flame graphs."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pirex.analysis import ftrace
from pirex.core.errors import PirexError

DATA = Path(__file__).parent / "testdata" / "ftrace"


@pytest.fixture(scope="module")
def single():
    return ftrace.read(DATA / "x86_64-single.txt")


@pytest.fixture(scope="module")
def concurrent():
    return ftrace.read(DATA / "x86_64-concurrent.txt")


def test_calls_inside_the_markers_only(single):
    # the bash clone before the first marker is not part of any window
    assert all(c.pid == 30717 for c in single)
    roots = [c for c in single if c.depth == 0]
    assert {c.function for c in roots} == {"__x64_sys_clone"}
    assert [(c.size_mb, c.repetition) for c in roots] == [(1, 0), (1, 1), (8, 0), (8, 1)]
    root = roots[0]
    assert root.duration_us == pytest.approx(21.7) and root.parent == "" and root.cpu == 1
    assert root.timestamp == pytest.approx(2215.401082)


def test_depth_parent_stack_and_self_time(single):
    vnp = [c for c in single if c.function == "vm_normal_page"]
    assert len(vnp) == 2 * 4 + 2 * 16
    v = vnp[0]
    assert (v.depth, v.parent, v.duration_us) == (7, "copy_pte_range", 0.9)
    assert v.stack == (
        "__x64_sys_clone",
        "kernel_clone",
        "copy_process",
        "dup_mm",
        "dup_mmap",
        "copy_page_range",
        "copy_pte_range",
        "vm_normal_page",
    )
    assert v.timestamp == pytest.approx(v.start + 0.9e-6)  # a leaf completes at its start plus its duration
    pte = next(c for c in single if c.function == "__pte_alloc")
    assert pte.depth == 7 and pte.self_us == pytest.approx(3.5 - 2.1 - 0.6)
    assert {c.function for c in single if c.parent == "__pte_alloc"} == {"pte_alloc_one", "pmd_install"}


def test_interrupts_are_marked(single):
    irq = [c for c in single if c.irq]
    assert {c.function for c in irq} == {"generic_handle_domain_irq", "handle_irq_event"}
    assert all(c.size_mb == 8 for c in irq)
    g = next(c for c in irq if c.function == "generic_handle_domain_irq")
    assert (g.depth, g.parent) == (7, "copy_pte_range")
    assert not any(c.irq for c in single if c.function == "vm_normal_page")


def test_arm64_without_proc_or_tail():
    calls = ftrace.read(DATA / "arm64-single.txt")
    assert calls and all(c.pid is None and c.cpu == 1 for c in calls)
    assert {c.function for c in calls if c.depth == 0} == {"__arm64_sys_clone"}
    assert {c.function for c in calls if c.parent == "__pte_alloc"} == {
        "__alloc_pages",
        "__mod_lruvec_page_state",
        "pmd_install",
    }
    v = next(c for c in calls if c.function == "vm_normal_page")
    assert v.depth == 7 and v.size_mb == 1 and v.process == 0


def test_concurrent_interleaved_cpus_keep_their_own_stacks(concurrent):
    assert {(c.pid, c.process, c.cpu) for c in concurrent} == {(30801, 0, 0), (30802, 1, 1)}
    for pid in (30801, 30802):
        roots = [c for c in concurrent if c.pid == pid and c.depth == 0]
        assert len(roots) == 4 and all(c.function == "__x64_sys_clone" for c in roots)
    assert all(c.depth == c.stack.index(c.function) for c in concurrent if c.function == "vm_normal_page")


def test_csv(single, tmp_path):
    ftrace.write_csv(single, tmp_path / "calls.csv")
    with open(tmp_path / "calls.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:5] == ["function", "duration_us", "parent", "depth", "timestamp"]
    assert len(rows) == len(single)
    r = next(r for r in rows if r["function"] == "vm_normal_page")
    assert (r["duration_us"], r["parent"], r["depth"], r["size_mb"], r["irq"]) == (
        "0.9",
        "copy_pte_range",
        "7",
        "1",
        "False",
    )


def test_folded_stacks(single):
    lines = ftrace.folded(single, size_mb=1)
    stacks = dict(ln.rsplit(" ", 1) for ln in lines)
    key = "__x64_sys_clone;kernel_clone;copy_process;dup_mm;dup_mmap;copy_page_range;copy_pte_range;vm_normal_page"
    assert int(stacks[key]) == 2 * 4 * 900  # two forks of 1 MB, 4 calls of 0.9 us each, in ns
    # self times add up to the roots' total time
    roots = sum(c.duration_us for c in single if c.depth == 0 and c.size_mb == 1) * 1000
    assert sum(int(v) for v in stacks.values()) == pytest.approx(roots, abs=len(stacks))
    assert not any("handle_irq_event" in ln for ln in ftrace.folded(single, include_irq=False))


def test_table_6_1_concurrent_minus_single(single, concurrent):
    rows = {r.function: r for r in ftrace.depth_table(single, concurrent, depth=7)}
    v = rows["vm_normal_page"]
    assert v.by_size[1] == pytest.approx(4 * (1.7 - 0.9)) and v.by_size[8] == pytest.approx(16 * (1.7 - 0.9))
    assert rows["__pte_alloc"].by_size[1] == pytest.approx(0.0, abs=1e-9)
    # interrupts at 8 MB only: no difference to show at 1 MB
    assert rows["generic_handle_domain_irq"].by_size[1] is None and rows["generic_handle_domain_irq"].by_size[8]
    md = ftrace.depth_markdown(list(rows.values()))
    assert md.splitlines()[0] == "| Function | 1_MB | 8_MB |"
    assert "| vm_normal_page | 3.200 | 12.800 |" in md and "| generic_handle_domain_irq | - |" in md


def test_flamegraph_svg(single, tmp_path):
    """Pure Python, on every platform: width = time, root at the bottom, names where they fit, a tooltip on all."""
    lines = ftrace.folded(single, size_mb=8)
    out = ftrace.flamegraph_svg(lines, tmp_path / "fork-8MB.svg", title="fork() 8 MB, x86_64")
    svg = ET.parse(out).getroot()
    ns = {"s": "http://www.w3.org/2000/svg"}
    frames = {}
    for g in svg.iterfind("s:g", ns):
        tip, rect = g.find("s:title", ns).text, g.find("s:rect", ns)
        text = g.find("s:text", ns)
        frames[tip.split(" (")[0]] = (
            float(rect.get("x")),
            float(rect.get("y")),
            float(rect.get("width")),
            text.text if text is not None else None,
        )
    root, clone = frames["all"], frames["__x64_sys_clone"]
    assert clone[2] == pytest.approx(root[2], rel=1e-3)  # the only root: as wide as everything
    assert root[1] > clone[1] > frames["kernel_clone"][1] > frames["copy_pte_range"][1]  # bottom-up
    # widths are proportional to time: vm_normal_page's share of copy_pte_range
    stacks = dict(ln.rsplit(" ", 1) for ln in lines)
    vnp = sum(int(v) for k, v in stacks.items() if k.endswith(";vm_normal_page"))
    cpr = sum(int(v) for k, v in stacks.items() if ";copy_pte_range" in k)
    assert frames["vm_normal_page"][2] / frames["copy_pte_range"][2] == pytest.approx(vnp / cpr, rel=0.02)
    assert frames["copy_pte_range"][3] == "copy_pte_range"  # a wide frame shows its whole name
    for _x, _y, w, label in frames.values():  # a label never overflows its frame
        assert label is None or len(label) * ftrace.CHAR_W <= w
    with pytest.raises(PirexError, match="no stacks"):
        ftrace.flamegraph_svg([], tmp_path / "empty.svg")


# --- the thesis's depths -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def thesis():
    """A handmade trace shaped like the thesis's (4.4.3): graph function __arm64_sys_clone, funcgraph-abstime and
    -tail, no -proc, a Pi 4 kernel's call chain; single-migrate, then concurrent-migrate on CPUs 1 and 3."""
    sections = ftrace.by_mode((DATA / "arm64-thesis.txt").read_text().splitlines())
    return {mode: ftrace.parse(lines) for mode, lines in sections.items() if mode != "unknown"}


def test_the_thesis_counts_depth_from_the_syscall_entry(thesis):
    calls = thesis["single-migrate"]
    depth = {c.function: c.depth for c in calls}
    assert depth["__arm64_sys_clone"] == 0
    assert depth["copy_pte_range"] == 6  # 6.2.1: the bulk of the work starts at depth 6
    assert depth["vm_normal_page"] == ftrace.TABLE_DEPTH == 7  # Table 6.1 and Figure 6.11
    assert depth["__pte_alloc"] == 7 and depth["__alloc_pages"] == 8  # Figure 6.12: depth 8 under __pte_alloc
    assert depth["generic_handle_domain_irq"] == 7  # Table 6.1's interrupt row, under gic_handle_irq at 6
    assert all(c.irq for c in calls if c.function in ("gic_handle_irq", "generic_handle_domain_irq"))
    assert {c.cpu for c in thesis["concurrent-migrate"]} == {1, 3}


def test_table_6_1_at_depth_7_for_the_migration_subtype(thesis):
    tables = ftrace.table_6_1(thesis)
    assert list(tables) == ["migration"]  # the fixture traced the thesis's subtype only
    rows = {r.function: r for r in tables["migration"]}
    assert all(r.depth == 7 for r in rows.values())
    assert "kernel_clone" not in rows and "copy_pte_range" not in rows
    # 4 and 16 calls per fork at 1 and 8 MB, 1.9 instead of 1.2 µs each
    assert rows["vm_normal_page"].by_size == pytest.approx({1: 4 * 0.7, 8: 16 * 0.7})
    assert rows["__pte_alloc"].by_size == pytest.approx({1: 0.0, 8: 0.0})
    # at 8 MB one interrupt in the single fork, one in two concurrent forks: half as much per fork
    assert rows["generic_handle_domain_irq"].by_size[1] is None
    assert rows["generic_handle_domain_irq"].by_size[8] == pytest.approx(3.5 / 2 - 3.5)
    both = ftrace.table_6_1({**thesis, "single": thesis["single-migrate"], "concurrent": thesis["single-migrate"]})
    assert list(both) == ["migration", "no migration"]
    assert all(v == 0 for r in both["no migration"] for v in r.by_size.values() if v is not None)


def test_depth_profiles_keep_what_depends_on_the_size(thesis):
    calls = thesis["single-migrate"]
    d7 = {p.function: p for p in ftrace.depth_profile(calls, 7)}
    assert set(d7) == {"vm_normal_page"}  # __pte_alloc and __rcu_read_lock do not vary; interrupts are left out
    assert d7["vm_normal_page"].calls_per_fork == {1: 4, 8: 16}
    assert d7["vm_normal_page"].us_per_fork == pytest.approx({1: 4 * 1.2, 8: 16 * 1.2})
    d8 = ftrace.depth_profile(calls, 8, parent="__pte_alloc", min_ratio=1.0)
    assert {p.function for p in d8} == {"__alloc_pages", "__mod_lruvec_page_state", "pmd_install"}
    assert all(p.calls_per_fork == {1: 1, 8: 1} for p in d8)


def test_a_step_trace_splits_at_the_mode_markers():
    lines = [
        "# tracer: function_graph",
        " 0)   | tracing_mark_write: pirex-mode single",
        "a",
        "b",
        " 1)   | tracing_mark_write: pirex-mode concurrent",
        "c",
    ]
    assert ftrace.by_mode(lines) == {"unknown": ["# tracer: function_graph"], "single": ["a", "b"], "concurrent": ["c"]}
