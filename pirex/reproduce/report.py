"""The reproduction's report: report.html, a page people read (rendered from templates/report.html:
self-contained, printable on A4), REPORT.md, its plain-text twin with the same content (from
templates/report.md); the short summary printed at the end is summary.py's.

Both renderings are made from one model: the facts at the top (counts per verdict, the machine, the
commit, the images, the level, the time taken), the claims grouped by paper and by the paper's section
with a figure per group, each run's regenerated tables beside the paper's, the deviations and what this
machine cannot do."""

from __future__ import annotations

import base64
import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pirex.analysis import modules
from pirex.analysis import tables as T
from pirex.analysis.assumptions import CHECK_ALPHA
from pirex.analysis.interface import NamedTable
from pirex.analysis.verdicts import DIFFERS, HOLDS, INCONCLUSIVE, NOT_RUN
from pirex.core import experiment
from pirex.core.bundle import Bundle
from pirex.core.machine import MachineRecord, RecordLike
from pirex.core.paths import PAPERS
from pirex.reproduce import claims as claims_mod
from pirex.reproduce.plan import LEVELS, MIN_REPETITIONS, Need
from pirex.reproduce.summary import MARK as MARK
from pirex.reproduce.summary import count_groups as count_groups
from pirex.reproduce.summary import count_text as count_text
from pirex.reproduce.summary import counts as counts
from pirex.reproduce.summary import duration as duration  # the artifact appendix says times so too
from pirex.reproduce.summary import summary as summary
from pirex.reproduce.summary import took_text
from pirex.reproduce.verdict import CONFIDENCE, HARNESS, REPLICATION, Verdict, verdict_level

Timing = tuple[str, float | None, float]  # a run's key, its estimate and what it took (seconds)
# The verdict's class on the page (a colour beside its word, never instead of it); the figures use the same colours.
CLASS = {HOLDS: "v-holds", DIFFERS: "v-differs", INCONCLUSIVE: "v-inconclusive", NOT_RUN: "v-not-run"}
COLOUR = {HOLDS: "#1a7f37", DIFFERS: "#cf222e", INCONCLUSIVE: "#9a6700", NOT_RUN: "#6e7781"}
COLUMNS = ["Claim", "Where", "Published", "Ours (interval over repetitions)", "A/A", "Verdict", "Why"]
METHOD = (
    "Intervals are over independent repetitions, each the ratio of the two sides' run means in the same "
    f"repetition (paired by the plan; t on log ratios, a duet's with its CPU half in the model, counts as rate "
    f"ratios of their events); none below {MIN_REPETITIONS} repetitions. Each verdict is a test at alpha (5 % at the "
    "default 95 % confidence): the interval shown is the 1 - 2 alpha one (90 %), read for one side of an edge or "
    "inside a band; wholly outside a band is read off the 1 - alpha one; the A/A check too. "
    "A/A: the same variant run twice under two names, the noise floor of this machine. Device-dependent claims "
    "are judged by their direction only."
)


LEFT_OUT = (
    "These bundles failed verification against their manifests (`pirex verify`): nothing was read from them, and "
    "every verdict and table here is judged from the other bundles."
)


@dataclass(frozen=True)
class Facts:
    """What the top of the report says besides the counts."""

    title: str
    level: str
    notes: list[str]  # the level's details (--set), the confidence, bundles of another commit
    machine: RecordLike  # a machine record: the bundles' (before their run), else this machine's now
    commit: str
    images: list[dict]  # name, digest, platform, origin: every image the bundles ran
    took: float | None = None  # seconds, every attempt of the reproduction added up
    attempts: int = 1
    precision: float | None = None  # --precision
    titles: dict[str, str] = field(default_factory=dict)  # paper id -> its title (a claims file given by path too)
    devices: list[str] = field(default_factory=list)  # the devices the bundles came from, where several
    left_out: dict[str, str] = field(default_factory=dict)  # bundle -> why: failed verification, nothing read from it
    deviations: list[str] = field(default_factory=list)  # what pirex runs differently from these papers (claims.py)


