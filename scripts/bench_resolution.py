#!/usr/bin/env python3
"""Benchmark of the instrument's resolution: how narrow the docker/native interval of ICPE'18's B1 gets for the
time spent, against the A/A noise floor, and where the variance is (issue "Precision"), per design of the comparison
(issue "Duet measurement").

By default the designs side by side on one budget, each its own pirex run (its own results directory):

  interleaved  kj allocation, native,docker,native-aa one after another in a random order per repetition
  duet         native and docker at the same moment on disjoint CPU halves (pirex run --design duet), swapped every
               repetition; twice the kj allocation's repetitions, since a pair takes one step's time, not two
  duet-aa      the duet's A/A: native against native-aa, as many repetitions as the duet

and at the end, per benchmark, one line per design: the docker/native ratio and its 95 % half-width (a duet's
with the CPU half as a factor of its model, stats.duet_ratio, and without it beside), the A/A's, the minutes; and a
difference test of the two designs' ratios, z = (log r1 - log r2) / sqrt(se1^2 + se2^2) (stats.difference_test):
"no detectable difference" or "differ" at 5 % (a duet must not bias the ratio: shared caches, memory bandwidth, a
disk or a sink both sides use, the JIT's threads on the other half could). Not "the duet's ratio inside the
interleaved interval": with no bias at all that is outside 16.6 % of the time. --benchmarks runs others beside B1
(b5_fileWrite and b6_tcpSend share a disk and a sink between a duet's sides). --noisy-neighbour ON,OFF runs a
CPU hog beside every run, busy ON seconds and idle OFF seconds in turn (scripts/noisy_neighbour.py: its own
process group, stopped on every exit path, Ctrl-C included), to see which design stays narrow on a machine that
is not quiet.
The pairing is by repetition for both
designs (a duet's repetition is a pair of simultaneous runs); a duet's bundle is also paired by the iterations that
overlapped in time within each repetition (pirex/analysis/in_time.py, from each step's stdout.times), to show what
that buys. MooBench's per-call file has durations but no times, so its calls are not paired in time.

With --allocations, the older comparison of allocations (interleaved only). For each allocation (repetitions x
forks x (warm-up + measured iterations) x iteration time), runs

    pirex run jmh --profile paper --variants native,docker,native-aa --set benchmarks=RecursionBenchmark.b1_default ...

(the variants interleaved, a fresh results directory per allocation), reads the bundle's jmh.json files
(every fork's measured iterations), and prints:

  - the time spent (the bundle's start to end, and the steps per variant);
  - docker/native paired by repetition (per repetition the log ratio of the two variants' fork means; t interval
    over repetitions, on the log ratios): the 95 % and 99.9 % relative half-widths, and the unpaired Welch's t on
    logs of the same run means beside them (what pairing gains);
  - native-aa/native, the same: the A/A noise floor (only when the bundle has the native-aa variant);
  - per variant: the variance decomposition repetition > fork > iteration (Kalibera & Jones 2013) with the
    K&J optimal allocation for the costs measured in the bundle, and its one-line advice;
  - Stein's plan from this run as a pilot: the repetitions (and minutes) that reach +-0.5 % at 95 %, and what the
    paper's own budget for B1 (10 JVMs x 40 s per variant, 13 minutes for two variants) reaches.

    .venv/bin/python scripts/bench_resolution.py                              # the designs, about 45 minutes
    .venv/bin/python scripts/bench_resolution.py --designs duet,duet-aa --allocation small   # a smoke run of the duet
    .venv/bin/python scripts/bench_resolution.py --scale 0.4                  # the designs in about 17 minutes
    .venv/bin/python scripts/bench_resolution.py --scale 0.4 --noisy-neighbour 5,5   # beside a phased CPU hog
    .venv/bin/python scripts/bench_resolution.py --scale 0.4 --benchmarks b1_default,b5_fileWrite,b6_tcpSend
    .venv/bin/python scripts/bench_resolution.py --allocations paper,short    # paper and short allocations
    .venv/bin/python scripts/bench_resolution.py --allocations short,forks --variants native,docker
    .venv/bin/python scripts/bench_resolution.py --allocations small          # smoke run: about 2 minutes
    .venv/bin/python scripts/bench_resolution.py --dry-run                    # the commands, nothing run
    .venv/bin/python scripts/bench_resolution.py --bundle results/bench-resolution/short/jmh/<run-id>
    .venv/bin/python scripts/bench_resolution.py --experiment moobench --metric kieker-text --set repetitions=10 \
        --set configurations=baseline,kieker-text                            # a MooBench configuration
    .venv/bin/python scripts/bench_resolution.py --experiment moobench --metric kieker-text --variants native,docker \
        --design duet --set configurations=kieker-text                     # the same as a duet
    .venv/bin/python scripts/bench_resolution.py --experiment jpa-rest --metric read --set repetitions=10

Costs for K&J: one measured iteration costs its iteration time; a fork costs its warm-up plus one JVM start; a
repetition one JVM start (JMH's host JVM). A JVM start is the step's time beyond its iterations divided by
forks + 1 (the host JVM and each forked one).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pirex.analysis import in_time, jmh, modules, precision, stats  # noqa: E402
from pirex.core import cpuset, experiment, proc  # noqa: E402
from pirex.core.bundle import MANIFEST, Bundle, Step, from_iso  # noqa: E402
from pirex.core.errors import PirexError  # noqa: E402
from scripts.noisy_neighbour import neighbour, phases  # noqa: E402

BENCHMARK = "b1_default"  # the JMH method of ICPE'18's B1 (images/jmh RecursionBenchmark)
PATTERN = "RecursionBenchmark.b1_default"  # JMH's include regex, matched against the benchmark's full name
TARGET = 0.005  # the goal: a 95 % half-width of 0.5 %
PAPER_BUDGET = 2 * 10 * 40.0  # seconds: the paper's B1, 10 JVMs x (20 + 20) x 1 s, for two variants
LEVELS = (0.95, 0.999)


@dataclass(frozen=True)
class Allocation:
    repetitions: int
    forks: int
    warmup_iterations: int
    iterations: int
    time: str  # JMH's iteration time, warm-up and measured alike

    def text(self) -> str:
        return (
            f"{self.repetitions} repetitions x {self.forks} fork{'s' if self.forks > 1 else ''} x "
            f"({self.warmup_iterations} + {self.iterations}) x {self.time}"
        )

    def sets(self) -> list[str]:
        return [
            f"repetitions={self.repetitions}",
            f"forks={self.forks}",
            f"warmup_iterations={self.warmup_iterations}",
            f"iterations={self.iterations}",
            f"warmup_time={self.time}",
            f"time={self.time}",
        ]

    def step_seconds(self) -> float:
        return self.forks * (self.warmup_iterations + self.iterations) * seconds(self.time)


ALLOCATIONS = {
    "paper": Allocation(10, 1, 20, 20, "1s"),  # ICPE'18: 10 JVMs x (20 + 20) x 1 s
    "short": Allocation(30, 1, 5, 5, "1s"),  # more, shorter JVMs, about the same time
    "forks": Allocation(10, 3, 5, 5, "1s"),  # three levels: repetition > fork > iteration
    # Kalibera & Jones where the JVM level dominates: as many JVMs as the paper's budget buys, each
    # with few iterations after a short warm-up (B1 is one small recursive method)
    "kj": Allocation(55, 1, 2, 3, "1s"),
    "small": Allocation(5, 1, 1, 2, "200ms"),  # smoke run
    # the duet on kj's budget: a repetition is one pair at once, so twice as many as kj's in the same time
    "kj-duet": Allocation(110, 1, 2, 3, "1s"),
    # the issue's probe: a longer warm-up (B1's JIT settles after about 3 s), as many duet pairs as 13 minutes buy
    "warm-duet": Allocation(70, 1, 3, 6, "1s"),
}


@dataclass(frozen=True)
class Design:
    """One run of the design comparison: an allocation, pirex run's --design and its variants."""

    allocation: str
    design: str
    variants: str


