"""pirex calibrate: how the intervals and rules judge an experiment on this machine's own noise (pirex/reproduce/
calibrate.py)."""

from __future__ import annotations

from pathlib import Path

import click

from pirex import __version__
from pirex.cli.common import design_option
from pirex.core import paths
from pirex.core.paths import git_version


@click.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.option(
    "--repetitions",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="A/A repetitions per design (about 80 resample n = 20 well; at least 10).",
)
@click.option("--profile", default="quick", show_default=True, help="The profile the A/A runs use (make run's: quick).")
@design_option(
    "interleaved or duet: only that design's A/A run (default: interleaved, and the duet where the experiment suits "
    "it).",
    default=None,
)
@click.option(
    "--bundles",
    "bundles",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Calibrate from these A/A bundles (a variant and its -aa copy) instead of running; repeatable.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="NAME=VALUE",
    help="A parameter of the A/A runs (checked, recorded), e.g. benchmarks=RecursionBenchmark.b1_default.",
)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--force", is_flag=True, help="Run even when the preflight fails.")
@click.option("--allow-concurrent", is_flag=True, help="Run even while another measuring run is under way here.")
def calibrate(
    experiment_id, repetitions, profile, design, bundles, sets, results_dir, tag, force, allow_concurrent
) -> None:
    """A long A/A run of EXPERIMENT here, resampled: the coverage of every interval pirex judges it with, each
    claim's rule at its edges, the power per n; a calibration bundle under results/calibration/ that pirex
    reproduce then reads. Killed, the same command resumes it."""
    from pirex.analysis.calibration import COVER_LOW
    from pirex.core import experiment
    from pirex.reproduce import calibrate as cal

    exp = experiment.load(experiment_id)  # an unknown experiment, a bad --set: refused before anything runs
    overrides = exp.overrides(list(sets)) if sets else None
    if bundles:
        paths_ = list(bundles)
    else:
        from pirex.runner import run as runner

        req = cal.Request(
            experiment_id,
            repetitions,
            profile,
            results_dir,
            tag or git_version()[0],
            (design,) if design else None,
            force,
            allow_concurrent,
            overrides,
        )
        paths_ = cal.aa_runs(req, runner.run, runner.resume, click.echo)
    result = cal.analyse(experiment_id, paths_)
    out = cal.write(result, results_dir, paths_, {"version": __version__, "commit": git_version()[1]})
    click.echo(cal.table(result))
    click.echo(f"pirex calibrate: {out} (pirex reproduce reads it for {experiment_id} on {result.device})")
    under = [c for _, c in result.cells if c.coverage < COVER_LOW]
    if under:
        click.echo(
            f"pirex calibrate: {len(under)} of {len(result.cells)} method x size x scheme cells cover below "
            f"{100 * COVER_LOW:.0f} %: pirex reproduce does not count verdicts by those methods at those sizes "
            "as decided on this machine"
        )
