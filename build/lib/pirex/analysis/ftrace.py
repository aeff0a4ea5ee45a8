"""ftrace function_graph traces of the fork() workload (2024 thesis, 4.4 and 5.2; Table 6.1, Figures 6.9-6.13):
the calls inside the clone syscall between forkbench's trace markers, as CSV rows (function, duration,
parent, depth from the syscall entry, timestamp), folded stacks for flame graphs, the per-depth
difference between concurrent and single execution (Table 6.1, at the thesis's depth: TABLE_DEPTH), the
per-depth profiles of the stack graphs (Figures 6.10-6.12), and the flame graph SVG (drawn in pure Python).

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
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from pirex.core.errors import PirexError

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


CSV_FIELDS = (
    "function",
    "duration_us",
    "parent",
    "depth",
    "timestamp",
    "self_us",
    "size_mb",
    "repetition",
    "process",
    "pid",
    "cpu",
    "irq",
)

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
    w = (
        t.window
        or (parent and {"size_mb": parent.size_mb, "repetition": parent.repetition, "process": parent.process})
        or {}
    )
    return Call(
        function,
        None,
        parent.function if parent else "",
        len(t.stack),
        None,
        ln.ts,
        ln.pid,
        ln.cpu,
        w.get("size_mb"),
        w.get("repetition"),
        w.get("process"),
        t.irq > 0,
        (parent.stack if parent else ()) + (function,),
    )


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


FRAME_H = 16  # px per stack level
FONT_PX = 11
CHAR_W = 0.6 * FONT_PX  # average glyph width of a proportional sans-serif font, for fitting names
WIDTH = 1200


@dataclass
class _Frame:
    name: str
    value: float = 0.0  # total: self + children
    children: dict[str, _Frame] = field(default_factory=dict)


def _tree(folded_lines: Iterable[str]) -> _Frame:
    root = _Frame("all")
    for line in folded_lines:
        stack, _, value = line.rpartition(" ")
        v = float(value)
        root.value += v
        node = root
        for name in stack.split(";"):
            node = node.children.setdefault(name, _Frame(name))
            node.value += v
    return root


def _colour(name: str) -> str:
    """Brendan Gregg's warm palette, stable per name (a hash, not random): the same function has the same
    colour in every graph."""
    h = 0
    for ch in name:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return f"rgb({205 + h % 50},{(h >> 8) % 180 + 50},{(h >> 16) % 55})"


def flamegraph_svg(folded_lines: Sequence[str], out: Path, title: str = "fork()", unit: str = "ns") -> Path:
    """A flame graph (Brendan Gregg's layout) as a self-contained SVG, drawn here in pure Python so that it works
    on every platform without a Rust toolchain: width = time, the stack grows upwards from the root, a frame's
    name is written where it fits (cut with "..") and every frame has a tooltip (<title>) with its time and
    share. Frames narrower than 0.1 px are left out, as FlameGraph does."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not folded_lines:
        raise PirexError("no stacks to draw: the trace has no calls inside the fork markers")
    root = _tree(folded_lines)
    if root.value <= 0:
        raise PirexError("no stacks to draw: every stack has zero time")

    def depth(f: _Frame) -> int:
        return 1 + max((depth(c) for c in f.children.values()), default=0)

    levels = depth(root)
    pad_top, pad_bottom, side = 44, 24, 10
    height = pad_top + levels * FRAME_H + pad_bottom
    scale = (WIDTH - 2 * side) / root.value
    rects: list[str] = []

    def draw(f: _Frame, x: float, level: int) -> None:
        w = f.value * scale
        if w < 0.1:
            return
        y = height - pad_bottom - (level + 1) * FRAME_H
        share = 100 * f.value / root.value
        tip = escape(f"{f.name} ({f.value:,.0f} {unit}, {share:.2f}%)")
        fits = int((w - 6) // CHAR_W)
        label = f.name if fits >= len(f.name) else (f.name[: fits - 2] + ".." if fits >= 3 else "")
        text = f'<text x="{x + 3:.1f}" y="{y + FRAME_H - 4:.1f}">{escape(label)}</text>' if label else ""
        rects.append(
            f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{FRAME_H - 1}" rx="2" fill="{_colour(f.name)}"/>{text}</g>'
        )
        cx = x
        for c in sorted(f.children.values(), key=lambda c: c.name):  # alphabetical, as FlameGraph
            draw(c, cx, level + 1)
            cx += c.value * scale

    draw(root, side, 0)
    svg = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="Verdana, sans-serif" font-size="{FONT_PX}">',
        f'<rect width="{WIDTH}" height="{height}" fill="#f8f8f0"/>',
        f'<text x="{WIDTH / 2}" y="20" font-size="15" text-anchor="middle">{escape(title)}</text>',
        f'<text x="{WIDTH / 2}" y="36" fill="#555" text-anchor="middle">width = time ({root.value:,.0f} {unit} in '
        "all), stacks grow upwards; hover a frame for its time</text>",
        *rects,
        "</svg>",
    ]
    out.write_text("\n".join(svg) + "\n")
    return out


# --- Table 6.1 and the per-depth stack graphs ------------------------------------------------------------------

# Where the thesis counts from: depth 0 is the traced syscall entry (__arm64_sys_clone / __x64_sys_clone), as the
# function_graph indentation under set_graph_function shows it and as 5.2.1 says ("depth from the sys_clone call").
# Its numbers then fall where the kernel's call chain puts them: kernel_clone 1, copy_process 2, dup_mm 3,
# dup_mmap 4, copy_page_range 5, copy_pte_range 6 (6.2.1: "the bulk ... starting at the stack depth 6"),
# vm_normal_page and __pte_alloc 7 (Table 6.1, Figure 6.11), __pte_alloc's children 8 (Figure 6.12).
TABLE_DEPTH = 7
FIGURE_DEPTHS = ((6, None), (7, None), (8, "__pte_alloc"))  # Figures 6.10, 6.11, 6.12 (depth, parent)
# Table 6.1's two subtypes: the thesis traced the migration one (chapter 5); no migration is shown beside it.
SUBTYPES = {"migration": ("single-migrate", "concurrent-migrate"), "no migration": ("single", "concurrent")}


@dataclass(frozen=True)
class DepthDiff:
    function: str
    depth: int
    by_size: dict  # size_mb -> concurrent minus single, in µs (None where either side lacks the function)


def forks_per_size(calls: Iterable[Call]) -> dict[int, int]:
    """How many forks (repetition x process windows) each mapped size has in these calls."""
    forks: dict[int, set] = defaultdict(set)
    for c in calls:
        if c.size_mb is not None:
            forks[c.size_mb].add((c.repetition, c.process, c.pid))
    return {z: len(f) for z, f in forks.items()}


def per_fork_totals(
    calls: Iterable[Call], depth: int, include_irq: bool = True, parent: str | None = None
) -> dict[tuple[str, int], float]:
    """(function, size_mb) -> mean over forks (repetition x process windows) of the function's total duration in
    one fork, for calls at `depth` (and under `parent`, if given)."""
    calls = list(calls)
    forks = forks_per_size(calls)
    sums: dict[tuple[str, int], float] = defaultdict(float)
    for c in calls:
        if c.size_mb is None or c.depth != depth or c.duration_us is None or (c.irq and not include_irq):
            continue
        if parent is not None and c.parent != parent:
            continue
        sums[(c.function, c.size_mb)] += c.duration_us
    return {k: v / forks[k[1]] for k, v in sums.items()}


def depth_table(
    single: Iterable[Call], concurrent: Iterable[Call], depth: int = TABLE_DEPTH, include_irq: bool = True
) -> list[DepthDiff]:
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


def table_6_1(calls_by_mode: dict[str, list[Call]], depth: int = TABLE_DEPTH) -> dict[str, list[DepthDiff]]:
    """Table 6.1 per subtype whose two modes were traced: concurrent-migrate minus single-migrate (the thesis's),
    concurrent minus single."""
    return {
        name: depth_table(calls_by_mode[single], calls_by_mode[concurrent], depth)
        for name, (single, concurrent) in SUBTYPES.items()
        if calls_by_mode.get(single) and calls_by_mode.get(concurrent)
    }


def depth_markdown(rows: Sequence[DepthDiff]) -> str:
    sizes = sorted({z for r in rows for z in r.by_size})
    out = ["| Function | " + " | ".join(f"{z}_MB" for z in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for r in rows:
        cells = ["-" if r.by_size.get(z) is None else f"{r.by_size[z]:.3f}" for z in sizes]
        out.append(f"| {r.function} | " + " | ".join(cells) + " |")
    return "\n".join(out)


@dataclass(frozen=True)
class DepthProfile:
    """One function at one depth (Figures 6.10-6.12): per mapped size, its mean time per fork and how many times
    it is called per fork."""

    function: str
    depth: int
    parent: str | None
    us_per_fork: dict  # size_mb -> µs
    calls_per_fork: dict  # size_mb -> calls


def depth_profile(
    calls: Iterable[Call], depth: int, parent: str | None = None, min_ratio: float = 2.0
) -> list[DepthProfile]:
    """The functions at `depth` (under `parent`) whose time per fork depends on the mapped size, as the thesis's
    stack graphs filtered them (5.2.2.2: functions with little deviation across sizes are left out): kept when
    the largest per-fork time over sizes is at least `min_ratio` times the smallest, or when the function is
    missing at some sizes. Interrupts are left out (6.3: only the syscall's own work). Slowest first."""
    calls = [c for c in calls if not c.irq]
    forks = forks_per_size(calls)
    times = per_fork_totals(calls, depth, include_irq=False, parent=parent)
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for c in calls:
        if c.depth == depth and c.size_mb is not None and (parent is None or c.parent == parent):
            counts[(c.function, c.size_mb)] += 1
    out = []
    for f in sorted({k[0] for k in times}):
        us = {z: times[(f, z)] for z in sorted(forks) if (f, z) in times}
        low, high = min(us.values()), max(us.values())
        if len(us) == len(forks) and (low <= 0 or high / low < min_ratio):
            continue
        out.append(DepthProfile(f, depth, parent, us, {z: counts[(f, z)] / forks[z] for z in us}))
    return sorted(out, key=lambda p: (-max(p.us_per_fork.values()), p.function))