DESIGNS = {
    "interleaved": Design("kj", "interleaved", "native,docker,native-aa"),
    "duet": Design("kj-duet", "duet", "native,docker"),
    "duet-aa": Design("kj-duet", "duet", "native,native-aa"),
}


def seconds(duration: str) -> float:
    """JMH's time strings: "1s", "200ms", "2 min"... -> seconds."""
    m = re.fullmatch(r"\s*([\d.]+)\s*(ns|us|ms|s|min|m|h)?\s*", str(duration))
    if not m:
        raise ValueError(f"iteration time {duration!r}: expected e.g. 1s or 200ms")
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}
    return float(m.group(1)) * scale[m.group(2)]


# --- reading a bundle (through pirex: Bundle for the manifest and run.json, analysis.jmh for each step's jmh.json)


@dataclass(frozen=True)
class Measured:
    """One benchmark of a jmh bundle as this script reports it: every fork's measured iterations and every step's
    wall time, per variant, beside the bundle (pirex.core.bundle.Bundle) they were read from."""

    bundle: Bundle
    forks: dict[str, dict[int, list[list[float]]]]  # variant -> repetition -> fork -> measured iterations
    step_seconds: dict[str, list[float]]  # variant -> each step's wall time
    wall: float  # the bundle's start to end
    skipped: tuple[str, ...] = ()  # steps whose jmh.json could not be read
    cpus: dict[str, dict[int, str]] | None = None  # a duet's: variant -> repetition -> the CPUs it ran on

    @property
    def path(self) -> Path:
        return self.bundle.path

    @property
    def design(self) -> str:
        """The manifest's design (older bundles: interleaved)."""
        return self.bundle.design or "interleaved"

    @property
    def variants(self) -> list[str]:
        return list(self.forks)

    def halves(self, variant: str) -> dict[int, int]:
        """A duet's: repetition -> the CPU half (+1, -1) the variant ran on (cpuset.half_of, run.json's halves, else
        the lower CPU's first); {} for a bundle of one step at a time."""
        mine = (self.cpus or {}).get(variant, {})
        if not mine:
            return {}
        split = self.bundle.run_info().duet.get("halves")
        every = {c for by_rep in (self.cpus or {}).values() for c in by_rep.values()}
        split = split or sorted(every, key=lambda c: min(cpuset.parse_cpus(c)))
        return {rep: cpuset.half_of(c, split) for rep, c in mine.items()}


