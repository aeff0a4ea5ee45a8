"""From an experiment to its analysis: the module experiment.yaml names (pirex/analysis/<name>.py,
the interface of interface.py), the bundles a command reads when none are given, and where its
tables and figures go (results/tables/<experiment>[-<view>]/, results/figures/<...>/)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from pirex.analysis import interface
from pirex.analysis import tables as T
from pirex.analysis.interface import NamedTable
from pirex.core import experiment, fleetrun
from pirex.core.bundle import MANIFEST, Bundle
from pirex.core.errors import PirexError


def module(exp: experiment.Experiment) -> ModuleType:
    """The experiment's analysis module, checked to offer the interface (interface.Analysis)."""
    mod = importlib.import_module(f"pirex.analysis.{exp.analysis}")
    if lacks := interface.missing(mod):
        raise PirexError(
            f"{exp.id}: its analysis module pirex/analysis/{exp.analysis}.py lacks {', '.join(lacks)} of the "
            "analysis interface (pirex/analysis/interface.py, Analysis): add them"
        )
    return mod


def check_view(exp: experiment.Experiment, mod: ModuleType, view: str | None) -> None:
    views = mod.VIEWS
    if view is not None and view not in views:
        offered = ", ".join(views) or "none"
        raise PirexError(f"{exp.id} has no view {view!r} (views: {offered})")


def view_of(bundle: Path) -> str | None:
    """The matrix a bundle ran (its view), or None; None too for a run folder that is no bundle (jpa's run_dirs)."""
    return Bundle.open(bundle).matrix if (Path(bundle) / MANIFEST).is_file() else None


def _started(path: Path) -> float:
    """Newest first by when the run was written: the manifest's time (a fleet run's), else the folder's."""
    marker = next((path / m for m in ("manifest.json", "fleet.json") if (path / m).exists()), path)
    return marker.stat().st_mtime


def bundles(exp: experiment.Experiment, given: Sequence[Path], results_dir: Path, view: str | None) -> list[Path]:
    """The bundles given, or the newest of the experiment in the view (a matrix run, or not): one bundle,
    or the bundles of a fleet run (pirex fleet) when that is the newest."""
    if given:
        return [b for p in given for b in _expand(Path(p))]
    root = results_dir / exp.id
    finder = getattr(module(exp), "run_dirs", None)
    found = finder(root) if finder and root.is_dir() else sorted(p.parent for p in root.glob("*/manifest.json"))
    fleets = [] if finder else [p.parent for p in root.glob("*/fleet.json") if any(p.parent.glob("*/manifest.json"))]
    found = [p for p in found + fleets if view_of(_expand(p)[0]) == view]
    if not found:
        how = f"pirex run {exp.id}" + (f" --matrix {view}" if view else "")
        raise PirexError(
            f"no {exp.id} bundle{f' of the {view} matrix' if view else ''} under {results_dir}: run `{how}` first"
        )
    return _expand(max(found, key=_started))


def _expand(path: Path) -> list[Path]:
    """A fleet run's folder (pirex fleet: fleet.json, a bundle per host) stands for its hosts' bundles."""
    if fleetrun.is_fleet_run(path):
        return fleetrun.bundles(path)
    return [path]


def tables(mod: ModuleType, bundles: Sequence[Path], view: str | None) -> list[NamedTable]:
    """The module's tables and, when the bundles come from several devices (a fleet), one column per
    device over the module's run values (pirex/analysis/devices.py): the same for every experiment."""
    from pirex.analysis import devices, stats  # numpy and scipy: the analysis extra

    out = list(mod.tables(bundles, view))
    if len(bundles) > 1:  # the means per device; a run's spread ("B1 sd") is for the claims
        values = [v for v in mod.run_values(bundles, view) if not stats.is_side_metric(v.metric)]
        if len(devices.devices(values)) > 1:
            out.append(NamedTable("devices", devices.table(values)))
    return out


def out_dir(results_dir: Path, kind: str, exp: experiment.Experiment, view: str | None) -> Path:
    return results_dir / kind / (exp.id + (f"-{view}" if view else ""))


def write(named: Sequence[NamedTable], out: Path) -> list[str]:
    """Each table as CSV and LaTeX under out, and its Markdown (returned, to print)."""
    texts = []
    for nt in named:
        T.write_csv(nt.table, out / f"{nt.name}.csv")
        (out / f"{nt.name}.tex").write_text(T.latex(nt.table))
        md = T.markdown(nt.table)
        (out / f"{nt.name}.md").write_text(md + "\n")
        texts.append(md)
    return texts
