"""`pirex calibrate EXPERIMENT`: how the intervals and rules pirex judges an experiment with behave on this machine's
own noise, measured instead of assumed (issue 50; ../shared/STATISTICS.md, "Calibrating on the machine").

1. A long A/A run per design the experiment suits: the denominator variant of its claims (native) against its own
   copy (`native-aa`), N repetitions, interleaved in a fresh random order every repetition, and, where a duet fits
   the experiment, the same as a duet (the copies at the same moment on the two CPU halves, swapped every
   repetition). Each is an ordinary run bundle under results/calibration/runs/ (kill it, run the same command again:
   the partial bundle is resumed, a complete one reused).
2. pirex/analysis/calibration.py resamples each metric's real repetitions (random subsets and contiguous blocks of
   5, 10 and 20): the coverage of every interval method pirex would judge the metric with, the A/A check's block
   rate and the smallest ratio decided with 80 % power.
3. For every claim of every paper on the experiment, its rule read at each of its edges with that edge's ratio
   planted (one side of the real data scaled): how often it says holds or differs where the truth is on the edge,
   which each must do at most alpha = 5 % of the time.
4. The result is a bundle of its own, results/calibration/<experiment>/<run-id>/ (manifest with every file's sha256:
   `pirex verify` checks it), with calibration.json (every row), calibration.md (the table) and the A/A bundles it
   read, by run id and manifest digest. `pirex reproduce` reads the newest calibration of this machine (or one
   given with --calibration): a verdict whose method does not cover on this noise is not counted as decided.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pirex.analysis import calibration as cal
from pirex.analysis import modules
from pirex.core import experiment
from pirex.core.bundle import COMPLETE, RUNNING, Bundle, sha256, verify, writing
from pirex.core.bundle_format import DUET, MANIFEST
from pirex.core.errors import PirexError
from pirex.core.experiment import AA_SUFFIX
from pirex.reproduce import claims as claims_mod
from pirex.reproduce import verdict

CALIBRATION = "calibration"  # results/calibration/<experiment>/<run-id>: the calibration bundles
RUNS = "runs"  # results/calibration/runs/<experiment>/<run-id>: the A/A run bundles they read
FILE, TABLE, SOURCES = "calibration.json", "calibration.md", "sources.json"
DEFAULT_REPETITIONS = 40
ALPHA = verdict.alpha_of(verdict.CONFIDENCE)
INTERLEAVED = "interleaved"


def calibration_dir(results_dir: Path) -> Path:
    return Path(results_dir) / CALIBRATION


def designs(exp: experiment.Experiment) -> tuple[str, ...]:
    """The designs a calibration runs: interleaved always, the duet where it fits the experiment."""
    return (INTERLEAVED, DUET) if exp.duet.fits else (INTERLEAVED,)


def base_variant(exp: experiment.Experiment) -> str:
    """The variant whose A/A copy is run: the first default variant (native), every claim's usual denominator."""
    return (exp.default_variants or exp.variants)[0]


def _matches(b: Bundle, profile: str, variants: list[str], design: str, wanted: dict) -> bool:
    return (
        b.profile == profile
        and b.variants == variants
        and (b.design or INTERLEAVED) == design
        and all(b.parameters.get(k) == v for k, v in wanted.items())
    )


def find_run(runs: Path, exp_id: str, profile: str, variants: list[str], design: str, wanted: dict) -> Bundle | None:
    """The newest A/A bundle of this request (its parameters `wanted` among the bundle's) under runs/ that is intact
    (complete, or resumable), else None."""
    for m in sorted((runs / exp_id).glob(f"*/{MANIFEST}"), reverse=True):
        try:
            b = Bundle.open(m.parent)
        except PirexError:
            continue
        if _matches(b, profile, variants, design, wanted) and not verify(b.path, complete=False):
            return b
    return None


@dataclass(frozen=True)
class Request:
    experiment: str
    repetitions: int = DEFAULT_REPETITIONS
    profile: str = "quick"
    results_dir: Path = Path("results")
    tag: str = "dev"
    designs: tuple[str, ...] | None = None  # None: every design the experiment suits
    force: bool = False
    allow_concurrent: bool = False
    overrides: dict | None = None  # --set: typed parameters (experiment.overrides), recorded in the A/A bundles


