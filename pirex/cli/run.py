"""pirex run, and the commands that run an experiment's services and deployments on this machine: service,
compose, env and swarm."""

from __future__ import annotations

from pathlib import Path

import click

from pirex.cli.common import design_option, duration, fraction, print_tables
from pirex.core import paths
from pirex.core.errors import PirexError
from pirex.core.paths import git_version


@click.command()
@click.argument("experiments", nargs=-1)
@click.option("--profile", default="quick", show_default=True, help="quick (every code path, small) or paper.")
@click.option("--variants", default=None, help="Comma-separated, e.g. native,docker (default: the experiment's).")
@click.option(
    "--order",
    default="interleaved",
    show_default=True,
    type=click.Choice(["interleaved", "sequential"]),
    help="interleaved: each repetition runs the variants in a fresh random order.",
)
@click.option("--seed", type=int, default=None, help="Seed of the interleaving (recorded in the bundle).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a declared parameter (checked against its type and range; recorded).",
)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--resume", "resume_", type=click.Path(path_type=Path, exists=True), default=None, help="Finish a partial bundle."
)
@click.option("--force", is_flag=True, help="Run even when the preflight fails.")
@click.option(
    "--platform",
    "platform_",
    default=None,
    help="Run another platform's image under QEMU (docker variants; function, not timing).",
)
@click.option("--matrix", default=None, help="Run a matrix of cases the experiment declares instead of its variants.")
@click.option("--cases", default=None, metavar="A,B", help="With --matrix: only these of its cases.")
@click.option("--trace", is_flag=True, help="ftrace around each step, as the experiment declares (needs root).")
@click.option(
    "--soak",
    default=None,
    metavar="DURATION",
    help="Hold the load for DURATION (e.g. 10m) per step, where the experiment declares a soak (jpa-rest).",
)
@click.option("--allow-concurrent", is_flag=True, help="Run even while another measuring run is under way here.")
@click.option(
    "--cpus",
    default=None,
    metavar="LIST",
    help="Pin every step of every variant to these CPUs (e.g. 1: native taskset, docker --cpuset-cpus), "
    "so that each runs where the others did; recorded in run.json.",
)
@design_option(
    "interleaved: one step at a time (in --order); duet: a repetition's two variants at the same moment, each "
    "on half of the CPUs (of --cpus, if given), swapped every repetition."
)
@click.option(
    "--precision",
    default=None,
    metavar="P",
    help="Two stages: a pilot, then the repetitions that reach this half-width of the first two variants' "
    "ratio (e.g. 1%).",
)
@click.option(
    "--confidence",
    default="95%",
    show_default=True,
    help="1 - alpha of every verdict (each a test at alpha; intervals read at 1 - 2 alpha) and of --precision.",
)
@click.option("--budget", default=None, help="With --precision: at most this long in all (e.g. 13m, 2h).")
def run(
    experiments,
    profile,
    variants,
    order,
    seed,
    sets,
    results_dir,
    tag,
    resume_,
    force,
    platform_,
    matrix,
    cases,
    trace,
    soak,
    allow_concurrent,
    cpus,
    design,
    precision,
    confidence,
    budget,
) -> None:
    """Run experiments (default: all) natively and in Docker; each writes one result bundle."""
    from pirex.runner import run as runner

    if resume_:
        runner.resume(resume_, allow_concurrent)
        return
    ids = _experiments(experiments, matrix, trace, design)
    if not ids:
        click.echo("pirex: no experiment yet.")
        return
    overrides = _checked(ids, sets, variants, matrix, design)
    for exp_id in ids:
        opts = runner.Options(
            exp_id,
            profile=profile,
            variants=variants,
            order=order,
            seed=seed,
            results_dir=results_dir,
            tag=tag or git_version()[0],
            overrides=overrides[exp_id],
            force=force,
            platform=platform_,
            matrix=matrix,
            trace=trace,
            soak=soak,
            allow_concurrent=allow_concurrent,
            cases=tuple(c.strip() for c in cases.split(",") if c.strip()) if cases else None,
            cpus=cpus,
            design=design,
        )
        if precision is None:
            runner.run(opts)
            continue
        from pirex.reproduce import two_stage

        target = two_stage.Target(
            fraction(precision, "--precision"), fraction(confidence, "--confidence"), duration(budget)
        )
        two_stage.two_stage(opts, target, runner.run, click.echo)


