"""What several command groups share: the tables printed from bundles (pirex table, and after pirex compose,
swarm and fleet run), the --design option, and the parsers of --precision, --confidence and --budget."""

from __future__ import annotations

from pathlib import Path

import click

from pirex.core.errors import PirexError


def design_option(help_text: str, default: str | None = "interleaved"):
    """--design, as pirex run, reproduce, fleet run and calibrate take it (runner/duet.py)."""
    return click.option(
        "--design",
        default=default,
        show_default=default is not None,
        type=click.Choice(["interleaved", "duet"]),
        help=help_text,
    )


def load_analysis(experiment_id: str, view: str | None):
    from pirex.analysis import modules
    from pirex.core import experiment as experiment_mod

    exp = experiment_mod.load(experiment_id)
    mod = modules.module(exp)
    modules.check_view(exp, mod, view)
    return exp, mod


def chosen(exp, bundles, results_dir: Path, view: str | None) -> tuple[list[Path], str | None]:
    """The bundles to read and their view (a matrix run's bundles are read in the matrix's view), each verified
    first, sizes and sha256 digests: nothing is read from a bundle that fails.

    Refused, not left out: pirex table, plot and compare (and a fleet run's tables) print what the bundles named
    (or the newest) hold, so a table of the rest would silently be another table; the error names the bundle, the
    file and `pirex verify`, and nothing is written. Digests always: none of these commands wrote the bundles it
    reads (they may come from another machine, a fleet host, or an earlier run), and the analysis reads every
    file anyway, so hashing costs about one more read."""
    from pirex.analysis import modules
    from pirex.core.bundle import Verifier

    paths_ = modules.bundles(exp, bundles, results_dir, view)
    Verifier().refuse(paths_, digests=True)
    if view is None and bundles:
        views = {modules.view_of(p) for p in paths_}
        if len(views) > 1:
            raise PirexError("these bundles are of different views (matrix runs and plain runs): give one kind")
        view = views.pop()
    return paths_, view


def print_tables(
    experiment_id: str, bundles, results_dir: Path, view: str | None = None, out: Path | None = None
) -> None:
    from pirex.analysis import modules

    exp, mod = load_analysis(experiment_id, view)
    paths_, view = chosen(exp, bundles, results_dir, view)
    out = out or modules.out_dir(results_dir, "tables", exp, view)
    for text in modules.write(modules.tables(mod, paths_, view), out):
        click.echo(text + "\n")
    click.echo(f"(from {', '.join(map(str, paths_))}; Markdown, CSV and LaTeX in {out})")


def duration(text: str | None) -> float | None:
    import re

    if text is None:
        return None
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip())
    if not text.strip() or not m:
        raise PirexError(f"--budget {text!r}: expected a duration like 3h, 90m or 1h30m")
    h, mi, s = (int(x or 0) for x in m.groups())
    if not h * 3600 + mi * 60 + s:
        raise PirexError(f"--budget {text!r}: expected a duration above zero, e.g. 15m")
    return h * 3600 + mi * 60 + s


def fraction(text: str | None, what: str) -> float | None:
    if text is None:
        return None
    t = text.strip().removesuffix("%").strip()
    try:
        x = float(t) / (100 if text.strip().endswith("%") else 1)
    except ValueError:
        x = -1
    if not 0 < x < 1:
        raise PirexError(f"{what} {text!r}: expected a percentage like 1% or 95%")
    return x
