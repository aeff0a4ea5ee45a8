"""`pirex artifact --check`: the badge self-check, what an artifact evaluation committee checks (ACM's Available,
Functional, Reusable; the committees' appendix forms), one item per function, each returning (ok, one line):

    license     a LICENSE file, and pyproject.toml's SPDX id naming it
    citation    CITATION.cff valid (CFF 1.2.0; cffconvert's full schema where it is installed, the dev extra) and
                .zenodo.json agreeing with it on title and license
    rebuild     a recipe that builds every image from scratch: the Makefile's build target and docker-bake.hcl
    addresses   no hard-coded IPv4 address or host name in compose/ and fleet/ (their .env files and inventories
                give them); an example the user copies and fills in (a name with "example", or a first line "# An
                example") may hold private or documentation addresses as placeholders
    claims      every claim of every paper with a command that judges it, a time and an expected result
                (appendix.py derives them; a claim lacking one is named)
    checksums   given an artifact (a folder or a .tar made by `pirex artifact`): its SHA256SUMS verify, and list
                every file

Given an artifact, the items before checksums are checked on its source/ (what the committee takes away).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import tarfile
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

import yaml

from pirex.core.bundle import sha256
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.reproduce import claims as claims_mod

Result = tuple[bool, str]
SUMS = "SHA256SUMS"
CFF_VERSION = "1.2.0"

# Enough of each licence's text to tell which one a LICENSE file is.
LICENSE_TEXTS = {
    "Apache-2.0": r"Apache License\s+Version 2\.0",
    "MIT": r"Permission is hereby granted, free of charge",
    "BSD-3-Clause": r"Neither the name of",
    "BSD-2-Clause": r"Redistribution and use in source and binary forms",
    "GPL-2.0": r"GNU GENERAL PUBLIC LICENSE\s+Version 2",
    "GPL-3.0": r"GNU GENERAL PUBLIC LICENSE\s+Version 3",
    "MPL-2.0": r"Mozilla Public License,? (Version|v\.) 2\.0",
}
SPDX = re.compile(r"^[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*$")


def _project_license(root: Path) -> str | None:
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    lic = project.get("license")
    if isinstance(lic, dict):
        lic = lic.get("text")
    return lic if isinstance(lic, str) and SPDX.match(lic) else None


def license_(root: Path) -> Result:
    files = [p for p in ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING") if (root / p).is_file()]
    if not files:
        return False, "no LICENSE file at the top of the repository: add the licence's text"
    spdx = _project_license(root)
    if spdx is None:
        return False, f"{files[0]} is there, but pyproject.toml names no SPDX id (project.license, e.g. Apache-2.0)"
    text = (root / files[0]).read_text(errors="replace")
    pattern = next((p for k, p in LICENSE_TEXTS.items() if spdx.startswith(k)), None)
    if pattern is None:
        return True, f"{files[0]} ({spdx}, as pyproject.toml says; a licence pirex does not recognise: compare by hand)"
    if not re.search(pattern, text):
        return False, f"{files[0]} is not the text of {spdx}, the licence pyproject.toml names"
    return True, f"{files[0]} ({spdx}, as pyproject.toml says)"


def _cff_problems(doc: object) -> list[str]:
    """The required keys and their types (CFF 1.2.0), for a machine without cffconvert."""
    if not isinstance(doc, dict):
        return ["not a YAML mapping"]
    out = []
    if str(doc.get("cff-version")) != CFF_VERSION:
        out.append(f"cff-version: expected {CFF_VERSION}, found {doc.get('cff-version')!r}")
    for key in ("message", "title"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            out.append(f"{key}: expected a non-empty text")
    authors = doc.get("authors")
    if not isinstance(authors, list) or not authors:
        out.append("authors: expected a non-empty list")
    elif not all(isinstance(a, dict) and (a.get("name") or a.get("family-names")) for a in authors):
        out.append("authors: each needs a name (an entity) or family-names (a person)")
    for i, r in enumerate(doc.get("references") or []):
        if not isinstance(r, dict) or not r.get("title") or not r.get("type") or not r.get("authors"):
            out.append(f"references[{i}]: expected type, title and authors")
    return out


def _schema_problem(text: str) -> tuple[str | None, str]:
    """cffconvert's validation against the CFF schema: (its first problem or None, which validator said so)."""
    try:
        from cffconvert import Citation
        from cffconvert.version import __version__ as version
    except ImportError:  # not on a Pi's runner: the keys and types were checked
        return None, "keys and types checked; cffconvert (the dev extra) checks the whole schema"
    try:
        Citation(text).validate()
    except Exception as e:  # jsonschema's ValidationError, or cffconvert's ValueError for a bad cff-version
        return str(e).splitlines()[0], f"cffconvert {version}"
    return None, f"schema-valid by cffconvert {version}"


