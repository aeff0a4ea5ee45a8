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

Two engines give the same arrays: ``polars`` (fast; an optional extra: no armv7 wheels) and ``numpy`` (always there,
slower). read_loop() picks polars when it is installed. Nothing here builds a Python object per call: a file becomes
two int64 arrays while it is read, and only the steady state (int64) and the per-1,000-call block means (float64)
are kept, so the statistics of a configuration need about 8 bytes per steady-state call.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pirex.errors import PirexError

BLOCK = 1_000  # calls per point of the series (the papers' figures aggregate 1,000 raw observations)
ENGINES = ("polars", "numpy")


def has_polars() -> bool:
    return importlib.util.find_spec("polars") is not None


def default_engine() -> str:
    return "polars" if has_polars() else "numpy"


@dataclass(frozen=True)
class Loop:
    """One raw file: one MooBench loop of one configuration.

    steady: int64 durations in ns of the steady-state calls, thread after thread (in order of first appearance),
        each thread's in call order.
    blocks: float64 mean duration in ns per block of BLOCK consecutive calls over the whole loop (warm-up included;
        the last block may be shorter); with several threads, the per-thread series averaged block by block.
    calls: calls per thread in the file (thread order of first appearance).
    steady_from: index of the first steady-state call (of the longest thread), for marking it in figures.
    """

    path: Path
    steady: np.ndarray
    blocks: np.ndarray
    calls: tuple[int, ...]
    steady_from: int

    @property
    def n(self) -> int:
        return int(self.steady.size)


def _has_header(path: Path) -> bool:
    with open(path, "rb") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            fields = line.split(b";")
            if len(fields) < 2:
                raise PirexError(f"{path}: expected MooBench's 'thread;duration_ns;...' lines, found {line[:80]!r}")
            try:
                int(fields[1])
            except ValueError:
                return True
            return False
    return False


def _parse_numpy(path: Path, header: bool) -> tuple[np.ndarray | None, np.ndarray]:
    skip = 1 if header else 0
    kw = dict(delimiter=";", comments="#", skiprows=skip, ndmin=2)
    try:
        a = np.loadtxt(path, usecols=(0, 1), dtype=np.int64, **kw)
        threads, durations = a[:, 0], np.ascontiguousarray(a[:, 1])
    except ValueError:  # thread names that are not integers
        durations = np.loadtxt(path, usecols=(1,), dtype=np.int64, **kw)[:, 0]
        names = np.loadtxt(path, usecols=(0,), dtype=str, **kw)[:, 0]
        _, first, threads = np.unique(names, return_index=True, return_inverse=True)
    if threads.size and (threads == threads[0]).all():
        return None, durations
    return np.asarray(threads), durations


def _one_thread(path: Path, samples: int = 16) -> bool:
    """Whether the file holds one thread only, so that its first column need not be parsed: the
    first line, the last and lines at `samples` places between all name the same thread.
    MooBench writes thread after thread, so a file with several has a different last thread;
    the samples catch files whose threads take turns."""
    size = path.stat().st_size
    names = set()
    with open(path, "rb") as f:
        for i in range(samples + 1):
            f.seek(min(size, size * i // samples))
            chunk = f.read(4096)
            lines = chunk.splitlines()
            lines = lines if i == 0 else lines[1:]  # after a seek the first line is partial
            if i == samples:  # the last line
                f.seek(max(0, size - 4096))
                lines = f.read().splitlines()[-1:]
            for ln in lines:
                if ln.strip() and not ln.startswith(b"#"):
                    names.add(ln.split(b";", 1)[0])
                    break
    return len(names) == 1


def _parse_polars(path: Path, header: bool) -> tuple[np.ndarray | None, np.ndarray]:
    import polars as pl

    data = path.read_bytes()  # read once: searched here, parsed from memory
    # polars parses about twice as fast without a comment prefix; MooBench writes no comments, so
    # the prefix is given only when the file holds a '#' at all (one memchr, unlike a search for "\n#")
    comment = "#" if b"#" in data else None
    if not header and _one_thread(path):  # the common case: only the durations, typed up front
        schema = {"thread": pl.String, "duration": pl.Int64, "heap": pl.String, "gc": pl.String}
        df = pl.read_csv(data, separator=";", has_header=False, columns=[1], schema=schema, comment_prefix=comment)
        return None, df["duration"].to_numpy()
    df = pl.read_csv(data, separator=";", has_header=header, columns=[0, 1], comment_prefix=comment)
    thread, duration = df.columns
    durations = df[duration].cast(pl.Int64, strict=True).to_numpy()
    if df.height == 0 or df[thread].min() == df[thread].max():
        return None, durations
    return df[thread].cast(pl.String).rank("dense").to_numpy(), durations


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


def read_loop(path: Path, engine: str | None = None) -> Loop:
    """One raw file as a Loop (see the module docstring for the steady-state rule)."""
    path = Path(path)
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise PirexError(f"unknown reader engine {engine!r}: one of {', '.join(ENGINES)}")
    header = _has_header(path)
    threads, durations = (_parse_polars if engine == "polars" else _parse_numpy)(path, header)
    durations = np.asarray(durations, dtype=np.int64)
    if threads is None:
        n = durations.size
        return Loop(path, durations[n - n // 2 :].copy(), _blocks(durations), (n,) if n else (), n - n // 2)
    steady, series, calls = [], [], []
    for rows in _split_threads(threads):
        d = durations[rows]
        n = d.size
        steady.append(d[n - n // 2 :])
        series.append(_blocks(d))
        calls.append(n)
    shortest = min(s.size for s in series)
    blocks = np.mean([s[:shortest] for s in series], axis=0)
    longest = max(calls)
    return Loop(path, np.concatenate(steady), blocks, tuple(calls), longest - longest // 2)
