"""The analysis of an experiment without a paper table of its own (experiment.yaml names no
`analysis` module): per variant, a summary of its declared outputs. An output of format `csv`
(a header line, one row per measurement) gives one metric per numeric column; a run is one
step (a repetition of a variant) and its value the mean of that column over the step's rows. Which parameters
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


def _csv_means(path: Path) -> dict[str, float]:
    """The mean of every column whose values are all numbers."""
    rows = read_csv(path)
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
                    for column, mean in _csv_means(f).items():
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