@dataclass(frozen=True)
class Section:
    """One run's regenerated tables and figures, beside the paper's tables its claims compare with."""

    key: str
    tables: list[NamedTable]
    figures: list[Path]  # PNG or SVG files under the report's folder
    published: list[T.Table]


@dataclass
class Group:
    """The claims of one paper's section (a table, a section of the text), with their figure."""

    paper: str
    section: str
    verdicts: list[Verdict] = field(default_factory=list)
    figure: bytes | None = None  # PNG

    @property
    def slug(self) -> str:
        return f"{self.paper}-" + re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")


def _ours(v: Verdict) -> str:
    if not v.ours:
        return "-"
    return v.ours.interval.text(4)


def _aa(v: Verdict) -> str:
    return v.ours.aa.text(4) if v.ours and v.ours.aa else "-"


def verdict_word(v: Verdict) -> str:
    """The verdict as a table shows it: its word, "(indicative)" at small counts, and what it is evidence of where
    that is not a replication of the paper's claim."""
    word = MARK[v.verdict] + (" (indicative)" if v.indicative and v.ours else "")
    return word + (f" ({v.evidence})" if v.verdict != NOT_RUN and v.evidence != REPLICATION else "")


def evidence_text(v: Verdict) -> str:
    """What a check shows and what it cannot (appended to its reason); "" for a replication."""
    if v.verdict == NOT_RUN:
        return ""
    if v.evidence == HARNESS:
        return f"a harness check, no evidence on the paper: {v.claim.harness}"
    if (s := v.stand_in) is not None:
        return f"checked on a stand-in, {s.metric} for {s.replaces}: it shares {s.shares}; it cannot show {s.cannot}"
    return ""


def why_text(v: Verdict) -> str:
    return "; ".join(x for x in (v.reason, evidence_text(v)) if x)


def rows(verdicts: Sequence[Verdict]) -> list[list[str]]:
    out = []
    for v in verdicts:
        verdict = verdict_word(v)
        metric = f" ({v.ours.metric})" if v.ours else ""
        out.append(
            [
                f"{v.claim.paper}:{v.claim.id}" + (f" on {v.device}" if v.device else ""),
                v.claim.where,
                v.published_text,
                _ours(v) + metric,
                _aa(v),
                verdict,
                why_text(v),
            ]
        )
    return out


def per_device(verdicts: Sequence[Verdict]) -> tuple[list[str], list[tuple[Verdict, list[Verdict | None]]]]:
    """The verdicts of claims judged on each of several devices: the devices (columns), and per claim its verdict
    on each device (None where that device has none), in the claims' order."""
    mine = [v for v in verdicts if v.device]
    devices = sorted({v.device for v in mine})
    by_claim: dict[tuple[str, str], dict[str, Verdict]] = {}
    for v in mine:
        by_claim.setdefault((v.claim.paper, v.claim.id), {})[v.device] = v
    return devices, [(next(iter(d.values())), [d.get(dev) for dev in devices]) for d in by_claim.values()]


def device_cell(v: Verdict | None) -> str:
    """A claim on one device: its verdict and our interval (or why none)."""
    if v is None:
        return "-"
    ours = f"{_ours(v)}" if v.ours and v.ours.interval.has_interval else v.reason
    return f"{MARK[v.verdict]}: {ours}"


# --- the facts at the top


def machine_of(needs: Sequence[Need], here: RecordLike) -> MachineRecord:
    """The machine the bundles ran on (the first bundle's record before its run), else this machine's record."""
    for n in needs:
        for b in n.bundles:
            return Bundle.open(b).machine_before()
    return MachineRecord.of(here)