def aa_runs(req: Request, run: Callable, resume: Callable, echo: Callable[[str], None]) -> list[Path]:
    """The A/A bundles of the request: reused when complete, resumed when cut short, else run (runner.run)."""
    from pirex.runner.runplan import Options  # the runner only where runs are made (reading needs none)

    exp = experiment.load(req.experiment)
    if req.repetitions < 2 * cal.SIZES[0]:
        raise PirexError(
            f"--repetitions {req.repetitions}: a calibration resamples subsets of {cal.SIZES[0]} and more, "
            f"and needs at least {2 * cal.SIZES[0]} repetitions (about {4 * cal.SIZES[-1]} for n = {cal.SIZES[-1]})"
        )
    wanted = req.designs or designs(exp)
    for d in wanted:
        if d == DUET and not exp.duet.fits:
            raise PirexError(f"{exp.id} does not suit a duet: {exp.duet.why}")
    v = base_variant(exp)
    variants = [v, v + AA_SUFFIX]
    runs = calibration_dir(req.results_dir) / RUNS
    out = []
    params = {**(req.overrides or {}), "repetitions": req.repetitions}
    for d in wanted:
        found = find_run(runs, exp.id, req.profile, variants, d, params)
        if found and found.status == COMPLETE:
            echo(f"pirex calibrate: reusing the complete A/A run {found.path}")
            out.append(found.path)
            continue
        if found and not writing(found.path):
            echo(f"pirex calibrate: resuming the A/A run {found.path}")
            out.append(resume(found.path, req.allow_concurrent))
            continue
        echo(f"pirex calibrate: {exp.id} {','.join(variants)}, {req.repetitions} repetitions, {d}")
        opts = Options(
            exp.id,
            req.profile,
            ",".join(variants),
            "interleaved",
            None,
            runs,
            req.tag,
            params,
            req.force,
            allow_concurrent=req.allow_concurrent,
        )
        opts.design = d
        out.append(run(opts))
    return out


# --- the analysis of A/A bundles


@dataclass(frozen=True)
class RuleRow:
    claim: str
    rule: str
    metric: str
    method: str
    scheme: str
    n: int
    edge: float
    holds: float  # the share of data sets judged "holds" with the truth on this edge
    differs: float

    @property
    def keeps(self) -> bool:
        """Each conclusion at most alpha, with the simulation error of the resampling (about 1 point) allowed."""
        return max(self.holds, self.differs) <= ALPHA + 0.01

    def row(self) -> dict:
        return {**self.__dict__, "keeps": self.keeps}


def _claims_on(exp_id: str) -> list[claims_mod.Claim]:
    """Every ratio claim of every paper on the experiment's variants (not across devices: those compare machines)."""
    out = []
    for paper in claims_mod.available():
        for c in claims_mod.load(paper).claims:
            if c.experiment == exp_id and c.numerator is not None and not c.across and not c.view:
                out.append(c)
    return out


def rule_rows(claim: claims_mod.Claim, cells: Sequence[cal.Cell]) -> list[RuleRow]:
    """The claim's rule at each of its edges, on the cells of its metric (verdict.regions, the production regions)."""
    out = []
    for c in cells:
        ok = cal.has_interval(c.low90, c.high90)
        if not ok.any():
            continue
        for e in verdict.edges(claim):
            holds, differs = verdict.regions(claim, c.low90 * e, c.high90 * e, c.low95 * e, c.high95 * e)
            out.append(
                RuleRow(
                    claim.id,
                    claim.rule,
                    c.metric,
                    c.method,
                    c.scheme,
                    c.n,
                    float(e),
                    float(holds[ok].mean()),
                    float(differs[ok].mean()),
                )
            )
    return out


@dataclass(frozen=True)
class Result:
    experiment: str
    device: str
    cells: tuple[tuple[str, cal.Cell], ...]  # (design, cell)
    modes: tuple[dict, ...]  # the second-mode check of each side of each metric over the whole A/A run
    rules: tuple[tuple[str, RuleRow], ...]
    sources: tuple[dict, ...]
    repetitions: dict[str, int]  # design -> A/A repetitions read


def mode_rows(design: str, s: cal.Series) -> list[dict]:
    """calibration.json's rows of the second-mode check on each side of one metric over the whole run."""
    return [
        {"design": design, "metric": s.metric, "side": side, **c.row(), "finding": c.finding}
        for side, c in cal.modes(s)
    ]


