"""The JPA REST service's memory over each run (ICPE'18 Experiment 3, analysis/jpa.py's "memory" table): the
runner samples the service's resident memory (its process tree) and JVM heap into each step's web-memory.csv;
here they are read per minute (RSS mean, heap floor = the lowest heap use, what survives garbage collection) with
their least-squares trend, for a soak long enough to have one (`pirex run jpa-rest --soak 10m`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pirex.analysis import tables as T
from pirex.analysis.bundles import steps
from pirex.analysis.tables import Table
from pirex.core.bundle import read_csv

MEMORY = "web-memory.csv"
TREND_MIN_S = 120  # a trend needs a few minutes: the first one (JIT, pools filling) is left out of it
MB = 1 << 20


@dataclass
class MemoryTrend:
    configuration: str
    run: str
    repetition: int
    seconds: float
    samples: int
    rss_first_mb: float  # mean over the first minute after the warm-up minute
    rss_last_mb: float  # mean over the last minute
    rss_slope_mb_per_min: float | None
    heap_floor_first_mb: float  # the lowest heap use in that minute: what survives garbage collection
    heap_floor_last_mb: float
    heap_floor_slope_mb_per_min: float | None


def _per_minute(rows: list[dict], column: str, reduce) -> list[tuple[float, float]]:
    minutes: dict[int, list[float]] = {}
    for r in rows:
        if r[column] not in ("", None):
            minutes.setdefault(int(float(r["t_s"]) // 60), []).append(float(r[column]) / MB)
    return [(m + 0.5, reduce(v)) for m, v in sorted(minutes.items())]


def _slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares MB per minute over the minutes after the first."""
    pts = points[1:]
    if len(pts) < 2:
        return None
    x, y = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def memory_trend(path: Path, configuration: str = "", run: str = "", repetition: int = 0) -> MemoryTrend | None:
    """RSS (mean per minute) and the heap's floor (minimum per minute) from a step's web-memory.csv."""
    rows = read_csv(path, ("t_s", "rss_bytes", "heap_used_bytes"))
    if not rows:
        return None
    seconds = float(rows[-1]["t_s"])
    rss = _per_minute(rows, "rss_bytes", lambda v: float(np.mean(v)))
    heap = _per_minute(rows, "heap_used_bytes", min)
    if not rss or not heap:
        return None
    first = 1 if len(rss) > 2 else 0
    long_enough = seconds >= TREND_MIN_S
    return MemoryTrend(
        configuration,
        run,
        repetition,
        seconds,
        len(rows),
        rss[first][1],
        rss[-1][1],
        _slope(rss) if long_enough else None,
        heap[min(first, len(heap) - 1)][1],
        heap[-1][1],
        _slope(heap) if long_enough else None,
    )


def memory_trends(bundle_path: Path) -> list[MemoryTrend]:
    out = []
    for step in steps([bundle_path]):
        f = step.dir / MEMORY
        if f.exists() and (t := memory_trend(f, step.variant, step.bundle.run_id, step.repetition)):
            out.append(t)
    return out


def memory_table(trends: Sequence[MemoryTrend], digits: int = 1) -> Table:
    columns = [
        "Configuration",
        "Run",
        "Duration (s)",
        "Samples",
        "RSS first min (MB)",
        "RSS last min (MB)",
        "RSS slope (MB/min)",
        "Heap floor first min (MB)",
        "Heap floor last min (MB)",
        "Heap floor slope (MB/min)",
    ]
    rows = [
        [
            t.configuration,
            f"{t.run}/{t.repetition}",
            T.number(t.seconds, 0),
            str(t.samples),
            T.number(t.rss_first_mb, digits),
            T.number(t.rss_last_mb, digits),
            _trend_text(t.rss_slope_mb_per_min),
            T.number(t.heap_floor_first_mb, digits),
            T.number(t.heap_floor_last_mb, digits),
            _trend_text(t.heap_floor_slope_mb_per_min),
        ]
        for t in trends
    ]
    notes = [
        f"The service's resident memory (its process tree) and JVM heap, sampled every few seconds while the "
        f"driver ran; per minute: RSS mean, heap floor = lowest heap use (what survives garbage collection). "
        f"Slopes by least squares over the minutes after the first, for runs of at least {TREND_MIN_S} s "
        f"(`pirex run jpa-rest --soak 10m`)."
    ]
    return Table("The service's memory over each run", columns, rows, [vars(t) for t in trends], notes, label_columns=2)


def _trend_text(slope: float | None) -> str:
    return "too short" if slope is None else f"{slope:+.2f}"
