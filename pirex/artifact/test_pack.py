"""pirex artifact PAPER OUT: a tar (or folder) whose SHA256SUMS verify, an ARTIFACT.md with a row per claim, a
reproduction's report and verified bundles inside, the images through the archive export; OUT never overwritten."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pirex.artifact import appendix, check, citation, pack
from pirex.cli.main import cli
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.images import archive
from pirex.images import platforms as plat
from pirex.reproduce import claims
from pirex.reproduce.state import ReproductionState

PAPER = "fork24"  # the smallest paper (one experiment): quick to pack


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("artifact") / f"{PAPER}-artifact.tar"
    r = CliRunner().invoke(cli, ["artifact", PAPER, str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].startswith(f"wrote {out} (")
    return out


def _member(tar_path: Path, name: str) -> bytes:
    with tarfile.open(tar_path) as tar:
        return tar.extractfile(f"{PAPER}-artifact/{name}").read()


def test_the_tar_holds_one_folder_whose_checksums_verify(packed):
    with tarfile.open(packed) as tar:
        names = tar.getnames()
        assert {n.split("/")[0] for n in names} == {f"{PAPER}-artifact"}
        sums = tar.extractfile(f"{PAPER}-artifact/SHA256SUMS").read().decode().splitlines()
        files = {n for n in names if tar.getmember(n).isfile()} - {f"{PAPER}-artifact/SHA256SUMS"}
        assert len(sums) == len(files)
        for line in sums:  # as `sha256sum -c` reads them
            digest, name = line.split("  ", 1)
            assert hashlib.sha256(tar.extractfile(f"{PAPER}-artifact/{name}").read()).hexdigest() == digest
    listed = {line.split("  ", 1)[1] for line in sums}
    for name in ("ARTIFACT.md", "CITATION.cff", ".zenodo.json", f"claims/{PAPER}/claims.yaml", "source/LICENSE"):
        assert name in listed
    assert "source/pirex/cli/main.py" in listed and not any(n.startswith("images/") for n in listed)  # no --images
    assert check.checksums_tar(packed)[0]


def test_artifact_md_has_one_row_per_claim(packed):
    text = _member(packed, "ARTIFACT.md").decode()
    paper = claims.load(PAPER)
    rows = [line for line in text.splitlines() if line.startswith(f"| {PAPER}:")]
    assert [r.split(" | ")[0][2:] for r in rows] == [f"{PAPER}:{c.id}" for c in paper.claims]
    for r in rows:
        cells = r.split(" | ")
        assert len(cells) == 7, r
        assert cells[2].startswith(f"`pirex reproduce {PAPER} --experiment fork"), r
        assert "unknown" not in cells[3] and "(fork@quick)" in cells[3], r
        assert cells[4] == "0.1 MB", r  # experiment.yaml's 0.029 MB a step, five steps (its claims run natively)
        assert "holds when" in cells[5], r
    assert "--inventory fleet/hosts.yml" in text  # its claims across devices
    for heading in ("## Getting started", "## Kick the tires (about ten minutes)", "## Claims"):
        assert heading in text
    assert f"    make run PAPERS={PAPER} " in text and "    make test " in text  # this paper, its images only
    assert f"    .venv/bin/pirex reproduce {PAPER} --experiment fork" in text
    assert "--images all" in text  # says what a committee's artifact should add


def test_an_existing_out_is_refused(tmp_path):
    out = tmp_path / "a.tar"
    out.write_text("keep")
    with pytest.raises(PirexError, match="a.tar exists: pirex artifact never overwrites"):
        pack.pack(PAPER, out)
    assert out.read_text() == "keep" and [p.name for p in tmp_path.iterdir()] == ["a.tar"]
    (tmp_path / "folder").mkdir()
    with pytest.raises(PirexError, match="exists"):
        pack.pack(PAPER, tmp_path / "folder")


def test_a_bad_paper_gives_reproduces_error_and_writes_nothing(tmp_path):
    with pytest.raises(PirexError) as e:
        pack.pack("nope", tmp_path / "a.tar")
    with pytest.raises(PirexError) as reproduce_error:
        claims.load("nope")
    papers = ", ".join(claims.available())  # whatever papers analysis/ holds: a newcomer's own one too (issue 54)
    assert str(e.value) == str(reproduce_error.value) and f"papers: {papers}" in str(e.value)
    assert {"fork24", "icpe18", "ssp17"} <= set(claims.available())
    assert not list(tmp_path.iterdir())


def _bundle(root: Path, experiment: str, images: dict | None = None) -> Path:
    b = Bundle.create(
        root / experiment / "20260101T000000Z-abcdef",
        experiment,
        "quick",
        {},
        ["native"],
        [("native", 0)],
        images or {},
        {"version": "t", "commit": "c"},
    )
    b.write_machine(before={"hostname": "h"}, after={"hostname": "h"})
    with b.step("native", 0) as d:
        (d / "out.txt").write_text("1\n")
    b.finish()
    return b.path


def _reproduction(tmp_path: Path, images: dict | None = None) -> tuple[Path, Path]:
    results = tmp_path / "results"
    mine, other = _bundle(results, "fork", images), _bundle(results, "jmh")
    rep = results / "reproduce" / f"{PAPER}-20260101T000000Z-000000"
    rep.mkdir(parents=True)
    (rep / "REPORT.md").write_text("# Reproduction\n")
    (rep / "report.html").write_text("<html></html>\n")
    state = {
        "papers": ["all"],
        "level": "kick-the-tires",
        "bundles": {"fork@quick": [str(mine)], "jmh@quick": [str(other)]},
        "verdicts": {f"{PAPER}:cost-grows-with-memory": "holds", "icpe18:t1-b1-docker": "differs"},
    }
    (rep / "state.json").write_text(json.dumps(state))
    return rep, mine


def test_a_reproduction_goes_in_with_its_papers_bundles(tmp_path):
    rep, mine = _reproduction(tmp_path)
    out = pack.pack(PAPER, tmp_path / "out", reproduction=rep)
    inside = out / "reproduction"
    assert {p.name for p in inside.iterdir()} == {"REPORT.md", "report.html", "state.json", "bundles"}
    assert [p.relative_to(inside / "bundles").as_posix() for p in (inside / "bundles").glob("*/*")] == [
        "fork/20260101T000000Z-abcdef"  # the other paper's experiment stays out
    ]
    assert check.checksums_dir(out)[0]
    text = (out / "ARTIFACT.md").read_text()
    assert "The included reproduction: holds." in text
    assert f"reproduction/ holds {rep.name} at kick-the-tires: 1 holds. Its images" in text  # this paper's verdicts


def test_a_damaged_bundle_is_not_packed(tmp_path):
    rep, mine = _reproduction(tmp_path)
    (mine / "native" / "0" / "out.txt").write_text("2\n")
    with pytest.raises(PirexError, match="fails verification"):
        pack.pack(PAPER, tmp_path / "out.tar", reproduction=rep)
    assert not (tmp_path / "out.tar").exists() and not list(tmp_path.glob(".out.tar.*"))


def test_a_reproduction_of_another_paper_is_refused(tmp_path):
    rep, _ = _reproduction(tmp_path)
    state = ReproductionState.read(rep)
    state.papers = ["icpe18"]
    state.write(rep)
    with pytest.raises(PirexError, match="reproduced icpe18, not fork24"):
        pack.pack(PAPER, tmp_path / "out", reproduction=rep)


def test_images_come_from_the_archive_export(tmp_path):
    calls = []

    def export(file, names, platforms, tag):
        calls.append((names, [str(p) for p in platforms], tag))
        file.write_bytes(b"oci")

    out = pack.pack(PAPER, tmp_path / "out", platforms="linux/arm64,linux/arm/v7", export=export, tag="v9")
    assert calls == [(["fork"], ["linux/arm64", "linux/arm/v7"], "v9")]
    assert (out / pack.IMAGES).read_bytes() == b"oci" and check.checksums_dir(out)[0]
    text = (out / "ARTIFACT.md").read_text()
    assert f".venv/bin/pirex images import ../{pack.IMAGES}" in text and "--images all" not in text


def test_bad_platforms_fail_before_anything_is_written(tmp_path):
    with pytest.raises(PirexError):
        pack.pack(PAPER, tmp_path / "out", platforms="linux/sparc")
    assert not list(tmp_path.iterdir())


def test_kick_the_tires_takes_the_quickest_experiments_within_ten_minutes():
    paper = claims.load("icpe18")
    cmd, timed = appendix.kick_the_tires(paper, appendix.rows(paper, appendix.LEVEL))
    assert cmd.startswith("pirex reproduce icpe18 --experiment ")
    assert timed.seconds is not None and timed.seconds <= appendix.KICK_SECONDS


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _image_archive(file: Path, name: str, tag: str, platform) -> tuple[str, str]:
    """A one-image archive as `pirex images export` writes it; (manifest list digest, platform manifest digest)."""
    config, layer = b'{"architecture": "x"}', b"layer"
    manifest = json.dumps(
        {
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"digest": _digest(config), "size": len(config)},
            "layers": [{"digest": _digest(layer), "size": len(layer)}],
        }
    ).encode()
    p = {
        "os": platform.os,
        "architecture": platform.architecture,
        **({"variant": platform.variant} if platform.variant else {}),
    }
    index = json.dumps({"manifests": [{"digest": _digest(manifest), "size": len(manifest), "platform": p}]}).encode()
    names = {archive.REF_NAME: f"{name}:{tag}", archive.IMAGE: name, archive.PLATFORMS: str(platform)}
    layout = {"manifests": [{"digest": _digest(index), "annotations": names}]}
    file.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(file, "w") as tar:
        for member, data in [("index.json", json.dumps(layout).encode())] + [
            (archive._blob_path(_digest(b)), b) for b in (index, manifest, config, layer)
        ]:
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return _digest(index), _digest(manifest)


def test_the_images_must_be_those_the_reproduction_ran(tmp_path):
    """--reproduction with --images: the archive must hold the very images the reproduction's bundles ran (else its
    rerun compares verdicts of other images with them: a rebuild since, or the default tag where it ran another)."""
    here = plat.host()
    index, manifest = _image_archive(tmp_path / "probe.tar", "fork", "v9", here)

    def export(file, names, platforms, tag):
        _image_archive(file, "fork", tag, here)

    for ran in ("sha256:" + "c" * 64, manifest, index):  # another image; the one exported; it, pulled (the list)
        rep, _ = _reproduction(tmp_path / ran[-6:], {"fork": {"name": "fork", "digest": ran, "platform": str(here)}})
        out = tmp_path / ran[-6:] / "out.tar"
        if ran not in (manifest, index):
            with pytest.raises(PirexError, match=rf"not those the reproduction ran: fork \({here}\) ran {ran}, the"):
                pack.pack(PAPER, out, reproduction=rep, platforms="host", export=export, tag="v9")
            assert not out.exists()
        else:
            assert pack.pack(PAPER, out, reproduction=rep, platforms="host", export=export, tag="v9") == out
    rep, _ = _reproduction(tmp_path / "arm", {"fork": {"name": "fork", "digest": manifest, "platform": "linux/arm/v7"}})
    assert pack.pack(PAPER, tmp_path / "arm" / "o", reproduction=rep, platforms="host", export=export)  # not exported


def test_the_artifact_cites_its_paper_and_pirex_and_lists_only_its_deviations(packed, tmp_path):
    with tarfile.open(packed) as tar:
        for name in ("CITATION.cff", ".zenodo.json"):
            (tmp_path / name).write_bytes(tar.extractfile(f"{PAPER}-artifact/{name}").read())
    ok, why = check.citation(tmp_path)  # CFF 1.2.0's schema (cffconvert), and .zenodo.json agreeing with it
    assert ok, why
    cff = yaml.safe_load((tmp_path / "CITATION.cff").read_text())
    paper = claims.load(PAPER)
    assert cff["preferred-citation"] == citation.reference(paper) and paper.title in cff["title"]
    assert [r["type"] for r in cff["references"]] == [cff["preferred-citation"]["type"], "software"]  # then pirex
    zenodo = json.loads((tmp_path / ".zenodo.json").read_text())
    assert zenodo["title"] == cff["title"] and zenodo["references"][0].startswith("Hashim, M. A. (2024). David vs.")
    text = _member(packed, "ARTIFACT.md").decode()
    mine = claims.deviations([paper])
    assert "## Deviations from the paper" in text and mine and all(d in text for d in mine)
    others = [d for p in claims.available() if p != PAPER for d in claims.deviations([claims.load(p)])]
    assert not [d for d in others if d not in mine and d in text]  # another paper's deviations are not its
