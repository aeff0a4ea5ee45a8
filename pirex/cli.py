"""The pirex command line. `pirex --help` lists the commands; the Makefile calls these."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

import click

from pirex import __version__, paths
from pirex.errors import PirexError
from pirex.images import bake, bootstrap, builder, collection, localregistry, publish, regclient, sizes
from pirex.images import platforms as plat
from pirex.paths import git_version

log = logging.getLogger("pirex")

PLATFORMS_HELP = "comma-separated: linux/amd64, linux/arm64, linux/arm/v7; 'all' (default) or 'host'"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pirex")
@click.option("-v", "--verbose", is_flag=True, help="Log every command pirex runs.")
def cli(verbose: bool) -> None:
    """pirex: replicable performance experiments for the Raspberry Pi, natively and in Docker."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format="pirex: %(message)s", stream=sys.stderr
    )


def _overrides(pairs: tuple[str, ...]) -> dict:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise PirexError(f"--set {p!r}: expected NAME=VALUE, e.g. --set repetitions=5")
        out[key] = int(value) if value.isdigit() else value
    return out


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
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Override a parameter (recorded).")
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
@click.option("--matrix", default=None, help="Run a matrix of cases instead (moobench: fluctuation, ICPE'18 Table 5).")
@click.option("--trace", is_flag=True, help="ftrace around each step, as the experiment declares (fork; needs root).")
@click.option(
    "--soak",
    default=None,
    metavar="DURATION",
    help="jpa-rest: hold the load for DURATION (e.g. 10m) per step, sampling the service's heap and RSS.",
)
def run(experiments, profile, variants, order, seed, sets, results_dir, tag, resume_, force, platform_, matrix,
        trace, soak) -> None:  # fmt: skip
    """Run experiments (default: all) natively and in Docker; each writes one result bundle."""
    from pirex import experiment as experiment_mod
    from pirex.runner import run as runner

    if resume_:
        runner.resume(resume_)
        return
    ids = list(experiments) or experiment_mod.available()
    if not experiments and (matrix or trace):  # all: only those that declare the matrix or tracing
        ids = [i for i in ids if (not matrix or matrix in experiment_mod.load(i).matrices)
               and (not trace or experiment_mod.load(i).tracing)]  # fmt: skip
        if not ids:
            raise PirexError("no experiment declares " + (f"the matrix {matrix!r}" if matrix else "tracing"))
    if not ids:
        click.echo("pirex: no experiment yet.")
        return
    for exp_id in ids:  # every named experiment checked before the first one runs
        experiment_mod.load(exp_id)
    for exp_id in ids:
        runner.run(runner.Options(exp_id, profile, variants, order, seed, results_dir, tag or git_version()[0],
                                  _overrides(sets), force, platform_, matrix, trace, soak))  # fmt: skip


@cli.command("compose")
@click.argument("experiment_id", metavar="EXPERIMENT", type=click.Choice(["jpa-rest"]))
@click.option("--profile", default="quick", show_default=True, type=click.Choice(["quick", "paper"]))
@click.option("--customers", type=int, default=None, help="Rows to load (default: quick 10,000; paper 10,000,000).")
@click.option("--users", type=int, default=16, show_default=True, help="Concurrent Locust users (the paper's 16).")
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--tag", default=None, help="Image tag (default: git describe of the checkout).")
@click.option(
    "--role",
    type=click.Choice(["db", "web", "driver"]),
    default=None,
    help="This host's role of the split run (compose/<role>.yml), with its machine record.",
)
@click.option("--env-file", type=click.Path(path_type=Path), default=None, help="With --role: the run's .env file.")
@click.option("--down", is_flag=True, help="With --role: stop this host's role (native or docker).")
@click.option("--native", is_flag=True, help="With --role db|web: natively (chroot, host network).")
@click.option("--foreground", is_flag=True, hidden=True, help="With --native: hold the role in this process.")
def compose_cmd(experiment_id, profile, customers, users, results_dir, tag, role, env_file, down, native,
                foreground) -> None:  # fmt: skip
    """Run ICPE'18 Experiment 3 on this machine with docker compose (compose/jpa-rest.yml), then Table 3;
    or, with --role, this host's part of the run split over two Pis and a laptop (--native: the database
    or the service natively, the paper's configurations 1, 3 and 5)."""
    from pirex.runner import compose, native_role

    if role or env_file or down or native:
        if not (role and env_file):
            raise PirexError("--role and --env-file go together (e.g. --role db --env-file compose/pair.env)")
        if not env_file.is_file():
            raise PirexError(f"--env-file {env_file}: no such file (copy compose/example.env and fill it in)")
        if native and role == "driver":
            raise PirexError("--native is for the db and web roles; the driver is the same container for all")
        if down and role != "driver" and native_role.stop(role, env_file):
            click.echo(f"{role}: native role stopped")
            return
        if native and foreground:
            native_role.serve(role, env_file)
            return
        if native:
            out = native_role.start(role, env_file)
            click.echo(f"{role}: serving natively; machine record and what ran in {out}")
            return
        out = compose.role(role, env_file, down)
        if down:
            click.echo(f"{role}: down")
        elif role == "driver":  # the run has ended: its table, naming the placement from the records beside it
            click.echo(f"driver: done; results in {out}\n")
            _table_jpa([out], results_dir / "tables" / "jpa-rest")
        else:
            click.echo(f"{role}: up; machine record and images in {out}")
        return
    out = compose.run(tag or git_version()[0], results_dir, profile, customers, users)
    click.echo(f"results: {out}\n")
    _table_jpa([out], results_dir / "tables" / "jpa-rest")


