"""ftrace function_graph traces of the fork() workload (2024 thesis, 4.4 and 5.2; Table 6.1, Figures 6.9-6.13):
the calls inside the clone syscall between forkbench's trace markers, as CSV rows (function, duration,
parent, depth from the syscall entry, timestamp), folded stacks for flame graphs, the per-depth
difference between concurrent and single execution (Table 6.1), and the flame graph SVG.

Tracer setup (pirex/runner/tracing.py, as the thesis's scripts, 4.4.3):

    echo 0 > tracing_on; echo nop > current_tracer; echo > trace
    echo '__x64_sys_clone' > set_graph_function         # arm64: __arm64_sys_clone; kernel_clone may be added
    echo 1 > options/funcgraph-abstime                   # absolute timestamp on every line
    echo 1 > options/funcgraph-proc                      # comm-pid on every line (the markers name the pid)
    echo 51200 > buffer_size_kb                          # per CPU, the thesis's size (no lost events)
    echo function_graph > current_tracer; echo 1 > tracing_on
    forkbench ... --trace-marker /sys/kernel/tracing/trace_marker; cat trace > trace.txt

The parser reads the `trace` file with or without funcgraph-abstime, -cpu, -proc, -overhead, -duration
and -tail (the thesis used -tail: `} /* func */`); nesting comes from the braces, per task, so CPUs may
interleave. forkbench writes `pirex-fork-start pid=P process=I size_mb=S repetition=R cpu=C` before each
fork and `pirex-fork-end ...` after it; a call belongs to a window when it starts on that pid between them.
Functions run in interrupt context (between `==========>` and `<==========`) are kept with irq=True."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pirex.errors import PirexError

START, END = "pirex-fork-start", "pirex-fork-end"
MODE = re.compile(r"pirex-mode (\S+)")  # written by pirex-fork before each mode's forkbench run


def by_mode(lines: Iterable[str]) -> dict[str, list[str]]:
    """A step's trace (every mode one after the other) split at the mode markers."""
    sections: dict[str, list[str]] = defaultdict(list)
    mode = "unknown"
    for line in lines:
        if m := MODE.search(line):
            mode = m.group(1)
            continue
        sections[mode].append(line)
    return dict(sections)


# --- parsing -------------------------------------------------------------------------------------------------------


@dataclass
class Call:
    function: str
    duration_us: float | None  # None when the trace ended inside the call
    parent: str  # "" for the syscall entry
    depth: int  # 0 = the traced entry (__x64_sys_clone / __arm64_sys_clone)
    timestamp: float | None  # seconds, when the call completed (funcgraph-abstime), else None
    start: float | None
    pid: int | None
    cpu: int | None
    size_mb: int | None  # from the marker of the window
    repetition: int | None
    process: int | None
    irq: bool
    stack: tuple[str, ...] = field(repr=False, default=())  # the functions from depth 0 to this one
    children_us: float = field(repr=False, default=0.0)

    @property
    def self_us(self) -> float | None:
        return None if self.duration_us is None else max(self.duration_us - self.children_us, 0.0)


CSV_FIELDS = ("function", "duration_us", "parent", "depth", "timestamp", "self_us", "size_mb", "repetition",
              "process", "pid", "cpu", "irq")  # fmt: skip

_TS = re.compile(r"\s*(\d+\.\d+)\s*\|")
_CPU = re.compile(r"\s*(\d+)\)")
_PROC = re.compile(r"\s*(\S+)-(\d+)\s+\|")
_DUR = re.compile(r"\s*([$@*#!+])?\s*(\d+\.\d+)\s*us\s*\|")
_BLANK = re.compile(r"\s*\|")
_IRQ = re.compile(r"\s*(==========>|<==========)\s*\|")
_MARK = re.compile(r"(pirex-fork-(?:start|end))\b(.*)")
_FIELD = re.compile(r"(\w+)=(-?\d+)")
_OPEN = re.compile(r"^(\S+?)\(\)\s*\{\s*$")
_LEAF = re.compile(r"^(\S+?)\(\);\s*$")
_CLOSE = re.compile(r"^\}\s*(?:/\*\s*(\S+?)(?:\(\))?\s*\*/)?\s*$")


