"""ARTIFACT.md, the committees' appendix of one paper: what is inside, getting started (the two commands),
kick-the-tires (about ten minutes, and what it prints), and one row per claim: the paper's words and where they
are, the command that judges it, its time on a named machine, the expected result with its rule, and the images.

Every fact of a row is derived, never written by hand: the command from the claim (its experiment, and an
inventory or two mounts for a claim across devices or storages), the time from the plan (pirex/reproduce/plan.py:
the runs the command needs, estimated from experiment.yaml's measured durations on the machine they name, the
first export of each image for the native variant included), the expected result from the report's own rule text
(pirex/reproduce/report.py), the images' digests from registry.yaml. A claim that lacks one of them is named by
`problems`, which `pirex artifact --check` reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pirex.core import experiment
from pirex.images.registryfile import Entry
from pirex.reproduce import plan
from pirex.reproduce.claims import Claim, Paper

LEVEL = "kick-the-tires"  # pirex reproduce's default --level: its commands leave it out
INVENTORY = "fleet/hosts.yml"  # the example inventory a claim across devices names (copy it, fill in the devices)
MOUNTS = (Path("MOUNT_A"), Path("MOUNT_B"))  # a claim across storages: the two storage devices' mounts
KICK_SECONDS = 600.0  # kick-the-tires: the experiments whose commands fit in about ten minutes, at least one


@dataclass(frozen=True)
class Timed:
    """What a command runs and how long it takes on the machine its durations were measured on."""

    seconds: float | None
    machines: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    of_claim: dict[str, tuple[str, ...]] = field(default_factory=dict)  # claim id -> its own runs among them
    unmeasured: tuple[str, ...] = ()  # the runs without a measured duration (seconds None)
    disk: float | None = None  # megabytes of results the runs leave (None: a run without a measured disk)


@dataclass(frozen=True)
class Row:
    claim: Claim
    command: str  # "" when no experiment runs the claim
    time: Timed  # the command's
    runs: tuple[str, ...]  # the claim's own runs (plan.Need.key), which the command includes
    published: str  # the paper's value, or its side of 1
    expected: str  # the rule that decides holds, differs or inconclusive ("" when nothing judges it)
    images: tuple[str, ...] = ()  # per image of its experiment: name@digest, or why there is none

    @property
    def problems(self) -> list[str]:
        """What a committee would miss for this claim (empty: a command, a time and an expected result)."""
        out = []
        if not self.command:
            out.append("no command (no experiment runs it)")
        elif self.time.seconds is None:
            out.append(f"no time: experiment.yaml has no measured duration of {', '.join(self.time.unmeasured)}")
        if not self.expected:
            out.append("no expected result (no rule judges it)")
        return out


def command(claim: Claim, level: str) -> str:
    """The command that judges the claim without the paper's other experiments (`pirex reproduce --experiment`)."""
    if not claim.experiment:
        return ""
    words = ["pirex", "reproduce", claim.paper, "--experiment", claim.experiment]
    if level != LEVEL:
        words += ["--level", level]
    if claim.across == "devices":
        words += ["--inventory", INVENTORY]
    if claim.across == "storages":
        words += [w for m in MOUNTS for w in ("--storage", str(m))]
    return " ".join(words)


def estimate(claims: Sequence[Claim], level: str, storages: Sequence[Path] = ()) -> Timed:
    """The runs `pirex reproduce` makes for these claims at a level on a fresh machine, timed on the machine each
    experiment's durations were measured on (scale 1: no calibration here); None when a run has no duration."""
    needs = plan.needs(list(claims), level, aa=level == "full", storages=storages)
    if not needs:
        return Timed(None)
    machines, disk = [], 0.0
    for n in needs:
        exp = experiment.load(n.experiment)
        measured = (n.view and exp.durations.get(f"{n.view}@{n.profile}")) or exp.durations.get(n.profile)
        score = (measured or {}).get("score") or exp.durations.get("score") or 0.0
        plan.estimate(n, exp, score, None)
        if measured:
            machines.append(measured.get("machine") or exp.durations.get("machine") or "a reference machine")
        per_step = (measured or {}).get("disk")
        disk = None if disk is None or per_step is None else disk + n.steps * per_step
    plan.add_first_exports(needs, exported=lambda image: False)  # a fresh machine exports each image once
    of_claim: dict[str, tuple[str, ...]] = {}
    for n in needs:
        for c in n.claims:
            of_claim[c] = (*of_claim.get(c, ()), n.key)
    runs = tuple(n.key for n in needs)
    unmeasured = tuple(n.key for n in needs if n.seconds is None)
    if unmeasured:
        return Timed(None, runs=runs, of_claim=of_claim, unmeasured=unmeasured)
    return Timed(sum(n.seconds for n in needs), tuple(dict.fromkeys(machines)), runs, of_claim, disk=disk)


def images_of(experiment_id: str | None, registry: dict[str, Entry]) -> tuple[str, ...]:
    if not experiment_id:
        return ()
    out = []
    for name in experiment.load(experiment_id).images:
        e = registry.get(name)
        out.append(f"{name}@{e.digest}" if e and e.digest else f"{name}: not published (no digest in registry.yaml)")
    return tuple(out)


