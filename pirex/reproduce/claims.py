"""A paper's claims as data (analysis/<paper>/claims.yaml), loaded and checked: every problem is
a load error naming the file and the key. A claim:

    id, where (table and line, or section), says (in our own words)
    scope                                             the facts of a machine (and a run) the claim is about, in
        words: the kind of board or machine, cores, storage, framework (required: a claim says where it can speak);
        the ones pirex checks are its needs
    harness: why                                      the workload makes it true by construction (less recursion
        is less work): a check that the harness works, reported apart from the replication verdicts
    experiment, view (a matrix of it), variants        what it needs run (absent: nothing runs here)
    setup: {full: PROFILE, kick-the-tires: PROFILE}   the profile of the experiment its paper's numbers came from,
        per level of `pirex reproduce` (absent: paper at full, quick at kick-the-tires); SSP'17 ran SPASS-meter at
        MooBench's defaults, 2,000,000 calls at depth 10 (moobench's paper-spass-meter), Kieker at 1,000,000 at
        depth 5 (paper). Claims of one experiment, view and profile share its runs
    ratio: {metric, numerator, denominator}           two variants of one metric, or
    ratio: {numerator: {metric, variant}, denominator: {metric, variant}}
        metric may be a list: the first one the bundles have (a stand-in, e.g. Kieker for SPASS-meter)
    published: {table, numerator: {column: value...}, denominator: {...}, column}  derived from the CSV,
               or {direction: greater|less}, or {value: x} where the paper states no table
    rule: a region of our interval against a band (Claim.band), margins symmetric on the log scale, so that
        a/b and b/a give the same verdict (../shared/STATISTICS.md, "Rules as regions of the interval"):
        within (tolerance t)    the published value p matched: the interval inside [p/(1+t), p(1+t)], t from
                                the paper's own interval or its rounding (never a point: a longer run would
                                turn a holding claim into a differing one)
        direction               the effect's sign only: the interval on the paper's side of 1
        equivalent (margin m)   no change: the interval inside [1/(1+m), 1+m]
        different (margin m)    a change beyond m either way: the interval wholly outside [1/(1+m), 1+m]
        direction-at-most (m)   the paper's direction by at most m ("slightly slower"): inside [1, 1+m] for
                                greater, [1/(1+m), 1] for less
        beyond (edge x)         an effect past a size ("more than 98 % fewer": edge 0.02): the interval wholly
                                past x (below it when x < 1, above it when x > 1)
    device_dependent: why only the direction is judged
    needs: [a capability of the machine record (pirex/core/capabilities.py: cpufreq, pmu, function_graph, root, swap),
            devices:N, storages:N, pi or server (the kind of machine a paper's words are about: the thesis's Pi
            and server behave differently, so each kind has its claim), threads:N (at least N hardware threads:
            the thesis's server had 40, and its concurrent runs idle cores beside four), storage:KIND (the work
            directory on a storage of that kind, sd-card, usb, ...: a size the paper's disk decided), or a need the
            file declares]
    A claim that compares a matrix case with its base where the case changes nothing on this machine (pinned to
    every CPU, a governor already in effect, swap off where there is none) is not run here: "not informative here"
    (plan.vacuous_cases), and costs no repetitions.

Claims across machines (needs devices:N) or storage devices (needs storages:N) say `across: devices|storages`:
    metrics: [m, ...], rule: equivalent, margin   the devices agree: every pair of devices' means of each metric
        within [1/(1+margin), 1+margin] (two one-sided tests over each device's repetitions; pirex/analysis/across.py)
    ratio: {metric, numerator: variant, denominator: variant}, sides: {numerator: S, denominator: S}
        one device's (or storage's) mean over another's, unpaired: S is pi or server (a machine with or without a
        Pi's board) for devices, a storage kind of the machine record (sd-card, usb, nvme, ...) for storages;
        without sides (storages only) the two storages in the order given, with rule different
    crossover: {at: x, below: greater|less, above: greater|less}   with a metric holding {size}: the ratio's
        direction per size, one side of x and the other (the thesis: the server faster up to about 32 MB)
    rule different (margin): a change either way beyond the margin (the storage's direction reported)

A paper declares its stand-ins under the top-level `stand_ins`: metric -> {for (the metric it replaces), shares
(what it has of the original's mechanism), cannot (what it cannot show)}. A verdict judged on a stand-in's metric
(a metric list's fallback, e.g. [spass-meter, kieker-text]) is a stand-in check, reported apart from the replication
verdicts with what it shows and what it cannot.

A paper declares what its claims need beyond the machine's capabilities (a bring-your-own tool, a licensed
kit) under the top-level `needs`: name -> {what, how (what to do about it), and how to check it: glob (a
path pattern in this checkout that exists once it is there) or capability (one of the machine's); neither:
pirex cannot provide it at all}.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pirex.core import capabilities, experiment, schema
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS
from pirex.reproduce import rules

RULES = tuple(rules.REGISTRY)  # the rules' names (pirex/reproduce/rules.py)
POINT_TEST = (  # why the rule contains went (issue 35), in its load error
    "contains is a point test (a longer run turns a holding claim into a differing one): use within with the "
    "paper's own interval or rounding as tolerance, equivalent, or direction"
)
DEVICE_SIDES = ("pi", "server")  # a machine with a Pi's board, one without
COUNTED = re.compile(r"^(devices|storages):\d+$")  # the number of machines or storage devices a claim spans
THREADS = re.compile(r"^threads:([1-9]\d*)$")  # at least N hardware threads (the thesis's server: 40)
STORAGE = re.compile(r"^storage:([a-z-]+)$")  # the work directory on a storage of this kind (a size a disk decides)
_CLAIM = schema.load("claims")["definitions"]["claim"]["properties"]  # claims.schema.json's claim
KEYS = set(_CLAIM)  # a claim's keys
ID = re.compile(_CLAIM["id"]["allOf"][1]["pattern"])  # a claim id's pattern
SETUP_LEVELS = ("kick-the-tires", "full")  # pirex reproduce --level (plan.LEVELS: each level's default profile)
# the keys that say how a measurement judges a claim: meaningless, so refused, on a claim without an experiment
MEASURING = frozenset(
    ("view", "variants", "ratio", "published", "rule", "tolerance", "margin", "metrics", "sides", "crossover")
    + ("edge", "setup", "across")
)


@dataclass(frozen=True)
class Side:
    metrics: tuple[str, ...]  # the first one present is used
    variant: str


@dataclass(frozen=True)
class StandIn:
    """A metric that stands in for another where that one cannot run here (SPASS-meter is bring-your-own): what it
    replaces, what it shares with the original and what it cannot show. A verdict judged on it is a stand-in
    check, reported apart from the replication verdicts (report.evidence)."""

    metric: str
    replaces: str
    shares: str
    cannot: str

    def names(self, metric: str) -> bool:
        """Whether a run value's metric is of this stand-in: the metric itself or one of its spreads and counts
        ("kieker-text sd", "kieker-text interrupts timer"), alone or in a ratio "a / b"."""
        return any(m == self.metric or m.startswith(self.metric + " ") for m in metric.split(" / "))


@dataclass(frozen=True)
class Claim:
    paper: str
    id: str
    where: str
    says: str
    experiment: str | None = None
    view: str | None = None
    variants: tuple[str, ...] = ()
    numerator: Side | None = None
    denominator: Side | None = None
    published: float | None = None  # the paper's ratio
    direction: str | None = None  # greater | less: the sign of the published effect
    rule: str = "direction"
    tolerance: float = 0.0
    margin: float = 0.0  # equivalent: the largest change still "no change"; direction-at-most: the largest effect
    device_dependent: str = ""
    needs: tuple[str, ...] = ()
    source: str = ""  # how the published value was derived
    across: str | None = None  # devices | storages: compared across machines or storage devices, not variants
    metrics: tuple[str, ...] = ()  # across, without a ratio: the metrics whose device means must agree
    sides: tuple[str, str] | None = None  # across with a ratio: which device (storage) is numerator, denominator
    crossover: tuple[float, str, str] | None = None  # (at, direction below, direction above), per {size}
    edge: float = 0.0  # beyond: the ratio the whole interval must lie past ("more than 98 % fewer": 0.02)
    setup: tuple[tuple[str, str], ...] = ()  # (level, profile): the paper's setup where not the level's default
    scope: str = ""  # the facts of a machine (and a run) the claim is about, in words; `needs` holds the checked ones
    harness: str = ""  # why the workload makes it true by construction: a harness check, not evidence on the paper
    stand_ins: tuple[StandIn, ...] = ()  # the paper's stand-ins among its metrics: a verdict on one is a stand-in check

    def stand_in(self, metric: str) -> StandIn | None:
        """The stand-in a verdict's metric (verdict.Ours.metric) is of, or None."""
        return next((s for s in self.stand_ins if s.names(metric)), None)

    def profile(self, level: str, default: str) -> str:
        """The profile a run for this claim uses at a level: its paper's setup, else the level's default."""
        return dict(self.setup).get(level, default)

    @property
    def rule_kind(self) -> rules.Rule:
        """The claim's rule (pirex/reproduce/rules.py): its regions, edges and words."""
        return rules.REGISTRY[self.rule]

    @property
    def band(self) -> tuple[float, float] | None:
        """The interval the rule measures ours against (rules.Rule.band): within the published value's
        [p/(1+t), p(1+t)]; equivalent and different [1/(1+m), 1+m]; direction-at-most [1, 1+m] (greater) or
        [1/(1+m), 1] (less); beyond (edge, edge); direction None (its only edge is 1)."""
        return self.rule_kind.band(self)

    @property
    def judged(self) -> bool:
        return self.numerator is not None or bool(self.metrics)

    @property
    def span(self) -> int:
        """How many devices (storage devices) the claim spans: 1 for a claim on one machine."""
        for n in self.needs:
            kind, _, count = n.partition(":")
            if count and kind == self.across:
                return int(count)
        return 1


