"""`pirex artifact PAPER OUT`: what an artifact evaluation committee takes away, as a folder or (OUT ending in .tar)
one tar holding a folder of OUT's name:

    source/              pirex at its commit (`git archive HEAD`: committed files only)
    claims/PAPER/        the paper's claims.yaml and the published tables beside it
    reproduction/        with --reproduction results/reproduce/<id>: its REPORT.md, report.html (figures/ and
                         tables/, which REPORT.md shows), state.json and the bundles it judged of the paper's
                         experiments (bundles/<experiment>/<run>/), each verified before it is copied
    images/pirex-images.tar   with --images PLATFORMS: the paper's images by digest, one OCI archive
                         (pirex/images/archive.py; `pirex images import` loads it); a committee's artifact should
                         have them, so that the rerun needs no registry
    CITATION.cff, .zenodo.json, ARTIFACT.md (appendix.py), artifact.json (the same facts for `pirex reproduce
    --artifact`), SHA256SUMS (every other file)

Written atomically: everything goes into a temporary folder beside OUT, which becomes OUT in one rename (a tar is
linked into place), so OUT is whole or absent. An existing OUT is refused, never overwritten."""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pirex import __version__
from pirex.artifact import appendix, citation
from pirex.core import experiment, proc
from pirex.core.bundle import Bundle, Verifier, sha256
from pirex.core.errors import PirexError
from pirex.core.paths import REPO, git_version
from pirex.images import platforms as plat
from pirex.images import registryfile
from pirex.reproduce import claims as claims_mod
from pirex.reproduce import plan
from pirex.reproduce.state import STATE, ReproductionState

REPORT_FILES = ("REPORT.md", "report.html", STATE)
REPORT_FOLDERS = ("figures", "tables")  # what REPORT.md links to
IMAGES = "images/pirex-images.tar"
META = "artifact.json"  # what ARTIFACT.md says of the artifact, for `pirex reproduce --artifact` to read
SUMS = "SHA256SUMS"

ExportImages = Callable[[Path, list[str], list[plat.Platform], str], None]


def _git(root: Path, *args: str) -> str:
    r = proc.run(["git", "-C", root, *args], timeout=120, check=False)
    if not r.ok:
        last = ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1]
        raise PirexError(
            f"git {args[0]} failed in {root}: {last} (pirex artifact packs the source of a git checkout at its commit)"
        )
    return r.stdout.strip()


def _source(root: Path, into: Path, scratch: Path) -> tuple[str, bool, int]:
    """source/: the checkout's HEAD (`git archive`); (commit, uncommitted changes left out, commit time)."""
    commit = _git(root, "rev-parse", "HEAD")
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    when = int(_git(root, "log", "-1", "--format=%ct", "HEAD"))
    tar = scratch / "source.tar"
    _git(root, "archive", "--format=tar", "-o", str(tar), "HEAD")
    into.mkdir(parents=True)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    tar.unlink()
    return commit, dirty, when


def _experiments(paper: claims_mod.Paper) -> list[str]:
    return list(dict.fromkeys(c.experiment for c in paper.claims if c.experiment))


def _state(reproduction: Path, paper: claims_mod.Paper) -> ReproductionState:
    try:
        state = ReproductionState.read(reproduction)
    except PirexError:
        raise PirexError(
            f"--reproduction {reproduction}: no readable {STATE} there (give a results/reproduce/<id> folder that "
            "`pirex reproduce` wrote)"
        ) from None
    papers = state.papers
    if papers not in ([], ["all"]) and paper.id not in papers:
        raise PirexError(
            f"--reproduction {reproduction} reproduced {', '.join(papers)}, not {paper.id}: give a reproduction of "
            f"{paper.id} (pirex reproduce {paper.id})"
        )
    if not (reproduction / "REPORT.md").is_file():
        raise PirexError(f"--reproduction {reproduction}: no REPORT.md (an unfinished reproduction? resume it first)")
    return state


def _bundles(state: ReproductionState, paper: claims_mod.Paper) -> list[Path]:
    """The bundles the reproduction judged (its runs, and those given by hand) of the paper's experiments, each
    verified (sizes and sha256 digests): one that fails stops the packing, naming it."""
    from pirex.reproduce import sources

    left_out = set(state.left_out or {})
    paths = state.bundle_paths()
    if state.given:
        paths += sources.given_bundles(state.given)
    paths = [p for p in dict.fromkeys(paths) if str(p) not in left_out]
    gone = [p for p in paths if not p.is_dir()]
    if gone:
        raise PirexError(f"the reproduction's bundle {gone[0]} is not there any more: run the reproduction again")
    wanted = set(_experiments(paper))
    out = [p for p in paths if Bundle.open(p).experiment in wanted]
    Verifier().refuse(out)
    return out


