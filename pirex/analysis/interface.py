"""What every analysis module offers, so that `pirex table|plot|compare EXPERIMENT`, `make run`
and `pirex reproduce` are generic (experiment.yaml names the module: `analysis: <module>`).

A module in pirex/analysis/ defines, each taking the bundles (or run folders) to read and the
view (None, or the name of a matrix of the experiment, e.g. "fluctuation" for moobench):

    VIEWS: dict[str, str]                         # view name -> what it shows ({} when none)
    tables(bundles, view=None) -> list[NamedTable]   # the paper's tables (Markdown/CSV/LaTeX by the caller)
    figures(bundles, out, view=None) -> list[Path]   # PNG/SVG files written under out
    run_values(bundles, view=None) -> list[RunValue] # one value per independent run: intervals, claims
    comparisons(bundles, view=None) -> list[NamedTable]  # optional: beside the published numbers

A module without a paper table is not needed: pirex/analysis/generic.py summarises an
experiment's declared outputs per variant."""

from __future__ import annotations

from dataclasses import dataclass, field

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