@dataclass(frozen=True)
class Requirement:
    """Something a paper's claims need beyond the machine's capabilities: what it is, what to do about it,
    and how to tell it is there (glob: a path pattern under the checkout; capability: one of the machine's;
    neither: pirex cannot provide it, so the claims that need it are never judged here)."""

    name: str
    what: str
    how: str
    glob: str = ""
    capability: str = ""


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    claims: tuple[Claim, ...] = field(default_factory=tuple)
    path: Path = Path()
    needs: dict[str, Requirement] = field(default_factory=dict)


SHARED_DEVIATIONS = PAPERS / "deviations.yaml"  # name -> what pirex runs differently from one or more papers
DEVIATIONS = "deviations.yaml"  # beside a paper's claims.yaml: the shared ones' names that concern it, or its own


def deviations(papers: Iterable[Paper]) -> list[str]:
    """What pirex runs differently from these papers, for their tables' footers, reports and artifacts: each
    paper's analysis/<paper>/deviations.yaml in order, a name standing for analysis/deviations.yaml's entry, any
    other entry (words, with a space) the paper's own; each once. A paper without the file has none declared."""
    shared = read_mapping(SHARED_DEVIATIONS, "deviations")
    out: list[str] = []
    for paper in papers:
        path = paper.path.parent / DEVIATIONS
        if not path.is_file():
            continue
        doc = read_mapping(path)
        entries = doc.get("deviations")
        if not isinstance(entries, list) or not all(isinstance(e, str) and e.strip() for e in entries):
            raise _fail(path, "deviations", "a list of names (of analysis/deviations.yaml) or sentences", entries)
        for e in entries:
            if " " not in e.strip() and e not in shared:
                raise PirexError(
                    f"{path}: deviations: {e!r} is no name of {SHARED_DEVIATIONS.relative_to(PAPERS.parent)} "
                    f"(its names: {', '.join(shared)}); a deviation of the paper's own is a sentence"
                )
            text = shared.get(e, e)
            if text not in out:
                out.append(text)
    return out