def images_of(needs: Sequence[Need]) -> list[dict]:
    """Every image the bundles ran, by digest, once each."""
    seen: dict[str, dict] = {}
    for n in needs:
        for b in n.bundles:
            for image in Bundle.open(b).images.values():
                origin = image.get("origin") or {}
                seen.setdefault(
                    image["digest"],
                    {
                        "name": image.get("name", "?"),
                        "digest": image["digest"],
                        "platform": image.get("platform", "?"),
                        "origin": origin.get("kind", "?") if isinstance(origin, dict) else str(origin),
                    },
                )
    return sorted(seen.values(), key=lambda i: (i["name"], i["digest"]))


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**30:.1f} GiB"


def machine_rows(record: RecordLike) -> list[tuple[str, str]]:
    """The machine as the report's top names it: model, CPU, cores, memory, storage under the work directory,
    governor (what each record lacks is said, not left out)."""
    rec = MachineRecord.of(record)
    cpu, arch, os_name = rec.cpu, rec.arch or "?", rec.os_name or "?"
    st, mem = rec.storage, rec.memory
    disk = " ".join(x for x in (st.get("kind"), st.get("model"), st.get("fstype")) if x) or "unknown"
    governor = ", ".join(rec.governors) or "none (no cpufreq: the host sets the clock)"
    cores = f"{rec.cores or '?'}" + (
        f" ({cpu['usable_cores']} usable)" if cpu.get("usable_cores") not in (None, rec.cores) else ""
    )
    return [
        ("Model", rec.pi_model or f"{rec.hostname or '?'} (not a Raspberry Pi)"),
        ("CPU", f"{cpu.get('model_name') or rec.cpu_model or '?'}, {arch}; {os_name}"),
        ("Cores", cores),
        (
            "Memory",
            f"{_gib(mem.get('total_bytes'))}, "
            + ("no swap" if mem.get("swap_total_bytes") == 0 else f"swap {_gib(mem.get('swap_total_bytes'))}"),
        ),
        ("Storage", f"{st.get('work_dir') or '?'}: {disk}, {_gib(st.get('free_bytes'))} free"),
        ("Governor", governor),
    ]


def fact_rows(facts: Facts) -> list[tuple[str, str]]:
    several = [("Devices", "; ".join(facts.devices))] if len(facts.devices) > 1 else []
    return [
        ("Level", facts.level),
        *several,  # then the first device's record
        *machine_rows(facts.machine),
        ("Commit", facts.commit),
        ("Time taken", took_text(facts.took, facts.attempts, "") or "unknown"),
    ]


# --- the claims: their groups, words, rules and figures


# A claim's `where` starts with its place: "Table 5, Id 3 ...", "section 6.1.2.1 (...)", "sections 6.1.1.4 and ...".
PLACE = re.compile(r"^(?:(?P<kind>Table|Figure)\s+(?P<table>[\d.]+)|sections?\s+(?P<section>\d+(?:\.\d+)?))")


def section_of(where: str) -> str:
    """The part of a paper a claim belongs to: its table or figure, else its section to two levels (6.1.2.1 is
    in section 6.1), so that a reader sees a section as a whole; else `where` up to its first comma."""
    m = PLACE.match(where.strip())
    if not m:
        return where.split(",")[0].strip()
    return f"{m['kind']} {m['table']}" if m["kind"] else f"section {m['section']}"


def groups(verdicts: Sequence[Verdict]) -> list[Group]:
    """By paper, then by the paper's section (section_of), in the claims' order."""
    out: dict[tuple[str, str], Group] = {}
    for v in verdicts:
        section = section_of(v.claim.where)
        out.setdefault((v.claim.paper, section), Group(v.claim.paper, section)).verdicts.append(v)
    return list(out.values())


