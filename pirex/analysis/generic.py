"""The analysis of an experiment without a paper table of its own (experiment.yaml names no
`analysis` module): per variant, a summary of its declared outputs. An output of format `csv`
(a header line, one row per measurement) gives one metric per numeric column, and per value of its key columns
(the output's `keys`, and text columns: `mb_per_s[size_bytes=32768]`); a run is one step (a repetition of a
variant) and its value the mean of that column over the step's rows of that kind. Which parameters
matter is not known here, so a setup is every resolved parameter of the step, and each setup has its table."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pirex.analysis import stats
from pirex.analysis.bundles import open_bundle, per_setup
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.tables import Table
from pirex.analysis.tidy import device_of
from pirex.core import experiment
from pirex.core.bundle import Step, read_csv
from pirex.core.errors import PirexError

VIEWS: dict[str, str] = {}
LEVEL = 0.95
READABLE = ("csv",)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _csv_means(path: Path, keys: Sequence[str] | None = None) -> dict[str, float]:
    """The mean of every column whose values are all numbers, over the rows of one kind: the rows are grouped by
    their key columns (the output's declared `keys`, and every column with text in a row: a label), and each
    group's metric is named by them, `mb_per_s[size_bytes=32768]`. With `keys: []` a metric is the column's name and
    its value the mean over every row (a row per iteration). Averaging rows of different sizes is never silent:
    undeclared keys (None) and rows of one group that differ in a whole-number column are refused, naming it."""
    rows = read_csv(path)
    columns = [c for c in (rows[0] if rows else {}) if c]
    numeric = [c for c in columns if all(_number(r.get(c)) is not None for r in rows)]
    missing = [k for k in keys or () if k not in columns]
    if rows and missing:
        raise PirexError(
            f"{path}: no column {', '.join(missing)} (the output's keys); its columns: {', '.join(columns)}"
        )
    labels = [c for c in columns if any(r.get(c) and _number(r.get(c)) is None for r in rows)]  # text in a row
    by = [c for c in columns if c in (keys or ()) or c in labels]
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[",".join(f"{k}={r.get(k)}" for k in by)].append(r)
    if keys is None and (varying := _whole_and_varying(groups.values(), [c for c in numeric if c not in by])):
        raise PirexError(
            f"{path}: its rows differ in {', '.join(varying)}, whole numbers: a size or a count would be averaged "
            f"with another. Declare the output's keys in experiment.yaml, the columns that say what a row measured "
            f"(`keys: [{varying[0]}]` gives a metric per {varying[0]}), or `keys: []` if every row is a repetition "
            "of one measurement (then averaged)"
        )
    out = {}
    for label, members in groups.items():
        for column in (c for c in numeric if c not in by):
            values = [_number(r.get(column)) for r in members]
            out[f"{column}[{label}]" if label else column] = sum(values) / len(values)
    return out


def _whole_and_varying(groups, columns: Sequence[str]) -> list[str]:
    """The columns whose values are whole numbers and differ between two rows of one group."""
    out = []
    for c in columns:
        values = [_number(r.get(c)) for g in groups for r in g]
        if all(float(v).is_integer() for v in values) and any(len({_number(r.get(c)) for r in g}) > 1 for g in groups):
            out.append(c)
    return out


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    out = []
    for path in bundles:
        b = open_bundle(path)
        exp = experiment.load(b.experiment)
        unreadable = sorted({o["format"] for o in exp.outputs} - set(READABLE))
        if unreadable:
            raise PirexError(
                f"{exp.id}: the generic table reads outputs of format {', '.join(READABLE)}, not "
                f"{', '.join(unreadable)}: name an analysis module in experiment.yaml (analysis:)"
            )
        device = device_of(b.machine_before())
        for step in b.steps():
            for o in exp.outputs:
                for f in sorted(step.dir.glob(o["path"])):
                    for column, mean in _csv_means(f, o.get("keys")).items():
                        out.append(
                            RunValue(
                                exp.id,
                                b.run_id,
                                device,
                                step.variant,
                                step.repetition,
                                column,
                                mean,
                                "",
                                setup=setup_of(step),
                            )
                        )
    return out


def setup_of(step: Step) -> str:
    """Every resolved parameter of the step, repetitions aside (the runs of one setup)."""
    return "parameters " + ", ".join(f"{k}={v}" for k, v in sorted(step.params.items()) if k != "repetitions")


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
    by_setup: dict[str, list[RunValue]] = {}
    for v in run_values(bundles):
        by_setup.setdefault(v.setup, []).append(v)
    return per_setup("summary", by_setup, summary_table)


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    return []