def read_mapping(path: Path, key: str | None = None) -> dict:
    """A YAML file's mapping (or the mapping under key), or a PirexError naming the file."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise PirexError(f"{path}: cannot be read as YAML ({' '.join(str(e).split())})") from None
    if key is not None:
        doc = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(doc, dict):
        raise _fail(path, key or "(top)", "a mapping", doc)
    return doc


def deviations_note(papers: Iterable[Paper]) -> str:
    found = deviations(papers)
    return "Deviations from the papers: " + ("; ".join(found) + "." if found else "none declared.")


def available() -> list[str]:
    return sorted(p.parent.name for p in PAPERS.glob("*/claims.yaml"))


def load(paper: str | Path) -> Paper:
    path = Path(paper) if str(paper).endswith((".yaml", ".yml")) else PAPERS / str(paper) / "claims.yaml"
    if not path.is_file():
        raise PirexError(f"no paper {str(paper)!r}: {path} does not exist (papers: {', '.join(available())})")
    try:
        doc = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as e:
        raise PirexError(f"{path} is not valid YAML: {str(e).splitlines()[0]}") from None
    return parse(doc, path)


def _fail(path: Path, key: str, expected: str, got: Any) -> PirexError:
    return PirexError(f"{path}: {key}: expected {expected}, found {got!r}")


def parse(doc: Any, path: Path) -> Paper:
    """claims.yaml's document, checked against claims.schema.json for its shapes, then here for what it refers to."""
    _check_shapes(doc, path)
    paper = doc["paper"]
    if path.name == "claims.yaml" and path.parent.parent == PAPERS and paper != path.parent.name:
        raise _fail(path, "paper", f"{path.parent.name!r}, the folder's name", paper)
    requirements = _requirements(doc.get("needs", {}), path)
    claims, seen = [], set()
    for i, c in enumerate(doc["claims"]):
        claim = _claim(c, path, f"claims[{i}] ({c['id']})", paper, set(requirements))
        if claim.id in seen:
            raise _fail(path, f"claims[{i}].id", "an id not used by another claim", claim.id)
        seen.add(claim.id)
        claims.append(claim)
    stand_ins = [StandIn(m, d["for"], d["shares"], d["cannot"]) for m, d in doc.get("stand_ins", {}).items()]
    claims = [_with_stand_ins(c, stand_ins) for c in claims]
    return Paper(paper, title=doc["title"], claims=tuple(claims), path=path, needs=requirements)