def rule_text(v: Verdict, precision: float | None = None) -> str:
    """The claim's rule in plain words: its regions (pirex/reproduce/verdict.py: regions())."""
    c = v.claim
    if not c.judged:
        return "not judged by a measurement here"
    level = f"{100 * v_level(v):g} %"
    if c.metrics:
        a, b = c.band
        return (
            f"the {c.across} agree: holds when every pair's means of {', '.join(c.metrics)} lie within "
            f"±{100 * c.margin:g} % of each other ([{a:.4g}; {b:.4g}], two one-sided tests over each one's "
            f"repetitions, their {level} interval of the ratio inside the band); differs when a pair's interval lies "
            "wholly outside it (Holm-adjusted over the pairs and metrics), naming the one that sets itself apart; "
            "inconclusive otherwise"
        )
    if c.crossover:
        at, below, _ = c.crossover
        high, low = ("below", "above") if below == "greater" else ("above", "below")
        return (
            f"per size: holds when our {level} interval lies above 1 at every size {high} {at:g} and below 1 at every "
            f"size {low} (a size at {at:g} is not judged); differs when a size's interval lies on the wrong side "
            "(Holm-adjusted over the sizes)"
        )
    return c.rule_kind.words(c, level)


def v_level(v: Verdict) -> float:
    """The confidence level of the interval the verdict was read off (the 90 % of alpha = 5 % where it has none)."""
    return v.ours.interval.level if v.ours else verdict_level(CONFIDENCE)


def decide_text(v: Verdict) -> str:
    """What would decide an inconclusive verdict (or make a claim not run here judged)."""
    if v.verdict == INCONCLUSIVE:
        found = re.findall(r"\(([^()]*(?:would|repetitions)[^()]*)\)", v.reason)
        return found[-1] if found else f"a run of at least {MIN_REPETITIONS} repetitions of each side"
    if v.verdict == NOT_RUN:
        return v.reason
    return ""


def need_of(v: Verdict, needs: Sequence[Need]) -> Need | None:
    return next((n for n in needs if n.experiment == v.claim.experiment and v.claim.id in n.claims), None)


def _colour_of(v: Verdict) -> str:
    return COLOUR[v.verdict]


def figure(verdicts: Sequence[Verdict]) -> bytes | None:
    """A group's claims, one line each: our interval (coloured by its verdict, named beside it), the paper's value,
    the rule drawn (the tolerance band, or the paper's side of 1 shaded) and the A/A interval beneath."""
    drawn = [v for v in verdicts if v.ours and v.ours.interval.has_interval]
    if not drawn:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    xs = [x for v in drawn for x in (v.ours.interval.low, v.ours.interval.high, v.claim.published or 1.0, 1.0)]
    xs += [x for v in drawn if v.ours.aa and v.ours.aa.has_interval for x in (v.ours.aa.low, v.ours.aa.high)]
    left, right = min(xs) / 1.08, max(xs) * 1.08
    fig, ax = plt.subplots(figsize=(7.5, 0.6 * len(drawn) + 1.6))
    for y, v in enumerate(drawn):
        c, i = v.claim, v.ours.interval
        if band := c.rule_kind.drawn(c, right if c.direction == "greater" else left):
            ax.fill_betweenx([y - 0.4, y + 0.4], *band, color="tab:green", alpha=0.15, lw=0)
        ax.plot([i.low, i.high], [y, y], color=_colour_of(v), lw=5, solid_capstyle="butt")
        ax.plot([i.value], [y], "o", color="black", ms=4)
        if v.ours.aa and v.ours.aa.has_interval:
            ax.plot([v.ours.aa.low, v.ours.aa.high], [y - 0.28] * 2, color="grey", lw=2.5, solid_capstyle="butt")
        if c.published is not None:
            ax.plot([c.published], [y], marker="|", color="black", ms=18, mew=2)
    ax.axvline(1, color="grey", lw=0.8, ls="--")
    if right / left > 2:  # a log axis where the ratios span a lot; a plain one keeps a narrow range readable
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda x, _: f"{x:g}" if str(round(x, 3))[-1] in "125" else ""))
    ax.set_xlim(left, right)
    ax.set_ylim(len(drawn) - 0.5, -0.6)
    ax.set_yticks(range(len(drawn)), [f"{v.claim.id} ({MARK[v.verdict]})" for v in drawn])
    ax.set_xlabel("ratio")
    handles = [
        Line2D([], [], color=COLOUR[HOLDS], lw=5, label="ours: interval (colour: verdict), dot: estimate"),
        Line2D([], [], color="black", marker="|", ms=14, mew=2, ls="", label="the paper's value"),
        Patch(color="tab:green", alpha=0.25, label="the rule: the ratios it accepts"),
        Line2D([], [], color="grey", lw=2.5, label="A/A: the noise floor here"),
    ]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.02), ncol=2, fontsize="small", frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


