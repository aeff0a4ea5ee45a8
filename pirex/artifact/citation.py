"""An artifact's citation: CITATION.cff and .zenodo.json that cite the paper it reproduces, and pirex that runs it.

The paper's reference is analysis/<paper>/citation.yaml: one entry in the Citation File Format's `references`
fields (CFF 1.2.0: type, title, authors, year, doi, conference, ...). It becomes the artifact's
preferred-citation and its first reference, pirex (the root CITATION.cff, as a software reference) the second;
.zenodo.json carries the same, the paper's DOI as the deposit's related identifier. A paper without the file (a
researcher's own, not yet filled in) gets an artifact that cites pirex alone and says where its citation goes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pirex.core.errors import PirexError
from pirex.reproduce.claims import Paper, read_mapping

CITATION = "citation.yaml"  # beside a paper's claims.yaml
CFF_VERSION = "1.2.0"
ZENODO_TYPES = {
    "conference-paper": "publication-conferencepaper",
    "article": "publication-article",
    "thesis": "publication-thesis",
    "report": "publication-report",
    "book": "publication-book",
}


@dataclass(frozen=True)
class Citation:
    cff: dict[str, Any]  # CITATION.cff's document
    zenodo: dict[str, Any]  # .zenodo.json's

    @property
    def cites_paper(self) -> bool:
        """False: the paper has no citation.yaml, and the artifact cites pirex alone."""
        return "preferred-citation" in self.cff


def reference(paper: Paper) -> dict[str, Any] | None:
    """The paper's CFF reference (analysis/<paper>/citation.yaml), or None without one; a PirexError (naming the
    file and the key) for one without a type, title or authors."""
    path = paper.path.parent / CITATION
    if not path.is_file():
        return None
    ref = read_mapping(path)  # the file named when it is no YAML or no mapping
    for key, ok in (
        ("type", isinstance(ref.get("type"), str)),
        ("title", isinstance(ref.get("title"), str)),
        ("authors", isinstance(ref.get("authors"), list) and bool(ref.get("authors"))),
    ):
        if not ok:
            raise PirexError(f"{path}: {key}: required (CFF {CFF_VERSION} reference fields), found {ref.get(key)!r}")
    return ref


def software(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """pirex's own CITATION.cff and .zenodo.json (the repository's root)."""
    try:
        return yaml.safe_load((root / "CITATION.cff").read_text()), json.loads((root / ".zenodo.json").read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise PirexError(f"{root}: CITATION.cff or .zenodo.json cannot be read ({e}): restore them from git") from None


def of_artifact(paper: Paper, root: Path) -> Citation:
    """The artifact's citation files: the paper preferred, pirex referenced."""
    cff, zenodo = software(root)
    ref = reference(paper)
    pirex_ref = {k: cff[k] for k in ("title", "authors", "version", "license") if k in cff} | {"type": "software"}
    title = f"Artifact: {paper.title}, reproduced with pirex"
    cites = "the paper it reproduces (preferred-citation) and pirex, which runs it (references)"
    doc: dict[str, Any] = {
        "cff-version": CFF_VERSION,
        "message": f"If you use this artifact, please cite {cites}."
        if ref
        else (
            f"If you use this artifact, please cite pirex (references). The paper's own citation is not given: "
            f"add its CFF reference fields as analysis/{paper.id}/{CITATION}, then make the artifact again."
        ),
        "type": "software",
        "title": title,
        "abstract": f"The experiments, claims and instructions to rerun {paper.title} with pirex: {cff['abstract']}",
        "authors": cff["authors"],
        "version": cff["version"],
        "license": cff["license"],
        "keywords": cff.get("keywords", []),
    }
    if ref:
        doc["preferred-citation"] = ref
    doc["references"] = [r for r in (ref, pirex_ref) if r]
    z = {
        k: zenodo[k]
        for k in ("upload_type", "version", "license", "access_right", "creators", "keywords")
        if k in zenodo
    }
    z["title"] = title
    z["description"] = f"<p>{doc['abstract']}</p>"
    z["references"] = [text(r) for r in doc["references"]]
    if ref and ref.get("doi"):
        kind = ZENODO_TYPES.get(ref["type"], "publication")
        z["related_identifiers"] = [
            {"identifier": ref["doi"], "scheme": "doi", "relation": "isSupplementTo", "resource_type": kind}
        ]
    return Citation(doc, z)


def text(ref: dict[str, Any]) -> str:
    """A reference as one line of text (Zenodo's references): authors (year). Title. Where. doi."""
    who = [_author(a) for a in ref.get("authors", [])]
    names = who[0] if len(who) == 1 else ", ".join(who[:-1]) + " and " + who[-1] if who else ""
    where = ref.get("collection-title") or ", ".join(
        str(x) for x in (ref.get("thesis-type"), (ref.get("institution") or {}).get("name")) if x
    )
    parts = [f"{names} ({ref['year']})." if ref.get("year") else f"{names}.", f"{ref['title'].rstrip('.')}."]
    parts += [f"{where}."] if where else []
    parts += [f"doi:{ref['doi']}"] if ref.get("doi") else []
    parts += [f"version {ref['version']}"] if ref.get("type") == "software" and ref.get("version") else []
    return " ".join(p for p in parts if p.strip(". "))


def _author(a: dict[str, Any]) -> str:
    if "family-names" not in a:
        return str(a.get("name", ""))
    initials = " ".join(f"{w[0]}." for w in re.split(r"[\s-]+", str(a.get("given-names", ""))) if w)
    return f"{a['family-names']}, {initials}" if initials else str(a["family-names"])


def write(c: Citation, into: Path, paper: Paper | None = None) -> None:
    """CITATION.cff and .zenodo.json into a folder (the artifact's top), then checked as `pirex artifact --check`
    checks them (CFF 1.2.0's schema where cffconvert is installed): a PirexError naming the paper's citation.yaml
    when they fail, so that no artifact is made with a citation a repository or Zenodo would refuse."""
    from pirex.artifact import check  # check.py reads artifacts; this module writes them

    head = "# How to cite this artifact (Citation File Format 1.2.0), written by `pirex artifact`.\n"
    body = yaml.safe_dump(c.cff, sort_keys=False, allow_unicode=True, width=110)
    (into / "CITATION.cff").write_text(head + body)
    (into / ".zenodo.json").write_text(json.dumps(c.zenodo, indent=2, ensure_ascii=False) + "\n")
    ok, why = check.citation(into)
    if not ok:
        where = paper.path.parent / CITATION if paper and c.cites_paper else "CITATION.cff of the repository"
        raise PirexError(f"{where}: the artifact's citation would be invalid: {why}")
