"""What every analysis module offers, so that `pirex table|plot|compare EXPERIMENT`, `make run`
and `pirex reproduce` are generic (experiment.yaml names the module: `analysis: <module>`).

A module in pirex/analysis/ is an `Analysis` (below; modules.module() checks it on loading). Whether
our numbers hold a paper's is judged by the claims alone (analysis/<paper>/claims.yaml with
pirex/reproduce/verdict.py), from the module's run_values.

A module without a paper table is not needed: pirex/analysis/generic.py summarises an
experiment's declared outputs per variant."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pirex.analysis.tables import Table


@dataclass(frozen=True)
class NamedTable:
    """A table and the file stem it is written under (results/tables/<experiment>[-view]/<name>.*)."""

    name: str
    table: Table


@dataclass(frozen=True)
class RunValue:
    """One independent run's value of one metric (a fork's mean throughput, a MooBench loop's
    steady-state mean, a step's mean response time per operation): what intervals are computed
    over. `inner` holds the run's own samples one level down (iterations, calls aggregated per
    1,000), for the variance decomposition; `lower_is_better` says which way is faster."""

    experiment: str
    bundle: str  # run id (the bundle's folder name)
    device: str
    variant: str  # the bundle's variant, or a matrix case
    repetition: int
    metric: str  # e.g. "B1", "kieker-dump", "read", "wall_ns/single/1024"
    value: float
    unit: str
    lower_is_better: bool = True
    run: int = 0  # the run within the repetition (a JMH fork, a MooBench thread): the level below repetition
    inner: tuple[float, ...] = field(default=(), compare=False, repr=False)
    setup: str = ""  # the resolved parameters that decide the value (jmh: depth, iterations): never pooled across
    # a duet's step (pirex/runner/duet.py): the CPU half this variant ran on, +1 the first (lower) half, -1 the
    # second; 0 for a step run alone (interleaved). stats.duet_ratio takes it as a factor of its model.
    half: int = 0
    # a count metric's run (peaks, interrupts): the raw count of events and the exposure it was counted over
    # (calls), so that stats.rate_ratio compares counts, not rates; `value` is then the rate count / exposure
    # x the unit's scale (per million calls), nothing added. None and 0.0 for every other metric.
    count: int | None = None
    exposure: float = 0.0


class Analysis(Protocol):
    """What an analysis module offers; each function takes the bundles (or run folders) to read and the view (None,
    or the name of a matrix of the experiment, e.g. "fluctuation" for moobench). A module may also define
    `run_dirs(root) -> list[Path]`: what `pirex table` finds under results/<experiment>/ when no bundle is given
    (jpa: `pirex compose`'s run folders beside the bundles)."""

    VIEWS: dict[str, str]  # view name -> what it shows ({} when none)

    def tables(self, bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
        """The paper's tables (written as Markdown, CSV and LaTeX by the caller)."""

    def figures(self, bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
        """PNG/SVG files written under out."""

    def run_values(self, bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
        """One value per independent run: the intervals, the devices' table, the claims."""


def missing(module: object) -> list[str]:
    """The members of Analysis a module lacks or has of the wrong kind (VIEWS a dict, the rest functions)."""
    functions = [n for n, v in vars(Analysis).items() if callable(v) and not n.startswith("_")]
    out = [n for n in Analysis.__annotations__ if not isinstance(getattr(module, n, None), dict)]
    return out + [n for n in functions if not callable(getattr(module, n, None))]
