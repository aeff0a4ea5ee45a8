"""A duet's JMH iterations paired in time: what pairing the iterations that overlapped buys over pairing repetitions.

In a duet (pirex run --design duet) both sides of a repetition run at the same moment, so their measured iterations
overlap in time. Each step's stdout.times says when each line of JMH's output arrived; a measured iteration is the
time from the line before it (the previous iteration's, or the last warm-up's) to its own line, and its value is
jmh.json's (the printed one is rounded). Within a repetition, each numerator iteration is paired with the
denominator iteration that overlapped it most (one to one, at least half the shorter of the two); the repetition's
ratio is then the geometric mean of its pairs' ratios.

Both intervals are over repetitions, the independent units, with the CPU half each repetition's numerator ran on
as a factor of their model (stats.design_ratio, the duet's swapped halves): iterations of one JVM are not
independent (its JIT decides them all), so no interval is ever taken over them. Under that rule the pairing itself
changes nothing: the mean log ratio over one-to-one pairs is the difference of the two sides' mean logs over the
paired iterations, whichever is paired with which. What it does is restrict the comparison to the moments both
sides ran (the iterations without a partner drop out), which narrows the interval only when the sides' runs covered
different moments. The correlation of the paired iterations (each side's fork mean removed) says how much the two
sides varied together at all.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pirex.analysis import stats
from pirex.analysis.bundles import open_bundle
from pirex.core import cpuset
from pirex.core.bundle import DUET, Step, read_json, reading
from pirex.core.errors import PirexError

MIN_OVERLAP = 0.5  # of the shorter iteration: pairs that overlapped less are not the same moment
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_BENCHMARK = re.compile(r"^# Benchmark: (\S+)")
_PARAMETERS = re.compile(r"^# Parameters: \((.*)\)$")
_MEASUREMENT = re.compile(r"^# Measurement: \d+ iterations?, ([\d.]+) (ns|us|ms|s|min) each")
_FORK = re.compile(r"^# Fork: (\d+) of \d+")
_MODE = re.compile(r"^# Benchmark mode: ([^,]+)")
# JMH's printed modes -> jmh.json's "mode"
MODES = {"Throughput": "thrpt", "Average time": "avgt", "Sampling time": "sample", "Single shot invocation time": "ss"}
_ITERATION = re.compile(r"^(# Warmup )?Iteration\s+\d+:")


@dataclass(frozen=True)
class Iteration:
    start: float
    end: float
    value: float
    fork: int = 0

    def overlap(self, other: Iteration) -> float:
        """The share of the shorter of the two that both spent running."""
        both = min(self.end, other.end) - max(self.start, other.start)
        return max(both, 0.0) / max(min(self.end - self.start, other.end - other.start), 1e-9)


@dataclass(frozen=True)
class InTime:
    """One benchmark's numerator/denominator over a duet's repetitions, paired two ways."""

    benchmark: str
    repetitions: stats.Interval  # each repetition's fork means (what the ratio tables take)
    iterations: stats.Interval  # each repetition's overlapping iterations, paired
    pairs: int  # iteration pairs found, over every repetition
    measured: int  # the numerator's measured iterations, over every repetition
    correlation: float | None  # of the paired iterations' logs, each side's fork mean removed

    @property
    def correlation_text(self) -> str:
        return "n/a" if self.correlation is None else f"{self.correlation:+.2f}"


def sides(variants: Sequence[str]) -> tuple[str, str]:
    """A duet's two variants as numerator and denominator: native below (docker/native, native-aa/native)."""
    den = "native" if "native" in variants else variants[-1]
    return next(v for v in variants if v != den), den


def windows(step: Step) -> dict[tuple, list[list[Iteration]]]:
    """A JMH step's measured iterations in time, by (benchmark, mode, parameters): per fork, each iteration's window and
    jmh.json's value. PirexError when the step has no line times (recorded before pirex kept them) or its output and
    jmh.json disagree."""
    lines = step.stdout_lines()
    if lines and lines[0][0] is None:
        raise PirexError(
            f"{step.dir}: no stdout.times (the step was recorded before pirex kept when each line arrived): "
            "run the duet again to pair its iterations in time"
        )
    ends: dict[tuple, list[list[tuple[float, float]]]] = defaultdict(list)  # key -> forks -> (start, end)
    key, each, previous, mode = None, None, None, None
    for t, text in lines:
        if m := _MODE.match(text):
            mode = MODES.get(m[1].strip(), m[1].strip())
        elif m := _BENCHMARK.match(text):
            key, previous = (m[1], mode, ()), None
        elif (m := _PARAMETERS.match(text)) and key:
            key = (*key[:2], tuple(sorted(tuple(p.split(" = ", 1)) for p in m[1].split(", "))))
        elif m := _MEASUREMENT.match(text):
            each = float(m[1]) * _UNITS[m[2]]
        elif _FORK.match(text) and key:
            ends[key].append([])
            previous = None
        elif (m := _ITERATION.match(text)) and key and ends[key]:
            if not m[1]:  # a measured iteration: from the line before it, or its own length before its line
                start = previous if previous is not None else t - (each or 0.0)
                ends[key][-1].append((start, t))
            previous = t
    out: dict[tuple, list[list[Iteration]]] = {}
    f = step.dir / "jmh.json"
    with reading(f):
        for result in read_json(f, list):
            params = tuple(sorted((n, str(v)) for n, v in (result.get("params") or {}).items()))
            name, mode = result["benchmark"], result.get("mode")
            # its section of the output: of the same mode, or the only one where one side does not say its mode
            same = [k for k in ends if k[::2] == (name, params) and (mode is None or k[1] in (mode, None))]
            k = same[0] if len(same) == 1 else (name, mode, params)
            raw = result["primaryMetric"]["rawData"]
            seen = ends.get(k, [])
            if [len(fork) for fork in raw] != [len(fork) for fork in seen]:
                name = k[0].rsplit(".", 1)[-1]
                raise ValueError(f"{name}: stdout.txt shows iterations {[len(x) for x in seen]}, jmh.json {raw}")
            flat = [float(v) for fork in raw for v in fork]
            if not all(math.isfinite(v) and v > 0 for v in flat):
                raise ValueError(f"{k[0].rsplit('.', 1)[-1]}: an iteration's value is not a positive number")
            out[k] = [
                [Iteration(s, e, float(v), fork) for (s, e), v in zip(times, values, strict=True)]
                for fork, (times, values) in enumerate(zip(seen, raw, strict=True))
            ]
    return out


