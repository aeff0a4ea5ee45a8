"""pirex reproduce PAPER --artifact: the artifact's checksums before anything runs, the paper it is of, the report
inside copied beside the rerun's, and COMPARISON.md saying which verdicts agree and why the others do not. The
rerun itself, offline on a second machine with the images from the archive, is in tests/test_reproduce_icpe18.py."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pirex.artifact import check, pack, rerun
from pirex.artifact.test_pack import PAPER, _image_archive, _reproduction
from pirex.cli.main import cli
from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import archive, localregistry
from pirex.reproduce.state import ReproductionState

CLAIM = f"{PAPER}:cost-grows-with-memory"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rerun")
    rep, _ = _reproduction(tmp)
    state = ReproductionState.read(rep)
    state.reasons = {CLAIM: "the ratio's interval lies above 1"}
    state.write(rep)
    return pack.pack(PAPER, tmp / f"{PAPER}-artifact.tar", reproduction=rep)


def test_a_checked_tar_opens_with_the_verdicts_inside(artifact, tmp_path):
    opened = rerun.open_(artifact, PAPER, tmp_path)
    assert opened.top == tmp_path / f"{PAPER}-artifact"
    assert opened.inside == {CLAIM: "holds"}  # another paper's verdicts stay out
    assert opened.reasons == {CLAIM: "the ratio's interval lies above 1"}
    assert opened.meta["paper"] == PAPER and len(opened.meta["commit"]) == 40 and opened.meta["images"] is None
    assert opened.images is None and opened.reproduction == opened.top / "reproduction"


def test_a_tampered_artifact_is_refused_before_anything_runs(artifact, tmp_path):
    bad = tmp_path / "bad.tar"
    with tarfile.open(artifact) as src, tarfile.open(bad, "w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name.endswith("/ARTIFACT.md"):
                data += b"tampered\n"
                m.size = len(data)
            dst.addfile(m, __import__("io").BytesIO(data) if data is not None else None)
    with pytest.raises(PirexError, match=r"bad.tar: 1 file\(s\) changed against SHA256SUMS: ARTIFACT.md; nothing"):
        rerun.open_(bad, PAPER, tmp_path / "x")
    with pytest.raises(PirexError, match="does not exist"):
        rerun.open_(tmp_path / "nosuch.tar", PAPER, tmp_path / "y")


def test_the_paper_must_be_the_artifacts(artifact, tmp_path):
    with pytest.raises(PirexError, match=f"is the artifact of {PAPER}, not of icpe18: pirex reproduce {PAPER}"):
        rerun.open_(artifact, "icpe18", tmp_path)


def _rerun_folder(tmp_path: Path, verdicts: dict, reasons: dict) -> Path:
    out = tmp_path / "reproduce" / f"{PAPER}-x"
    out.mkdir(parents=True)
    (out / "state.json").write_text(json.dumps({"verdicts": verdicts, "reasons": reasons}))
    return out


def test_a_rerun_never_reuses_the_bundles_the_reproduction_inside_judged(artifact, tmp_path):
    """On the machine that made the artifact its bundles are in results/, with the artifact's images: reused, the
    rerun ran nothing and compared the reproduction with itself (issue 54)."""
    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    assert opened.judged_runs() == {"20260101T000000Z-abcdef"}  # the fork bundle packed inside


def test_agreeing_verdicts_and_the_report_inside_beside_the_rerun(artifact, tmp_path):
    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    out = _rerun_folder(tmp_path, {CLAIM: "holds"}, {CLAIM: "above 1 here too"})
    rerun.copy_inside(opened, out)
    assert (out / "artifact" / "REPORT.md").read_text() == "# Reproduction\n"
    assert ReproductionState.read(out / "artifact").verdicts[CLAIM] == "holds"
    rows = rerun.compare(opened, out)
    assert [(r.key, r.inside, r.here, r.agrees) for r in rows] == [(CLAIM, "holds", "holds", True)]
    assert rerun.agreement(rows) == "1 of 1 claims judged on both sides agree"
    text = rerun.write(opened, out, rows, opened.meta["commit"]).read_text()
    assert f"| {CLAIM} | holds | holds | yes |  |" in text and "note:" not in text


def test_a_disagreement_says_which_and_why(artifact, tmp_path):
    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    out = _rerun_folder(tmp_path, {CLAIM: "inconclusive"}, {CLAIM: "the interval reaches across 1"})
    rows = rerun.compare(opened, out)
    assert not rows[0].agrees
    assert rows[0].why == (
        "one side decided, the other did not (here: inconclusive); "
        "inside: the ratio's interval lies above 1; here: the interval reaches across 1"
    )
    assert rerun.agreement(rows) == "0 of 1 claims judged on both sides agree; 1 differ (COMPARISON.md says why)"
    text = rerun.write(opened, out, rows, "0" * 40).read_text()
    assert f"note: the artifact was made at commit {opened.meta['commit'][:12]}, this pirex is 000000000000" in text
    assert f"| {CLAIM} | holds | inconclusive | no | one side decided" in text


def test_a_claim_not_rerun_here_is_neither_agreement_nor_disagreement(artifact, tmp_path):
    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    out = _rerun_folder(tmp_path, {CLAIM: "not run here"}, {CLAIM: "not among the experiments asked for"})
    (row,) = rerun.compare(opened, out)
    assert row.agrees is None and row.why == "not judged here: not among the experiments asked for"
    assert rerun.agreement([row]) == "0 of 0 claims judged on both sides agree; 1 judged on one side only"
    assert (
        f"| {CLAIM} | holds | not run here | - | not judged here" in rerun.write(opened, out, [row], None).read_text()
    )


def test_the_rerun_takes_the_level_and_sets_inside_unless_given(artifact, tmp_path):
    from pirex.reproduce.reproduction import Options

    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    state = ReproductionState.read(opened.reproduction)
    state.level, state.sets = "full", {"fork": {"repetitions": 2}}
    state.write(opened.reproduction)
    opts = Options([PAPER])
    assert rerun.adopt(opened, opts) == "as the reproduction inside: --level full --set fork.repetitions=2"
    assert (opts.level, opts.sets) == ("full", {"fork": {"repetitions": 2}})
    given = Options([PAPER], sets={"fork": {"repetitions": 7}})
    assert rerun.adopt(opened, given, given={"level"}) == "" and given.level == "kick-the-tires"


def test_the_rerun_takes_the_confidence_aa_and_design_inside_unless_given(artifact, tmp_path):
    """What else a verdict depends on: the intervals' level (a 90 % interval decides where a 95 % one may not), the
    A/A runs (an unsteady A/A makes a verdict inconclusive) and the design (a duet's halves of the CPUs)."""
    from pirex.reproduce.reproduction import Options

    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    state = ReproductionState.read(opened.reproduction)
    state.level, state.confidence, state.aa, state.design = "kick-the-tires", 0.9, True, "duet"
    state.write(opened.reproduction)
    opts = Options([PAPER])
    assert rerun.adopt(opened, opts) == "as the reproduction inside: --confidence 90% --aa --design duet"
    assert (opts.confidence, opts.aa, opts.design) == (0.9, True, "duet")
    mine = Options([PAPER], confidence=0.99, aa=False)
    assert rerun.adopt(opened, mine, given={"confidence", "design"}) == ""
    assert (mine.confidence, mine.aa, mine.design) == (0.99, False, "interleaved")
    state.aa = False
    state.write(opened.reproduction)
    quiet = Options([PAPER])
    assert "--aa" not in rerun.adopt(opened, quiet) and quiet.aa is False  # the level's default: taken, not said


def test_the_cli_refuses_what_a_rerun_cannot_take(artifact, tmp_path):
    for extra, word in (
        (["--reuse-only"], "--reuse-only"),
        (["--tag", "v1"], "--tag"),
        (["--bundles", str(tmp_path)], "--bundles"),
    ):
        r = CliRunner().invoke(
            cli, ["reproduce", PAPER, "--artifact", str(artifact), "--results-dir", str(tmp_path / "r"), *extra]
        )
        assert isinstance(r.exception, PirexError) and f"drop {word}" in str(r.exception), r.output
    r = CliRunner().invoke(cli, ["reproduce", "all", "--artifact", str(artifact), "--results-dir", str(tmp_path)])
    assert isinstance(r.exception, PirexError) and "the one paper the artifact is of" in str(r.exception), r.output
    assert not (tmp_path / "reproduce").exists()


@pytest.mark.parametrize("content", [b"", b"\x8f" * 5000], ids=["empty", "not-a-tar"])
def test_a_file_that_is_no_tar_is_a_one_line_error(tmp_path, content):
    bad = tmp_path / "icpe18-artifact.tar"
    bad.write_bytes(content)
    with pytest.raises(PirexError, match="is not a readable tar") as e:
        rerun.open_(bad, PAPER, tmp_path / "u")
    assert "\n" not in str(e.value), str(e.value)
    (line,) = [line for line in check.lines(check.run_artifact(bad)) if "checksums" in line]
    assert "\n" not in line and "not a readable tar" in line, line


def test_a_resume_with_an_artifact_must_resume_a_rerun_of_those_images(artifact, tmp_path, monkeypatch):
    """--resume DIR --artifact FILE: DIR must be a rerun of an artifact (not a reproduction of this checkout's
    images), and FILE's images those it ran: a resumed rerun keeps its bundles, which would mix two sets of images."""
    from pirex.reproduce import reproduction

    plain = tmp_path / "reproduce" / f"{PAPER}-x"
    plain.mkdir(parents=True)
    (plain / "state.json").write_text(json.dumps({"papers": [PAPER], "level": "kick-the-tires", "artifact": None}))
    monkeypatch.setattr(localregistry, "local_registry", contextlib.nullcontext)  # no registry started here
    monkeypatch.setattr(rerun, "load_images", lambda *_: {})
    monkeypatch.setattr(reproduction, "reproduce", lambda *_: pytest.fail("the plain reproduction was resumed"))
    r = CliRunner().invoke(
        cli, ["reproduce", "--resume", str(plain), "--artifact", str(artifact), "--results-dir", str(tmp_path)]
    )
    assert isinstance(r.exception, PirexError) and "not a rerun of an artifact" in str(r.exception), r.output

    theirs, other = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    state = ReproductionState.from_json({"artifact": "/lab/icpe18-artifact.tar", "artifact_images": {"jmh": theirs}})
    rerun.check_resumed(state, plain, artifact, {"jmh": theirs})
    rerun.check_resumed(state, plain, artifact)  # before the import: only whether it is a rerun
    for images in ({"jmh": other}, {}, {"jmh": theirs, "base": other}):
        with pytest.raises(PirexError, match=r"holds other images .* with the artifact it was started with \(/lab/"):
            rerun.check_resumed(state, plain, artifact, images)


def test_a_killed_reruns_scratch_folder_goes_at_the_next_rerun_and_the_registry_file_with_the_rerun(
    artifact, tmp_path, monkeypatch
):
    """What a rerun leaves: its scratch folder (the unpacked artifact, images and all) is removed when it ends, and
    one that a SIGKILL left (its process gone) by the next rerun in that results folder; PIREX_REGISTRY_FILE names
    the imported images for the runs only, and is as it was afterwards (its file went with the scratch folder)."""
    from pirex.reproduce import reproduction

    results = tmp_path / "results"
    dead = subprocess.Popen(["true"])
    dead.wait()
    killed = results / f".artifact-{dead.pid}-12345-x1"  # a rerun killed: its process is gone
    (killed / "unpacked").mkdir(parents=True)
    reused = results / f".artifact-{os.getpid()}-0-x2"  # its pid is another process now (it started at another time)
    reused.mkdir()
    running = results / f".artifact-{os.getpid()}-{proc.start_time(os.getpid())}-x3"  # a rerun under way
    running.mkdir()
    monkeypatch.setattr(localregistry, "local_registry", contextlib.nullcontext)  # no registry started here
    monkeypatch.setattr(rerun, "load_images", lambda *_: {"jmh": "sha256:" + "a" * 64})
    monkeypatch.setenv(rerun.REGISTRY_FILE, "/etc/pirex/registry.yaml")
    seen = {}

    def reproduce(opts, _run_one):
        seen["regfile"] = Path(os.environ[rerun.REGISTRY_FILE])
        seen["scratch"] = [p.name for p in results.glob(".artifact-*")]
        out = results / "reproduce" / f"{PAPER}-x"
        out.mkdir(parents=True)
        (out / "state.json").write_text(json.dumps({"verdicts": {CLAIM: "holds"}}))
        return out

    monkeypatch.setattr(reproduction, "reproduce", reproduce)
    r = CliRunner().invoke(cli, ["reproduce", PAPER, "--artifact", str(artifact), "--results-dir", str(results)])
    assert r.exit_code == 0, r.output
    assert f"removed {killed}: the unpacked artifact of a rerun that was killed" in r.output
    assert f"removed {reused}" in r.output and str(running) not in r.output
    assert seen["regfile"].parent.name.startswith(f".artifact-{os.getpid()}-") and "x3" not in seen["regfile"].name
    assert len(seen["scratch"]) == 2  # the one under way, and this rerun's own
    assert [p.name for p in results.glob(".artifact-*")] == [running.name]  # this rerun's is gone with it
    assert os.environ[rerun.REGISTRY_FILE] == "/etc/pirex/registry.yaml"

    monkeypatch.delenv(rerun.REGISTRY_FILE)
    monkeypatch.setattr(reproduction, "reproduce", lambda *_: (_ for _ in ()).throw(PirexError("a run failed")))
    r = CliRunner().invoke(cli, ["reproduce", PAPER, "--artifact", str(artifact), "--results-dir", str(results)])
    assert isinstance(r.exception, PirexError) and rerun.REGISTRY_FILE not in os.environ
    assert [p.name for p in results.glob(".artifact-*")] == [running.name]


class _Registry:
    """The local registry, as the archive import talks to it: what was put, by repository and reference."""

    def __init__(self):
        self.blobs, self.manifests = {}, {}

    def has_blob(self, repo, digest):
        return (repo, digest) in self.blobs

    def put_blob(self, repo, digest, data, size):
        self.blobs[repo, digest] = data if isinstance(data, bytes) else data.read()

    def put_manifest(self, repo, ref, body, media):
        self.manifests[repo, ref] = body


def test_the_artifacts_images_are_imported_by_digest_alone_and_named_as_its(tmp_path, monkeypatch):
    """The rerun imports the artifact's images without tagging them: the archive's tag (the maker's `git describe`,
    often this checkout's too) would otherwise replace this machine's build under it in the local registry, and later
    plain runs would take the artifact's image and record it as built here. The runs' bundles name the artifact."""
    from pirex.images import platforms, registryfile, sources

    here = platforms.host()
    top = tmp_path / "unpacked" / f"{PAPER}-artifact"
    index, manifest = _image_archive(top / pack.IMAGES, "jmh", "v1.0", here)
    registry = _Registry()
    monkeypatch.setattr(archive.regclient, "Registry", lambda _host: registry)
    opened = rerun.Opened(Path("icpe18-artifact.tar"), top, PAPER, {})
    regfile = tmp_path / "registry.yaml"
    assert rerun.load_images(opened, here, regfile) == {"jmh": manifest}
    assert set(registry.manifests) == {("pirex/jmh", manifest)}  # by digest, and no tag
    (entry,) = registryfile.load(regfile).values()
    assert (entry.digest, entry.platforms) == (index, [str(here)])
    assert entry.extra == {"artifact": str(Path("icpe18-artifact.tar").resolve())}

    monkeypatch.setattr(sources, "_local_build", lambda *_: False)
    monkeypatch.setattr(sources, "_imported", lambda *_: manifest)
    monkeypatch.setattr(sources.proc, "run", lambda *a, **k: None)  # the docker pull of it
    origin = sources.resolve("jmh", "artifact-x", here, regfile).origin
    assert origin["kind"] == "imported" and origin["artifact"] == str(Path("icpe18-artifact.tar").resolve())


def test_the_comparison_says_what_a_disagreement_is_and_that_two_inconclusive_verdicts_decided_nothing(
    artifact, tmp_path
):
    opened = rerun.open_(artifact, PAPER, tmp_path / "u")
    out = _rerun_folder(tmp_path, {CLAIM: "differs"}, {CLAIM: "our 95 % interval | lies outside"})
    (row,) = rerun.compare(opened, out)
    assert row.why.startswith("opposite verdicts: one side's interval lies where the claim holds, the other's where")
    table = [line for line in rerun.write(opened, out, [row], None).read_text().splitlines() if line.startswith("|")]
    assert len(table[-1].replace("\\|", "").split("|")) == len(table[0].split("|"))  # a reason's "|": one cell
    opened.inside = {CLAIM: "inconclusive"}
    out = _rerun_folder(tmp_path / "again", {CLAIM: "inconclusive"}, {CLAIM: "no interval: 2 runs, 5 needed"})
    (row,) = rerun.compare(opened, out)
    assert row.agrees and row.why == "the same verdict, but neither side decided"
    assert rerun.agreement([row]) == "1 of 1 claims judged on both sides agree (1 of them inconclusive on both)"


def test_a_folder_artifact_may_hold_the_pirex_installed_and_run_from_its_source(tmp_path):
    """docs/artifact.md: pirex installed from the artifact's source/ (`make run` there): its .venv, bytecode and
    results in a folder artifact are not the artifact's files, and no reason to refuse it; an unlisted file
    elsewhere (images that were not in it) and a changed file anywhere still are."""
    rep, _ = _reproduction(tmp_path)
    folder = pack.pack(PAPER, tmp_path / f"{PAPER}-artifact", reproduction=rep)
    for made in ("source/.venv/bin/python", "source/pirex/__pycache__/cli.cpython-311.pyc", "source/results/x"):
        (folder / made).parent.mkdir(parents=True, exist_ok=True)
        (folder / made).write_text("made here\n")
    assert rerun.open_(folder, PAPER, tmp_path / "u").top == folder
    assert not check.checksums_dir(folder)[0]  # pirex artifact --check: every file, as it was made
    (folder / pack.IMAGES).parent.mkdir()
    (folder / pack.IMAGES).write_text("not in it\n")
    with pytest.raises(PirexError, match=r"1 file\(s\) not listed against SHA256SUMS: images/pirex-images.tar"):
        rerun.open_(folder, PAPER, tmp_path / "u")
    (folder / pack.IMAGES).unlink()
    (folder / "source" / "LICENSE").write_text("changed\n")
    with pytest.raises(PirexError, match=r"1 file\(s\) changed against SHA256SUMS: source/LICENSE"):
        rerun.open_(folder, PAPER, tmp_path / "u")
