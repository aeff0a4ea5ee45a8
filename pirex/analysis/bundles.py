"""Reading bundles in an analysis module: open one (refusing a bundle of another experiment) and walk
its completed steps, the loop every module's tables, figures and run values start from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pirex.bundle import Bundle
from pirex.errors import PirexError

Step = tuple[Bundle, dict, Path]  # a bundle, one of its completed steps (manifest entry), the step's folder


def open_bundle(path: Path, experiment: str | None = None) -> Bundle:
    """The bundle at path; with experiment given, a bundle of another experiment is refused."""
    b = Bundle.open(Path(path))
    if experiment is not None and b.manifest["experiment"] != experiment:
        raise PirexError(f"{path} is a {b.manifest['experiment']} bundle, not {experiment}")
    return b


def completed_steps(bundles: Iterable[Path | Bundle], experiment: str | None = None) -> Iterator[Step]:
    """(bundle, step, step folder) for each completed step of each bundle (a path, opened with open_bundle,
    or a bundle already open, not checked again), in the order the manifest records them."""
    for given in bundles:
        b = given if isinstance(given, Bundle) else open_bundle(given, experiment)
        for step in b.manifest["completed"]:
            yield b, step, b.step_dir(step["variant"], step["repetition"])
