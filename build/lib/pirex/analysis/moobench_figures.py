"""MooBench's figures: the response time over the run, mean per 1,000 calls (SSP'17 Figures 1-2, ICPE'18 Figures 1 and
4), and the raw calls' range per point. PNG and SVG; needs matplotlib (the analysis extra).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pirex.analysis.moobench_read import BLOCK
from pirex.analysis.moobench_stats import Result, config_order, label
from pirex.core.errors import PirexError


def figure(results: list[Result], stem: Path, configurations: Sequence[str] | None = None) -> list[Path]:
    """Response time over the run, mean per block of 1,000 calls (averaged over the loops, the loops' range
    shaded), one line per configuration, one panel per device/storage/variant (SSP'17 Figures 1-2, ICPE'18
    Figures 1 and 4). Writes <stem>.png and <stem>.svg; needs matplotlib (the analysis extra)."""
    chosen = [r for r in results if r.series and (configurations is None or r.configuration in configurations)]
    if not chosen:
        raise PirexError("no series to plot: no raw files matched")
    fig, panels = _panels(chosen)
    for ax, panel, in_panel in panels:
        steady = 0
        for r in in_panel:
            k = min(s.size for s in r.series)
            m = np.vstack([s[:k] for s in r.series])
            x = (np.arange(k) + 0.5) * BLOCK
            (line,) = ax.plot(x, m.mean(axis=0), lw=0.9, label=label(r.configuration))
            if m.shape[0] > 1:
                ax.fill_between(x, m.min(axis=0), m.max(axis=0), color=line.get_color(), alpha=0.15, lw=0)
            steady = max(steady, r.steady_from)
        if steady:
            ax.axvline(steady, color="grey", ls="--", lw=0.8)
            ax.annotate(
                "steady state",
                (steady, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -12),
                textcoords="offset points",
                fontsize=8,
                color="grey",
            )
        _label_panel(ax, panel, "calls (per loop)", f"response time (µs, mean per {BLOCK:,} calls)")
    fig.tight_layout()
    return _save(fig, stem)


MAX_POINTS = 4_000  # points per line of the raw figure: beyond, neighbouring blocks merge (min of min, max of max)


def envelope(low: np.ndarray, high: np.ndarray, points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edges in calls, min, max) of the blocks merged `k` at a time so that at most `points` remain: every call's
    value lies within its point's [min, max], so no peak is averaged away. Point i spans edges[i] to edges[i + 1]
    (one more edge than points; the last block may hold fewer than BLOCK calls)."""
    k = max(1, math.ceil(low.size / points))
    starts = np.arange(0, low.size, k)
    edges = np.append(starts, low.size) * BLOCK
    return edges, np.minimum.reduceat(low, starts), np.maximum.reduceat(high, starts)


def raw_figure(results: list[Result], stem: Path, configurations: Sequence[str] | None = None) -> list[Path]:
    """Raw response time per call over one loop (the papers' Figures 1 and 4 plot one of ten runs' raw calls): per
    point the shortest and longest of the calls it stands for (at least 1,000), shaded between and the maxima drawn,
    so every peak stays visible; one panel per device/storage/variant, the loop with the highest peak of each
    configuration. Writes <stem>.png and <stem>.svg; needs matplotlib."""
    chosen = [r for r in results if r.extremes and (configurations is None or r.configuration in configurations)]
    if not chosen:
        raise PirexError("no raw series to plot: no raw files matched")
    fig, panels = _panels(chosen)
    for ax, panel, in_panel in panels:
        for r in in_panel:
            i = int(np.argmax([hi.max() if hi.size else -np.inf for _, hi in r.extremes]))
            edges, lo, hi = envelope(*r.extremes[i])
            line = ax.stairs(
                hi, edges, baseline=None, lw=0.6, label=f"{label(r.configuration)} (loop {i + 1} of {len(r.extremes)})"
            )
            ax.stairs(hi, edges, baseline=lo, fill=True, color=line.get_edgecolor(), alpha=0.25, lw=0)
        _label_panel(ax, panel, "calls", "response time (µs): min to max per point")
    fig.tight_layout()
    return _save(fig, stem)


def _panels(chosen: list[Result]) -> tuple:
    """A figure of one panel per device/storage/variant, stacked, and per panel (axes, panel key, its results in
    configuration order): the layout of figure and raw_figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({r.key[:3] for r in chosen})
    fig, axes = plt.subplots(len(keys), 1, figsize=(9, 3.6 * len(keys)), squeeze=False)
    return fig, [
        (ax, key, sorted((r for r in chosen if r.key[:3] == key), key=lambda r: config_order(r.configuration)))
        for ax, key in zip(axes[:, 0], keys, strict=True)
    ]


def _label_panel(ax, panel: tuple, xlabel: str, ylabel: str) -> None:
    """A panel's log scale, title, axis labels, grid and legend (figure and raw_figure alike)."""
    import matplotlib.ticker

    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_title(", ".join(panel), fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def _save(fig, stem: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