def rows(paper: Paper, level: str, registry: dict[str, Entry] | None = None) -> list[Row]:
    """One row per claim of the paper, in the paper's order."""
    from pirex.reproduce import report  # the rule's words as the report has them (numpy, scipy: the analysis extra)
    from pirex.reproduce.verdict import NOT_RUN, Verdict

    timed: dict[tuple, Timed] = {}
    out = []
    for c in paper.claims:
        cmd = command(c, level)
        storages = MOUNTS if c.across == "storages" else ()
        t, runs = Timed(None), ()
        if cmd:
            key = (c.experiment, c.across == "storages")
            if key not in timed:
                timed[key] = estimate([x for x in paper.claims if x.experiment == c.experiment], level, storages)
            t = timed[key]
            runs = t.of_claim.get(c.id, ())
        v = Verdict(c, NOT_RUN, "")
        expected = report.rule_text(v) if c.judged else ""
        out.append(Row(c, cmd, t, runs, v.published_text, expected, images_of(c.experiment, registry or {})))
    return out


def kick_the_tires(paper: Paper, rows_: Sequence[Row]) -> tuple[str, Timed]:
    """The paper's quickest experiments whose kick-the-tires commands add up to about ten minutes (at least one),
    as one command, and its time."""
    per: dict[str, float] = {}
    for r in rows_:
        if r.claim.experiment and r.claim.across is None and r.time.seconds is not None:
            per[r.claim.experiment] = r.time.seconds
    chosen, total = [], 0.0
    for exp_id, seconds in sorted(per.items(), key=lambda kv: kv[1]):
        if chosen and total + seconds > KICK_SECONDS:
            break
        chosen.append(exp_id)
        total += seconds
    if not chosen:
        return "", Timed(None)
    words = ["pirex", "reproduce", paper.id] + [w for e in chosen for w in ("--experiment", e)]
    return " ".join(words), estimate([c for c in paper.claims if c.experiment in chosen], LEVEL)


# --- ARTIFACT.md


def duration(seconds: float | None) -> str:
    """The report's words for a time (report.duration), "unknown" without one."""
    from pirex.reproduce import report  # numpy, scipy: the analysis extra, as rows() needs

    return "unknown" if seconds is None else report.duration(seconds)


def megabytes(mb: float | None) -> str:
    """A disk size in the table's words; "unknown" where a run has no measured disk."""
    if mb is None:
        return "unknown"
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


def cell(text: str) -> str:
    """Text in one cell of a Markdown table: a "|" or a line break would end the cell or the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


@dataclass
class Contents:
    """What pack.py put into the artifact, for ARTIFACT.md to describe."""

    paper: Paper
    level: str
    commit: str
    version: str
    made_with: str  # the pirex artifact command line
    dirty: bool = False  # the checkout had uncommitted changes (not in source/)
    images: str = ""  # the images archive's path inside the artifact, "" when not included
    platforms: str = ""
    reproduction: dict = field(default_factory=dict)  # {path, id, level, verdicts: {claim: verdict}, images: [...]}
    deviations: list[str] = field(default_factory=list)  # what pirex runs differently from this paper (claims.py)
    cites_paper: bool = True  # CITATION.cff has the paper's reference (analysis/<paper>/citation.yaml)


def markdown(contents: Contents, rows_: Sequence[Row]) -> str:
    """ARTIFACT.md, rendered from templates/artifact.md."""
    import jinja2  # the analysis extra's, as rows() needs

    p = contents.paper
    kick, kick_time = kick_the_tires(p, rows(p, LEVEL)) if contents.level != LEVEL else kick_the_tires(p, rows_)
    machines = sorted({m for r in rows_ for m in r.time.machines} | set(kick_time.machines))
    verdicts = (contents.reproduction or {}).get("verdicts", {})
    counts: dict[str, int] = {}
    for v in verdicts.values():
        counts[v] = counts.get(v, 0) + 1
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pirex.artifact", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.get_template("artifact.md").render(
        paper=p,
        c=contents,
        default_level=LEVEL,
        kick=kick,
        kick_time=duration(kick_time.seconds),
        kick_machines=", ".join(kick_time.machines),
        machines=", ".join(machines),
        rows=[[cell(x) for x in _cells(r, verdicts)] for r in rows_],
        counts=", ".join(f"{n} {k}" for k, n in sorted(counts.items())),
    )


def _cells(r: Row, verdicts: dict[str, str]) -> list[str]:
    """A claim's row of the table (the included reproduction's verdict of it in its expected result)."""
    c = r.claim
    needs = f"; needs {', '.join(c.needs)}" if c.needs else ""
    ran = verdicts.get(f"{c.paper}:{c.id}")
    ran_text = f" The included reproduction: {ran}." if ran else ""
    return [
        f"{c.paper}:{c.id}",
        f"{c.says} ({c.where})",
        f"`{r.command}`{needs}" if r.command else "none",
        f"{duration(r.time.seconds)} ({', '.join(r.runs)})",
        megabytes(r.time.disk),
        f"{r.published}: {r.expected}.{ran_text}" if r.expected else "not judged",
        "; ".join(r.images) or "-",
    ]
