"""What is read from bundles and from this machine: pirex table, plot, compare and verify; machine and doctor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pirex.cli.common import chosen, load_analysis, print_tables
from pirex.core import paths
from pirex.core.errors import PirexError

VIEW_HELP = "A view of the experiment: the tables of one of its matrices (moobench: fluctuation, ICPE'18 Table 5)."
OUT_HELP = "Where the files go (default: <results-dir>/{}/<experiment>[-<view>])."


def reading_bundles(out: str | None = None):
    """A command's EXPERIMENT, BUNDLES, --view and --results-dir (and --out for what it writes: tables, figures)."""
    given = [
        click.argument("experiment_id", metavar="EXPERIMENT"),
        click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True)),
        click.option("--view", default=None, help=VIEW_HELP),
        click.option(
            "--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True
        ),
    ]
    if out:
        given.append(click.option("--out", type=click.Path(path_type=Path), default=None, help=OUT_HELP.format(out)))

    def decorate(f):
        for d in reversed(given):  # as if written above f in this order
            f = d(f)
        return f

    return decorate


@click.command()
@reading_bundles("tables")
def table(experiment_id: str, bundles, view: str | None, results_dir: Path, out: Path | None) -> None:
    """The experiment's tables from bundles (default: the newest), as Markdown; CSV and LaTeX beside.

    Each experiment names its analysis (experiment.yaml: analysis); one without a paper table
    gets a per-variant summary of its declared outputs."""
    print_tables(experiment_id, bundles, results_dir, view, out)


@click.command()
@reading_bundles("figures")
def plot(experiment_id: str, bundles, view: str | None, results_dir: Path, out: Path | None) -> None:
    """The papers' figures from bundles (default: the newest), as PNG and SVG (fork: give a Pi's
    and a server's bundle to compare them)."""
    from pirex.analysis import modules

    exp, mod = load_analysis(experiment_id, view)
    paths_, view = chosen(exp, bundles, results_dir, view)
    out = out or modules.out_dir(results_dir, "figures", exp, view)
    from pirex.analysis import interrupts

    files = mod.figures(paths_, out, view) + interrupts.figure(paths_, out)  # Figure 3 for every experiment
    for f in files:
        click.echo(f"figure: {f}")
    if not files:
        click.echo(f"{exp.id}: no figures from {', '.join(map(str, paths_))}")


@click.command()
@reading_bundles()
def compare(experiment_id: str, bundles, view: str | None, results_dir: Path) -> None:
    """Our results beside the published ones: the papers' claims on this experiment judged on the
    bundles (analysis/<paper>/claims.yaml), the verdicts `pirex reproduce` gives."""
    from pirex.analysis import modules
    from pirex.reproduce import claims, judged

    exp, mod = load_analysis(experiment_id, view)
    paths_, view = chosen(exp, bundles, results_dir, view)
    named = judged.tables(exp, mod, paths_, view)
    if not named:
        raise PirexError(f"{exp.id}: no claim of a paper on it to judge (analysis/<paper>/claims.yaml)")
    # the papers with claims on it (those the tables judge): what differs unavoidably from them
    papers = [p for p in map(claims.load, claims.available()) if any(c.experiment == exp.id for c in p.claims)]
    for nt in named:
        nt.table.notes.append(claims.deviations_note(papers))
    for text in modules.write(named, modules.out_dir(results_dir, "tables", exp, view)):
        click.echo(text + "\n")


@click.command()
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
def verify(bundles) -> None:
    """Check every file of result bundles against their manifests; exit 1 on any problem."""
    from pirex.core.bundle import verify as verify_bundle

    bad = 0
    for b in bundles:
        problems = verify_bundle(b)
        bad += bool(problems)
        click.echo(f"{b}: " + ("ok" if not problems else "\n  " + "\n  ".join(problems)))
    if bad:
        sys.exit(1)


@click.command()
@click.option(
    "--work-dir",
    type=click.Path(path_type=Path),
    default=".",
    show_default=True,
    help="Whose storage to describe: where results and benchmark files go.",
)
@click.option("--no-docker", is_flag=True, help="Leave the Docker engine out of the record.")
def machine(work_dir: Path, no_docker: bool) -> None:
    """Print this machine's record (as stored in every result bundle), as JSON."""
    from pirex.core import machine as machine_record

    click.echo(json.dumps(machine_record.record(work_dir, docker=not no_docker), indent=2))


@click.command()
@click.option("--work-dir", type=click.Path(path_type=Path), default=".", show_default=True)
@click.option("--io-heavy", is_flag=True, help="The experiment writes a lot (warn about SD cards).")
@click.option("--min-free-disk-mb", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--min-free-mem-mb", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--reap", is_flag=True, help="Remove what killed runs left (containers, mounts, processes, settings).")
@click.option(
    "--fix",
    "fix_",
    is_flag=True,
    help="Prepare the machine as the papers did (governor, swap, services, "
    "Wi-Fi power saving), recording what changed (root).",
)
@click.option("--undo", is_flag=True, help="Put back what `doctor --fix` changed.")
def doctor(
    work_dir: Path, io_heavy: bool, min_free_disk_mb: int, min_free_mem_mb: int, reap: bool, fix_: bool, undo: bool
) -> None:
    """Check the machine before a run and say what to fix; exit 1 when something must be fixed."""
    from pirex.core import machine as machine_record
    from pirex.core import preflight, tuning
    from pirex.runner import leftovers

    if fix_ or undo:
        for c in tuning.undo() if undo else tuning.fix():
            click.echo(("restored " if undo else "changed ") + tuning.describe(c, undo=undo))
        click.echo(f"(record: {tuning.state_file()})" if fix_ else "everything `doctor --fix` changed is back")

    findings = preflight.check(
        machine_record.record(work_dir),
        min_free_disk_bytes=min_free_disk_mb << 20,
        min_free_mem_bytes=min_free_mem_mb << 20,
        io_heavy=io_heavy,
    )
    for f in findings:
        click.echo(f"{f.level.upper():4}  {f.check:12} {f.message}" + (f"\n      fix: {f.fix}" if f.fix else ""))
    reaped = leftovers.doctor(reap, click.echo)  # what killed runs left: listed, or removed with --reap
    if preflight.worst(findings) == "fail" or not reaped:
        sys.exit(1)