# --- each run's tables and figures, beside the paper's


def published_tables(claims: Sequence[claims_mod.Claim]) -> list[T.Table]:
    """The paper's tables (analysis/<paper>/*.csv) the claims compare with: their comment lines as notes."""
    out, seen = [], set()
    for c in claims:
        name = c.source.partition(":")[0]
        path = PAPERS / c.paper / name
        if not name.endswith(".csv") or path in seen or not path.is_file():
            continue
        seen.add(path)
        lines = path.read_text().splitlines()
        notes = [line.lstrip("# ").rstrip() for line in lines if line.startswith("#")]
        records = list(csv.DictReader(line for line in lines if not line.startswith("#")))
        columns = list(records[0]) if records else []
        rows = [[r[k] for k in columns] for r in records]
        out.append(T.Table(f"{c.paper}: {name} as published", columns, rows, records, [" ".join(notes)]))
    return out


def sections(needs: Sequence[Need], claims: Sequence[claims_mod.Claim], out: Path) -> list[Section]:
    """Each run's tables (its analysis module's, also written as CSV, LaTeX and Markdown under out/tables/) and
    figures (under out/figures/), beside the published tables its claims compare with."""
    found = []
    for n in needs:
        if not n.bundles:
            continue
        mod = modules.module(experiment.load(n.experiment))
        stem = re.sub(r"[^\w.-]+", "-", n.key.replace("@", "-"))  # a folder, and a Markdown link: no spaces
        named = mod.tables(n.bundles, n.view)
        modules.write(named, out / "tables" / stem)
        figures = [f for f in mod.figures(n.bundles, out / "figures" / stem, n.view) if f.suffix in (".png", ".svg")]
        mine = [c for c in claims if c.experiment == n.experiment and c.id in n.claims]
        found.append(Section(n.key, named, figures, published_tables(mine)))
    return found


# --- the two renderings


def _data_uri(data: bytes, suffix: str) -> str:
    kind = "image/svg+xml" if suffix == ".svg" else "image/png"
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def markdown(
    facts: Facts,
    verdicts: Sequence[Verdict],
    needs: Sequence[Need],
    missing: dict[str, str],
    timing: Sequence[Timing] = (),
    found: Sequence[Section] = (),
    grouped: Sequence[Group] = (),
) -> str:
    """REPORT.md, rendered from templates/report.md: the content of report.html as plain text."""
    return (
        _environment()
        .overlay(autoescape=False, keep_trailing_newline=True)
        .get_template("report.md")
        .render(
            **_shared(facts, needs, missing, timing),
            counts=count_text(verdicts, zeros=True),
            images="; ".join(_image_text(i) for i in facts.images),
            groups=[_markdown_group(g, needs, facts.precision) for g in grouped],
            sections=[
                {
                    "key": s.key,
                    "tables": [T.markdown(t) for t in [nt.table for nt in s.tables] + s.published],
                    "figures": [{"name": f.stem, "path": f.relative_to(f.parents[2]).as_posix()} for f in s.figures],
                }
                for s in found
            ],
        )
    )