def analyse(exp_id: str, bundles: Sequence[Path]) -> Result:
    """The calibration of the experiment from its A/A bundles (one per design)."""
    exp = experiment.load(exp_id)
    module = modules.module(exp)
    claims = _claims_on(exp_id)
    cells: list[tuple[str, cal.Cell]] = []
    rules: list[tuple[str, RuleRow]] = []
    sources, reps, devices, modes = [], {}, set(), []
    for path in bundles:
        b = Bundle.open(path)
        if b.experiment != exp_id:
            raise PirexError(f"{path} is a bundle of {b.experiment}, not {exp_id}")
        v = next((x for x in b.variants if x + AA_SUFFIX in b.variants), None)
        if v is None:
            raise PirexError(
                f"{path} has no A/A copy (variants {', '.join(b.variants)}): a calibration reads a variant against "
                "its own copy, e.g. pirex run EXPERIMENT --variants native,native-aa"
            )
        if problems := verify(path, complete=False):
            raise PirexError(f"{path} fails verification: {problems[0]}")
        design = b.design or INTERLEAVED
        values = module.run_values([path], None)
        devices |= {x.device for x in values}
        metrics = sorted({x.metric for x in values if x.variant == v})
        by_metric: dict[str, list[cal.Cell]] = {}
        for m in metrics:
            if (s := cal.series(values, m, v)) is not None:
                reps[design] = max(reps.get(design, 0), s.n)
                by_metric[m] = cal.cells(s)
                modes += mode_rows(design, s)
                cells += [(design, c) for c in by_metric[m]]
        for claim in claims:
            # the claim's rule on the A/A noise of its numerator's metric: where it compares two metrics (a
            # configuration against the baseline), that metric's noise is a proxy for the pair's (the table says so)
            m = next((x for x in claim.numerator.metrics if x in by_metric), None)
            if m is not None:
                paired = [c for c in by_metric[m] if c.method != cal.WELCH_LOG]  # a claim on variants is paired
                rules += [(design, r) for r in rule_rows(claim, paired)]
        sources.append({"run_id": b.run_id, "design": design, "manifest_sha256": sha256(path / MANIFEST)})
    if not cells:
        raise PirexError(
            f"no metric of {exp_id} has {2 * cal.SIZES[0]} or more A/A repetitions in the bundles given: run more"
        )
    return Result(exp_id, ", ".join(sorted(devices)), tuple(cells), tuple(modes), tuple(rules), tuple(sources), reps)


# --- the calibration bundle and its table


