"""The pirex command line. `pirex --help` lists the commands; the Makefile calls these."""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import Collection
from pathlib import Path

import click
from click.core import ParameterSource

from pirex import __version__
from pirex.core import paths
from pirex.core.errors import PirexError
from pirex.core.paths import git_version
from pirex.images import bake, bootstrap, builder, collection, localregistry, publish, regclient, sizes, sources
from pirex.images import platforms as plat

log = logging.getLogger("pirex")

PLATFORMS_HELP = "comma-separated: linux/amd64, linux/arm64, linux/arm/v7; 'all' (default) or 'host'"


def _design_option(help_text: str):
    """--design, as pirex run, reproduce and fleet run take it (runner/duet.py)."""
    return click.option(
        "--design", default="interleaved", show_default=True, type=click.Choice(["interleaved", "duet"]), help=help_text
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pirex")
@click.option("-v", "--verbose", is_flag=True, help="Log every command pirex runs.")
def cli(verbose: bool) -> None:
    """pirex: replicable performance experiments for the Raspberry Pi, natively and in Docker."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="pirex: %(message)s", stream=sys.stderr
    )


@cli.command()
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
@_design_option(
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
    from pirex.core import experiment as experiment_mod
    from pirex.runner import run as runner

    if resume_:
        runner.resume(resume_, allow_concurrent)
        return
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
    if not ids:
        click.echo("pirex: no experiment yet.")
        return
    overrides = {}
    for exp_id in ids:  # every named experiment, its variants and --set values checked before the first one runs
        exp = experiment_mod.load(exp_id)
        overrides[exp_id] = exp.overrides(sets)
        if variants and not matrix:
            exp.pick_variants(variants)
        if design == "duet" and not exp.duet.fits:
            raise PirexError(
                f"{exp_id} does not suit --design duet: {exp.duet.why} (experiments/{exp_id}/experiment.yaml)"
            )
    for exp_id in ids:
        opts = runner.Options(
            exp_id,
            profile,
            variants,
            order,
            seed,
            results_dir,
            tag or git_version()[0],
            overrides[exp_id],
            force,
            platform_,
            matrix,
            trace,
            soak,
            allow_concurrent,
        )
        opts.cases = tuple(c.strip() for c in cases.split(",") if c.strip()) if cases else None
        opts.cpus = cpus
        opts.design = design
        if precision is None:
            runner.run(opts)
            continue
        from pirex.reproduce import two_stage

        opts.precision, opts.confidence = _fraction(precision, "--precision"), _fraction(confidence, "--confidence")
        opts.budget = _duration(budget)
        two_stage.two_stage(opts, runner.run, click.echo)


@cli.command("service")
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
    params = {**exp.resolve(profile), **exp.overrides(sets)}
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


@cli.command("compose")
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
            _print_tables(experiment_id, [out], results_dir)
        else:
            click.echo(f"{role}: up; machine record and images in {out}")
        return
    out = compose.run(experiment_id, tag or git_version()[0], results_dir, profile, sets)
    click.echo(f"results: {out}\n")
    _print_tables(experiment_id, [out], results_dir)


@cli.command("env")
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


@cli.command("swarm")
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
    _print_tables(experiment_id, [out], results_dir)


@cli.group()
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
@_design_option(
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
        _print_tables(out.experiment, out.bundles, results_dir, out=out.dir / "tables")
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


def _analysis(experiment_id: str, view: str | None):
    from pirex.analysis import modules
    from pirex.core import experiment as experiment_mod

    exp = experiment_mod.load(experiment_id)
    mod = modules.module(exp)
    modules.check_view(exp, mod, view)
    return exp, mod


def _chosen(exp, bundles, results_dir: Path, view: str | None) -> tuple[list[Path], str | None]:
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


def _print_tables(
    experiment_id: str, bundles, results_dir: Path, view: str | None = None, out: Path | None = None
) -> None:
    from pirex.analysis import modules

    exp, mod = _analysis(experiment_id, view)
    paths_, view = _chosen(exp, bundles, results_dir, view)
    out = out or modules.out_dir(results_dir, "tables", exp, view)
    for text in modules.write(modules.tables(mod, paths_, view), out):
        click.echo(text + "\n")
    click.echo(f"(from {', '.join(map(str, paths_))}; Markdown, CSV and LaTeX in {out})")


VIEW_HELP = "A view of the experiment: the tables of one of its matrices (moobench: fluctuation, ICPE'18 Table 5)."
OUT_HELP = "Where the files go (default: <results-dir>/{}/<experiment>[-<view>])."


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--view", default=None, help=VIEW_HELP)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help=OUT_HELP.format("tables"))
def table(experiment_id: str, bundles, view: str | None, results_dir: Path, out: Path | None) -> None:
    """The experiment's tables from bundles (default: the newest), as Markdown; CSV and LaTeX beside.

    Each experiment names its analysis (experiment.yaml: analysis); one without a paper table
    gets a per-variant summary of its declared outputs."""
    _print_tables(experiment_id, bundles, results_dir, view, out)


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--view", default=None, help=VIEW_HELP)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help=OUT_HELP.format("figures"))
def plot(experiment_id: str, bundles, view: str | None, results_dir: Path, out: Path | None) -> None:
    """The papers' figures from bundles (default: the newest), as PNG and SVG (fork: give a Pi's
    and a server's bundle to compare them)."""
    from pirex.analysis import modules

    exp, mod = _analysis(experiment_id, view)
    paths_, view = _chosen(exp, bundles, results_dir, view)
    out = out or modules.out_dir(results_dir, "figures", exp, view)
    from pirex.analysis import interrupts

    files = mod.figures(paths_, out, view) + interrupts.figure(paths_, out)  # Figure 3 for every experiment
    for f in files:
        click.echo(f"figure: {f}")
    if not files:
        click.echo(f"{exp.id}: no figures from {', '.join(map(str, paths_))}")


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--view", default=None, help=VIEW_HELP)
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
def compare(experiment_id: str, bundles, view: str | None, results_dir: Path) -> None:
    """Our results beside the published ones: the papers' claims on this experiment judged on the
    bundles (analysis/<paper>/claims.yaml), the verdicts `pirex reproduce` gives."""
    from pirex.analysis import modules
    from pirex.reproduce import claims, judged

    exp, mod = _analysis(experiment_id, view)
    paths_, view = _chosen(exp, bundles, results_dir, view)
    named = judged.tables(exp, mod, paths_, view)
    if not named:
        raise PirexError(f"{exp.id}: no claim of a paper on it to judge (analysis/<paper>/claims.yaml)")
    for nt in named:  # every table that sets ours beside a paper's says what differs unavoidably
        nt.table.notes.append(claims.deviations_note())
    for text in modules.write(named, modules.out_dir(results_dir, "tables", exp, view)):
        click.echo(text + "\n")


def _duration(text: str | None) -> float | None:
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


def _fraction(text: str | None, what: str) -> float | None:
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


@cli.command()
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
    help="Minutes of runs to spend (e.g. 15m, 3h): the runs once (the pilot), then rounds that extend the runs whose "
    "claims are closest to a verdict, read by a group-sequential design; with --resume, this attempt's budget. A run "
    "that would not fit, or of unknown duration, is not started (with --inventory: only that).",
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
@_design_option(
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
    design,
) -> None:
    """Reproduce papers (icpe18, ssp17, fork24, or all): the plan with the time it takes here,
    the runs that are missing, and a verdict per claim in REPORT.md and report.html.

    Every bundle is verified before it is read; one that fails is left out (the report lists it
    under "Bundles left out", the verdicts come from the rest) and the exit status is then 1."""
    from pirex.reproduce import reproduction

    if resume_ and not artifact:  # a rerun of an artifact resumes as one
        artifact = reproduction.artifact_of(resume_)

    opts = reproduction.Options(
        list(papers),
        level,
        _fraction(precision, "--precision"),
        _fraction(confidence, "--confidence"),
        _duration(budget),
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
    )
    if whole_pilot and not opts.budget:
        raise PirexError("--whole-pilot says how --budget treats the first runs: give --budget too (e.g. 15m)")
    if artifact:
        ctx = click.get_current_context()
        given = {o for o in ("level", "confidence", "design") if ctx.get_parameter_source(o) != ParameterSource.DEFAULT}
        out = _rerun(opts, artifact, explicit_tag=tag, given=given)
    else:
        out = reproduction.reproduce(opts, reproduction.run_with_runner)
    left_out = json.loads((out / reproduction.STATE).read_text()).get("left_out") or {}
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
    resumed = {}
    if opts.resume:
        try:
            resumed = json.loads((opts.resume / reproduction.STATE).read_text())
        except (OSError, ValueError):
            raise PirexError(
                f"--resume {opts.resume}: no readable {reproduction.STATE} there "
                "(give a results/reproduce/<paper>-<id> folder)"
            ) from None
        rerun.check_resumed(resumed, opts.resume, artifact)
        opts.papers = opts.papers or resumed["papers"]
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
        if opts.resume:
            rerun.check_resumed(resumed, opts.resume, artifact, images)
        commit = git_version()[1]
        for line in rerun.preamble(opened, commit, images):
            click.echo(line)
        if not opts.resume and (line := rerun.adopt(opened, opts, given)):
            click.echo(line)
        opts.artifact = artifact.resolve()
        opts.artifact_images = images or None  # reused and resumed: only bundles that ran the artifact's images
        if images:  # a tag nothing on this machine is built under: the runs take the images regfile names
            opts.tag = f"artifact-{opened.meta.get('commit', 'unknown')[:12]}"
        with rerun.registry_file(regfile if images else None):  # for the runs only: the file goes with scratch
            out = reproduction.reproduce(opts, reproduction.run_with_runner)
        rerun.copy_inside(opened, out)
        rows = rerun.compare(opened, out)
        path = rerun.write(opened, out, rows, commit)
    click.echo(f"{rerun.agreement(rows)}: {path}")
    return out


@cli.command()
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


@cli.command()
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


@cli.command()
@click.option("--work-dir", type=click.Path(path_type=Path), default=".", show_default=True)
@click.option("--io-heavy", is_flag=True, help="The experiment writes a lot (warn about SD cards).")
@click.option("--min-free-disk-mb", type=int, default=0, show_default=True)
@click.option("--min-free-mem-mb", type=int, default=0, show_default=True)
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


@cli.group()
def images() -> None:
    """Build, publish and pull the image collection."""


def _platforms(text: str) -> list[plat.Platform]:
    return plat.parse_list(text)


@images.command("list")
def list_() -> None:
    """The images of the collection, from docker-bake.hcl."""
    for t in bake.catalog():
        click.echo(f"{t.name:10} {t.context:20} {', '.join(t.tags)}")


@images.command("bootstrap")
@click.option("--platforms", default="all", show_default=True, help=PLATFORMS_HELP)
@click.option("--refresh", is_flag=True, help="Make fresh Debian rootfs tarballs.")
def bootstrap_cmd(platforms: str, refresh: bool) -> None:
    """Build the offline stand-ins of debian, eclipse-temurin and maven into the local registry."""
    ps = _platforms(platforms)
    with localregistry.local_registry(), builder.builder() as b:
        for k, v in bootstrap.bootstrap(ps, plat.host(), b, refresh).items():
            click.echo(f"{k}={v}")


@images.command("build")
@click.option("--platforms", default="all", show_default=True, help=PLATFORMS_HELP)
@click.option(
    "--offline",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "1", "0"]),
    help="1: bases from Debian packages (no container registry needed); auto: when the public ones are unreachable.",
)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--refresh-bootstrap", is_flag=True, help="Offline: make fresh Debian rootfs tarballs.")
@click.argument("targets", nargs=-1)
def build_cmd(platforms: str, offline: str, tag: str | None, refresh_bootstrap: bool, targets: tuple[str, ...]) -> None:
    """Build every image (or TARGETS) for every platform into the local registry."""
    version, revision = git_version()
    ps = _platforms(platforms)  # bad input fails before any daemon starts
    with localregistry.local_registry() as host, builder.builder() as b:
        built = collection.build(
            b,
            host,
            platforms=ps,
            offline=offline,
            tag=tag or version,
            version=version,
            revision=revision,
            targets=list(targets),
            refresh_bootstrap=refresh_bootstrap,
        )
        for name, digest in built.digests.items():
            click.echo(f"{name}: {publish.local_ref(name, built.tag)}@{digest}")
        _print_sizes(host, list(built.digests), built.tag)


