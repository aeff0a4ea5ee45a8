"""ftrace around each step of an experiment that declares `tracing` (fork: function_graph on the
clone syscall entry). Needs root and tracefs with the tracer compiled in; where either is
missing, unavailable_reason() says which, and the run goes on untraced with that reason in
the bundle. The tracer is set for the step and reset on every exit path; a tracefs that pirex
mounted is unmounted after the run."""

from __future__ import annotations

import contextlib
import logging
import platform
import shutil
from pathlib import Path

from pirex.core import capabilities, proc
from pirex.core.errors import PirexError
from pirex.runner import leftovers

log = logging.getLogger(__name__)

TRACEFS = Path("/sys/kernel/tracing")
OPTIONS = ("funcgraph-abstime", "funcgraph-proc")  # absolute timestamps and the task on every line
BUFFER_KB = "51200"  # per CPU, the thesis's size: no lost events over a step


def unavailable_reason(tracer: str, functions: list[str], root: Path = TRACEFS) -> str | None:
    if not capabilities.is_root():
        return "ftrace needs root: run pirex as root for --trace"
    if not (root / "available_tracers").exists():
        return f"no tracefs at {root} (mount -t tracefs nodev {root}; the kernel needs CONFIG_FTRACE)"
    tracers = capabilities.offered_tracers(root)
    if tracer not in tracers:
        return (
            f"this kernel offers the tracers {' '.join(tracers)}, not {tracer} (it needs CONFIG_FUNCTION_GRAPH_TRACER)"
        )
    if not functions:
        return f"the experiment names no function to trace on {platform.machine()}"
    offered = root / "available_filter_functions"
    if offered.exists():
        known = {ln.split()[0] for ln in offered.read_text().splitlines() if ln.strip()}
        if missing := [f for f in functions if f not in known]:
            return f"this kernel cannot trace {', '.join(missing)} (not in available_filter_functions)"
    return None


@contextlib.contextmanager
def mounted(root: Path = TRACEFS):
    """tracefs at root for the length of a run; unmounted after only when pirex mounted it."""
    if (root / "available_tracers").exists() or not capabilities.is_root() or not root.is_dir():
        yield
        return
    r = proc.run(["mount", "-t", "tracefs", "nodev", root], timeout=30, check=False)
    try:
        yield
    finally:
        if r.ok:
            proc.run(["umount", root], timeout=30, check=False)


def _set(root: Path, name: str, value: str) -> None:
    (root / name).write_text(value + "\n")


def _get(root: Path, name: str) -> str | None:
    """A setting as it can be written back (current_tracer, tracing_on), or None where absent.
    set_graph_function reads "#### all functions enabled ####" when empty."""
    path = root / name
    if not path.exists():
        return None
    text = path.read_text().strip()
    return "" if text.startswith("#") else " ".join(text.split())


@contextlib.contextmanager
def traced(tracer: str, functions: list[str], out: Path, root: Path = TRACEFS):
    """The tracer on `functions` while the step runs; its trace copied to `out`; every setting
    put back as it was before (another user's tracer, tracing_on and filter included)."""
    try:
        saved = {n: _get(root, n) for n in ("buffer_size_kb", "tracing_on", "current_tracer", "set_graph_function")}
        options = {o: (root / "options" / o).read_text().strip() for o in OPTIONS if (root / "options" / o).exists()}
    except OSError as e:
        raise PirexError(f"cannot read the ftrace settings under {root}: {e}") from None
    leftovers.note("tracefs", root=str(root), saved={**saved, **{f"options/{o}": v for o, v in options.items()}})
    try:
        try:
            if saved["buffer_size_kb"] is not None:
                _set(root, "buffer_size_kb", BUFFER_KB)
            _set(root, "tracing_on", "0")
            _set(root, "current_tracer", "nop")
            _set(root, "trace", "")
            _set(root, "set_graph_function", " ".join(functions))
            for o in options:
                _set(root / "options", o, "1")
            _set(root, "current_tracer", tracer)
            _set(root, "tracing_on", "1")
        except OSError as e:
            raise PirexError(f"cannot set up ftrace under {root}: {e}") from None
        yield root / "trace_marker"
    finally:
        with contextlib.suppress(OSError):
            _set(root, "tracing_on", "0")
        with contextlib.suppress(OSError), open(root / "trace", "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        restore = [("current_tracer", "nop"), ("set_graph_function", saved["set_graph_function"]), ("trace", "")]
        restore += [("options/" + o, v) for o, v in options.items()]
        restore += [
            ("buffer_size_kb", saved["buffer_size_kb"]),
            ("current_tracer", saved["current_tracer"]),
            ("tracing_on", saved["tracing_on"]),
        ]
        for name, value in restore:
            if value is not None:
                with contextlib.suppress(OSError):
                    _set(root, name, value)