def citation(root: Path) -> Result:
    cff = root / "CITATION.cff"
    if not cff.is_file():
        return False, "no CITATION.cff: cite the software and its papers (Citation File Format 1.2.0)"
    text = cff.read_text()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return False, f"CITATION.cff is not valid YAML: {' '.join(str(e).split())}"
    problems = _cff_problems(doc)
    if problems:
        return False, f"CITATION.cff: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
    problem, how = _schema_problem(text)
    if problem:
        return False, f"CITATION.cff fails the CFF {CFF_VERSION} schema ({how}): {problem}"
    spdx = _project_license(root)
    if spdx and doc.get("license") not in (spdx, [spdx]):
        return False, f"CITATION.cff: license {doc.get('license')!r}, but pyproject.toml says {spdx}"
    zenodo = root / ".zenodo.json"
    try:
        z = json.loads(zenodo.read_text())
    except (OSError, ValueError) as e:
        return False, f".zenodo.json: {'missing' if isinstance(e, OSError) else 'not valid JSON'} (Zenodo's metadata)"
    differ = [k for k in ("title", "license") if z.get(k) != doc.get(k)]
    if differ or z.get("upload_type") != "software" or not z.get("creators"):
        what = ", ".join(differ) or "upload_type software and creators"
        return False, f".zenodo.json does not agree with CITATION.cff ({what})"
    refs = len(doc.get("references") or [])
    return True, f"CITATION.cff (CFF {CFF_VERSION}, {how}; {refs} references) and .zenodo.json agree"


def rebuild(root: Path) -> Result:
    try:
        makefile = (root / "Makefile").read_text()
    except OSError:
        return False, "no Makefile: the recipe that builds every image from scratch (make build)"
    if not re.search(r"^build:", makefile, re.MULTILINE):
        return False, "the Makefile has no build target (make build: every image from scratch)"
    try:
        bake = (root / "docker-bake.hcl").read_text()
    except OSError:
        return False, "no docker-bake.hcl: the build graph `make build` bakes"
    group = re.search(r'group "default"\s*\{\s*targets\s*=\s*\[([^\]]*)\]', bake)
    if not group:
        return False, 'docker-bake.hcl has no group "default" with its targets'
    targets = re.findall(r'"([^"]+)"', group.group(1))
    declared = set(re.findall(r'^target "([^"]+)"', bake, re.MULTILINE))
    missing = [t for t in targets if t not in declared]
    if not targets or missing:
        return False, f"docker-bake.hcl's default group names undeclared targets: {', '.join(missing) or 'none'}"
    contexts = re.findall(r'^\s*context\s*=\s*"([^"$]+)"', bake, re.MULTILINE)
    absent = [c for c in contexts if not (root / c).is_dir()]
    if absent:
        return False, f"docker-bake.hcl builds from folders that are not there: {', '.join(absent)}"
    return True, (
        f"`make build` (the Makefile's build target; OFFLINE=1 without a container registry) bakes docker-bake.hcl's "
        f"default group from scratch: {', '.join(targets)}"
    )


IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])")
# Top-level domains a hard-coded host name would end in (not file suffixes such as .py, .sh or .md).
TLDS = (
    "com|org|net|edu|gov|mil|int|io|dev|app|cloud|info|biz|eu|de|uk|fr|nl|ch|at|se|fi|dk|no|es|it|pl|cz|jp|cn|"
    "us|ca|au|local|lan|internal|home|localdomain|intranet|corp|arpa"
)
HOSTNAME = re.compile(rf"(?<![\w.@/-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{TLDS}))(?![\w-])", re.IGNORECASE)
# Names reserved for documentation and examples (RFC 2606, RFC 6761), and Docker's own name for the host.
PLACEHOLDER_NAMES = re.compile(
    r"(^|\.)(example\.(com|org|net)|[a-z0-9-]+\.(example|test|invalid|localhost)|docker\.internal)$", re.IGNORECASE
)
ALWAYS = {"0.0.0.0", "127.0.0.1"}  # every interface, this host: no machine of anyone's lab
DOCUMENTATION = tuple(map(ipaddress.IPv4Network, ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")))  # RFC 5737


def _is_example(path: Path, text: str) -> bool:
    """A file the user copies and fills in: its addresses are placeholders."""
    first = text.splitlines()[0] if text else ""
    return "example" in path.name.lower() or bool(re.match(r"#\s*An example\b", first, re.IGNORECASE))


def _address_hits(path: Path, text: str) -> tuple[list[str], int]:
    """(hard-coded addresses as 'line: address', placeholders) of one file; full-line comments are documentation."""
    example = _is_example(path, text)
    hits, placeholders = [], 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for m in IPV4.finditer(line):
            a = m.group(1)
            try:
                ip = ipaddress.IPv4Address(a)
            except ValueError:  # 999.1.2.3: a version or a count, not an address
                continue
            if a in ALWAYS:
                continue
            if any(ip in net for net in DOCUMENTATION) or (example and ip.is_private):
                placeholders += 1
            else:
                hits.append(f"{n}: {a}")
        for m in HOSTNAME.finditer(line):
            name = m.group(1)
            if PLACEHOLDER_NAMES.search(name):
                placeholders += 1
            else:
                hits.append(f"{n}: {name}")
    return hits, placeholders


def addresses(root: Path) -> Result:
    files = sorted(
        p
        for d in ("compose", "fleet")
        for p in (root / d).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    )
    if not files:
        return False, "no files in compose/ and fleet/ to check"
    found, examples, placeholders = [], [], 0
    for p in files:
        try:
            text = p.read_text()
        except (UnicodeDecodeError, OSError):
            continue  # not text
        hits, ph = _address_hits(p, text)
        rel = p.relative_to(root).as_posix()
        found += [f"{rel}:{h}" for h in hits]
        if ph:
            placeholders += ph
            examples.append(rel)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        return False, (
            f"hard-coded: {', '.join(found[:3])}{more}: give addresses in the .env file (compose/example.env) or the "
            "inventory (fleet/hosts.yml), or use a documentation name (example.org) or address (192.0.2.x)"
        )
    where = f" ({placeholders} placeholders, in {', '.join(examples)})" if placeholders else ""
    return True, f"none hard-coded in {len(files)} files of compose/ and fleet/{where}"


def claims(root: Path, level: str = "kick-the-tires") -> Result:
    """Every claim of every paper under root/analysis/ with a command, a time and an expected result."""
    from pirex.artifact import appendix

    paths = sorted((root / "analysis").glob("*/claims.yaml"))
    if not paths:
        return False, "no papers (analysis/<paper>/claims.yaml)"
    lacking: dict[str, list[str]] = {}  # what is missing -> the claims it is missing for
    count = 0
    for path in paths:
        try:
            paper = claims_mod.load(path)
        except PirexError as e:
            return False, str(e)
        for r in appendix.rows(paper, level):
            count += 1
            for problem in r.problems:
                lacking.setdefault(problem, []).append(f"{paper.id}:{r.claim.id}")
    if lacking:
        parts = [f"{ids[0]}{f' and {len(ids) - 1} more' if len(ids) > 1 else ''}: {p}" for p, ids in lacking.items()]
        return False, f"at {level}, {sum(map(len, lacking.values()))} claims lack what a committee needs: " + "; ".join(
            parts
        )
    names = ", ".join(p.parent.name for p in paths)
    return True, (
        f"{count} claims of {len(paths)} papers ({names}), each with a command, a time at {level} and an expected "
        "result"
    )


def _sums(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if re.fullmatch(r"[0-9a-f]{64}", digest) and name:
            out[name] = digest
    return out


def checksums_dir(top: Path, unlisted_ok: str | None = None) -> Result:
    """A folder artifact's files against its SHA256SUMS; files below unlisted_ok (a folder, e.g. "source/") that it
    does not list are let be: what installing and running pirex there writes (.venv, __pycache__, results)."""
    if not (top / SUMS).is_file():
        return False, f"no {SUMS} in {top}"
    listed = _sums((top / SUMS).read_text())
    have = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()} - {SUMS}
    if unlisted_ok:
        have = {n for n in have if n in listed or not n.startswith(unlisted_ok)}
    return _compare(top.name, listed, have, lambda name: sha256(top / name))


def _compare(what: str, listed: dict[str, str], have: set[str], digest: Callable[[str], str]) -> Result:
    if not listed:
        return False, f"{what}: {SUMS} lists no files"
    unlisted = sorted(have - set(listed))
    gone = sorted(set(listed) - have)
    changed = sorted(n for n in set(listed) & have if digest(n) != listed[n])
    for kind, names in (("changed", changed), ("missing", gone), ("not listed", unlisted)):
        if names:
            return False, f"{what}: {len(names)} file(s) {kind} against {SUMS}: {', '.join(names[:3])}"
    return True, f"{what}: the {len(listed)} files' SHA-256 match {SUMS}"


def tar_error(e: Exception) -> str:
    """tarfile's error in one line: opening a file that is no tar at all lists every compression it tried."""
    text = str(e)
    if "\n" not in text:
        return text
    plain = re.search(r"method tar: ReadError\('([^']*)'\)", text)
    return f"neither a tar nor a compressed one ({plain[1] if plain else text.splitlines()[-1].strip()})"


def checksums_tar(path: Path) -> Result:
    try:
        with tarfile.open(path) as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            sums = next((n for n in members if n.count("/") == 1 and n.endswith("/" + SUMS)), None)
            if sums is None:
                return False, f"{path.name}: no <folder>/{SUMS} in the archive"
            top = sums.split("/")[0]
            listed = _sums(tar.extractfile(members[sums]).read().decode())
            have = {n[len(top) + 1 :] for n in members if n.startswith(top + "/") and n != sums}

            def digest(name: str) -> str:
                h = hashlib.sha256()
                f = tar.extractfile(members[f"{top}/{name}"])
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                return h.hexdigest()

            return _compare(path.name, listed, have, digest)
    except (tarfile.TarError, OSError, UnicodeDecodeError) as e:
        return False, f"{path.name} is not a readable tar: {tar_error(e)}"


ITEMS: tuple[tuple[str, Callable[[Path], Result]], ...] = (
    ("license", license_),
    ("citation", citation),
    ("rebuild", rebuild),
    ("addresses", addresses),
)


def run(root: Path = REPO, level: str = "kick-the-tires") -> list[tuple[str, bool, str]]:
    """Every item on a source tree: (name, ok, one line)."""
    out = [(name, *item(root)) for name, item in ITEMS]
    return out + [("claims", *claims(root, level))]


def run_artifact(path: Path, level: str = "kick-the-tires") -> list[tuple[str, bool, str]]:
    """An artifact (a folder or a .tar): the items on its source/, then its checksums."""
    if path.is_dir():
        return _on_source(path / "source", level) + [("checksums", *checksums_dir(path))]
    if not path.is_file():
        raise PirexError(f"{path} does not exist: give an artifact (a folder or a .tar from `pirex artifact`)")
    sums = checksums_tar(path)
    with tempfile.TemporaryDirectory(prefix="pirex-artifact-check-") as tmp:
        try:
            with tarfile.open(path) as tar:
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as e:
            return [("checksums", False, f"{path.name} is not a readable tar: {tar_error(e)}")]
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        top = tops[0] if len(tops) == 1 else Path(tmp)
        return _on_source(top / "source", level) + [("checksums", *sums)]


def _on_source(source: Path, level: str) -> list[tuple[str, bool, str]]:
    if not source.is_dir():
        return [("source", False, f"no source/ in the artifact ({source})")]
    return run(source, level)


def lines(results: list[tuple[str, bool, str]]) -> list[str]:
    """`ok   license: LICENSE (Apache-2.0)`, `FAIL citation: ...`: one line per item."""
    return [f"{'ok' if ok else 'FAIL':4} {name}: {msg}" for name, ok, msg in results]