def wall_seconds(b: Bundle, steps: list[Step]) -> float:
    """The bundle's start to its end (to its last completed step's end when the run was cut short)."""
    return (from_iso(b.ended or steps[-1].ended) - from_iso(b.started)).total_seconds()


def read_bundle(path: Path, benchmark: str = BENCHMARK) -> Measured:
    b = Bundle.open(path)
    forks: dict[str, dict[int, list[list[float]]]] = {}
    steps: dict[str, list[float]] = {}
    skipped: list[str] = []
    cpus: dict[str, dict[int, str]] = {}
    done = b.steps()
    for step in done:
        variant, rep = step.variant, step.repetition
        if step.cpus is not None:
            cpus.setdefault(variant, {})[rep] = step.cpus
        try:
            results = jmh.read_results(step)
        except PirexError as e:  # an empty or cut file: that step is lost, its repetition unpaired
            skipped.append(f"{variant}/{rep} ({type(e.__context__ or e).__name__})")  # the parser's own error
            continue
        found = [r for r in results if r.method == benchmark]
        if not found:
            raise SystemExit(f"{step.dir}/{jmh.JMH_JSON} has no {benchmark}: was the bundle run with it?")
        forks.setdefault(variant, {})[rep] = found[0].forks
        if step.start is not None:  # a duet's step: its command's own start and end, to the microsecond
            steps.setdefault(variant, []).append(float(step.end) - float(step.start))
        else:
            steps.setdefault(variant, []).append((from_iso(step.ended) - from_iso(step.started)).total_seconds())
    if not forks:
        raise SystemExit(f"{path}: no completed step")
    return Measured(b, forks, steps, wall_seconds(b, done), tuple(skipped), cpus or None)


def per_repetition(b: Measured, pair: tuple[str, ...]) -> float:
    """Seconds a repetition of the pair costs: the steps one after another, or a duet's at once (the longer)."""
    means = [sum(b.step_seconds[x]) / len(b.step_seconds[x]) for x in pair]
    return max(means) if b.design == "duet" else sum(means)


def run_means(b: Measured, variant: str) -> dict[int, float]:
    """repetition -> the mean of its forks' means (each fork: the mean of its measured iterations)."""
    return {rep: sum(sum(f) / len(f) for f in fs) / len(fs) for rep, fs in b.forks[variant].items()}


def costs(b: Measured) -> list[float]:
    """Seconds per unit, top first: repetition (one JVM start), fork (warm-up + one JVM start), iteration."""
    p = b.bundle.parameters
    wi, it, forks = int(p.get("warmup_iterations", 0)), int(p.get("iterations", 1)), int(p.get("forks", 1))
    w, t = seconds(p.get("warmup_time", "1s")), seconds(p.get("time", "1s"))
    steps = [s for v in b.step_seconds.values() for s in v]
    overhead = max(sum(steps) / len(steps) - forks * (wi * w + it * t), 0.1)
    jvm = overhead / (forks + 1)
    return [jvm, wi * w + jvm, t]