def _bundles_or_latest(experiment_id: str, bundles: tuple[Path, ...], results_dir: Path,
                       matrix: bool | None = None) -> list[Path]:  # fmt: skip
    """The given bundles, or the newest of the experiment (a matrix run, or not, when matrix says so)."""
    if bundles:
        return list(bundles)
    found = sorted(p for p in (results_dir / experiment_id).glob("*") if (p / "manifest.json").exists())
    if matrix is not None:
        found = [p for p in found if _is_matrix_run(p) == matrix]
    if not found:
        how = f"pirex run {experiment_id}" + (" --matrix fluctuation" if matrix else "")
        raise PirexError(f"no {experiment_id} bundle under {results_dir}: run `{how}` first")
    return [found[-1]]


def _is_matrix_run(bundle: Path) -> bool:
    run = bundle / "run.json"
    return run.exists() and bool(json.loads(run.read_text()).get("matrix"))


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Where CSV and LaTeX go (default: <results-dir>/tables/<experiment>).",
)
def table(experiment_id: str, bundles, results_dir: Path, out: Path | None) -> None:
    """The paper's table from bundles (default: the newest), as Markdown; CSV and LaTeX beside.

    Tables: jmh (ICPE'18 Table 1), moobench (ICPE'18 Table 2, SSP'17 Table 1, overheads),
    moobench-fluctuation (ICPE'18 Table 5, from a --matrix fluctuation bundle), fork (thesis)."""
    tables = {"jmh": _table_jmh, "moobench": _table_moobench, "moobench-fluctuation": _table_fluctuation,
              "fork": _table_fork, "jpa-rest": _table_jpa}  # fmt: skip
    if experiment_id not in tables:
        raise PirexError(f"no table {experiment_id!r} (tables: {', '.join(tables)})")
    experiment_dir = "moobench" if experiment_id == "moobench-fluctuation" else experiment_id
    if experiment_id == "jpa-rest" and not bundles:  # bundles of `pirex run`, or compose runs (requests.csv)
        d = results_dir / "jpa-rest"
        found = [*d.glob("*/manifest.json"), *d.glob("*/requests.csv")]
        if not found:
            raise PirexError(f"no jpa-rest run under {results_dir}: run `pirex run jpa-rest` or `make jpa-rest` first")
        bundles = (max(found, key=lambda f: f.stat().st_mtime).parent,)
    paths_ = _bundles_or_latest(experiment_dir, bundles, results_dir, matrix=experiment_id == "moobench-fluctuation")
    out = out or results_dir / "tables" / experiment_id
    tables[experiment_id](paths_, out)
    click.echo(f"\n(from {', '.join(map(str, paths_))}; CSV and LaTeX in {out})")


def _table_jmh(paths_: list[Path], out: Path) -> None:
    from pirex.analysis import jmh, tidy

    rows = [r for b in paths_ for r in tidy.jmh_rows(b)]
    lines = jmh.table1(rows)
    jmh.write_csv(lines, out / "table1.csv")
    tidy.write_csv(rows, out / "tidy.csv")
    (out / "table1.tex").write_text(jmh.latex(lines))
    click.echo(jmh.markdown(lines, jmh.ratios(rows)))