def _with_stand_ins(claim: Claim, stand_ins: Iterable[StandIn]) -> Claim:
    """The claim with the stand-ins its metric lists fall back to: a stand-in's metric after one of the metric it
    replaces ([spass-meter, kieker-text]). The same metric named alone is the claim's own subject (Table 2's
    kieker-text is the papers' Kieker), never a stand-in check."""
    lists = [claim.metrics, *(s.metrics for s in (claim.numerator, claim.denominator) if s)]

    def falls_back_to(s: StandIn) -> bool:
        of_original = StandIn(s.replaces, "", "", "").names
        return any(s.names(m) and any(map(of_original, ms[:i])) for ms in lists for i, m in enumerate(ms))

    found = tuple(s for s in stand_ins if falls_back_to(s))
    return dataclasses.replace(claim, stand_ins=found) if found else claim


def _known_needs(declared: Iterable[str]) -> tuple[str, ...]:
    """What a claim's needs may name: the machine record's capabilities, a side, the paper's own needs."""
    return (*capabilities.NAMES, *DEVICE_SIDES, *sorted(declared))


def _check_shapes(doc: Any, path: Path) -> None:
    """The first problem of claims.schema.json's, said as this module says every problem."""
    needs = doc.get("needs") if isinstance(doc, dict) else None
    declared = needs if isinstance(needs, dict) else {}
    facts = {"experiments": ", ".join(experiment.available()), "needs": ", ".join(_known_needs(declared))}
    problem = schema.first_problem("claims", doc, facts)
    if problem is None:
        return
    at = problem.at + ((problem.missing,) if problem.missing else ())
    raise _fail(path, _where(doc, at, problem), problem.expected, problem.found)