# --- the report


def ratio_line(label: str, b: Measured, num: str, den: str) -> list[str]:
    out = []
    for level in LEVELS:
        iv = stats.paired_ratio(run_means(b, num), run_means(b, den), level, names=(num, den))
        lv = stats.level_text(level)
        out.append(
            f"  {label:<18} {lv:>6}: {iv.text(4)}  {iv.percent(2)} ({iv.method}, {iv.n} paired)"
            + (f"; {iv.note}" if iv.note else "")
        )
        if b.halves(num):  # a duet: the same pairs with the CPU half a factor of the model
            m = ratio(b, num, den, level)
            half = f"; the CPU half's effect {m.half.text(4)}" if getattr(m, "half", None) else ""
            out.append(f"  {'  half modelled':<18} {lv:>6}: {_with_percent(m)} ({m.method}){half}")
    return out


def report(b: Measured, name: str = "") -> list[str]:
    v = b.variants
    out = [f"== {name or b.path.name}: {b.path}"]
    p = b.bundle.parameters
    if p:
        a = Allocation(
            p.get("repetitions"), int(p.get("forks", 1)), p.get("warmup_iterations"), p.get("iterations"), p.get("time")
        )
        run = b.bundle.run_info()
        pinned = run.cpus
        out.append(
            f"   {a.text()}, variants {', '.join(v)}, design {b.design}"
            + (f", pinned to CPUs {pinned}" if pinned else "")
        )
        if run.duet:
            d = run.duet
            out.append(
                f"   duet halves: CPUs {' and '.join(d['halves'])}, swapped every repetition"
                + (", hardware threads of shared cores" if d.get("shared_cores") else "")
                + (f", CPUs {d['unused_cpus']} unused" if d.get("unused_cpus") else "")
            )
    per_variant = ", ".join(f"{x} {sum(s) / 60:.1f}" for x, s in b.step_seconds.items())
    out.append(f"time spent: {b.wall / 60:.1f} min (steps per variant, min: {per_variant})")
    if b.skipped:
        out.append(f"unreadable jmh.json, step left out: {', '.join(b.skipped)}")
    if "native" in v and "docker" in v:
        out += ratio_line("docker/native", b, "docker", "native")
        docker, native = list(run_means(b, "docker").values()), list(run_means(b, "native").values())
        unpaired = stats.welch_ratio(docker, native, 0.95, ("docker", "native"))
        if unpaired.has_interval:  # what pairing gains: the same run means as independent groups
            out.append(f"  docker/native unpaired (Welch's t on logs of run means), 95 %: {unpaired.percent(2)}")
    if b.design == "duet":
        out += in_time_lines(b)
    if "native" in v and precision.aa_name("native") in v:
        out += ratio_line("native-aa/native", b, precision.aa_name("native"), "native")
    elif "native" in v:
        out.append("  native-aa/native: no A/A copy in this bundle (run with --variants native,docker,native-aa)")
    out.append("per-variant mean over repetitions (95 %, modified Cox):")
    for x in v:
        means = list(run_means(b, x).values())
        iv = stats.mean_interval(means, 0.95, what="repetitions")
        cv = stats.summary([sum(f) / len(f) for fs in b.forks[x].values() for f in fs])
        out.append(f"  {x:<12} {iv.text(0)} ops/s  {iv.percent(2)}; fork-to-fork CV {100 * cv.sd / cv.mean:.2f} %")
    c = costs(b)
    out.append(
        f"variance decomposition (K&J costs: repetition {c[0]:.1f} s, fork {c[1]:.1f} s, iteration {c[2]:.1f} s):"
    )
    for x in v:
        data = [b.forks[x][rep] for rep in sorted(b.forks[x])]
        try:
            d = precision.decompose(data, precision.LEVEL_NAMES, c)
        except ValueError as e:
            out.append(f"  {x}: {e}")
            continue
        out.append(f"  {x}:")
        out += [f"    {line}" for line in d.lines()]
    if "native" in v and "docker" in v:
        out += plan_lines(b)
    return out