def pair(a: Sequence[Iteration], b: Sequence[Iteration]) -> list[tuple[Iteration, Iteration]]:
    """One to one, the pairs that overlapped most first, each at least MIN_OVERLAP."""
    candidates = sorted(
        ((x.overlap(y), i, j) for i, x in enumerate(a) for j, y in enumerate(b) if x.overlap(y) >= MIN_OVERLAP),
        reverse=True,
    )
    used_a, used_b, out = set(), set(), []
    for _, i, j in candidates:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            out.append((a[i], b[j]))
    return sorted(out, key=lambda p: p[0].start)


def in_time(bundle_path: Path, numerator: str, denominator: str, level: float = 0.95) -> list[InTime]:
    """Per benchmark of a jmh duet bundle: numerator/denominator paired by repetition and by overlapping iteration."""
    b = open_bundle(bundle_path, "jmh")
    if b.design != DUET:
        raise PirexError(f"{bundle_path} ran one step at a time ({b.design}): only a duet's iterations overlap")
    sides: dict[tuple[str, int], dict[tuple, list[list[Iteration]]]] = {}
    for step in b.steps():
        if step.variant in (numerator, denominator):
            sides[(step.variant, step.repetition)] = windows(step)
    if not any(v == numerator for v, _ in sides) or not any(v == denominator for v, _ in sides):
        raise PirexError(f"{bundle_path} has no {numerator} and {denominator} steps to pair")
    on = cpuset.step_halves(b)  # the numerator's CPU half per repetition: a factor of both ratios' model
    halves = {rep: on.get((numerator, rep), 0) for v, rep in sides if v == numerator}
    out = []
    keys = sorted({k for w in sides.values() for k in w})
    for key in keys:
        num_mean, den_mean, num_pairs, den_pairs = {}, {}, {}, {}
        pairs = measured = 0
        xs: list[float] = []
        ys: list[float] = []
        for (variant, rep), w in sorted(sides.items()):
            if variant != numerator or (denominator, rep) not in sides:
                continue
            a = [i for fork in w.get(key, []) for i in fork]
            d = [i for fork in sides[(denominator, rep)].get(key, []) for i in fork]
            if not a or not d:
                continue
            measured += len(a)
            num_mean[rep] = float(np.mean([i.value for i in a]))
            den_mean[rep] = float(np.mean([i.value for i in d]))
            together = pair(a, d)
            if not together:
                continue
            pairs += len(together)
            la = np.log([x.value for x, _ in together])
            lb = np.log([y.value for _, y in together])
            num_pairs[rep], den_pairs[rep] = math.exp(la.mean()), math.exp(lb.mean())  # their ratio: exp(mean log)
            xs += list(la - _fork_means(la, [x.fork for x, _ in together]))
            ys += list(lb - _fork_means(lb, [y.fork for _, y in together]))
        if not num_mean:
            continue
        out.append(
            InTime(
                _label(key, keys),
                stats.design_ratio(num_mean, den_mean, halves, level, names=(numerator, denominator)),
                stats.design_ratio(num_pairs, den_pairs, halves, level, names=(numerator, denominator)),
                pairs,
                measured,
                _correlation(xs, ys),
            )
        )
    return out


def _label(key: tuple, keys: Sequence[tuple]) -> str:
    """b1_default depth=10, with the mode where the benchmark ran in several."""
    name, mode, params = key
    several = len({k[1] for k in keys if (k[0], k[2]) == (name, params)}) > 1
    return name.rsplit(".", 1)[-1] + (f" {mode}" if several and mode else "") + "".join(f" {n}={v}" for n, v in params)


def _fork_means(logs: np.ndarray, forks: Sequence[int]) -> np.ndarray:
    """Each value's fork mean (of the paired values): what one JVM's level is, removed before the correlation."""
    f = np.asarray(forks)
    return np.array([logs[f == k].mean() for k in f])


def _correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < 3 or float(np.std(xs)) == 0 or float(np.std(ys)) == 0:
        return None
    return float(np.corrcoef(xs, ys)[0, 1])