def _bundle_dest(path: Path) -> Path:
    """bundles/<experiment>/<run>[/<host>]: the path below results/ where it has one."""
    parts = path.resolve().parts
    if "results" in parts:
        return Path(*parts[len(parts) - parts[::-1].index("results") :])
    return Path(Bundle.open(path).experiment, path.name)


def copy_report(reproduction: Path, into: Path) -> None:
    """A reproduction's report into a new folder: REPORT.md, report.html and state.json, and the figures/ and
    tables/ REPORT.md shows (what an artifact holds, and what its rerun copies beside its own)."""
    into.mkdir(parents=True)
    for name in REPORT_FILES:
        if (reproduction / name).is_file():
            shutil.copy2(reproduction / name, into / name)
    for name in REPORT_FOLDERS:
        if (reproduction / name).is_dir():
            shutil.copytree(reproduction / name, into / name)


def _reproduction(reproduction: Path, paper: claims_mod.Paper, into: Path) -> dict:
    """reproduction/: its report, state and bundles; what ARTIFACT.md says of it."""
    state = _state(reproduction, paper)
    bundles = _bundles(state, paper)
    copy_report(reproduction, into)
    images, ran = {}, set()
    for b in bundles:
        shutil.copytree(b, into / "bundles" / _bundle_dest(b), symlinks=True)
        for name, image in Bundle.open(b).images.items():
            images[image["digest"]] = f"{image.get('name', '?')}@{image['digest']} ({image.get('platform', '?')})"
            ran.add((image.get("name", name), image.get("platform", "?"), image["digest"]))
    verdicts = {k: v for k, v in (state.verdicts or {}).items() if k.startswith(f"{paper.id}:")}
    return {
        "id": reproduction.name,
        "level": state.level or "?",
        "verdicts": verdicts,
        "images": sorted(images.values()),
        "ran": sorted(ran),  # (image, platform, platform manifest digest): what the images archive must hold
        "bundles": len(bundles),
    }


def _check_ran(file: Path, ran: list[tuple[str, str, str]], platforms: list[plat.Platform], tag: str) -> None:
    """The archive holds, for each of its platforms, the very images the reproduction inside ran: else its rerun
    would compare verdicts of other images with them (a rebuild since, another tag)."""
    from pirex.images import archive

    held = archive.platform_digests(file)
    wanted = {str(p) for p in platforms}
    # a bundle names the platform manifest it ran, or the manifest list where it pulled a published image
    other = [(n, p, d) for n, p, d in ran if p in wanted and d not in held.get((n, p), ())]
    if other:
        n, p, d = other[0]
        got = held[n, p][1] if (n, p) in held else "none"
        raise PirexError(
            f"the images exported under tag {tag} are not those the reproduction ran: {n} ({p}) ran {d}, the archive "
            f"holds {got}{f' (and {len(other) - 1} more)' if len(other) > 1 else ''}; give --tag the tag of the "
            "images it ran, or reproduce again on these"
        )


def export_images(file: Path, names: list[str], platforms: list[plat.Platform], tag: str) -> None:
    """The images into one OCI archive by digest, as `pirex images export` writes it (needs the local registry
    with the images built under tag, or registry.yaml's published digests)."""
    from pirex.images import archive, localregistry, sources

    with localregistry.local_registry():
        archive.export(file, names, tag, platforms, sources.registry_file())


def write_sums(top: Path) -> int:
    files = sorted(p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file() and not p.is_symlink())
    files = [f for f in files if f != SUMS]
    (top / SUMS).write_text("".join(f"{sha256(top / f)}  {f}\n" for f in files))
    return len(files)


def _tar(top: Path, file: Path, mtime: int) -> None:
    """A tar of the folder, its members sorted and owned by no one, dated at the commit: the same folder gives the
    same bytes."""

    def normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = mtime
        return info

    with tarfile.open(file, "w") as tar:
        tar.add(top, arcname=top.name, recursive=False, filter=normal)
        for p in sorted(top.rglob("*")):
            tar.add(p, arcname=f"{top.name}/{p.relative_to(top).as_posix()}", recursive=False, filter=normal)