@dataclass
class _Line:
    ts: float | None
    cpu: int | None
    pid: int | None
    duration: float | None
    body: str


def _split(line: str) -> _Line | None:
    rest, ts, cpu, pid, dur = line, None, None, None, None
    if m := _TS.match(rest):
        ts, rest = float(m.group(1)), rest[m.end() :]
    if m := _CPU.match(rest):
        cpu, rest = int(m.group(1)), rest[m.end() :]
    if m := _PROC.match(rest):
        pid, rest = int(m.group(2)), rest[m.end() :]
    if m := _IRQ.match(rest):  # interrupt entry/exit arrows stand in the duration column
        return _Line(ts, cpu, pid, None, m.group(1))
    if m := _DUR.match(rest):
        dur, rest = float(m.group(2)), rest[m.end() :]
    elif m := _BLANK.match(rest):
        rest = rest[m.end() :]
    else:
        return None
    return _Line(ts, cpu, pid, dur, rest.strip())


@dataclass
class _Task:
    stack: list[Call] = field(default_factory=list)
    window: dict | None = None
    irq: int = 0


def parse(lines: Iterable[str]) -> list[Call]:
    """The calls inside the marker windows, in order of completion; each call's depth, parent and stack."""
    tasks: dict[object, _Task] = defaultdict(_Task)
    out: list[Call] = []
    for raw in lines:
        if raw.startswith("#") or not raw.strip():
            continue
        ln = _split(raw.rstrip("\n"))
        if ln is None:  # context-switch banners (------, =>), [LOST n EVENTS]
            continue
        key = ln.pid if ln.pid is not None else ln.cpu
        t = tasks[key]
        body = ln.body
        if body.startswith("/*") and (m := _MARK.search(body)):
            fields = {k: int(v) for k, v in _FIELD.findall(m.group(2))}
            t.window = fields if m.group(1) == START else None
            continue
        if body == "==========>":
            t.irq += 1
            continue
        if body == "<==========":
            t.irq = max(t.irq - 1, 0)
            continue
        if m := _OPEN.match(body):
            if t.window is None and not t.stack:
                continue
            t.stack.append(_new(m.group(1), t, ln))
            continue
        if m := _LEAF.match(body):
            if t.window is None and not t.stack:
                continue
            c = _new(m.group(1), t, ln)
            c.duration_us = ln.duration
            if ln.ts is not None and ln.duration is not None:
                c.timestamp = ln.ts + ln.duration / 1e6
            _finish(c, t, out)
            continue
        if _CLOSE.match(body):
            if not t.stack:
                continue  # a return whose entry was before the window (or the trace's start)
            c = t.stack.pop()
            c.duration_us = ln.duration
            c.timestamp = ln.ts
            _finish(c, t, out)
    for t in tasks.values():  # calls the trace cut off
        while t.stack:
            _finish(t.stack.pop(), t, out)
    return out


def _new(function: str, t: _Task, ln: _Line) -> Call:
    parent = t.stack[-1] if t.stack else None
    w = t.window or (parent and {"size_mb": parent.size_mb, "repetition": parent.repetition,
                                 "process": parent.process}) or {}  # fmt: skip
    return Call(function, None, parent.function if parent else "", len(t.stack), None, ln.ts, ln.pid, ln.cpu,
                w.get("size_mb"), w.get("repetition"), w.get("process"), t.irq > 0,
                (parent.stack if parent else ()) + (function,))  # fmt: skip


def _finish(c: Call, t: _Task, out: list[Call]) -> None:
    if t.stack and c.duration_us is not None:
        t.stack[-1].children_us += c.duration_us
    out.append(c)


def read(path: Path) -> list[Call]:
    with open(path, errors="replace") as f:
        return parse(f)