def _where(doc: dict, at: tuple, problem: schema.Problem) -> str:
    """A key path as this module's messages name it: a claim by its index and, once its id is read, by the id too
    (a claim that is no mapping or has unknown keys is named before its id is read)."""
    if not at:
        return "(top level)"
    if at[0] in ("paper", "title"):
        return f"(top level).{at[0]}"
    named = len(at) > 2 and at[2] != "id" or len(at) == 2 and not problem.unknown
    if at[0] == "claims" and named and isinstance(doc["claims"][at[1]], dict):
        cid = doc["claims"][at[1]].get("id")
        good = isinstance(cid, str) and ID.match(cid)
        return schema.dotted(at[2:], start=f"claims[{at[1]}] ({cid})" if good else f"claims[{at[1]}]")
    return schema.dotted(at)


def _requirements(doc: dict, path: Path) -> dict[str, Requirement]:
    out = {}
    for name, d in doc.items():
        where = f"needs.{name}"
        if name in (*capabilities.NAMES, *DEVICE_SIDES):
            raise _fail(path, where, "a lowercase name that is not a capability of the machine record", name)
        glob, capability = d.get("glob", ""), d.get("capability", "")
        if glob and capability:
            raise _fail(path, where, "one check: glob or capability, not both", d)
        if capability and capability not in capabilities.NAMES:
            raise _fail(path, f"{where}.capability", f"one of {', '.join(capabilities.NAMES)}", capability)
        out[name] = Requirement(name, d["what"], d["how"], glob, capability)
    return out


def _claim(c: dict, path: Path, where: str, paper: str, declared: set[str]) -> Claim:
    """One claim of claims.yaml: its needs and words, then the experiment that measures it, if any."""
    needs = c.get("needs", [])
    known = _known_needs(declared)
    kinds = {m.group(1) for n in needs if (m := STORAGE.match(n))}
    shaped = all(n in known or COUNTED.match(n) or THREADS.match(n) or STORAGE.match(n) for n in needs)
    if not shaped or not kinds <= set(STORAGE_KINDS):
        storage = "|".join(STORAGE_KINDS)
        expected = f"a list among {', '.join(known)}, devices:N, storages:N, threads:N, storage:KIND ({storage})"
        raise _fail(path, f"{where}.needs", expected, needs)
    base = {
        "paper": paper,
        "id": c["id"],
        "where": c["where"],
        "says": c["says"],
        "needs": tuple(needs),
        "device_dependent": c.get("device_dependent") or "",
        "scope": c["scope"],
        "harness": c.get("harness") or "",
    }
    exp_id = c.get("experiment")
    if exp_id is None:
        # a claim nothing measures judges nothing: what would judge it is an error, not ignored (a rule unchecked)
        if measuring := sorted(set(c) & MEASURING):
            raise _fail(
                path,
                f"{where}.experiment",
                f"the experiment that measures it (the claim gives {', '.join(measuring)})",
                None,
            )
        return Claim(**base)
    exp, view = _runs(c, exp_id, path, where, base)
    across = _across(c, needs, path, where)
    if across is not None:
        base["across"] = across
    if "metrics" in c:
        return _agreement(c, path, where, base)
    if "ratio" not in c:
        if across is not None or "rule" in c:
            raise _fail(
                path, f"{where}.ratio", "a ratio or, across devices or storages, metrics: what the rule reads", None
            )
        return Claim(**base)
    return _ratio_claim(c, path, where, base, exp, view, across)


