"""A paper's citation (analysis/<paper>/citation.yaml) and deviations (analysis/<paper>/deviations.yaml): what an
artifact cites and lists, for the shipped papers and for a researcher's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pirex.artifact import check, citation
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.reproduce import claims

PAPERS = [claims.load(p) for p in claims.available()]


def _paper(tmp_path: Path, **files: str) -> claims.Paper:
    """A researcher's paper: a folder with a claims.yaml (no claim needed here) and the files given."""
    d = tmp_path / "mine"
    d.mkdir(exist_ok=True)
    (d / "claims.yaml").write_text("paper: mine\ntitle: My paper\nclaims: []\n")
    for name, text in files.items():
        (d / f"{name}.yaml").write_text(text)
    return claims.Paper("mine", "My paper", path=d / "claims.yaml")


def test_the_root_citation_lists_each_papers_own_reference_as_it_is():
    """One place per paper's facts: each reference of the root CITATION.cff is its paper's citation.yaml, the paper
    named by its notes ("Reproduced by pirex as the paper X (analysis/X)")."""
    root = yaml.safe_load((REPO / "CITATION.cff").read_text())
    by_paper = {re.search(r"as the paper (\S+) ", r.get("notes", "")).group(1): r for r in root["references"]}
    assert by_paper and all(citation.reference(claims.load(p)) == r for p, r in by_paper.items())


def test_an_artifacts_citation_of_a_paper_without_one_cites_pirex_and_says_where_it_goes(tmp_path):
    c = citation.of_artifact(_paper(tmp_path), REPO)
    assert not c.cites_paper and "preferred-citation" not in c.cff
    assert [r["type"] for r in c.cff["references"]] == ["software"]
    assert "analysis/mine/citation.yaml" in c.cff["message"]
    citation.write(c, tmp_path)
    assert check.citation(tmp_path)[0]


def test_a_researchers_citation_becomes_the_preferred_one(tmp_path):
    ref = "type: article\ntitle: My paper\nauthors:\n  - {family-names: Doe, given-names: Jane Q}\nyear: 2026\n"
    ref += "doi: 10.1234/mine.2026\n"
    c = citation.of_artifact(_paper(tmp_path, citation=ref), REPO)
    assert c.cites_paper and c.cff["preferred-citation"]["title"] == "My paper"
    assert c.zenodo["related_identifiers"][0] == {
        "identifier": "10.1234/mine.2026",
        "scheme": "doi",
        "relation": "isSupplementTo",
        "resource_type": "publication-article",
    }
    assert c.zenodo["references"][0] == "Doe, J. Q. (2026). My paper. doi:10.1234/mine.2026"
    citation.write(c, tmp_path)  # checked as it is written
    assert check.citation(tmp_path)[0]


def test_a_citation_a_repository_would_refuse_is_refused_before_the_artifact_is_made(tmp_path):
    ref = "type: article\ntitle: T\nauthors:\n  - {name: Doe}\ndoi: 10.1/x\n"  # not a DOI by CFF's pattern
    paper = _paper(tmp_path, citation=ref)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(PirexError, match=r"mine/citation.yaml: the artifact's citation would be invalid: .*10\.1/x"):
        citation.write(citation.of_artifact(paper, REPO), out, paper)


@pytest.mark.parametrize(
    "text, problem",
    [("type: article\ntitle: T\n", "authors: required"), ("- a list\n", "expected a mapping"), ("a: [", "YAML")],
)
def test_a_bad_citation_is_refused_naming_the_file(tmp_path, text, problem):
    with pytest.raises(PirexError, match=f"mine/citation.yaml: .*{re.escape(problem)}"):
        citation.reference(_paper(tmp_path, citation=text))


def test_each_paper_lists_its_own_deviations_and_names_only_shared_ones_that_exist():
    shared = yaml.safe_load(claims.SHARED_DEVIATIONS.read_text())["deviations"]
    named = set()
    for p in PAPERS:  # a paper added without deviations.yaml declares none (its artifact and report say so)
        named |= {k for k, v in shared.items() if v in claims.deviations([p])}
    assert named == set(shared)  # every shared deviation concerns some paper
    both = claims.deviations(PAPERS)
    assert len(both) == len(set(both))  # one shared by two papers is listed once


def test_a_researchers_deviations_are_its_own_words_and_the_shared_names_it_gives(tmp_path):
    assert claims.deviations([_paper(tmp_path)]) == []  # none declared
    assert claims.deviations_note([_paper(tmp_path)]) == "Deviations from the papers: none declared."
    p = _paper(tmp_path, deviations="deviations:\n  - java\n  - our disk is an NVMe SSD\n")
    got = claims.deviations([p])
    assert got[0].startswith("Java 17") and got[1] == "our disk is an NVMe SSD"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("deviations:\n  - jvaa\n", "'jvaa' is no name of analysis/deviations.yaml (its names: java, "),
        ("deviations: java\n", "deviations: expected a list"),
        ("deviations:\n  - ''\n", "deviations: expected a list"),
    ],
)
def test_a_bad_deviations_file_is_refused_naming_it(tmp_path, text, problem):
    with pytest.raises(PirexError, match=f"mine/deviations.yaml: .*{re.escape(problem)}"):
        claims.deviations([_paper(tmp_path, deviations=text)])