def in_time_lines(b: Measured) -> list[str]:
    """A duet's pairs two ways (pirex.analysis.in_time): by repetition (t-log over the fork means, as above)
    and by the iterations that overlapped in time within each repetition, with their correlation."""
    num, den = in_time.sides(b.variants)
    try:
        found = in_time.in_time(b.path, num, den, 0.95)
    except PirexError as e:
        return [f"  iterations in time: {e}"]
    out = []
    for r in found:
        out += [
            f"  {num}/{den} {r.benchmark}, 95 % t-log over repetitions, paired two ways:",
            f"    by repetition (fork means)          {_with_percent(r.repetitions)}",
            f"    by iterations overlapping in time   {_with_percent(r.iterations)}"
            f"  ({r.pairs} pairs of {r.measured} {num} iterations; correlation of the pairs {r.correlation_text})",
        ]
    return out


def _with_percent(iv: stats.Interval) -> str:
    return iv.text(4) + (f"  {iv.percent(2)}" if iv.has_interval else "")


def plan_lines(b: Measured) -> list[str]:
    """Stein's second stage with this run as the pilot, and what the paper's budget reaches."""
    keys, d, _ = stats.log_ratios(run_means(b, "docker"), run_means(b, "native"))
    if d.size < 2:
        return ["plan: fewer than 2 paired repetitions, no variance to plan from"]
    pair = per_repetition(b, ("docker", "native"))
    on = b.halves("docker")  # a duet's plan: from the model with the CPU half, n even
    halves = [on[k] for k in keys] if on else None
    p = precision.plan(d, TARGET, 0.95, seconds_per_repetition=pair, budget=PAPER_BUDGET, halves=halves)
    how = ("at once, the CPU half modelled," if halves else "at once") if b.design == "duet" else "docker + native"
    return [
        f"plan (this run as Stein's pilot, {how} {pair:.0f} s per repetition; budget: the "
        f"paper's for B1, 10 JVMs x 40 s x 2 variants): {p.text()}"
    ]


def half_width(b: Measured, num: str, den: str, level: float = 0.95):
    """The paired ratio num/den of a bundle (t on the log ratios, the half left in a duet's spread), or None when
    it lacks a variant."""
    if num not in b.variants or den not in b.variants:
        return None
    return stats.paired_ratio(run_means(b, num), run_means(b, den), level, method="t", names=(num, den))


def ratio(b: Measured, num: str, den: str, level: float = 0.95):
    """The ratio num/den as the design calls for (stats.design_ratio): a duet's with its CPU half as a factor of
    the model, else paired t on logs; None when the bundle lacks a variant."""
    if num not in b.variants or den not in b.variants:
        return None
    return stats.design_ratio(run_means(b, num), run_means(b, den), b.halves(num), level, names=(num, den))


ALPHA = 0.05  # the difference test's level


def difference_line(a_name: str, a: stats.Interval, b_name: str, b: stats.Interval, alpha: float = ALPHA) -> str:
    """Whether two designs' ratios of one benchmark differ: stats.difference_test's z and p, and the verdict at
    `alpha`: "differ" (the designs measure different ratios: a bias of one) or "no detectable difference"."""
    if not (a.has_interval and b.has_interval):
        return f"  {a_name} against {b_name}: no test (a ratio without an interval)"
    z, p = stats.difference_test(a, b)
    verdict = "differ" if p < alpha else "no detectable difference"
    return (
        f"  {a_name} {a.value:.4f} against {b_name} {b.value:.4f}: z = {z:+.2f}, p = {p:.3g}: {verdict} "
        f"(difference test on logs at {100 * alpha:g} %)"
    )