def _runs(c: dict, exp_id: Any, path: Path, where: str, base: dict) -> tuple[experiment.Experiment, str | None]:
    """What a measured claim needs run (experiment, view, variants, setup): checked, added to `base`."""
    if not isinstance(exp_id, str) or exp_id not in experiment.available():
        raise _fail(path, f"{where}.experiment", f"one of {', '.join(experiment.available())}", exp_id)
    exp = experiment.load(exp_id)
    view = c.get("view")
    if view is not None and (not isinstance(view, str) or view not in exp.matrices):
        raise _fail(path, f"{where}.view", f"a matrix of {exp_id} ({', '.join(exp.matrices) or 'none'})", view)
    variants = c.get("variants", list(exp.default_variants))
    if view is None:
        try:
            exp.pick_variants(",".join(variants))
        except PirexError as e:
            raise PirexError(f"{path}: {where}.variants: {e}") from None
    base |= {"experiment": exp_id, "view": view, "variants": tuple(variants)}
    base["setup"] = _setup(c.get("setup"), exp, path, f"{where}.setup")
    return exp, view


def _across(c: dict, needs: list[str], path: Path, where: str) -> str | None:
    """What a claim spans (devices or storages), or None; metrics, sides and crossover need one, and so its needs."""
    across = c.get("across")
    for key in ("metrics", "sides", "crossover"):
        if key in c and across is None:
            raise _fail(path, f"{where}.{key}", "a claim with across: devices or storages", c[key])
    if across is not None:
        if not any(n.startswith(f"{across}:") for n in needs):
            raise _fail(path, f"{where}.needs", f"{across}:N (how many {across} the claim spans)", needs)
    return across


def _rule(c: dict, path: Path, where: str) -> tuple[rules.Rule, float, float]:
    """A ratio claim's rule with its tolerance and margin, each as the rule takes them."""
    name = c.get("rule")
    if name == "contains":
        raise PirexError(f"{path}: {where}.rule: {POINT_TEST}")
    if not isinstance(name, str) or name not in rules.REGISTRY:
        raise _fail(path, f"{where}.rule", f"one of {', '.join(RULES)}", name)
    rule = rules.REGISTRY[name]
    tol, margin = c.get("tolerance", 0.0), c.get("margin", 0.0)  # fractions in [0, 1) (claims.schema.json)
    if rule.tolerance and not tol:
        raise _fail(path, f"{where}.tolerance", f"a fraction in (0, 1) ({name} needs one)", tol)
    if bool(margin) != rule.margined:
        raise _fail(path, f"{where}.margin", f"a margin exactly for the rules {' and '.join(rules.MARGINED)}", margin)
    return rule, tol, margin


def _ratio_claim(
    c: dict, path: Path, where: str, base: dict, exp: experiment.Experiment, view: str | None, across: str | None
) -> Claim:
    """A claim on a ratio of two sides: its rule, and the paper's value or direction the ratio is judged against."""
    num, den = _ratio(c["ratio"], path, f"{where}.ratio", exp, view)
    rule, tol, margin = _rule(c, path, where)
    sides = _sides(c.get("sides"), across, rule, path, f"{where}.sides")
    crossover = _crossover(c, num, den, rule, path, where)
    edge = _edge(c, rule, path, where)
    if crossover:
        value, direction, source = None, crossover[1], "the paper's text"
    elif rule.words_only and "published" not in c:  # the paper's words, no value
        value, direction, source = None, None, "the paper's text"
    else:
        value, direction, source = _published(c.get("published"), path, f"{where}.published")
    if rule.edged:
        direction = _beyond_direction(edge, value, direction, path, where)
    if not rule.directed and not rule.words_only and value is None:
        raise _fail(path, f"{where}.rule", "direction (the paper gives no value to compare with)", rule.name)
    if rule.directed and direction is None:
        direction = "greater" if value > 1 else "less"
    base |= {"sides": sides, "crossover": crossover}
    return Claim(
        **base,
        numerator=num,
        denominator=den,
        published=value,
        direction=direction,
        rule=rule.name,
        tolerance=float(tol),
        margin=float(margin),
        source=source,
        edge=edge,
    )