def _print_sizes(host: str, names: list[str], tag: str) -> None:
    rows, distinct = sizes.table(regclient.Registry(host), {n: f"{publish.LOCAL_NAMESPACE}/{n}" for n in names}, tag)
    click.echo(sizes.markdown(rows, distinct))


@images.command("sizes")
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
def sizes_cmd(tag: str | None) -> None:
    """Each image's size per platform and the distinct bytes of the collection."""
    tag = tag or git_version()[0]
    names = [t.name for t in bake.catalog()]
    with localregistry.local_registry() as host:
        rows, distinct = sizes.table(
            regclient.Registry(host), {n: f"{publish.LOCAL_NAMESPACE}/{n}" for n in names}, tag
        )
    click.echo(sizes.markdown(rows, distinct))


@images.command("load")
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--platform", "platform_", default="host", show_default=True, help="Which platform to load.")
@click.argument("names", nargs=-1)
def load_cmd(tag: str | None, platform_: str, names: tuple[str, ...]) -> None:
    """Put one platform of the images into the Docker engine, tagged as in the local registry (the
    compose files' names): this checkout's build, else imported or pulled by registry.yaml's digest."""
    tag = tag or git_version()[0]
    p = plat.host() if platform_ == "host" else plat.parse(platform_)
    with localregistry.local_registry():
        for name in names or [t.name for t in bake.catalog()]:
            got = sources.tagged_locally(name, tag, p)
            click.echo(f"{got['reference']} ({p}) <- {got['pinned']} ({got['origin']['kind']})")


