"""pirex reproduce: the papers' claims planned, run and judged (pirex/reproduce/), or rerun from an artifact."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import click
from click.core import ParameterSource

from pirex.cli.common import design_option, duration, fraction
from pirex.core import paths
from pirex.core.errors import PirexError
from pirex.core.paths import git_version
from pirex.images import localregistry
from pirex.images import platforms as plat
from pirex.reproduce.state import ReproductionState


class _ListsPapers(click.Command):
    """`reproduce --help` ends with the papers this checkout has (analysis/<paper>/claims.yaml), a user's own too."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from pirex.reproduce import claims

        formatter.write_paragraph()
        formatter.write_text("Papers here (analysis/<paper>/claims.yaml): " + ", ".join(claims.available()) + ".")
        super().format_epilog(ctx, formatter)


@click.command(cls=_ListsPapers)
@click.argument("papers", nargs=-1, metavar="PAPER...")
@click.option(
    "--level",
    default="kick-the-tires",
    show_default=True,
    type=click.Choice(["kick-the-tires", "full"]),
    help="kick-the-tires: every claim's code path, quick profiles (indicative); full: the papers' profiles.",
)
@click.option("--precision", default=None, help="The half-width a verdict needs, e.g. 1% (default: the claim's).")
@click.option("--confidence", default="95%", show_default=True, help="Confidence level of the intervals.")
@click.option(
    "--budget",
    default=None,
    help="Minutes of rounds (e.g. 15m, 3h) after the pilot (the runs once): rounds that extend the runs whose claims "
    "are still undecided, read by a group-sequential design; with --resume, this attempt's more. A run longer than "
    "the budget, or of unknown duration, is not started (with --inventory: a cap on the runs, nothing more).",
)
@click.option(
    "--whole-pilot",
    is_flag=True,
    help="With --budget: every run once even beyond the budget (make run's: what kick-the-tires always ran); the "
    "rounds then spend what is left of it, if anything.",
)
@click.option(
    "--resume",
    "resume_",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Continue a reproduction (results/reproduce/<paper>-<id>).",
)
@click.option(
    "--reuse-only",
    is_flag=True,
    help="Judge the bundles there are (of this commit, else of the newest commit that ran them, named in the "
    "report); run nothing.",
)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="EXPERIMENT.NAME=VALUE",
    help="Change a parameter of one experiment's runs (e.g. jmh.iterations=2); repeatable.",
)
@click.option(
    "--aa/--no-aa",
    default=None,
    help="Run an A/A copy of each native variant, the noise floor beside each ratio (default: at full).",
)
@click.option(
    "--experiment",
    "experiments",
    multiple=True,
    help="Run and judge only the claims on this experiment (repeatable; default: every experiment).",
)
@click.option(
    "--inventory",
    type=click.Path(path_type=Path),
    default=None,
    help="Run every claim's runs on each device of this Ansible inventory (pirex fleet; fleet/hosts.yml): a verdict "
    "per device, and the claims across devices judged over them.",
)
@click.option(
    "--bundles",
    "given",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Judge these bundles (or fleet runs, or folders of them) from any machines; run nothing. Repeatable.",
)
@click.option(
    "--storage",
    "storages",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A storage device's mount: the claims across storages run their work directory on each (give two).",
)
@click.option(
    "--images-archive",
    type=click.Path(path_type=Path),
    default=None,
    help="With --inventory: the hosts load the images from this file (`pirex images export`), not a registry.",
)
@click.option(
    "--serial",
    is_flag=True,
    help="With --inventory: one device at a time (devices that share a machine, a switch or a disk).",
)
@click.option(
    "--artifact",
    type=click.Path(path_type=Path),
    default=None,
    help="Rerun PAPER from an artifact (`pirex artifact`, a .tar or a folder), offline: its checksums checked, its "
    "images loaded, then the runs; the report inside is copied beside this one, with COMPARISON.md of the verdicts.",
)
@click.option(
    "--calibration",
    "calibrations",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Judge with this calibration bundle (`pirex calibrate`; default: this machine's newest per experiment): a "
    "verdict whose interval does not cover on that noise is not counted as decided. Repeatable.",
)
@design_option(
    "duet: each pair of variants a claim compares runs at once, each on half of the CPUs (and its A/A pair), "
    "where the experiment suits it; the others run interleaved, and the report says why."
)
def reproduce(
    papers,
    level,
    precision,
    confidence,
    budget,
    whole_pilot,
    resume_,
    reuse_only,
    results_dir,
    tag,
    sets,
    aa,
    experiments,
    inventory,
    given,
    storages,
    images_archive,
    serial,
    artifact,
    calibrations,
    design,
) -> None:
    """Reproduce papers (each a folder of analysis/, a claims.yaml's path, or all): the plan with the time it takes
    here, the runs that are missing, and a verdict per claim in REPORT.md and report.html.

    Every bundle is verified before it is read; one that fails is left out (the report lists it
    under "Bundles left out", the verdicts come from the rest) and the exit status is then 1."""
    from pirex.reproduce import reproduction

    if resume_ and not artifact:  # a rerun of an artifact resumes as one
        artifact = reproduction.artifact_of(resume_)

    opts = reproduction.Options(
        list(papers),
        level,
        fraction(precision, "--precision"),
        fraction(confidence, "--confidence"),
        duration(budget),
        results_dir,
        tag or git_version()[0],
        resume_,
        reuse_only,
        sets=reproduction.parse_sets(sets),
        aa=aa,
        experiments=list(experiments),
        inventory=inventory,
        bundles=list(given),
        storages=list(storages),
        images_archive=images_archive,
        serial=serial,
        design=design,
        whole_pilot=whole_pilot,
        calibrations=list(calibrations),
    )
    if whole_pilot and not opts.budget:
        raise PirexError("--whole-pilot says how --budget treats the first runs: give --budget too (e.g. 15m)")
    if artifact:
        ctx = click.get_current_context()
        given = {o for o in ("level", "confidence", "design") if ctx.get_parameter_source(o) != ParameterSource.DEFAULT}
        out = _rerun(opts, artifact, explicit_tag=tag, given=given)
    else:
        out = reproduction.reproduce(opts, reproduction.run_with_runner)
    left_out = ReproductionState.read(out).left_out or {}
    if left_out:  # the report is written; a script must still notice that bundles were not judged
        first = next(iter(left_out))
        raise PirexError(
            f"{len(left_out)} bundle(s) failed verification and were left out ({first}: {left_out[first]}); "
            f'the verdicts in {out / "REPORT.md"} are judged from the rest (its section "Bundles left out")'
        )


def _rerun(opts, artifact: Path, explicit_tag: str | None, given: Collection[str] = ()) -> Path:
    """pirex reproduce PAPER --artifact: the artifact's checksums and images first, then the reproduction on them."""
    from pirex.artifact import rerun
    from pirex.reproduce import reproduction

    clash = [
        name
        for name, given in (
            ("--reuse-only", opts.reuse_only),
            ("--bundles", opts.bundles),
            ("--inventory", opts.inventory),
            ("--tag", explicit_tag),
        )
        if given
    ]
    if clash:
        raise PirexError(f"--artifact runs the artifact's own images on this machine: drop {', '.join(clash)}")
    resumed = None
    if opts.resume:
        resumed = ReproductionState.read(opts.resume)
        rerun.check_resumed(resumed, opts.resume, artifact)
        opts.papers = opts.papers or resumed.papers
    if len(opts.papers) != 1 or opts.papers == ["all"]:
        raise PirexError("--artifact reruns the one paper the artifact is of: pirex reproduce PAPER --artifact FILE")
    opts.results_dir.mkdir(parents=True, exist_ok=True)
    for left in rerun.remove_stale(opts.results_dir):
        click.echo(f"removed {left}: the unpacked artifact of a rerun that was killed")
    with rerun.scratch(opts.results_dir) as scratch:
        opened = rerun.open_(artifact, opts.papers[0], scratch / "unpacked")
        regfile = scratch / "registry.yaml"
        with localregistry.local_registry():
            images = rerun.load_images(opened, plat.host(), regfile)
        if resumed is not None:
            rerun.check_resumed(resumed, opts.resume, artifact, images)
        commit = git_version()[1]
        for line in rerun.preamble(opened, commit, images):
            click.echo(line)
        if not opts.resume and (line := rerun.adopt(opened, opts, given)):
            click.echo(line)
        opts.artifact = artifact.resolve()
        opts.artifact_images = images or None  # reused and resumed: only bundles that ran the artifact's images
        opts.not_reused = opened.judged_runs()  # never the artifact's own: the rerun is compared with them
        if images:  # a tag nothing on this machine is built under: the runs take the images regfile names
            opts.tag = f"artifact-{opened.meta.get('commit', 'unknown')[:12]}"
        with rerun.registry_file(regfile if images else None):  # for the runs only: the file goes with scratch
            out = reproduction.reproduce(opts, reproduction.run_with_runner)
        rerun.copy_inside(opened, out)
        rows = rerun.compare(opened, out)
        path = rerun.write(opened, out, rows, commit)
    click.echo(f"{rerun.agreement(rows)}: {path}")
    return out