def _setup(s: Any, exp: experiment.Experiment, path: Path, where: str) -> tuple[tuple[str, str], ...]:
    """The profile per level the paper's numbers came from (e.g. {full: paper-spass-meter})."""
    if s is None:
        return ()
    profiles = ", ".join(exp.profiles)
    if not isinstance(s, dict) or not s or not set(s) <= set(SETUP_LEVELS):
        raise _fail(path, where, f"a mapping of level ({', '.join(SETUP_LEVELS)}) to a profile of {exp.id}", s)
    for level, profile in s.items():
        if not isinstance(profile, str) or profile not in exp.profiles:
            raise _fail(path, f"{where}.{level}", f"a profile of {exp.id} ({profiles})", profile)
    return tuple((level, s[level]) for level in SETUP_LEVELS if level in s)


def _edge(c: dict, rule: rules.Rule, path: Path, where: str) -> float:
    """beyond's edge: a positive ratio other than 1 (1 would be the rule direction), and only for beyond."""
    x = c.get("edge")
    if not rule.edged:
        if x is not None:
            raise _fail(path, f"{where}.edge", "no edge: it belongs to the rule beyond", x)
        return 0.0
    if x is None:  # beyond's edge is checked by claims.schema.json where it is given
        raise _fail(path, f"{where}.edge", "a positive ratio other than 1 (more than 98 % fewer: 0.02)", x)
    return float(x)


def _beyond_direction(edge: float, value: float | None, direction: str | None, path: Path, where: str) -> str:
    """The side of 1 the edge lies on; a published direction must be the same, a published value on it and
    at or past the edge (the paper's own number cannot fall short of its "more than")."""
    side = "less" if edge < 1 else "greater"
    if direction is not None and direction != side:
        raise _fail(path, f"{where}.published.direction", f"{side}, the side of 1 of edge {edge:g}", direction)
    if value is not None and (value > edge if side == "less" else value < edge):
        raise _fail(path, f"{where}.published", f"a value at or past edge {edge:g} ({side})", value)
    return side


STORAGE_KINDS = ("sd-card", "emmc", "usb", "nvme", "virtio", "other")  # pirex.core.machine.classify_storage's


def _agreement(c: dict, path: Path, where: str, base: dict) -> Claim:
    """A claim that the devices (storages) agree on each of its metrics: rule equivalent with a margin."""
    metrics = c["metrics"]  # a non-empty list of names, and no ratio, sides or crossover beside it (the schema)
    if c.get("rule") != rules.EQUIVALENT.name:
        raise _fail(path, f"{where}.rule", "equivalent (the devices agree within the margin)", c.get("rule"))
    margin = c.get("margin")  # a fraction in (0, 1) where it is given (the schema)
    if margin is None:
        raise _fail(path, f"{where}.margin", "a fraction in (0, 1): the largest difference still agreeing", margin)
    if len(base["variants"]) != 1:
        raise _fail(path, f"{where}.variants", "one variant: the one every device runs", list(base["variants"]))
    return Claim(**base, metrics=tuple(metrics), rule=rules.EQUIVALENT.name, margin=float(margin))


def _sides(s: Any, across: str | None, rule: rules.Rule, path: Path, where: str) -> tuple[str, str] | None:
    if s is None:
        if across == "devices":
            raise _fail(path, where, f"{{numerator, denominator}} among {', '.join(DEVICE_SIDES)}", s)
        if across == "storages" and rule is not rules.DIFFERENT:
            raise _fail(path, where, "the storage kinds of numerator and denominator (or rule different)", s)
        return None
    allowed = DEVICE_SIDES if across == "devices" else STORAGE_KINDS
    if not isinstance(s, dict) or set(s) != {"numerator", "denominator"} or s["numerator"] == s["denominator"]:
        raise _fail(path, where, f"{{numerator, denominator}}: two different among {', '.join(allowed)}", s)
    if not all(v in allowed for v in s.values()):
        raise _fail(path, where, f"values among {', '.join(allowed)}", s)
    return s["numerator"], s["denominator"]


