"""ftrace set-up around a step, on a stand-in tracefs: what is set while the step runs, that
everything is reset and the trace kept even when the step fails, and the reasons given where
tracing cannot run."""

import os

import pytest

from pirex.runner import tracing


@pytest.fixture
def tracefs(tmp_path):
    root = tmp_path / "tracing"
    (root / "options").mkdir(parents=True)
    for name, value in {
        "available_tracers": "function_graph function nop",
        "current_tracer": "nop",
        "tracing_on": "1",
        "set_graph_function": "",
        "trace_marker": "",
    }.items():
        (root / name).write_text(value + "\n")
    (root / "trace").write_text("# tracer: nop\n")
    (root / "buffer_size_kb").write_text("1408\n")
    (root / "options" / "funcgraph-abstime").write_text("0\n")
    (root / "options" / "funcgraph-proc").write_text("0\n")
    return root


def read(root, name):
    return (root / name).read_text().strip()


def test_the_tracer_runs_for_the_step_and_everything_is_reset_after_a_failure(tracefs, tmp_path):
    out = tmp_path / "trace.txt"
    with pytest.raises(RuntimeError), tracing.traced("function_graph", ["__x64_sys_clone"], out, root=tracefs) as m:
        assert m == tracefs / "trace_marker"
        assert read(tracefs, "current_tracer") == "function_graph" and read(tracefs, "tracing_on") == "1"
        assert read(tracefs, "set_graph_function") == "__x64_sys_clone"
        assert read(tracefs, "options/funcgraph-abstime") == "1" and read(tracefs, "buffer_size_kb") == "51200"
        (tracefs / "trace").write_text(" 0)   1.000 us    |  __x64_sys_clone();\n")
        raise RuntimeError("the step failed")
    assert "__x64_sys_clone" in out.read_text(), "the trace is kept"
    assert read(tracefs, "current_tracer") == "nop" and read(tracefs, "tracing_on") == "1", "as before the step"
    assert read(tracefs, "set_graph_function") == "" and read(tracefs, "options/funcgraph-abstime") == "0"
    assert read(tracefs, "buffer_size_kb") == "1408"


@pytest.mark.skipif(os.geteuid() != 0, reason="the reasons past the root check")
def test_reasons(tracefs, tmp_path):
    assert tracing.unavailable_reason("function_graph", ["f"], root=tracefs) is None
    (tracefs / "available_tracers").write_text("blk function nop\n")
    assert "offers the tracers blk function nop, not function_graph" in tracing.unavailable_reason(
        "function_graph", ["f"], root=tracefs
    )
    (tracefs / "available_tracers").write_text("function_graph nop\n")
    (tracefs / "available_filter_functions").write_text("__x64_sys_fork\nkernel_clone [kernel]\n")
    assert "cannot trace __x64_sys_clone" in tracing.unavailable_reason(
        "function_graph", ["__x64_sys_clone"], root=tracefs
    )
    assert tracing.unavailable_reason("function_graph", ["kernel_clone"], root=tracefs) is None
    assert "no tracefs" in tracing.unavailable_reason("function_graph", ["f"], root=tmp_path / "none")


def test_another_users_tracer_and_filter_are_put_back(tracefs, tmp_path):
    (tracefs / "current_tracer").write_text("function\n")
    (tracefs / "set_graph_function").write_text("do_exit\n")
    with tracing.traced("function_graph", ["__x64_sys_clone"], tmp_path / "t.txt", root=tracefs):
        assert read(tracefs, "set_graph_function") == "__x64_sys_clone"
    assert read(tracefs, "current_tracer") == "function" and read(tracefs, "set_graph_function") == "do_exit"
    assert read(tracefs, "tracing_on") == "1"


def test_an_unwritable_tracefs_is_a_clear_error(tmp_path):
    from pirex.core.errors import PirexError

    with pytest.raises(PirexError, match="cannot set up ftrace"):
        with tracing.traced("function_graph", ["f"], tmp_path / "t.txt", root=tmp_path / "absent-file-as-dir"):
            pass
