"""The analysis of an experiment without a paper table of its own (experiment.yaml names no
`analysis` module): per variant, a summary of its declared outputs. An output of format `csv`
(a header line, one row per measurement) gives one metric per numeric column; a run is one
step (a repetition of a variant) and its value the mean of that column over the step's rows."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pirex import experiment
from pirex.analysis import stats
from pirex.analysis.bundles import completed_steps, open_bundle
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.tables import Table
from pirex.analysis.tidy import device_of
from pirex.errors import PirexError

VIEWS: dict[str, str] = {}
LEVEL = 0.95
READABLE = ("csv",)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _csv_means(path: Path) -> dict[str, float]:
    """The mean of every column whose values are all numbers."""
    try:
        with open(path, newline="", errors="replace") as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error) as e:
        raise PirexError(f"{path}: not a readable CSV file ({e}); `pirex verify` checks the bundle") from None
    out = {}
    for column in rows[0] if rows else {}:
        values = [_number(r.get(column)) for r in rows]
        if column and values and all(v is not None for v in values):
            out[column] = sum(values) / len(values)
    return out


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    out = []
    for path in bundles:
        b = open_bundle(path)
        exp = experiment.load(b.manifest["experiment"])
        unreadable = sorted({o["format"] for o in exp.outputs} - set(READABLE))
        if unreadable:
            raise PirexError(
                f"{exp.id}: the generic table reads outputs of format {', '.join(READABLE)}, not "
                f"{', '.join(unreadable)}: name an analysis module in experiment.yaml (analysis:)"
            )
        try:
            machine = json.loads((path / "machine.json").read_text())["before"]
        except (OSError, ValueError, KeyError, TypeError):
            machine = {}
        device = device_of(machine) if isinstance(machine, dict) else "unknown"
        for _, step, folder in completed_steps([b]):
            for o in exp.outputs:
                for f in sorted(folder.glob(o["path"])):
                    for column, mean in _csv_means(f).items():
                        out.append(
                            RunValue(exp.id, b.run_id, device, step["variant"], step["repetition"], column, mean, "")
                        )
    return out


def summary_table(values: Sequence[RunValue], level: float = LEVEL) -> Table:
    """Per metric and variant: runs, the mean of the runs' values, its interval over runs."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for v in values:
        groups[(v.metric, v.variant)].append(v.value)
    cells, records = [], []
    for (metric, variant), xs in sorted(groups.items()):
        s = stats.summary(xs)
        if s.n >= stats.MIN_RUNS:
            lo, hi = s.ci(level)
            ci = f"[{lo:,.4g} ; {hi:,.4g}]"
        else:
            lo = hi = None
            ci = f"no interval: {s.n} runs, {stats.MIN_RUNS} needed"
        cells.append([metric, variant, str(s.n), f"{s.mean:,.4g}", ci])
        records.append({"metric": metric, "variant": variant, "runs": s.n, "mean": s.mean, "low": lo, "high": hi})
    return Table(
        "Per variant: mean over runs (steps) of each measured column",
        ["Metric", "Variant", "Runs", "Mean", f"{100 * level:g} % CI over runs"],
        cells,
        records,
        label_columns=2,
    )


def tables(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    return [NamedTable("summary", summary_table(run_values(bundles)))]


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    return []