def summary(results: dict[str, Measured], benchmark: str = BENCHMARK) -> list[str]:
    """One line per design: docker/native (a duet's with its CPU half modelled, and without) and the A/A with
    their 95 % half-widths, the minutes spent; then the half-widths side by side and the difference test of the
    interleaved design's ratio against the duet's."""
    out = [f"== designs side by side, {benchmark} (95 %, paired by repetition)"]
    ratios, plain = {}, {}
    for name, b in results.items():
        dn, aa = ratio(b, "docker", "native"), ratio(b, precision.aa_name("native"), "native")
        parts = [f"{name:<12} {b.wall / 60:5.1f} min"]
        if dn is not None:
            ratios[name], plain[name] = dn, half_width(b, "docker", "native")
            pair = per_repetition(b, ("docker", "native")) * dn.n / 60  # the pair's own share of the run
            parts.append(f"docker/native {dn.text(4)} {dn.percent(2)} ({dn.n} pairs, {pair:.1f} min of steps)")
            if getattr(dn, "half", None) is not None:
                parts.append(f"CPU half {dn.half.text(4)}")
        if aa is not None:
            parts.append(f"A/A {aa.text(4)} {aa.percent(2)} ({aa.n} pairs)")
            if why := precision.aa_check(aa):
                parts.append(why)
        out.append("  " + "; ".join(parts))
    one_at_a_time = next((n for n, b in results.items() if b.design != "duet" and n in ratios), None)
    at_once = next((n for n, b in results.items() if b.design == "duet" and n in ratios), None)
    widths = [f"{one_at_a_time} {ratios[one_at_a_time].percent(2)}"] if one_at_a_time else []
    if at_once:
        widths += [
            f"{at_once} with the CPU half modelled {ratios[at_once].percent(2)}",
            f"{at_once} unmodelled {plain[at_once].percent(2)}",
        ]
    if widths:
        out.append(f"  {benchmark} 95 % half-widths: " + ", ".join(widths))
    if one_at_a_time and at_once:
        out.append(difference_line(at_once, ratios[at_once], one_at_a_time, ratios[one_at_a_time]))
        a, b = ratios[one_at_a_time], ratios[at_once]
        if a.relative_half_width and b.relative_half_width:
            gain = a.relative_half_width / b.relative_half_width
            spent = ", ".join(f"{n} {r.wall / 60:.1f} min" for n, r in results.items() if n in ratios)
            out.append(f"  interleaved's half-width / the duet's: {gain:.2f} ({spent} in all)")
    return out


# --- any experiment, through its analysis module's run values (MooBench, JPA REST)


def generic_report(path: Path, metric: str) -> list[str]:
    """The same figures for another experiment: docker/native and the A/A paired by repetition over the run values
    its analysis module reads (a MooBench loop's steady-state mean, a JPA step's mean response time), the variance
    per level, and Stein's plan for +-0.5 %."""
    b = Bundle.open(path)
    exp = experiment.load(b.experiment)
    every = modules.module(exp).run_values([path], b.matrix)
    values = [v for v in every if v.metric == metric]
    if not values:
        raise SystemExit(
            f"{path}: no run value of {metric!r} (metrics: {', '.join(sorted({v.metric for v in every}))})"
        )
    variants = list(dict.fromkeys(v.variant for v in values))
    done = b.steps()
    wall = wall_seconds(b, done)
    step = {
        x: [(from_iso(s.ended) - from_iso(s.started)).total_seconds() for s in done if s.variant == x] for x in variants
    }
    out = [
        f"== {exp.id} {metric}: {path}",
        f"   {b.parameters}",
        f"time spent: {wall / 60:.1f} min (steps per variant, min: "
        f"{', '.join(f'{x} {sum(t) / 60:.1f}' for x, t in step.items())})",
    ]
    pairs = [("docker/native", "docker", "native"), ("native-aa/native", precision.aa_name("native"), "native")]
    for label, num, den in pairs:
        if num in variants and den in variants:
            for level in LEVELS:
                iv = precision.paired_interval(values, metric, num, den, level)
                out.append(
                    f"  {label:<18} {stats.level_text(level):>6}: {iv.text(4)}  {iv.percent(2)} ({iv.method}, "
                    f"{iv.n} paired)" + (f"; {iv.note}" if iv.note else "")
                )
    out.append("variance decomposition (repetition > run > sample):")
    for x in variants:
        try:
            d = precision.decompose_runs(values, metric, x)
        except ValueError as e:
            out.append(f"  {x}: {e}")
            continue
        out += [f"  {x}:"] + [f"    {line}" for line in d.lines()]
    if "docker" in variants and "native" in variants:
        keys, d, _ = stats.log_ratios(
            precision.run_means(values, metric, "docker"), precision.run_means(values, metric, "native")
        )
        if d.size >= 2:
            per_rep = sum(sum(step[x]) / len(step[x]) for x in ("docker", "native"))
            on = precision.run_halves(values, metric, "docker")  # a duet's: the plan from its model, n even
            halves = [on[k] for k in keys] if on else None
            p = precision.plan(d, TARGET, 0.95, seconds_per_repetition=per_rep, halves=halves)
            out.append(f"plan (this run as Stein's pilot, docker + native {per_rep:.0f} s per repetition): {p.text()}")
    return out


