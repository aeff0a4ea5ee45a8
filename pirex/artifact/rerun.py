"""`pirex reproduce PAPER --artifact ARTIFACT`: a committee's rerun from an artifact alone (pack.py), on another
machine and offline. Every checksum is checked first, the images are loaded from the artifact's OCI archive into
the local registry (digests checked, as `pirex images import` does), the reproduction runs on them, and its folder
gets the report that was inside the artifact (artifact/) and COMPARISON.md: which verdicts agree, and for those
that do not, both sides' reasons.

A disagreement is a result, not a failure: the exit status is the reproduction's."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pirex.artifact import check
from pirex.artifact.appendix import cell
from pirex.artifact.pack import IMAGES, META, copy_report
from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.reproduce import sources
from pirex.reproduce.state import STATE, ReproductionState
from pirex.reproduce.verdict import DIFFERS, HOLDS, INCONCLUSIVE

JUDGED = (HOLDS, DIFFERS, INCONCLUSIVE)

COMPARISON = "COMPARISON.md"
AGREE = {True: "yes", False: "no", None: "-"}
INSIDE = "artifact"  # the reproduction's subfolder holding the report that was inside the artifact
SCRATCH = sources.SCRATCH  # results/.artifact-<pid>-<its start>-<random>: the unpacked artifact, while a rerun runs
REGISTRY_FILE = "PIREX_REGISTRY_FILE"  # pirex.images.sources reads it: the images the runs take


def remove_stale(results_dir: Path) -> list[Path]:
    """The scratch folders of reruns killed (SIGKILL, a power cut) under results_dir, removed: each holds a whole
    unpacked artifact, its images too. A folder whose process still runs (the same pid and start) is left alone."""
    gone = []
    for d in sorted(results_dir.glob(f"{SCRATCH}*")):
        m = re.fullmatch(rf"{re.escape(SCRATCH)}(\d+)-(\d+)-.+", d.name)
        if m and d.is_dir() and not proc.same_process(int(m[1]), m[2]):
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


@contextlib.contextmanager
def scratch(results_dir: Path) -> Iterator[Path]:
    """A scratch folder under results_dir (where the user gave pirex room) for the rerun's length, named after this
    process so that a rerun after a kill removes it (remove_stale); gone when the rerun ends (SIGTERM included)."""
    pid = os.getpid()
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH}{pid}-{proc.start_time(pid) or 0}-", dir=results_dir) as d:
        yield Path(d)


@contextlib.contextmanager
def registry_file(path: Path | None) -> Iterator[None]:
    """The runs take their images from the registry file at path (None: as before), for the block only."""
    before = os.environ.get(REGISTRY_FILE)
    if path is not None:
        os.environ[REGISTRY_FILE] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(REGISTRY_FILE, None)
        else:
            os.environ[REGISTRY_FILE] = before


@dataclass
class Opened:
    """An artifact whose checksums matched, as a folder (a tar is unpacked into a scratch folder first)."""

    path: Path  # as the user gave it
    top: Path
    paper: str
    meta: dict  # artifact.json: the commit, version, level, image platforms (empty for an artifact without one)
    inside: dict[str, str] = field(default_factory=dict)  # the reproduction inside: claim key -> verdict
    reasons: dict[str, str] = field(default_factory=dict)  # and its reasons, where its state has them

    @property
    def images(self) -> Path | None:
        return self.top / IMAGES if (self.top / IMAGES).is_file() else None

    @property
    def reproduction(self) -> Path | None:
        return self.top / "reproduction" if (self.top / "reproduction" / STATE).is_file() else None

    def judged_runs(self) -> frozenset[str]:
        """The run ids of the bundles the reproduction inside judged (reproduction/bundles/<experiment>/<run>/): a
        rerun reuses none of them, on the machine that made the artifact too, or it would be compared with itself."""
        inside = self.reproduction
        return frozenset(d.name for d in inside.glob("bundles/*/*") if d.is_dir()) if inside else frozenset()


def open_(path: Path, paper: str, scratch: Path) -> Opened:
    """Check the artifact's SHA256SUMS, unpack a tar into scratch, and read what the rerun needs."""
    path = Path(path)
    if path.is_dir():  # its source/ may be where pirex was installed from and runs: what that adds is let be
        ok, why = check.checksums_dir(path, unlisted_ok="source/")
        top = path
    elif path.is_file():
        ok, why = check.checksums_tar(path)
        if ok:
            top = _unpack(path, scratch)
    else:
        raise PirexError(
            f"--artifact {path} does not exist: give an artifact (a folder or a .tar from `pirex artifact`)"
        )
    if not ok:
        raise PirexError(f"--artifact {path}: {why}; nothing was run (make the artifact again, or copy it again)")
    papers = sorted(p.name for p in (top / "claims").iterdir() if p.is_dir()) if (top / "claims").is_dir() else []
    if paper not in papers:
        raise PirexError(
            f"--artifact {path} is the artifact of {', '.join(papers) or 'no paper'}, not of {paper}: "
            f"pirex reproduce {papers[0] if papers else 'PAPER'} --artifact {path}"
        )
    try:
        meta = json.loads((top / META).read_text()) if (top / META).is_file() else {}
    except ValueError as e:
        raise PirexError(f"--artifact {path}: {META} is not JSON ({e})") from None
    opened = Opened(path, top, paper, meta)
    if opened.reproduction:
        state = ReproductionState.read(opened.reproduction)
        mine = f"{paper}:"
        opened.inside = {k: v for k, v in (state.verdicts or {}).items() if k.startswith(mine)}
        opened.reasons = {k: v for k, v in (state.reasons or {}).items() if k.startswith(mine)}
    return opened


