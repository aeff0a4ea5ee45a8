"""Reading MooBench bundles: raw files (one loop, one JVM, per file) kept as compact arrays, grouped by the setup
the steps ran at (their resolved parameters, the manifest's plan), and what the runs recorded (run.json).

MooBench's harness (tools/SuT-java/.../BenchmarkMain.java, BenchmarkingThreadNano.print) writes one line per
top-level call, thread after thread, each thread's calls in call order, with no header::

    <thread name>;<duration ns>;<used heap bytes>;<gc count delta>

A header line (``thread;duration_ns;used_heap;gc_count_delta``) is accepted too: a first line whose second field is
not an integer is taken as one. Lines starting with ``#`` are skipped. Only the first two columns are read.

Steady state (the papers' "second half of the runs", MooBench's ``results.skip = results.count / 2``): per file and
per thread, a thread with n calls keeps its last ``n // 2`` calls and drops the first ``n - n // 2`` as warm-up. For
an odd n the middle call counts as warm-up, as in MooBench's analysis/getStatistics.sh (``tail -n $((n / 2))``);
a thread with a single call contributes nothing.

Two engines give the same arrays: ``numba`` (fast: one compiled pass over the file's bytes; the optional ``fast``
extra, no armv7 wheels) and ``numpy`` (always there, slower). read_loop() picks numba when it is installed. The
compiled scanner takes MooBench's own output, integer thread ids and integer durations; a file it does not take
(thread names, a header, anything unexpected) is read by the numpy engine instead, which also gives the errors.
Nothing here builds a Python object per call: a file becomes two int64 arrays while it is read, and only the
steady state (int64) and the per-1,000-call block means (float64) are kept, so the statistics of a configuration
need about 8 bytes per steady-state call.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from pirex.analysis.bundles import open_bundle
from pirex.analysis.tidy import device_of, storage_of
from pirex.core.bundle import Bundle, Step
from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord, RecordLike

BLOCK = 1_000  # calls per point of the series (the papers' figures aggregate 1,000 raw observations)
ENGINES = ("numba", "numpy")


def has_numba() -> bool:
    return importlib.util.find_spec("numba") is not None


NUMBA_FROM = 64 << 20  # raw bytes: below, numba's fixed cost (about 0.3 s to load its cached code) outweighs its gain


def default_engine(size: int | None = None) -> str:
    """numba when it is installed and there are at least NUMBA_FROM bytes (or an unknown amount) to read."""
    return "numba" if has_numba() and (size is None or size >= NUMBA_FROM) else "numpy"


@dataclass(frozen=True)
class Loop:
    """One raw file: one MooBench loop of one configuration.

    steady: int64 durations in ns of the steady-state calls, thread after thread (in order of first appearance),
        each thread's in call order.
    blocks: float64 mean duration in ns per block of BLOCK consecutive calls over the whole loop (warm-up included;
        the last block may be shorter); with several threads, the per-thread series averaged block by block.
    calls: calls per thread in the file (thread order of first appearance).
    steady_from: index of the first steady-state call (of the longest thread), for marking it in figures.
    block_min, block_max: int64 shortest and longest call in ns of each block (over every thread), so that a
        figure of the raw calls drawn one point per block still shows every peak (ICPE'18 Figures 1 and 4).
    """

    path: Path
    steady: np.ndarray
    blocks: np.ndarray
    calls: tuple[int, ...]
    steady_from: int
    block_min: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    block_max: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

    @property
    def n(self) -> int:
        return int(self.steady.size)


def _header_end(path: Path) -> int:
    """The offset just past the header line, 0 when the file has none."""
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            offset += len(raw)
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            fields = line.split(b";")
            if len(fields) < 2:
                raise PirexError(f"{path}: expected MooBench's 'thread;duration_ns;...' lines, found {line[:80]!r}")
            try:
                int(fields[1])
            except ValueError:
                return offset
            return 0
    return 0


def _parse_numpy(path: Path, header: int) -> tuple[np.ndarray, np.ndarray]:
    skip = 1 if header else 0
    kw = dict(delimiter=";", comments="#", skiprows=skip, ndmin=2)
    try:
        a = np.loadtxt(path, usecols=(0, 1), dtype=np.int64, **kw)
        threads, durations = a[:, 0], np.ascontiguousarray(a[:, 1])
    except ValueError:  # thread names that are not integers
        try:
            durations = np.loadtxt(path, usecols=(1,), dtype=np.int64, **kw)[:, 0]
        except ValueError as e:
            raise PirexError(f"{path}: not MooBench's 'thread;duration_ns;...' layout: {e}") from None
        names = np.loadtxt(path, usecols=(0,), dtype=str, **kw)[:, 0]
        _, first, threads = np.unique(names, return_index=True, return_inverse=True)
    return np.asarray(threads), durations


def _parse_numba(path: Path, header: int) -> tuple[np.ndarray, np.ndarray]:
    from pirex.analysis.moobench_scan import scan

    # not the simple form: the numpy engine reads it, or names what is wrong with it
    return scan(path, header) or _parse_numpy(path, header)


def _split_threads(threads: np.ndarray) -> list[np.ndarray]:
    """Row indices of each thread, threads in order of first appearance, rows in file order."""
    _, first, codes, counts = np.unique(threads, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(counts)))
    per_code = [order[bounds[i] : bounds[i + 1]] for i in range(counts.size)]
    return [per_code[i] for i in np.argsort(first)]


def block_means(d: np.ndarray) -> np.ndarray:
    """The mean of each block of BLOCK consecutive calls (the last block may be shorter)."""
    if d.size == 0:
        return np.zeros(0)
    starts = np.arange(0, d.size, BLOCK)
    sums = np.add.reduceat(d, starts)
    sizes = np.diff(np.append(starts, d.size))
    return sums / sizes


def _extremes(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if d.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.arange(0, d.size, BLOCK)
    return np.minimum.reduceat(d, starts), np.maximum.reduceat(d, starts)


def read_loop(path: Path, engine: str | None = None) -> Loop:
    """One raw file as a Loop (see the module docstring for the steady-state rule)."""
    path = Path(path)
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise PirexError(f"unknown reader engine {engine!r}: one of {', '.join(ENGINES)}")
    header = _header_end(path)
    threads, durations = (_parse_numba if engine == "numba" else _parse_numpy)(path, header)
    durations = np.asarray(durations, dtype=np.int64)
    if threads.size == 0 or (threads == threads[0]).all():  # one thread: no split needed
        n = durations.size
        return Loop(
            path,
            durations[n - n // 2 :].copy(),
            block_means(durations),
            (n,) if n else (),
            n - n // 2,
            *_extremes(durations),
        )
    steady, series, calls, lows, highs = [], [], [], [], []
    for rows in _split_threads(threads):
        d = durations[rows]
        n = d.size
        steady.append(d[n - n // 2 :])
        series.append(block_means(d))
        calls.append(n)
        lo, hi = _extremes(d)
        lows.append(lo)
        highs.append(hi)
    shortest = min(s.size for s in series)
    blocks = np.mean([s[:shortest] for s in series], axis=0)
    longest = max(calls)
    low = np.min([x[:shortest] for x in lows], axis=0)
    high = np.max([x[:shortest] for x in highs], axis=0)
    return Loop(path, np.concatenate(steady), blocks, tuple(calls), longest - longest // 2, low, high)


# --- bundles: the raw files of each setup, and what the runs recorded --------------------------------------------

MOOBENCH = "moobench"
# The parameters that change what a loop measures (experiments/moobench/experiment.yaml): loops that ran with
# different values are never pooled. Not among them: the configurations (the tables' rows) and the pause between them.
SETUP = ("calls", "recursion_depth", "method_time", "threads", "heap_mb", "jvm_options", "settle")


@dataclass(frozen=True, order=True)
class Setup:
    """What a loop measured: its calls and recursion depth, and the other SETUP parameters that are not at the
    defaults experiment.yaml declares, as (name, value) pairs (so a run at the defaults reads as before)."""

    calls: int
    recursion_depth: int
    others: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        extra = "".join(f", {name.replace('_', ' ')} {value}" for name, value in self.others)
        return f"{self.calls:,} calls at recursion depth {self.recursion_depth}{extra}"


@cache
def _defaults() -> dict[str, str]:
    from pirex.core import experiment

    return {n: str(p.default) for n, p in experiment.load(MOOBENCH).declared.items() if p.has_default}


def setup_of(param) -> Setup:
    """The setup read through `param` (Step.param, Bundle.param: a PirexError naming the bundle when it lacks one, or
    a profile's dict.__getitem__)."""
    values = {name: param(name) for name in SETUP}
    defaults = _defaults()
    others = tuple((n, str(values[n])) for n in SETUP[2:] if str(values[n]) != defaults.get(n))
    return Setup(int(values["calls"]), int(values["recursion_depth"]), others)


def profile_setup(profile: str, matrix: str | None = None) -> Setup:
    """The setup a profile of experiments/moobench runs (with a matrix's own parameters at that profile)."""
    from pirex.core import experiment

    exp = experiment.load(MOOBENCH)
    params = exp.requested(profile, matrix)
    return setup_of(params.__getitem__)


Key = tuple[str, str, str, str]  # device, storage, variant, configuration


def device_label(machine: RecordLike) -> str:
    """The Pi's model and host name: the papers compare devices of one model (D1, D2, D3)."""
    dev = device_of(machine)
    host = MachineRecord.of(machine).hostname
    return f"{dev} ({host})" if host and host not in dev else dev


def raw_files(step: Step) -> list[Path]:
    """A step's raw files, one per configuration (raw-<configuration>.csv)."""
    return sorted(step.dir.glob("raw-*.csv"))


def configuration(raw: Path) -> str:
    return raw.name[len("raw-") : -len(".csv")]


@dataclass
class Group:
    """The raw files of one setup, per (device, storage, variant, configuration), and the bundles they come from."""

    setup: Setup
    bundles: list[Path] = field(default_factory=list)
    files: dict[Key, list[Path]] = field(default_factory=lambda: defaultdict(list))


def groups(paths: Iterable[Path], per_run: bool = False) -> list[Group]:
    """The raw files of the bundles' completed steps, one Group per setup, in setup order. A step's setup is the one
    it ran with (the manifest's plan); per_run: its run's, for a matrix whose cases change parameters by design (a
    case is a row of its table, not a setup of its own)."""
    out: dict[Setup, Group] = {}
    for path in paths:
        b = open_bundle(path, MOOBENCH)
        machine = b.machine_before()
        device, storage = device_label(machine), storage_of(machine)
        run = setup_of(b.param) if per_run else None
        for step in b.steps():
            setup = run or setup_of(step.param)
            g = out.setdefault(setup, Group(setup))
            if Path(path) not in g.bundles:
                g.bundles.append(Path(path))
            for f in raw_files(step):
                g.files[(device, storage, step.variant, configuration(f))].append(f)
    return [Group(k, out[k].bundles, dict(out[k].files)) for k in sorted(out)]


def matrix_of(path: Path) -> str | None:
    """The matrix a bundle ran (run.json), None for a bundle of variants."""
    return Bundle.open(Path(path)).matrix


def same_as_base(paths: Sequence[Path]) -> set[str]:
    """The matrix cases whose run recorded that they ran exactly as their base on that machine."""
    return {case for p in paths for case in Bundle.open(Path(p)).run_info().same_as_base}


def case_setups(b: Bundle) -> dict[str, Setup]:
    """Per variant (matrix case), the setup its first completed step ran with (the manifest's plan)."""
    out: dict[str, Setup] = {}
    for step in b.steps():
        out.setdefault(step.variant, setup_of(step.param))
    return out


def run_notes(paths: Sequence[Path]) -> list[str]:
    """What the runs recorded: cases skipped here and why, the runner's notes on cases, each case's setup as run."""
    out = []
    for p in paths:
        b = Bundle.open(Path(p))
        info = b.run_info()
        for case, why in info.skipped_variants.items():
            out.append(f"Skipped in {p.name}: {case}: {why}.")
        for case, notes in info.notes.items():
            out.append(f"Note of {p.name}: {case}: {'; '.join(notes)}.")
        if info.matrix:
            setups = "; ".join(f"{case}: {s.text}" for case, s in case_setups(b).items())
            out.append(f"Setups as run ({p.name}, the manifest's plan): {setups}.")
    return out
