"""pirex images: build, publish, pull, export and import the image collection (pirex/images/)."""

from __future__ import annotations

from pathlib import Path

import click

from pirex.core import paths
from pirex.core.paths import git_version
from pirex.images import bake, bootstrap, builder, collection, localregistry, publish, regclient, sizes, sources
from pirex.images import platforms as plat

PLATFORMS_HELP = "comma-separated: linux/amd64, linux/arm64, linux/arm/v7; 'all' (default) or 'host'"


@click.group()
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
@click.option("--paper", "papers", multiple=True, help="The images this paper's claims run (repeatable).")
@click.argument("targets", nargs=-1)
def ensure_cmd(
    platforms: str,
    offline: str,
    tag: str | None,
    experiments: tuple[str, ...],
    papers: tuple[str, ...],
    targets: tuple[str, ...],
) -> None:
    """make run's first step: pull what registry.yaml publishes for this platform (verified), build the rest."""
    from pirex.core import experiment
    from pirex.reproduce import claims

    [p] = _platforms(platforms)
    experiments += tuple(c.experiment for name in papers for c in claims.load(name).claims if c.experiment)
    targets += tuple(name for e in dict.fromkeys(experiments) for name in experiment.load(e).images)
    if not targets and (papers or experiments):
        click.echo("pirex: the experiments asked for run no image: nothing to pull or build")
        return
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