def _write_tables(module, named: dict, out: Path) -> None:
    for name, t in named.items():
        module.write_csv(t, out / f"{name}.csv")
        (out / f"{name}.tex").write_text(module.latex(t))
        click.echo(module.markdown(t) + "\n")


def _table_moobench(paths_: list[Path], out: Path) -> None:
    from pirex.analysis import moobench

    results = moobench.analyse(paths_)
    _write_tables(moobench, {"table2": moobench.table2(results), "table1": moobench.table1(results),
                             "overhead": moobench.overhead_table(results)}, out)  # fmt: skip
    for f in moobench.figure(results, out / "response-time"):
        click.echo(f"figure: {f}")


def _table_fluctuation(paths_: list[Path], out: Path) -> None:
    from pirex.analysis import moobench

    results = moobench.analyse(paths_)
    _write_tables(moobench, {"table5": moobench.table5(results)}, out)
    for b in paths_:  # what this machine could not run, and why (run.json)
        run_info = json.loads((b / "run.json").read_text())
        for case, why in run_info.get("skipped_variants", {}).items():
            click.echo(f"skipped here ({b.name}): {case}: {why}")
        for case, notes in ((run_info.get("matrix") or {}).get("notes") or {}).items():
            click.echo(f"note ({b.name}): {case}: {'; '.join(notes)}")
    for f in moobench.figure(results, out / "response-time"):
        click.echo(f"figure: {f}")


def _table_jpa(paths_: list[Path], out: Path) -> None:
    from pirex.analysis import jpa, tidy

    runs = []
    for p in paths_:
        if (p / "manifest.json").exists():
            runs += jpa.runs_from_bundle(p)
            continue
        record = next((p / f for f in ("machine.json", "machine-driver.json") if (p / f).exists()), None)
        before = json.loads(record.read_text())["before"] if record else {}
        runs += jpa.runs_from_dirs({jpa.placement(p) or "docker": p}, device=tidy.device_of(before) if before else "",
                                   storage=tidy.storage_of(before) if before else "")  # fmt: skip
    results = jpa.analyse(runs)
    named = {"table3": jpa.table3(results), "overhead": jpa.overhead_table(results)}
    trends = [t for p in paths_ if (p / "manifest.json").exists() for t in jpa.memory_trends(p)]
    if trends:
        named["memory"] = jpa.memory_table(trends)
    _write_tables(jpa, named, out)


def _table_fork(paths_: list[Path], out: Path) -> None:
    from pirex.analysis import fork

    rows = [r for b in paths_ for r in fork.rows(b)]
    notes = [n for b in paths_ for n in fork.notes(b)]
    lines = fork.table(rows)
    fork.write_csv(lines, out / "fork.csv")
    fork.write_rows_csv(rows, out / "tidy.csv")
    click.echo(fork.markdown(lines, notes))
    _trace_tables(paths_, out)


def _trace_tables(paths_: list[Path], out: Path, depth: int = 1) -> None:
    """From the traces of `pirex run fork --trace`: the calls as CSV, folded stacks and a flame
    graph per mode, and the thesis's Table 6.1 (concurrent minus single per depth)."""
    from pirex.analysis import ftrace

    # keyed by (variant, mode): native and docker are never pooled; only completed steps count
    calls: dict[tuple[str, str], list] = {}
    for b in paths_:
        for step in json.loads((b / "manifest.json").read_text())["completed"]:
            trace = b / step["variant"] / str(step["repetition"]) / "trace.txt"
            if trace.exists():
                for mode, lines in ftrace.by_mode(trace.read_text().splitlines()).items():
                    calls.setdefault((step["variant"], mode), []).extend(ftrace.parse(lines))
    if not calls:
        run_info = [json.loads((b / "run.json").read_text()).get("trace") for b in paths_ if (b / "run.json").exists()]
        for t in filter(None, run_info):
            if not t.get("enabled"):
                click.echo(f"\nno ftrace hotspots: tracing was skipped: {t['reason']}")
        return
    for (variant, mode), cs in sorted(calls.items()):
        name = f"{variant}-{mode}"
        ftrace.write_csv(cs, out / f"ftrace-{name}.csv")
        folded = ftrace.folded(cs)
        (out / f"ftrace-{name}.folded").write_text("\n".join(folded) + "\n")
        if folded:
            svg = ftrace.flamegraph_svg(folded, out / f"flamegraph-{name}.svg", f"fork() {mode}, {variant}")
            click.echo(f"flame graph: {svg}")
    for variant in sorted({v for v, _ in calls}):
        if (variant, "single") in calls and (variant, "concurrent") in calls:
            click.echo(f"\n{variant}: concurrent minus single, µs per fork, functions at depth {depth} "
                       "(thesis Table 6.1):\n")  # fmt: skip
            table = ftrace.depth_table(calls[(variant, "single")], calls[(variant, "concurrent")], depth)
            click.echo(ftrace.depth_markdown(table))


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT", type=click.Choice(["fork", "moobench"]))
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Where the PNG and SVG go (default: <results-dir>/figures/<experiment>).")  # fmt: skip
def plot(experiment_id: str, bundles, results_dir: Path, out: Path | None) -> None:
    """The papers' figures from bundles (default: the newest): fork, per counter against the
    mapped size (give a Pi's and a server's bundle to compare them); moobench, the response
    time per 1,000 calls over the run."""
    paths_ = _bundles_or_latest(experiment_id, bundles, results_dir, matrix=False)  # not a fluctuation bundle
    out = out or results_dir / "figures" / experiment_id
    if experiment_id == "fork":
        from pirex.analysis import fork

        files = fork.plot(paths_, out)
    else:
        from pirex.analysis import moobench

        files = moobench.figure(moobench.analyse(paths_), out / "response-time")
    for f in files:
        click.echo(f"figure: {f}")