def run_generic(args) -> int:
    results = args.results_dir / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{args.experiment}"
    cmd = [
        sys.executable,
        "-m",
        "pirex",
        "run",
        args.experiment,
        "--profile",
        args.profile,
        "--variants",
        args.variants,
        "--seed",
        str(args.seed),
        "--results-dir",
        str(results),
    ]
    for s in args.set:
        cmd += ["--set", s]
    cmd += ["--tag", args.tag] if args.tag else []
    cmd += ["--cpus", args.cpus] if args.cpus else []
    cmd += ["--design", args.design] if args.design != "interleaved" else []
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    print(f"bench-resolution: {' '.join(cmd[2:])}", flush=True)
    code = run_pirex(cmd, args.timeout)
    bundles = sorted(p for p in (results / args.experiment).glob("*") if (p / MANIFEST).exists())
    if not bundles:
        raise SystemExit(f"bench-resolution: pirex run wrote no bundle under {results} (exit {code})")
    print("\n".join(generic_report(bundles[-1], args.metric)), flush=True)
    return 0


# --- running


def pirex_command(
    a: Allocation,
    variants: str,
    results: Path,
    tag: str | None,
    seed: int,
    cpus: str | None = None,
    design: str = "interleaved",
    pattern: str = PATTERN,
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "pirex",
        "run",
        "jmh",
        "--profile",
        "paper",
        "--variants",
        variants,
        "--seed",
        str(seed),
        "--results-dir",
        str(results),
        "--set",
        f"benchmarks={pattern}",
    ]
    for s in a.sets():
        cmd += ["--set", s]
    cmd += ["--design", design] if design != "interleaved" else []
    return cmd + (["--tag", tag] if tag else []) + (["--cpus", cpus] if cpus else [])


def run_allocation(a: Allocation, cmd: list[str], results: Path, variants: int) -> Path:
    """Run pirex under a time limit (its own process group: ended with SIGINT, then SIGKILL, on every exit
    path) and return the one bundle it wrote under results/jmh/ (variants: the steps a repetition runs one after
    another, 1 for a duet)."""
    limit = 600 + 3 * a.repetitions * variants * (a.step_seconds() + 30 * (a.forks + 1))
    code = run_pirex(cmd, limit)
    bundles = sorted(p for p in (results / "jmh").glob("*") if (p / MANIFEST).exists())
    if not bundles:
        raise SystemExit(f"bench-resolution: pirex run wrote no bundle under {results}/jmh (exit {code})")
    if code:
        print(f"bench-resolution: pirex run exited {code}; reporting what {bundles[-1]} holds", file=sys.stderr)
    return bundles[-1]


def run_pirex(cmd: list[str], limit: float) -> int | None:
    """pirex under a time limit, in its own process group: ended with SIGINT, then SIGKILL, on every exit path."""
    run = subprocess.Popen(cmd, cwd=REPO, start_new_session=True)
    try:
        run.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        print(f"bench-resolution: pirex run took over {limit / 60:.0f} min; interrupting it", file=sys.stderr)
    finally:
        if run.poll() is None:
            proc.terminate_group(run, 120, first=signal.SIGINT, kill_grace=30)
    return run.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--allocations",
        default=None,
        help=f"the older comparison of allocations (interleaved), comma-separated, of {', '.join(ALLOCATIONS)}",
    )
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"comma-separated, of {', '.join(DESIGNS)}")
    ap.add_argument("--allocation", default=None, help="with --designs: this allocation for every design (e.g. small)")
    ap.add_argument(
        "--scale", type=float, default=1.0, help="with --designs: each design's repetitions times this (0.4: shorter)"
    )
    ap.add_argument(
        "--variants", default="native,docker,native-aa", help="with --allocations: native,docker[,native-aa]"
    )
    ap.add_argument("--results-dir", type=Path, default=REPO / "results" / "bench-resolution")
    ap.add_argument("--tag", default=None, help="image tag (default: pirex's, the checkout's git describe)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the interleaving")
    ap.add_argument("--bundle", type=Path, action="append", default=[], help="report on existing bundles; no run")
    ap.add_argument("--dry-run", action="store_true", help="print the pirex commands; run nothing")
    ap.add_argument("--cpus", default=None, help="pin every step to these CPUs (pirex run --cpus), e.g. 1")
    ap.add_argument("--experiment", default="jmh", help="another experiment than JMH's B1 (moobench, jpa-rest)")
    ap.add_argument("--metric", help="with --experiment: the metric (a MooBench configuration, a JPA operation)")
    ap.add_argument("--profile", default="quick", help="with --experiment: the profile")
    ap.add_argument("--set", action="append", default=[], help="with --experiment: NAME=VALUE, repeatable")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="with --experiment: seconds for the run")
    ap.add_argument(
        "--design",
        default="interleaved",
        choices=("interleaved", "duet"),
        help="with --experiment: pirex run --design (duet: --variants of two, e.g. native,docker)",
    )
    ap.add_argument(
        "--benchmarks",
        default=BENCHMARK,
        help="with --designs: JMH methods, comma-separated (e.g. b1_default,b5_fileWrite,b6_tcpSend), each judged",
    )
    ap.add_argument(
        "--noisy-neighbour",
        default=None,
        metavar="ON,OFF[,WORKERS]",
        help="a CPU hog beside the runs, ON seconds busy and OFF idle in turn (default workers: one per CPU)",
    )
    args = ap.parse_args(argv)
    if args.noisy_neighbour:
        phases(args.noisy_neighbour)  # refused before anything runs
    if args.dry_run or args.bundle:
        return _main(args)
    with neighbour(args):
        return _main(args)


