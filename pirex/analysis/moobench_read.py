"""Reading MooBench raw files: one loop (one JVM) per file, kept as compact arrays.

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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pirex.errors import PirexError

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


def _blocks(d: np.ndarray) -> np.ndarray:
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
            _blocks(durations),
            (n,) if n else (),
            n - n // 2,
            *_extremes(durations),
        )
    steady, series, calls, lows, highs = [], [], [], [], []
    for rows in _split_threads(threads):
        d = durations[rows]
        n = d.size
        steady.append(d[n - n // 2 :])
        series.append(_blocks(d))
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