@cli.command()
@click.argument("experiment_id", metavar="EXPERIMENT")
@click.argument("bundles", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--reference", default="icpe18", show_default=True, type=click.Choice(["icpe18"]))
@click.option("--results-dir", type=click.Path(path_type=Path), default=paths.REPO / "results", show_default=True)
def compare(experiment_id: str, bundles, reference: str, results_dir: Path) -> None:
    """Our results beside the published table, as ratios comparable across hardware."""
    if experiment_id == "moobench":
        from pirex.analysis import moobench

        results = moobench.analyse(_bundles_or_latest(experiment_id, bundles, results_dir, matrix=False))
        click.echo(moobench.compare_markdown(moobench.compare(results)))
        return
    if experiment_id != "jmh":
        raise PirexError(f"no published reference for {experiment_id!r} (jmh and moobench: icpe18)")
    from pirex.analysis import jmh, tidy

    rows = [r for b in _bundles_or_latest(experiment_id, bundles, results_dir) for r in tidy.jmh_rows(b)]
    click.echo(jmh.compare_markdown(jmh.compare(rows)))


@cli.command()
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
def verify(bundles) -> None:
    """Check every file of result bundles against their manifests; exit 1 on any problem."""
    from pirex.bundle import verify as verify_bundle

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
    from pirex import machine as machine_record

    click.echo(json.dumps(machine_record.record(work_dir, docker=not no_docker), indent=2))


@cli.command()
@click.option("--work-dir", type=click.Path(path_type=Path), default=".", show_default=True)
@click.option("--io-heavy", is_flag=True, help="The experiment writes a lot (warn about SD cards).")
@click.option("--min-free-disk-mb", type=int, default=0, show_default=True)
@click.option("--min-free-mem-mb", type=int, default=0, show_default=True)
def doctor(work_dir: Path, io_heavy: bool, min_free_disk_mb: int, min_free_mem_mb: int) -> None:
    """Check the machine before a run and say what to fix; exit 1 when something must be fixed."""
    from pirex import machine as machine_record
    from pirex import preflight

    findings = preflight.check(
        machine_record.record(work_dir),
        min_free_disk_bytes=min_free_disk_mb << 20,
        min_free_mem_bytes=min_free_mem_mb << 20,
        io_heavy=io_heavy,
    )
    for f in findings:
        click.echo(f"{f.level.upper():4}  {f.check:12} {f.message}" + (f"\n      fix: {f.fix}" if f.fix else ""))
    if preflight.worst(findings) == "fail":
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
    """Put one platform of built images into the Docker engine, tagged as in the local registry."""
    tag = tag or git_version()[0]
    p = plat.host() if platform_ == "host" else plat.parse(platform_)
    with localregistry.local_registry():
        for name in names or [t.name for t in bake.catalog()]:
            ref, local = publish.load_local(name, tag, p)
            click.echo(f"{local} ({p}) <- {ref}")


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
