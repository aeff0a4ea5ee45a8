"""pirex artifact: what an artifact evaluation committee takes away, and its badge self-check (pirex/artifact/)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pirex.core.errors import PirexError


@click.command("artifact")
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