def _experiments(experiments, matrix, trace, design) -> list[str]:
    """The experiments pirex run runs: those named, else all of them that declare the matrix or tracing asked
    for and that the duet suits (the others named on stderr)."""
    from pirex.core import experiment as experiment_mod

    ids = list(experiments) or experiment_mod.available()
    if not experiments and (matrix or trace):  # all: only those that declare the matrix or tracing
        ids = [
            i
            for i in ids
            if (not matrix or matrix in experiment_mod.load(i).matrices)
            and (not trace or experiment_mod.load(i).tracing)
        ]
        if not ids:
            raise PirexError("no experiment declares " + (f"the matrix {matrix!r}" if matrix else "tracing"))
    if not experiments and design == "duet":  # all: those the duet suits; the others say why not
        for i in [i for i in ids if not experiment_mod.load(i).duet.fits]:
            click.echo(f"pirex: {i} left out of --design duet: {experiment_mod.load(i).duet.why}", err=True)
        ids = [i for i in ids if experiment_mod.load(i).duet.fits]
    return ids


def _checked(ids, sets, variants, matrix, design) -> dict:
    """Each experiment's --set values, every named experiment, its variants and --set values checked before the
    first one runs."""
    from pirex.core import experiment as experiment_mod

    overrides = {}
    for exp_id in ids:
        exp = experiment_mod.load(exp_id)
        overrides[exp_id] = exp.overrides(sets)
        if variants and not matrix:
            exp.pick_variants(variants)
        if design == "duet" and not exp.duet.fits:
            raise PirexError(
                f"{exp_id} does not suit --design duet: {exp.duet.why} (experiments/{exp_id}/experiment.yaml)"
            )
    return overrides


@click.command("service")
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("name")
@click.option("--profile", default="quick", show_default=True)
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="e.g. the service's port parameter.")
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--hours", type=float, default=24.0, show_default=True, help="Stop it after this long at the latest.")
def service_cmd(experiment_id, name, profile, sets, tag, hours) -> None:
    """Run an experiment's service on this machine for runs on another (e.g. `pirex service jmh sink --set
    sink_port=10133` on the laptop, then `pirex run jmh --set sink_host=LAPTOP --set sink_port=10133` on the
    Pi, as ICPE'18 sent B6's packets to a remote machine). In the foreground until Ctrl-C."""
    import time

    from pirex.core import experiment as experiment_mod
    from pirex.images import platforms
    from pirex.runner import run as runner

    exp = experiment_mod.load(experiment_id)
    spec = next((s for s in exp.services if s.name == name), None)
    if spec is None:
        offered = ", ".join(s.name for s in exp.services) or "none"
        raise PirexError(f"{exp.id} declares no service {name!r} (services: {offered})")
    params = exp.requested(profile, overrides=exp.overrides(sets))
    if spec.port and not params.get(spec.port):
        raise PirexError(f"give the port the runs will use: --set {spec.port}=PORT")
    image = runner.image_for(exp.image, tag or git_version()[0], platforms.host())
    with runner.Service(spec, image["reference"], params, f"pirex-service-{exp.id}-{name}"):
        click.echo(
            f"{exp.id} {name}: ready on this host's addresses"
            + (f", port {params[spec.port]}" if spec.port else "")
            + " (Ctrl-C stops it)"
        )
        time.sleep(hours * 3600)