def _main(args) -> int:
    if args.experiment != "jmh":
        if not args.metric:
            raise SystemExit("bench-resolution: --experiment needs --metric (e.g. kieker-text, read)")
        if args.bundle:
            for path in args.bundle:
                print("\n".join(generic_report(path, args.metric)), flush=True)
            return 0
        return run_generic(args)
    if args.bundle:
        for path in args.bundle:
            print("\n".join(report(read_bundle(path))), flush=True)
        return 0
    if args.allocations is None:
        return run_designs(args)
    names = [n.strip() for n in args.allocations.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALLOCATIONS]
    if unknown:
        raise SystemExit(
            f"bench-resolution: unknown allocation {', '.join(unknown)}; choose of {', '.join(ALLOCATIONS)}"
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for name in names:
        a = ALLOCATIONS[name]
        results = args.results_dir / f"{stamp}-{name}"
        cmd = pirex_command(a, args.variants, results, args.tag, args.seed, args.cpus)
        if args.dry_run:
            print(f"{name} ({a.text()}): {' '.join(cmd)}")
            continue
        print(f"bench-resolution: {name}: {a.text()}, variants {args.variants}", flush=True)
        bundle = run_allocation(a, cmd, results, len(args.variants.split(",")))
        print("\n".join(report(read_bundle(bundle), name)), flush=True)
    return 0


def run_designs(args) -> int:
    """The designs side by side (DESIGNS), each its own pirex run, then the summary."""
    names = [n.strip() for n in args.designs.split(",") if n.strip()]
    unknown = [n for n in names if n not in DESIGNS] + [a for a in [args.allocation] if a and a not in ALLOCATIONS]
    if unknown:
        raise SystemExit(
            f"bench-resolution: unknown {', '.join(unknown)}; designs: {', '.join(DESIGNS)}; "
            f"allocations: {', '.join(ALLOCATIONS)}"
        )
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    benchmarks = [x.strip() for x in args.benchmarks.split(",") if x.strip()]
    pattern = PATTERN if benchmarks == [BENCHMARK] else "|".join(benchmarks)
    paths: dict[str, Path] = {}
    for name in names:
        d = DESIGNS[name]
        a = ALLOCATIONS[args.allocation or d.allocation]
        reps = max(2, round(a.repetitions * args.scale))
        at_once = d.design == "duet"
        a = dataclasses.replace(a, repetitions=reps + reps % 2 if at_once else reps)  # a duet: as many on each half
        out = args.results_dir / f"{stamp}-{name}"
        cmd = pirex_command(a, d.variants, out, args.tag, args.seed, args.cpus, d.design, pattern)
        if args.dry_run:
            print(f"{name} ({a.text()}, {d.design}): {' '.join(cmd)}")
            continue
        print(f"bench-resolution: {name}: {a.text()}, {d.design}, variants {d.variants}", flush=True)
        paths[name] = run_allocation(a, cmd, out, 1 if at_once else len(d.variants.split(",")))
    for benchmark in benchmarks if paths else []:
        results = {name: read_bundle(path, benchmark) for name, path in paths.items()}
        for name, b in results.items():
            print("\n".join(report(b, f"{name} {benchmark}")), flush=True)
        print("\n".join(summary(results, benchmark)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
