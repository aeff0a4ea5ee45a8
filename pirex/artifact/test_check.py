"""The badge self-check: it passes on this repository, and each item fails, by name, on a copy that lacks what a
committee checks (the licence, a valid citation, no hard-coded address, a claim with a command, the checksums)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from cffconvert import Citation
from click.testing import CliRunner

from pirex.artifact import check, pack
from pirex.cli.main import cli
from pirex.core.paths import REPO

PAPER = "fork24"  # the smallest paper: its claims are checked in a moment


def test_the_repository_passes():
    results = check.run(REPO)
    assert [name for name, _, _ in results] == ["license", "citation", "rebuild", "addresses", "claims"]
    failed = [f"{name}: {msg}" for name, ok, msg in results if not ok]
    assert not failed, failed


def test_citation_is_valid_cff_1_2_0_with_the_three_papers():
    text = (REPO / "CITATION.cff").read_text()
    Citation(text).validate()  # the CFF 1.2.0 JSON schema, by cffconvert (raises on any problem)
    doc = yaml.safe_load(text)
    refs = {r["year"]: r for r in doc["references"]}
    assert sorted(refs) == [2017, 2018, 2024]
    assert refs[2018]["doi"] == "10.1145/3184407.3184431"
    assert refs[2024]["type"] == "thesis" and refs[2024]["authors"][0]["family-names"] == "Hashim"
    assert {a["family-names"] for r in (refs[2017], refs[2018]) for a in r["authors"]} == {"Knoche", "Eichelberger"}


@pytest.fixture
def artifact(tmp_path) -> Path:
    """A folder laid out as `pirex artifact` writes one, holding only what the check reads: the licence, the
    citation, the build recipe, compose/ and fleet/, one paper's claims."""
    top = tmp_path / "art"
    src = top / "source"
    src.mkdir(parents=True)
    for name in ("LICENSE", "pyproject.toml", "CITATION.cff", ".zenodo.json", "Makefile", "docker-bake.hcl"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for d in ("compose", "fleet", f"analysis/{PAPER}"):
        shutil.copytree(REPO / d, src / d, ignore=ignore)
    for d in (REPO / "images").rglob("*"):  # the build contexts docker-bake.hcl names (stages/ too): folders suffice
        if d.is_dir() and "__pycache__" not in d.parts:
            (src / d.relative_to(REPO)).mkdir(parents=True, exist_ok=True)
    pack.write_sums(top)
    return top


def _check(path: Path) -> tuple[int, dict[str, str]]:
    r = CliRunner().invoke(cli, ["artifact", "--check", str(path)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    lines = {}
    for line in r.output.splitlines():
        status, _, rest = line.partition(" ")
        name, _, msg = rest.strip().partition(": ")
        lines[name] = f"{status} {msg}"
    return r.exit_code, lines


def _failed(lines: dict[str, str]) -> list[str]:
    return [name for name, text in lines.items() if text.startswith("FAIL")]


def test_a_copy_passes(artifact):
    code, lines = _check(artifact)
    assert code == 0 and not _failed(lines), lines
    assert list(lines) == ["license", "citation", "rebuild", "addresses", "claims", "checksums"]
    assert lines["license"] == "ok LICENSE (Apache-2.0, as pyproject.toml says)"


def test_without_the_license_it_fails(artifact):
    (artifact / "source" / "LICENSE").unlink()
    pack.write_sums(artifact)
    code, lines = _check(artifact)
    assert code == 1 and _failed(lines) == ["license"]
    assert "no LICENSE file" in lines["license"]


def test_a_license_that_is_not_the_one_pyproject_names_fails(artifact):
    (artifact / "source" / "LICENSE").write_text("Permission is hereby granted, free of charge, ...\n")
    ok, msg = check.license_(artifact / "source")
    assert not ok and msg == "LICENSE is not the text of Apache-2.0, the licence pyproject.toml names"


def test_a_compose_file_with_a_hard_coded_address_fails(artifact):
    (artifact / "source" / "compose" / "lab.yml").write_text(
        "# placeholders in comments are documentation: 10.0.0.1, db.mylab.net\n"
        "services:\n  web:\n    environment:\n      DB_HOST: 10.20.30.40\n"
    )
    pack.write_sums(artifact)
    code, lines = _check(artifact)
    assert code == 1 and _failed(lines) == ["addresses"]
    assert "compose/lab.yml:5: 10.20.30.40" in lines["addresses"]


@pytest.mark.parametrize(
    "line, hard_coded",
    [
        ("DB_HOST: 10.20.30.40", True),
        ("ansible_host: pi-1.lab.example.com", False),  # a documentation name (RFC 2606)
        ("ansible_host: pi-1.mylab.org", True),
        ("DB_HOST: 192.0.2.10", False),  # a documentation address (RFC 5737)
        ("listen: 0.0.0.0:8080", False),
        ("test: [pg_isready, -h, 127.0.0.1]", False),
        ("image: ${PIREX_IMAGES:-localhost:5000/pirex}/postgres", False),
        ("uses: ansible.builtin.command machine.py run.yml", False),  # module paths and file names
        ("DB_HOST: 192.168.1.12", True),  # private, but not in an example
    ],
)
def test_addresses_and_names(line, hard_coded):
    hits, _ = check._address_hits(Path("compose/x.yml"), f"x:\n  {line}\n")
    assert bool(hits) == hard_coded, hits


def test_an_example_may_hold_private_placeholders_but_no_public_address():
    text = "# An example inventory\nall:\n  a: {ansible_host: 192.168.1.31}\n  b: {ansible_host: 8.8.8.8}\n"
    hits, placeholders = check._address_hits(Path("fleet/hosts.yml"), text)
    assert hits == ["4: 8.8.8.8"] and placeholders == 1


def test_a_claim_without_a_command_fails_with_its_id(artifact):
    claims = artifact / "source" / "analysis" / PAPER / "claims.yaml"
    claims.write_text(
        claims.read_text()
        + "  - id: no-command\n    where: Table 9\n    says: a claim that no experiment runs\n    scope: any machine\n"
    )
    pack.write_sums(artifact)
    code, lines = _check(artifact)
    assert code == 1 and _failed(lines) == ["claims"]
    assert f"{PAPER}:no-command: no command (no experiment runs it)" in lines["claims"]
    assert "no expected result" in lines["claims"]


def test_an_invalid_citation_fails(artifact):
    cff = artifact / "source" / "CITATION.cff"
    cff.write_text(cff.read_text().replace("authors:\n  - name: The pirex authors\n", "authors: []\n"))
    pack.write_sums(artifact)
    code, lines = _check(artifact)
    assert code == 1 and _failed(lines) == ["citation"]
    assert "authors" in lines["citation"]


def test_a_zenodo_file_that_disagrees_fails(artifact):
    z = artifact / "source" / ".zenodo.json"
    z.write_text(z.read_text().replace('"license": "Apache-2.0"', '"license": "MIT"'))
    ok, msg = check.citation(artifact / "source")
    assert not ok and msg == ".zenodo.json does not agree with CITATION.cff (license)"


def test_a_changed_file_fails_the_checksums(artifact):
    (artifact / "source" / "Makefile").write_text((artifact / "source" / "Makefile").read_text() + "\n# edited\n")
    (artifact / "source" / "stray.txt").write_text("x")
    ok, msg = check.checksums_dir(artifact)
    assert not ok and "changed" in msg and "source/Makefile" in msg
    pack.write_sums(artifact)
    assert check.checksums_dir(artifact)[0]
    (artifact / "source" / "another.txt").write_text("x")
    assert check.checksums_dir(artifact) == (False, "art: 1 file(s) not listed against SHA256SUMS: source/another.txt")


def test_a_build_recipe_without_its_folders_fails(artifact):
    shutil.rmtree(artifact / "source" / "images" / "jvm")
    ok, msg = check.rebuild(artifact / "source")
    assert not ok and "images/jvm" in msg