@click.command("compose")
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.option("--profile", default="quick", show_default=True, help="A profile of experiment.yaml (quick or paper).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="A parameter of experiment.yaml (checked).")
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--role", default=None, help="This host's role of the split run (its compose file), with its machine record."
)
@click.option("--env-file", type=click.Path(path_type=Path), default=None, help="With --role: the run's .env file.")
@click.option("--down", is_flag=True, help="With --role: stop this host's role (native or docker).")
@click.option("--native", is_flag=True, help="With --role and a server: natively (chroot, host network).")
@click.option("--foreground", is_flag=True, hidden=True, help="With --native: hold the role in this process.")
def compose_cmd(experiment_id, profile, sets, results_dir, tag, role, env_file, down, native, foreground) -> None:
    """Run an experiment's deployment on this machine with docker compose (experiment.yaml:
    deployment.compose, e.g. compose/jpa-rest.yml), then its tables; or, with --role, this host's part
    of the run split over several hosts (--native: a server natively, the paper's configurations 1, 3
    and 5 of ICPE'18 Experiment 3)."""
    from pirex.runner import compose, native_role

    compose.deployment_of(experiment_id)  # an experiment without one: which have one
    if role or env_file or down or native:
        if not (role and env_file):
            raise PirexError("--role and --env-file go together (e.g. --role db --env-file compose/pair.env)")
        if not env_file.is_file():
            raise PirexError(f"--env-file {env_file}: no such file (copy compose/example.env and fill it in)")
        if down and native_role.stop(experiment_id, role, env_file):
            click.echo(f"{role}: native role stopped")
            return
        if native and foreground:
            native_role.serve(experiment_id, role, env_file)
            return
        if native:
            out = native_role.start(experiment_id, role, env_file)
            click.echo(f"{role}: serving natively; machine record and what ran in {out}")
            return
        out = compose.role(experiment_id, role, env_file, down)
        if down:
            click.echo(f"{role}: down")
        elif role == compose.DRIVER:  # the run has ended: its table, naming the placement from the records beside it
            click.echo(f"{role}: done; results in {out}\n")
            print_tables(experiment_id, [out], results_dir)
        else:
            click.echo(f"{role}: up; machine record and images in {out}")
        return
    out = compose.run(experiment_id, tag or git_version()[0], results_dir, profile, sets)
    click.echo(f"results: {out}\n")
    print_tables(experiment_id, [out], results_dir)


@click.command("env")
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.option("--profile", default="quick", show_default=True, help="A profile of experiment.yaml.")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="A parameter of experiment.yaml (checked).")
@click.option(
    "--write",
    "write_to",
    default=None,
    metavar="PATH",
    help="Write the profile into this file of the checkout, headed by this command (images/*/profiles/).",
)
@click.option("--tag", envvar="PIREX_TAG", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--results-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="With a compose deployment: RESULTS_DIR is EXPERIMENT/compose under it (default: the checkout's results/).",
)
@click.option("--numbers-only", is_flag=True, help="Only the experiment's numbers (no images, no RESULTS_DIR).")
def env_cmd(experiment_id, profile, sets, write_to, tag, results_dir, numbers_only) -> None:
    """The experiment's numbers as NAME=VALUE lines, as compose files and images read them. For an
    experiment with a compose deployment also its images (tagged in this engine as `pirex compose`
    tags them) and RESULTS_DIR: a complete .env for plain `docker compose up` (compose/jpa-rest.yml)."""
    from pirex.core import experiment
    from pirex.images import settings

    if write_to:
        if sets:
            raise PirexError("--write renders the profile as experiment.yaml has it: no --set with it")
        (paths.REPO / write_to).write_text(settings.rendered(experiment_id, profile, write_to))
        return
    exp = experiment.load(experiment_id)
    values = settings.of(exp, profile, sets)
    if not numbers_only and exp.deployment and exp.deployment.compose:
        # relative: compose resolves it from the compose files' folder, whichever copy of the checkout runs
        results = (results_dir / exp.id / "compose").resolve() if results_dir else f"../results/{exp.id}/compose"
        values |= settings.compose_env(exp, tag or git_version()[0], str(results))
    click.echo(settings.text(values), nl=False)


@click.command("swarm")
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.option("--profile", default="quick", show_default=True, type=click.Choice(["quick", "paper"]))
@click.option("--network", default="host", show_default=True, type=click.Choice(["host", "overlay"]))
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="A parameter of experiment.yaml (checked).")
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", envvar="PIREX_TAG", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--images", default="", help="Registry/namespace of the images (default: the local registry's).")
@click.option("--print-env", is_flag=True, help="Print the environment of a plain `docker stack deploy` instead.")
def swarm_cmd(experiment_id, profile, network, sets, results_dir, tag, images, print_env) -> None:
    """An experiment with a swarm deployment (experiment.yaml: deployment.swarm; ICPE'18 Experiment 3's is
    compose/stack.yml) on a Docker Swarm from its manager, then its tables."""
    from pirex.runner import swarm

    args = (experiment_id, results_dir, tag or git_version()[0], profile, sets, network, images)
    if print_env:
        click.echo(swarm.print_env(*args))
        return
    out = swarm.run(*args)
    click.echo(f"results: {out}\nplacement: {swarm.describe(out)}\n")
    print_tables(experiment_id, [out], results_dir)