def table(r: Result) -> str:
    """calibration.md: coverage per method and size (the worse scheme, its interval), then the rules."""
    lines = [
        f"# Calibration of {r.experiment} on {r.device}",
        "",
        "Coverage of a nominal 95 % on resampled A/A repetitions (truth 1), the lower of random subsets and contiguous "
        f"blocks with its block-bootstrap 95 % interval; a method calibrates at {100 * cal.COVER_LOW:.0f}-"
        f"{100 * cal.COVER_HIGH:.0f} %. Power: the smallest ratio the direction rule decides in 80 % of the sets. "
        "A/A blocked: the share of sets the A/A check would block.",
        "",
        "| design | metric | method | n | coverage (random) | coverage (blocks) | calibrates | 80 % power at "
        "| A/A blocked |",
        "|---|---|---|---:|---:|---:|---|---:|---:|",
    ]
    by = {(d, c.metric, c.method, c.n, c.scheme): c for d, c in r.cells}
    for d, metric, method, n in sorted({(d, c.metric, c.method, c.n) for d, c in r.cells}):
        pair = [by.get((d, metric, method, n, s)) for s in ("random", "blocks")]
        cover = [_cover(c) for c in pair]
        ok = _verdict([c for c in pair if c])
        power = max((c.power_ratio for c in pair if c), default=math.nan)
        blocked = max((c.aa_blocked for c in pair if c), default=math.nan)
        lines.append(
            f"| {d} | {metric} | {method} | {n} | {cover[0]} | {cover[1]} | {ok} | "
            f"{_ratio(power)} | {100 * blocked:.1f} % |"
        )
    found = [m for m in r.modes if m["failed"]]
    lines += [
        "",
        "Second mode in a side's own repetitions over the whole run (checked at 1 %): "
        + (
            "; ".join(f"{m['design']} {m['metric']} {m['side']}: p = {m['p']:.3g}, {m['finding']}" for m in found)
            if found
            else "none found"
        ),
    ]
    lines += [
        "",
        "Rules at their edges (the ratio of the edge planted): each conclusion must stay at or below "
        f"{100 * ALPHA:g} %. A claim comparing two metrics (a configuration against the baseline, B2 against B1) is "
        "read on its numerator metric's A/A noise, a proxy for the pair's.",
        "",
        "| design | claim | rule | metric | n | edge | holds (random / blocks) | differs (random / blocks) | keeps |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    rb = {(d, x.claim, x.metric, x.n, x.edge, x.scheme): x for d, x in r.rules}
    for d, claim, rule, metric, n, edge in sorted({(d, x.claim, x.rule, x.metric, x.n, x.edge) for d, x in r.rules}):
        pair = [rb.get((d, claim, metric, n, edge, s)) for s in ("random", "blocks")]
        h = " / ".join(f"{100 * x.holds:.1f} %" if x else "-" for x in pair)
        f = " / ".join(f"{100 * x.differs:.1f} %" if x else "-" for x in pair)
        keeps = all(x.keeps for x in pair if x)
        lines.append(
            f"| {d} | {claim} | {rule} | {metric} | {n} | {edge:.4g} | {h} | {f} | {'yes' if keeps else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def _verdict(pair: list[cal.Cell]) -> str:
    """yes (both schemes within the band), **undercovers** (either below it: verdicts withheld), conservative."""
    if any(c.coverage < cal.COVER_LOW for c in pair):
        return "**undercovers**"
    return "yes" if all(c.calibrates for c in pair) else "conservative"


def _cover(c: cal.Cell | None) -> str:
    if c is None or math.isnan(c.coverage):
        return "-"
    return f"{100 * c.coverage:.1f} % [{100 * c.coverage_low:.1f}; {100 * c.coverage_high:.1f}]"


def _ratio(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.4f}"


def document(r: Result) -> dict:
    return {
        "schema_version": 1,
        "experiment": r.experiment,
        "device": r.device,
        "repetitions": r.repetitions,
        "cover_band": [cal.COVER_LOW, cal.COVER_HIGH],
        "sizes": list(cal.SIZES),
        "seed": cal.SEED,
        "cells": [{"design": d, **c.row()} for d, c in r.cells],
        "modes": list(r.modes),
        "rules": [{"design": d, **x.row()} for d, x in r.rules],
        "sources": list(r.sources),
    }


def write(r: Result, results_dir: Path, bundles: Sequence[Path], tool: dict) -> Path:
    """The calibration bundle: no steps of its own, the A/A runs' machine record, every file hashed."""
    first = Bundle.open(bundles[0])
    b = Bundle.create(
        calibration_dir(results_dir),
        r.experiment,
        first.profile,
        {"repetitions": r.repetitions},
        first.variants,
        [],
        first.images,
        tool,
    )
    try:
        (b.path / FILE).write_text(json.dumps(document(r), indent=1, allow_nan=True) + "\n")
        (b.path / TABLE).write_text(table(r))
        (b.path / SOURCES).write_text(json.dumps([str(Path(p).resolve()) for p in bundles], indent=1) + "\n")
        b.write_machine(before=dict(first.machine_before().doc))
    except BaseException:
        b.close()
        raise
    b.finish()
    return b.path


# --- reading a calibration back (pirex reproduce)


@dataclass(frozen=True)
class Calibration:
    path: Path
    experiment: str
    device: str
    doc: dict

    @property
    def name(self) -> str:
        return f"{self.experiment} {self.path.name} on {self.device}"

    def coverage(self, method: str, n: int, design: str, metric: str = "") -> tuple[float, int] | None:
        """The worse scheme's coverage of `method` at the calibrated size nearest n (at most n where there is one),
        and that size: on the metric (either of "a / b") where the calibration has it, else the worst over its
        metrics; None where the calibration has no such method."""
        rows = [c for c in self.doc["cells"] if c["method"] == method and c["design"] == design]
        names = set(metric.split(" / ")) if metric else set()
        rows = [c for c in rows if c["metric"] in names] or rows
        sizes = sorted({c["n"] for c in rows})
        if not sizes:
            return None
        at = max([s for s in sizes if s <= n] or [sizes[0]])
        return min(float(c["coverage"]) for c in rows if c["n"] == at), at

    def mode(self, metric: str, design: str) -> dict | None:
        """The failed second-mode check of a metric (or of either metric of "a / b") in this design's run, or None."""
        names = set(metric.split(" / "))
        return next(
            (m for m in self.doc.get("modes", []) if m["failed"] and m["design"] == design and m["metric"] in names),
            None,
        )

    def undercovers(self, method: str, n: int, design: str, metric: str = "") -> str | None:
        """Why a verdict by this method on n repetitions of `metric` is not decided on this machine's noise, or None:
        the method covers below COVER_LOW at that n, or the metric has a second mode over the long run."""
        if metric and (m := self.mode(metric, design)):
            return (
                f"on this machine {m['metric']} has a second mode over the A/A run of calibration {self.name} "
                f"({m['finding']}, p = {m['p']:.3g}): a short run may miss it and misplace the ratio, so the verdict "
                "is not counted as decided"
            )
        got = self.coverage(method, n, design, metric)
        if got is None or math.isnan(got[0]) or got[0] >= cal.COVER_LOW:
            return None
        return (
            f"on this machine's noise the {method} interval covered {100 * got[0]:.1f} % of a nominal 95 % at n = "
            f"{got[1]} (calibration {self.name}), below {100 * cal.COVER_LOW:.0f} %: not counted as decided"
        )


def read(path: Path) -> Calibration:
    """A calibration bundle, verified; PirexError naming the problem otherwise."""
    path = Path(path)
    if not (path / FILE).is_file():
        raise PirexError(f"{path} is not a calibration bundle (no {FILE}): give one `pirex calibrate` wrote")
    if problems := verify(path):
        raise PirexError(f"calibration {path} fails verification: {problems[0]}")
    try:
        doc = json.loads((path / FILE).read_text())
    except (OSError, ValueError) as e:
        raise PirexError(f"{path / FILE} is not readable JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or not isinstance(doc.get("cells"), list):
        raise PirexError(f"{path / FILE}: not a calibration of schema 1 (rerun pirex calibrate)")
    return Calibration(path, str(doc.get("experiment")), str(doc.get("device")), doc)


def newest(results_dir: Path, exp_id: str, device: str) -> Calibration | None:
    """The newest intact calibration of the experiment on this device under results/calibration/, or None."""
    for m in sorted((calibration_dir(results_dir) / exp_id).glob(f"*/{MANIFEST}"), reverse=True):
        try:
            c = read(m.parent)
        except PirexError:
            continue
        if c.device == device and Bundle.open(m.parent).status != RUNNING:
            return c
    return None


class Calibrations:
    """The calibrations a reproduction judges with: those given (--calibration, each for its experiment on any
    device: brought from the machine that ran the bundles) before this machine's newest under results/calibration/
    (for its device). Read once per (experiment, device); `used` names those a verdict was checked against."""

    def __init__(self, results_dir: Path, given: Sequence[Path] = ()):
        self.results_dir = Path(results_dir)
        self.given = [read(p) for p in given]  # a damaged or foreign one is refused before anything runs
        self._found: dict[tuple[str, str], Calibration | None] = {}
        self.used: dict[str, Calibration] = {}

    def of(self, exp_id: str | None, values) -> Calibration | None:
        devices = {v.device for v in values}
        if exp_id is None or len(devices) != 1:
            return None
        key = (exp_id, devices.pop())
        if key not in self._found:
            mine = next((c for c in self.given if c.experiment == exp_id), None)
            self._found[key] = mine or newest(self.results_dir, *key)
        if (c := self._found[key]) is not None:
            self.used[c.name] = c
        return c

    def note(self) -> str:
        """The report's line naming the calibrations behind its verdicts, or saying there were none."""
        if not self.used:
            return (
                "Calibration: none of this machine; the intervals' coverage rests on the simulated calibration "
                "(docs/statistics.md), and `pirex calibrate EXPERIMENT` measures it on this machine's noise"
            )
        names = "; ".join(sorted(self.used))
        return (
            f"Calibration: {names}; a verdict whose interval covers below {100 * cal.COVER_LOW:.0f} % on that noise "
            "at its n is not counted as decided"
        )