def write_csv(calls: Sequence[Call], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for c in calls:
            d = asdict(c)
            d["self_us"] = c.self_us
            w.writerow(["" if d[k] is None else d[k] for k in CSV_FIELDS])


# --- folded stacks and flame graphs --------------------------------------------------------------------------------


def folded(calls: Iterable[Call], size_mb: int | None = None, include_irq: bool = True) -> list[str]:
    """Brendan Gregg's folded format, `a;b;c <value>`, value = self time in ns summed over identical stacks (so that
    a frame's width is its total time). Restricted to one mapped size if given."""
    acc: dict[str, float] = defaultdict(float)
    for c in calls:
        if c.self_us is None or (size_mb is not None and c.size_mb != size_mb) or (c.irq and not include_irq):
            continue
        acc[";".join(c.stack)] += c.self_us * 1000
    return [f"{s} {round(v)}" for s, v in sorted(acc.items()) if round(v) > 0]


def flamegraph_svg(folded_lines: Sequence[str], out: Path, title: str = "fork()") -> Path:
    """A flame graph SVG drawn by inferno (Rust port of Brendan Gregg's FlameGraph): in-process through
    pyinferno (PyPI, the analysis extra) or the inferno-flamegraph program (cargo install inferno)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not folded_lines:
        raise PirexError("no stacks to draw: the trace has no calls inside the fork markers")
    try:
        from pyinferno.pyinferno import flamegraph_from_lines
    except ImportError:
        flamegraph_from_lines = None
    if flamegraph_from_lines is not None:
        out.write_text(flamegraph_from_lines(list(folded_lines), title))
        return out
    exe = shutil.which("inferno-flamegraph")
    if exe is None:
        raise PirexError("no flame graph tool: pip install pyinferno==0.2.6 (the analysis extra), or "
                         "cargo install inferno --version 0.12.8 --locked for inferno-flamegraph")  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".folded", delete=False) as f:
        f.write("\n".join(folded_lines) + "\n")
    try:
        r = subprocess.run([exe, "--title", title, "--countname", "ns", f.name], capture_output=True, text=True,
                           timeout=300)  # fmt: skip
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise PirexError(f"inferno-flamegraph failed: {r.stderr.strip()}")
    out.write_text(r.stdout)
    return out


# --- Table 6.1: concurrent minus single, per depth -----------------------------------------------------------------


@dataclass(frozen=True)
class DepthDiff:
    function: str
    depth: int
    by_size: dict  # size_mb -> concurrent minus single, in µs (None where either side lacks the function)


def per_fork_totals(calls: Iterable[Call], depth: int, include_irq: bool = True) -> dict[tuple[str, int], float]:
    """(function, size_mb) -> mean over forks (repetition x process windows) of the function's total duration in
    one fork, for calls at `depth`."""
    sums: dict[tuple[str, int], float] = defaultdict(float)
    forks: dict[int, set] = defaultdict(set)
    for c in calls:
        if c.size_mb is None:
            continue
        forks[c.size_mb].add((c.repetition, c.process, c.pid))
        if c.depth != depth or c.duration_us is None or (c.irq and not include_irq):
            continue
        sums[(c.function, c.size_mb)] += c.duration_us
    return {k: v / len(forks[k[1]]) for k, v in sums.items()}


def depth_table(single: Iterable[Call], concurrent: Iterable[Call], depth: int,
                include_irq: bool = True) -> list[DepthDiff]:  # fmt: skip
    """The thesis's Table 6.1 for one depth: for each function called at that depth, the mean time it takes per
    fork in concurrent execution minus in single execution, per mapped size; largest difference first."""
    s, c = per_fork_totals(single, depth, include_irq), per_fork_totals(concurrent, depth, include_irq)
    sizes = sorted({k[1] for k in s} | {k[1] for k in c})
    functions = sorted({k[0] for k in s} | {k[0] for k in c})
    rows = []
    for f in functions:
        by = {z: (c[(f, z)] - s[(f, z)]) if (f, z) in c and (f, z) in s else None for z in sizes}
        rows.append(DepthDiff(f, depth, by))

    def order(r: DepthDiff) -> tuple:
        known = [v for v in r.by_size.values() if v is not None]
        return (-len(known), -max(known, default=float("-inf")), r.function)

    return sorted(rows, key=order)


def depth_markdown(rows: Sequence[DepthDiff]) -> str:
    sizes = sorted({z for r in rows for z in r.by_size})
    out = ["| Function | " + " | ".join(f"{z}_MB" for z in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for r in rows:
        cells = ["-" if r.by_size.get(z) is None else f"{r.by_size[z]:.3f}" for z in sizes]
        out.append(f"| {r.function} | " + " | ".join(cells) + " |")
    return "\n".join(out)