def _shared(facts: Facts, needs: Sequence[Need], missing: dict[str, str], timing: Sequence[Timing]) -> dict:
    """What REPORT.md and report.html both show, in the same words."""
    return {
        "title": facts.title,
        "facts": fact_rows(facts),
        "notes": facts.notes,
        "left_out": facts.left_out,
        "left_out_text": LEFT_OUT,
        "method": METHOD,
        "columns": COLUMNS,
        "needs": _need_rows(needs),
        "timing": _timing_rows(timing),
        "missing": missing,
        "deviations": facts.deviations,
    }


def _markdown_group(g: Group, needs: Sequence[Need], precision: float | None) -> dict:
    """A group of claims as REPORT.md shows it: its table's cells, per device where judged on several, its details."""
    plain = [v for v in g.verdicts if not v.device]
    devices, by_claim = per_device(g.verdicts)
    return {
        "paper": g.paper,
        "section": g.section,
        "slug": g.slug,
        "figure": bool(g.figure),
        "rows": [[_cell(c) for c in r] for r in rows(plain)],
        "devices": [_cell(d) for d in devices],
        "device_rows": [(v, [_cell(device_cell(d)) for d in on]) for v, on in by_claim],
        "details": [(v, _detail_text(v, needs, precision)) for v in plain + [v for v, _ in by_claim]],
    }


def _need_rows(needs: Sequence[Need]) -> list[dict]:
    """The runs as both renderings list them."""
    return [
        {
            "key": n.key,
            "variants": ", ".join(n.variants),
            "steps": n.steps,
            "time": _need_time(n),
            "bundles": ", ".join(b.name for b in n.bundles) or "none",
        }
        for n in needs
    ]


def _timing_rows(timing: Sequence[Timing]) -> list[dict]:
    return [{"key": k, "estimated": _minutes(e), "took": _minutes(t)} for k, e, t in timing]


def _image_text(i: dict) -> str:
    return f"{i['name']} {i['digest']} ({i['platform']}, {i['origin']})"


def _minutes(seconds: float | None) -> str:
    return f"{seconds / 60:.1f} min" if seconds else "unknown"


def _need_time(n: Need) -> str:
    if n.seconds is not None:
        return f"{n.seconds / 60:.1f} min ({n.estimate_from})"
    return n.estimate_from or "-"


def checks_text(checks) -> str:
    """The checks as one line: each one's p-value, and which failed (a failed one withheld the verdict)."""
    return ", ".join(f"{c.name} p = {c.p:.2g}" + (" (failed)" if c.failed else "") for c in checks) + (
        f", each at {100 * CHECK_ALPHA:g} %"
    )


def _detail_text(v: Verdict, needs: Sequence[Need], precision: float | None) -> str:
    c, n = v.claim, need_of(v, needs)
    parts = [f"{c.says}.", f"Published: {c.source}." if c.source else "", f"Rule: {rule_text(v, precision)}."]
    if v.detail:
        parts.append(v.detail)
    if v.ours and v.ours.checks:  # the assumption checks on the repetitions the interval is over (assumptions.py)
        parts.append(f"Checks on its {v.ours.interval.n} repetitions: {checks_text(v.ours.checks)}.")
    if v.look:  # a budgeted reproduction's: the look of its group-sequential design the verdict was read at
        parts.append(f"Read at {v.look}.")
    if c.device_dependent:
        parts.append(f"Judged by direction only: {c.device_dependent}.")
    if n:
        parts.append(f"Run: {n.key}, bundles {', '.join(b.name for b in n.bundles) or 'none'}.")
    if v.verdict == INCONCLUSIVE:
        parts.append(f"What would decide it: {decide_text(v)}.")
    return " ".join(p for p in parts if p)


def _environment():
    import jinja2
    import markdown as md

    def inline(text: str) -> str:
        """Markdown as HTML, without the paragraph a single line is wrapped in."""
        html = md.markdown(str(text))
        one = re.fullmatch(r"<p>(.*)</p>", html, re.S)
        return jinja2.utils.markupsafe.Markup(one.group(1) if one and "<p>" not in one.group(1) else html)

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pirex.reproduce", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = inline
    env.globals["INCONCLUSIVE"] = INCONCLUSIVE  # the verdict word the page compares with
    return env