def _crossover(
    c: dict, num: Side, den: Side, rule: rules.Rule, path: Path, where: str
) -> tuple[float, str, str] | None:
    x = c.get("crossover")
    if x is None:
        return None
    if set(x) != {"at", "below", "above"}:  # a mapping, at a positive size (the schema)
        raise _fail(path, f"{where}.crossover", "{at, below, above}", x)
    at = x["at"]
    if {x["below"], x["above"]} != {"greater", "less"}:
        raise _fail(path, f"{where}.crossover", "below and above: greater and less, one each", x)
    if not all("{size}" in m for m in (*num.metrics, *den.metrics)):
        raise _fail(path, f"{where}.ratio.metric", "a metric with {size} (judged per size)", num.metrics)
    if rule is not rules.DIRECTION or "published" in c:
        raise _fail(path, f"{where}.crossover", "rule direction and no published (the crossover is the claim)", x)
    return float(at), x["below"], x["above"]


def _ratio(r: Any, path: Path, where: str, exp: experiment.Experiment, view: str | None) -> tuple[Side, Side]:
    if not isinstance(r, dict):
        raise _fail(path, where, "{metric, numerator, denominator}", r)

    def side(key: str) -> Side:
        s = r.get(key)
        metric = r.get("metric")
        if isinstance(s, dict):
            metric, variant = s.get("metric"), s.get("variant")
        else:
            variant = s
        metrics = metric if isinstance(metric, list) else [metric]
        if not metrics or not all(isinstance(m, str) and m for m in metrics):
            raise _fail(path, f"{where}.{key}", "a metric name (or a list of them)", metric)
        names = exp.matrices[view].cases if view else ()
        allowed = {c.name for c in names} if view else set(exp.variants)
        if not isinstance(variant, str) or experiment.aa_base(variant) not in allowed:
            raise _fail(path, f"{where}.{key}", f"a variant among {', '.join(sorted(allowed))}", variant)
        return Side(tuple(metrics), variant)

    return side("numerator"), side("denominator")


def _published(p: Any, path: Path, where: str) -> tuple[float | None, str | None, str]:
    if not isinstance(p, dict):
        raise _fail(path, where, "{table, numerator, denominator, column} or {direction} or {value}", p)
    if "direction" in p:  # greater or less, and a value positive (the schema)
        return None, p["direction"], "the paper's text"
    if "value" in p:
        return float(p["value"]), None, "the paper's text"
    table = p.get("table")
    csv_path = path.parent / str(table)
    if not isinstance(table, str) or not csv_path.is_file():
        raise _fail(path, f"{where}.table", f"a CSV file beside {path.name}", table)
    column = p.get("column")
    rows = _rows(csv_path)
    if not isinstance(column, str) or column not in (rows[0] if rows else {}):
        raise _fail(path, f"{where}.column", f"a column of {table}", column)

    def value(key: str) -> float:
        match = p.get(key)
        if not isinstance(match, dict) or not match:
            raise _fail(path, f"{where}.{key}", "a mapping of column to value selecting one row", match)
        found = [r for r in rows if all(r.get(k) == str(v) for k, v in match.items())]
        if len(found) != 1:
            raise _fail(
                path, f"{where}.{key}", f"a selection of exactly one row of {table} ({len(found)} match)", match
            )
        try:
            return float(found[0][column])
        except ValueError:
            raise _fail(path, f"{where}.{key}", f"a row whose {column} is a number", found[0][column]) from None

    num, den = value("numerator"), value("denominator")
    if den <= 0 or num <= 0:
        raise _fail(path, where, "positive values for a ratio", (num, den))
    return num / den, None, f"{table}: {num:g} / {den:g} ({column})"


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))