def _unpack(path: Path, scratch: Path) -> Path:
    try:
        with tarfile.open(path) as tar:
            tar.extractall(scratch, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise PirexError(f"--artifact {path} is not a readable tar: {check.tar_error(e)}") from None
    tops = [p for p in scratch.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise PirexError(f"--artifact {path}: expected one folder in the tar, found {len(tops)}")
    return tops[0]


def load_images(opened: Opened, platform, regfile: Path) -> dict[str, str]:
    """This machine's platform of the artifact's images into the local registry by digest only (every blob's digest
    checked against the archive and against the artifact's own registry.yaml; no tag touched: a build of this
    checkout under the artifact's tag stays a build, which later runs record as built), and regfile naming each of
    them by the digest imported, with the artifact, so that the runs take them as imported from it (their bundles
    say so), never a build of this checkout. Returns each image's platform manifest digest (what a bundle records
    as the image's digest), {} when the artifact holds no images."""
    from pirex.images import archive, localregistry, publish, registryfile

    if opened.images is None:
        return {}
    theirs = opened.top / "source" / "registry.yaml"
    published = registryfile.load(theirs) if theirs.is_file() else {}
    imported = archive.import_(opened.images, platform, theirs if theirs.is_file() else None, tag=False)
    entries, where = {}, str(Path(opened.path).resolve())
    for i in imported:
        e = published.get(i.name)
        repository = (
            e.repository
            if e and e.digest == i.index_digest
            else f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}/{i.name}"
        )
        entries[i.name] = registryfile.Entry(repository, i.tag, [str(platform)], i.index_digest, {"artifact": where})
    registryfile.save(regfile, entries)
    return {i.name: i.manifest_digest for i in imported}


def check_resumed(state: ReproductionState, folder: Path, artifact: Path, images: dict[str, str] | None = None) -> None:
    """--resume of a rerun: the reproduction in folder must be a rerun of an artifact, and the images imported now
    (when given) the ones it ran: a resumed rerun keeps what it ran, and two artifacts' runs would be judged as one."""
    if not state.artifact:
        raise PirexError(
            f"--resume {folder} is a reproduction of this checkout's images, not a rerun of an artifact: "
            "resume it without --artifact"
        )
    ran = state.artifact_images
    if images is not None and ran is not None and ran != images:
        differ = sorted(n for n in set(ran) | set(images) if ran.get(n) != images.get(n))
        raise PirexError(
            f"--artifact {artifact} holds other images ({', '.join(differ)}) than the rerun in {folder} ran: resume "
            f"it with the artifact it was started with ({state.artifact})"
        )


def preamble(opened: Opened, commit: str | None, images: dict[str, str]) -> list[str]:
    """What the rerun says before the plan: where the images come from, and whether this pirex is the artifact's."""
    lines = [f"artifact {opened.path}: checksums match ({opened.paper})"]
    if images:
        lines.append(f"images: loaded from the artifact ({IMAGES}, this machine's platform, digests checked)")
    else:
        lines.append(
            "images: the artifact holds none (made without --images): they are pulled by registry.yaml's digest or "
            "built, which needs a registry or the Debian mirrors"
        )
    lines += _commit_note(opened, commit)
    return lines


def _commit_note(opened: Opened, commit: str | None) -> list[str]:
    theirs = opened.meta.get("commit")
    if not theirs or not commit or theirs == commit:
        return []
    return [
        f"note: the artifact was made at commit {theirs[:12]}, this pirex is {commit[:12]}: the claims and their "
        f"analysis are this checkout's (run pirex from the artifact's source/ for the artifact's own)"
    ]


def adopt(opened: Opened, opts, given: Collection[str] = ()) -> str:
    """The settings of the reproduction inside that its verdicts depend on, where the rerun was not given them
    (given: the options on the command line, of level, confidence and design): its level, --set values, confidence
    (the intervals' level), A/A runs (an unsteady A/A makes a verdict inconclusive) and design: the two are then
    comparable. Returns what was taken, "" when nothing."""
    if opened.reproduction is None:
        return ""
    state = ReproductionState.read(opened.reproduction)
    taken = []
    if "level" not in given and state.level and state.level != opts.level:
        opts.level = state.level
        taken.append(f"--level {opts.level}")
    if not opts.sets and state.sets:
        opts.sets = state.sets
        taken += [f"--set {e}.{k}={v}" for e, kv in opts.sets.items() for k, v in kv.items()]
    if "confidence" not in given and state.confidence and state.confidence != opts.confidence:
        opts.confidence = state.confidence
        taken.append(f"--confidence {100 * opts.confidence:g}%")
    if opts.aa is None and isinstance(state.aa, bool):
        opts.aa = state.aa
        if opts.aa != (opts.level == "full"):  # not what the level gives by default
            taken.append("--aa" if opts.aa else "--no-aa")
    if "design" not in given and state.design and state.design != opts.design:
        opts.design = state.design
        taken.append(f"--design {opts.design}")
    return f"as the reproduction inside: {' '.join(taken)}" if taken else ""


def copy_inside(opened: Opened, out: Path) -> None:
    """The report that was inside the artifact, beside the rerun's own."""
    if opened.reproduction is None:
        return
    dest = out / INSIDE
    shutil.rmtree(dest, ignore_errors=True)
    copy_report(opened.reproduction, dest)


@dataclass
class Row:
    key: str
    inside: str
    here: str
    why: str = ""

    @property
    def agrees(self) -> bool | None:
        """None where one side did not judge the claim (not rerun here, or not in the artifact)."""
        return self.inside == self.here if self.inside in JUDGED and self.here in JUDGED else None


def compare(opened: Opened, out: Path) -> list[Row]:
    """One row per claim of either side (inside the artifact, or here)."""
    state = ReproductionState.read(out)
    mine = f"{opened.paper}:"
    here = {k: v for k, v in (state.verdicts or {}).items() if k.startswith(mine)}
    reasons = state.reasons or {}
    rows = []
    for key in sorted(set(opened.inside) | set(here)):
        row = Row(key, opened.inside.get(key, "not in the artifact"), here.get(key, "not judged here"))
        if row.agrees is False:
            row.why = _why(row.inside, row.here, opened.reasons.get(key, ""), reasons.get(key, ""))
        elif row.agrees and row.here == INCONCLUSIVE:
            row.why = "the same verdict, but neither side decided"
        elif row.agrees is None and (row.inside in JUDGED or row.here in JUDGED):
            side, reason = (
                ("here", reasons.get(key, "")) if row.inside in JUDGED else ("inside", opened.reasons.get(key))
            )
            row.why = f"not judged {side}" + (f": {reason}" if reason else "")
        rows.append(row)
    return rows


def _why(inside: str, here: str, inside_reason: str, here_reason: str) -> str:
    """Why two verdicts differ, in words true of every way a verdict comes about: an inconclusive one may have no
    interval at all (too few runs), an unsteady A/A, or a "differs" that Holm's adjustment did not keep; its reason
    follows."""
    if inside != INCONCLUSIVE and here != INCONCLUSIVE:
        kind = "opposite verdicts: one side's interval lies where the claim holds, the other's where it differs"
    else:
        kind = f"one side decided, the other did not ({'inside' if inside == INCONCLUSIVE else 'here'}: inconclusive)"
    parts = [kind]
    if inside_reason:
        parts.append(f"inside: {inside_reason}")
    if here_reason:
        parts.append(f"here: {here_reason}")
    return "; ".join(parts)


def agreement(rows: Sequence[Row]) -> str:
    both = [r for r in rows if r.agrees is not None]
    agree = sum(bool(r.agrees) for r in both)
    one = sum(1 for r in rows if r.agrees is None and (r.inside in JUDGED or r.here in JUDGED))
    neither = sum(1 for r in both if r.agrees and r.here == INCONCLUSIVE)
    text = f"{agree} of {len(both)} claims judged on both sides agree"
    if neither:  # the same word, not a result reproduced
        text += f" ({neither} of them inconclusive on both)"
    if agree < len(both):
        text += f"; {len(both) - agree} differ (COMPARISON.md says why)"
    return text + (f"; {one} judged on one side only" if one else "")


def write(opened: Opened, out: Path, rows: Sequence[Row], commit: str | None) -> Path:
    inside = (
        f"its report is in [{INSIDE}/]({INSIDE}/REPORT.md)"
        if opened.inside
        else "it holds no reproduction (made without --reproduction): nothing to compare with"
    )
    lines = [
        f"# This rerun against the artifact's reproduction: {opened.paper}",
        "",
        f"The artifact: `{opened.path}`, made at commit {opened.meta.get('commit', 'unknown')} by pirex "
        f"{opened.meta.get('version', 'unknown')}; {inside}. This rerun's report is [REPORT.md](REPORT.md).",
        "",
        *(line + "\n" for line in _commit_note(opened, commit)),
        agreement(rows) + ".",
        "",
        "| Claim | Inside the artifact | Here | Agree | Why not |",
        "|---|---|---|---|---|",
        *(f"| {r.key} | {cell(r.inside)} | {cell(r.here)} | {AGREE[r.agrees]} | {cell(r.why)} |" for r in rows),
        "",
    ]
    path = out / COMPARISON
    path.write_text("\n".join(lines))
    return path