def html(
    facts: Facts,
    verdicts: Sequence[Verdict],
    needs: Sequence[Need],
    missing: dict[str, str],
    timing: Sequence[Timing] = (),
    found: Sequence[Section] = (),
    grouped: Sequence[Group] = (),
) -> str:
    papers: dict[str, list[dict]] = {}
    for g in grouped:
        plain = [v for v in g.verdicts if not v.device]
        devices, by_claim = per_device(g.verdicts)
        papers.setdefault(g.paper, []).append(
            {
                "section": g.section,
                "figure": _data_uri(g.figure, ".png") if g.figure else None,
                "rows": [_row(v, r, needs, facts.precision) for v, r in zip(plain, rows(plain), strict=True)],
                "devices": devices,
                "device_rows": [
                    {
                        "claim": f"{v.claim.paper}:{v.claim.id}",
                        "published": v.published_text,
                        "cells": [
                            {"text": device_cell(d), "cls": CLASS[d.verdict] if d else "", "why": d.reason if d else ""}
                            for d in on
                        ],
                    }
                    for v, on in by_claim
                ],
                "unjudged": [v.reason for v in g.verdicts if not (v.ours and v.ours.interval.has_interval)],
            }
        )
    titles = {p: facts.titles.get(p) or claims_mod.load(p).title for p in papers}
    return (
        _environment()
        .get_template("report.html")
        .render(
            **_shared(facts, needs, missing, timing),
            counts=[
                {"word": f"{k} ({label[:-1]})" if label else k, "n": c, "cls": CLASS[k]}
                for label, group in count_groups(verdicts)
                for k, c in group.items()
                if c or not label
            ],
            images=facts.images,
            papers=[{"id": p, "title": titles[p], "groups": gs} for p, gs in papers.items()],
            sections=[
                {
                    "key": s.key,
                    "tables": [nt.table for nt in s.tables],
                    "published": s.published,
                    "figures": [{"name": f.stem, "uri": _data_uri(f.read_bytes(), f.suffix)} for f in s.figures],
                }
                for s in found
            ],
        )
    )


def _row(v: Verdict, cells: list[str], needs: Sequence[Need], precision: float | None) -> dict:
    c, n = v.claim, need_of(v, needs)
    return {
        "cells": cells,
        "cls": CLASS[v.verdict],
        "id": f"{c.paper}-{c.id}",
        "says": c.says,
        "where": c.where,
        "source": c.source,
        "rule": rule_text(v, precision),
        "device_dependent": c.device_dependent,
        "run": n.key if n else None,
        "bundles": [b.name for b in n.bundles] if n else [],
        "decide": decide_text(v),
        "verdict": v.verdict,
        "look": v.look,
    }


def write(
    out: Path,
    facts: Facts,
    verdicts: Sequence[Verdict],
    needs: Sequence[Need],
    missing: dict[str, str],
    timing: Sequence[Timing] = (),
    found: Sequence[Section] = (),
) -> tuple[Path, Path]:
    """REPORT.md and report.html under out, and each group's figure under out/figures/ (REPORT.md links them)."""
    out.mkdir(parents=True, exist_ok=True)
    grouped = groups(verdicts)
    for g in grouped:
        g.figure = figure([v for v in g.verdicts if not v.device])
        if g.figure:
            (out / "figures").mkdir(exist_ok=True)
            (out / "figures" / f"{g.slug}.png").write_bytes(g.figure)
    (out / "REPORT.md").write_text(markdown(facts, verdicts, needs, missing, timing, found, grouped))
    (out / "report.html").write_text(html(facts, verdicts, needs, missing, timing, found, grouped))
    return out / "REPORT.md", out / "report.html"


def level_text(level: str) -> str:
    return f"{level} ({LEVELS[level]} profiles)" + (
        " - verdicts are indicative (small counts)" if level == "kick-the-tires" else ""
    )