def _check_out(out: Path) -> None:
    if out.exists() or out.is_symlink():
        raise PirexError(f"{out} exists: pirex artifact never overwrites; give a new path, or remove it first")
    if not out.parent.is_dir():
        raise PirexError(f"{out.parent} is not a directory: create it, or give OUT in an existing one")


def _top_name(out: Path) -> str:
    name = out.name[: -len(".tar")] if out.name.endswith(".tar") else out.name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise PirexError(f"{out}: a name of letters, digits, '.', '_' and '-' (the folder the committee unpacks)")
    return name


def pack(
    paper_id: str,
    out: Path,
    level: str = appendix.LEVEL,
    reproduction: Path | None = None,
    platforms: str = "",
    root: Path = REPO,
    export: ExportImages = export_images,
    tag: str | None = None,
) -> Path:
    """Write the artifact of a paper to OUT (a folder, or a tar when OUT ends in .tar); returns OUT."""
    out = Path(out)
    paper = claims_mod.load(paper_id)  # a bad PAPER: the error pirex reproduce gives
    plan.check_level(level)
    _check_out(out)
    top_name = _top_name(out)
    chosen = plat.parse_list(platforms) if platforms else []  # bad input fails before anything is written
    try:
        registry = registryfile.load(root / "registry.yaml")
    except PirexError:
        registry = {}
    made_with = " ".join(
        ["pirex artifact", paper.id, out.name]
        + (["--level", level] if level != appendix.LEVEL else [])
        + (["--reproduction", str(reproduction)] if reproduction else [])
        + (["--images", platforms] if platforms else [])
        + (["--tag", tag] if tag and platforms else [])
    )
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent)).resolve()
    try:
        top = scratch / top_name
        top.mkdir()
        commit, dirty, when = _source(root, top / "source", scratch)
        shutil.copytree(paper.path.parent, top / "claims" / paper.id)
        cited = citation.of_artifact(paper, root)
        contents = appendix.Contents(
            paper,
            level,
            commit,
            __version__,
            made_with,
            dirty,
            deviations=claims_mod.deviations([paper]),
            cites_paper=cited.cites_paper,
        )
        if reproduction is not None:
            contents.reproduction = _reproduction(Path(reproduction), paper, top / "reproduction")
        if chosen:
            names = list(dict.fromkeys(i for e in _experiments(paper) for i in experiment.load(e).images))
            (top / IMAGES).parent.mkdir()
            export(top / IMAGES, names, chosen, tag or git_version()[0])
            if contents.reproduction:
                _check_ran(top / IMAGES, contents.reproduction["ran"], chosen, tag or git_version()[0])
            contents.images, contents.platforms = IMAGES, ", ".join(map(str, chosen))
        citation.write(cited, top, paper)  # the paper preferred, pirex referenced; checked
        (top / "ARTIFACT.md").write_text(appendix.markdown(contents, appendix.rows(paper, level, registry)))
        (top / META).write_text(json.dumps(_meta(contents), indent=2) + "\n")
        write_sums(top)
        _place(top, out, scratch, when)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def _meta(c: appendix.Contents) -> dict:
    return {
        "paper": c.paper.id,
        "level": c.level,
        "commit": c.commit,
        "uncommitted_changes_left_out": c.dirty,
        "version": c.version,
        "made_with": c.made_with,
        "images": {"file": c.images, "platforms": c.platforms.split(", ")} if c.images else None,
        "reproduction": {k: c.reproduction[k] for k in ("id", "level", "bundles")} if c.reproduction else None,
    }


def _place(top: Path, out: Path, scratch: Path, mtime: int) -> None:
    """The finished folder (or its tar) becomes OUT in one step; OUT made meanwhile by someone else is kept."""
    if out.name.endswith(".tar"):
        tmp = scratch / "artifact.tar"
        _tar(top, tmp, mtime)
        try:
            os.link(tmp, out)  # fails when OUT exists: never overwritten
        except FileExistsError:
            raise PirexError(f"{out} appeared while the artifact was made: left as it is") from None
        return
    if out.exists():
        raise PirexError(f"{out} appeared while the artifact was made: left as it is")
    os.rename(top, out)


def summary(out: Path) -> Sequence[str]:
    """What `pirex artifact` prints once OUT is written."""
    size = out.stat().st_size if out.is_file() else sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return [f"wrote {out} ({size / 2**20:.1f} MiB)", f"check it: pirex artifact --check {out}"]