@images.command("push")
@click.option("--registry", "dest", required=True, help="host[:port]/namespace to push to.")
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--registry-file", type=click.Path(path_type=Path), default=paths.REPO / "registry.yaml", show_default=True
)
def push_cmd(dest: str, tag: str | None, registry_file: Path) -> None:
    """Push every image as a multi-platform tag; write the digests into registry.yaml."""
    tag = tag or git_version()[0]
    names = [t.name for t in bake.catalog()]
    with localregistry.local_registry():
        publish.push(dest, tag, names, registry_file)
    click.echo(f"wrote {registry_file}")


@images.command("record")
@click.option(
    "--metadata", type=click.Path(path_type=Path, dir_okay=False), required=True, help="bake's metadata file."
)
@click.option("--tag", required=True, help="The tag the images were pushed with.")
@click.option(
    "--registry-file", type=click.Path(path_type=Path), default=paths.REPO / "registry.yaml", show_default=True
)
def record_cmd(metadata: Path, tag: str, registry_file: Path) -> None:
    """Write registry.yaml from a `docker buildx bake --push` of the collection (the release workflow)."""
    publish.record(metadata, tag, [t.name for t in bake.catalog()], registry_file)
    click.echo(f"wrote {registry_file}")


@images.command("pull")
@click.option(
    "--registry-file", type=click.Path(path_type=Path), default=paths.REPO / "registry.yaml", show_default=True
)
@click.option("--platform", "platform_", default="host", show_default=True, help="Which platform to pull.")
@click.argument("names", nargs=-1)
def pull_cmd(registry_file: Path, platform_: str, names: tuple[str, ...]) -> None:
    """Pull every image by the digest in registry.yaml and check it is what registry.yaml names."""
    p = plat.host() if platform_ == "host" else plat.parse(platform_)
    publish.pull(registry_file, p, list(names) or None)


