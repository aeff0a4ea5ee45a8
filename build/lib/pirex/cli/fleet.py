"""pirex fleet: the same experiment on a fleet of devices (pirex/fleet.py, through Ansible)."""

from __future__ import annotations

from pathlib import Path

import click

from pirex.cli.common import design_option, print_tables
from pirex.core import paths
from pirex.core.errors import PirexError
from pirex.core.paths import git_version


@click.group()
def fleet() -> None:
    """The same experiment on a fleet of devices, through Ansible (fleet/run.yml; the fleet extra)."""


@fleet.command("run")
@click.argument("experiment_id", metavar="EXPERIMENT", required=False)
@click.option("--inventory", type=click.Path(path_type=Path), required=True, help="Ansible inventory: fleet/hosts.yml")
@click.option("--profile", default="quick", show_default=True, help="quick (every code path, small) or paper.")
@click.option("--variants", default=None, help="Comma-separated, e.g. native,docker (default: the experiment's).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="A parameter of experiment.yaml (checked).")
@click.option("--serial", is_flag=True, help="The runs one host after another (hosts that share a network it uses).")
@click.option(
    "--images-archive",
    type=click.Path(path_type=Path),
    default=None,
    help="A `pirex images export` file, loaded on every host (default: pulled by registry.yaml's digests).",
)
@click.option(
    "--resume",
    "resume_",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="Finish a fleet run (results/<experiment>/fleet-...): only the hosts without a verified bundle.",
)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@design_option(
    "As pirex run's, on every host: duet runs a repetition's two variants at once, each on half of the CPUs."
)
def fleet_run(
    experiment_id, inventory, profile, variants, sets, serial, images_archive, resume_, results_dir, tag, design
) -> None:
    """Run EXPERIMENT on every host of an inventory, fetch and verify each bundle into
    results/<experiment>/<fleet-run>/<host>/, then the tables with one column per device."""
    from pirex import fleet as fleet_mod

    if not (experiment_id or resume_):
        raise PirexError("give the EXPERIMENT to run (or --resume FLEET_RUN)")
    req = fleet_mod.Request(
        experiment_id or "",
        inventory,
        profile,
        variants,
        sets,
        tag or git_version()[0],
        serial,
        results_dir,
        images_archive,
        design=design,
    )
    out = fleet_mod.run(req, click.echo, resume_)
    if out.bundles:
        click.echo()
        print_tables(out.experiment, out.bundles, results_dir, out=out.dir / "tables")
    if out.failed:
        raise PirexError(fleet_mod.failure_line(out))


@fleet.command("on-host", hidden=True)
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.option("--profile", default="quick")
@click.option("--variants", default=None)
@click.option("--set", "sets", multiple=True)
@click.option("--tag", required=True)
@click.option("--results-dir", type=click.Path(path_type=Path), required=True)
@click.option("--design", default="interleaved", type=click.Choice(["interleaved", "duet"]))
def fleet_on_host(experiment_id, profile, variants, sets, tag, results_dir, design) -> None:
    """What fleet/run.yml runs on each host: its bundle of the fleet run, run, resumed, or taken as it is."""
    from pirex import fleet as fleet_mod
    from pirex.core import experiment as experiment_mod
    from pirex.runner import run as runner

    exp = experiment_mod.load(experiment_id)
    opts = runner.Options(
        exp.id, profile, variants, results_dir=results_dir, tag=tag, overrides=exp.overrides(sets), design=design
    )
    click.echo(f"{fleet_mod.BUNDLE_LINE} {fleet_mod.on_host(opts).resolve()}")
