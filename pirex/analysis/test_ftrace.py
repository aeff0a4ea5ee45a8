"""function_graph traces: parsing inside the fork markers, CSV, folded stacks, Table 6.1, flame graphs."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from pirex.analysis import ftrace

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
    assert v.stack == ("__x64_sys_clone", "kernel_clone", "copy_process", "dup_mm", "dup_mmap", "copy_page_range",
                       "copy_pte_range", "vm_normal_page")  # fmt: skip
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
    assert {c.function for c in calls if c.parent == "__pte_alloc"} == {"__alloc_pages", "__mod_lruvec_page_state",
                                                                      "pmd_install"}  # fmt: skip
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
    assert (r["duration_us"], r["parent"], r["depth"], r["size_mb"], r["irq"]) == ("0.9", "copy_pte_range", "7", "1",
                                                                                  "False")  # fmt: skip


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
    lines = ftrace.folded(single, size_mb=8)
    try:
        import pyinferno  # noqa: F401
    except ImportError:
        if not shutil.which("inferno-flamegraph"):
            pytest.skip("neither pyinferno nor inferno-flamegraph is installed")
    out = ftrace.flamegraph_svg(lines, tmp_path / "fork-8MB.svg", title="fork() 8 MB, x86_64")
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "vm_normal_page" in svg and "copy_pte_range" in svg


def test_a_step_trace_splits_at_the_mode_markers():
    lines = ["# tracer: function_graph", " 0)   | tracing_mark_write: pirex-mode single", "a", "b",
             " 1)   | tracing_mark_write: pirex-mode concurrent", "c"]  # fmt: skip
    assert ftrace.by_mode(lines) == {"unknown": ["# tracer: function_graph"], "single": ["a", "b"],
                                     "concurrent": ["c"]}  # fmt: skip