@images.command("ensure")
@click.option("--platforms", default="host", show_default=True, help="host, or the one platform to run.")
@click.option("--offline", default="auto", show_default=True, type=click.Choice(["auto", "1", "0"]))
@click.option("--tag", default=None, help="Image tag of local builds (default: git describe of the checkout).")
@click.option("--experiment", "experiments", multiple=True, help="The images this experiment runs (repeatable).")
@click.argument("targets", nargs=-1)
def ensure_cmd(
    platforms: str, offline: str, tag: str | None, experiments: tuple[str, ...], targets: tuple[str, ...]
) -> None:
    """make run's first step: pull what registry.yaml publishes for this platform (verified), build the rest."""
    from pirex.core import experiment

    [p] = _platforms(platforms)
    targets += tuple(name for e in experiments for name in experiment.load(e).images)
    with localregistry.local_registry():
        rest = sources.ensure(
            list(dict.fromkeys(targets)) or [t.name for t in bake.catalog()], tag or git_version()[0], p
        )
    if rest:
        build_cmd.callback(str(p), offline, tag, False, tuple(rest))


@images.command("export")
@click.option("--platforms", default="all", show_default=True, help=PLATFORMS_HELP)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option("--registry-file", type=click.Path(path_type=Path), default=None, help="default: registry.yaml")
@click.argument("file", type=click.Path(path_type=Path))
@click.argument("names", nargs=-1)
def export_cmd(platforms: str, tag: str | None, registry_file: Path | None, file: Path, names: tuple[str, ...]) -> None:
    """Write every image (or NAMES) with its digests into one OCI archive, for a lab without registry access."""
    from pirex.images import archive

    with localregistry.local_registry():
        sizes_ = archive.export(
            file,
            list(names) or [t.name for t in bake.catalog()],
            tag or git_version()[0],
            _platforms(platforms),
            registry_file or sources.registry_file(),
        )
    for p, n in sizes_.items():
        click.echo(f"{p}: {n / 2**20:.0f} MiB")
    click.echo(f"wrote {file} ({file.stat().st_size / 2**20:.0f} MiB, shared layers once)")


