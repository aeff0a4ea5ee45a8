"""Reading bundles in an analysis module: open one (refusing a bundle of another experiment), walk its completed
steps (the loop every module's tables, figures and run values start from), and name the setup a step ran with (the
resolved parameters that decide what a number means), so that a table never pools two setups unseen."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from pirex.analysis.interface import NamedTable
from pirex.analysis.tables import Table
from pirex.core.bundle import Bundle, Step
from pirex.core.errors import PirexError

T = TypeVar("T")


def open_bundle(path: Path, experiment: str | None = None) -> Bundle:
    """The bundle at path; with experiment given, a bundle of another experiment is refused."""
    b = Bundle.open(Path(path))
    if experiment is not None and b.experiment != experiment:
        raise PirexError(f"{path} is a {b.experiment} bundle, not {experiment}")
    return b


def steps(bundles: Iterable[Path | Bundle], experiment: str | None = None) -> Iterator[Step]:
    """Each completed step of each bundle (a path, opened with open_bundle, or a bundle already open, not checked
    again), in the order the manifest records them, with the parameters it ran with."""
    for given in bundles:
        b = given if isinstance(given, Bundle) else open_bundle(given, experiment)
        yield from b.steps()


def per_setup(
    name: str, groups: dict[str, T], make: Callable[[T], Table], order: Sequence[str] | None = None
) -> list[NamedTable]:
    """One table per setup (groups: the setup's text -> what its table is made of), the setup in its title and in
    every CSV record; the file stem gains a number only when the bundles ran several setups."""
    keys = list(order or sorted(groups))
    out = []
    for i, setup in enumerate(keys, start=1):
        t = make(groups[setup])
        t.title = f"{t.title}; {setup}"
        t.records = [{"setup": setup, **rec} for rec in t.records]
        out.append(NamedTable(name if len(keys) == 1 else f"{name}-setup{i}", t))
    return out