@images.command("import")
@click.option("--registry-file", type=click.Path(path_type=Path), default=None, help="default: registry.yaml")
@click.argument("file", type=click.Path(path_type=Path))
def import_cmd(registry_file: Path | None, file: Path) -> None:
    """Put this machine's platform of an archive's images where `pirex run` takes them, digests checked."""
    from pirex.images import archive

    with localregistry.local_registry():
        for i in archive.import_(file, plat.host(), registry_file or sources.registry_file()):
            click.echo(f"{i.name}: {i.index_digest} -> {publish.local_ref(i.name, i.tag)} ({i.image_id})")


@cli.command("artifact")
@click.argument("paper", required=False, metavar="PAPER")
@click.argument("out", required=False, type=click.Path(path_type=Path), metavar="OUT")
@click.option(
    "--level",
    default="kick-the-tires",
    show_default=True,
    type=click.Choice(["kick-the-tires", "full"]),
    help="The level whose commands and times ARTIFACT.md gives (with --check: the level whose times are checked).",
)
@click.option(
    "--reproduction",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A reproduction of PAPER (results/reproduce/<id>): its report, state and the bundles it judged go in.",
)
@click.option(
    "--images",
    "platforms",
    default="",
    metavar="PLATFORMS",
    help="The paper's images in one OCI archive, for these platforms (comma-separated: linux/amd64, linux/arm64, "
    "linux/arm/v7; all; host); default: none. A committee's artifact should have them (its rerun needs no registry).",
)
@click.option("--tag", default=None, help="With --images: the images' tag (default: git describe of the checkout).")
@click.option(
    "--check",
    "check_",
    is_flag=True,
    help="The badge self-check, of this repository or of the artifact given (a folder or a .tar): exit 1 on a FAIL.",
)
def artifact_cmd(paper, out, level, reproduction, platforms, tag, check_) -> None:
    """What an artifact evaluation committee takes away: `pirex artifact PAPER OUT` writes a folder, or a tar when
    OUT ends in .tar (source at its commit, claims, SHA256SUMS, CITATION.cff, .zenodo.json, ARTIFACT.md);
    `pirex artifact --check [ARCHIVE_OR_DIR]` prints one line per item (docs/artifact.md)."""
    if check_:
        from pirex.artifact import check

        if out is not None:
            raise PirexError("pirex artifact --check [ARCHIVE_OR_DIR]: one artifact at most (none: this repository)")
        results = check.run_artifact(Path(paper), level) if paper else check.run(level=level)
        for line in check.lines(results):
            click.echo(line)
        if not all(ok for _, ok, _ in results):
            sys.exit(1)
        return
    from pirex.artifact import pack
    from pirex.reproduce import claims

    if not paper or out is None:
        raise PirexError(
            f"pirex artifact PAPER OUT: give a paper ({', '.join(claims.available())}) and where to write its artifact "
            "(a new folder, or a file ending in .tar); or --check"
        )
    pack.pack(paper, out, level, reproduction, platforms, tag=tag)
    for line in pack.summary(out):
        click.echo(line)


def _terminate(signum, _frame):
    # SIGTERM/SIGHUP unwind like Ctrl-C, so every daemon and container pirex started is stopped.
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("pirex: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except PirexError as e:
        click.echo(f"pirex: error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("pirex: interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # no input may end in a traceback: one line naming the problem (-v shows where)
        from pirex.core import errors

        if "-v" in sys.argv[1:2] or "--verbose" in sys.argv[1:2]:
            log.exception("the traceback:")
        click.echo(f"pirex: error: {errors.describe(e, sys.argv[1:])}", err=True)
        sys.exit(1)
