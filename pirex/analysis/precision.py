"""Precision: where the variance is (per level), how many repetitions reach a target, the A/A
noise floor, and the grouping of RunValue lists (pirex/analysis/interface.py) they all start from.

- decompose(): the variance components of a nested design (repetition > fork/loop > iteration)
  after Kalibera & Jones 2013, "Rigorous benchmarking in reasonable time" (ISMM'13), with the
  optimal number of units per level given each level's cost, and a one-line advice.
- plan(): Stein's two-stage sample size (Stein 1945, "A two-sample test for a linear hypothesis
  whose power is independent of the variance", Ann. Math. Statist. 16(3)): a pilot of k paired
  repetitions fixes the sd s of the log ratios once, and n = max(k, ceil((t(1-a/2, k-1) s / d)^2))
  repetitions reach half-width d = log(1 + P) on the log scale; no look at the result in between.
- aa_interval(): a variant against its own second copy, `<variant>-aa`: the noise floor; aa_check(): an A/A
  interval wholly beyond +-AA_TOLERANCE says the machine was not steady (the verdicts of its bundle stay
  inconclusive).
- A duet's (pirex/runner/duet.py) ratios take its CPU half as a factor (run_halves, stats.duet_ratio), and its
  plan the model's residual sd on k - 2 df with n even (duet_sd, even).
- run_means(), run_counts(), nested(), paired_interval(): RunValue lists grouped by (device, bundle, repetition).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pirex.analysis import stats
from pirex.analysis.interface import RunValue

# How far two copies of the same variant may differ before a bundle's verdicts are blocked: smaller than every
# claim's margin (2 % and up, analysis/*/claims.yaml), larger than the A/A drifts of a steady machine (0.1-0.5 %).
AA_TOLERANCE = 0.01
LEVEL_NAMES = ("repetition", "fork", "iteration")  # top first; MooBench: ("repetition", "loop", "iteration")


# --- variance decomposition (Kalibera & Jones 2013)


@dataclass(frozen=True)
class Level:
    """One level of the nested design. count: units per parent (r_i); s2: S_i^2, the mean sample
    variance (n-1) of this level's unit means within their parent; t2: T_i^2, the estimated variance
    component this level adds (negative estimates shown as 0); share: t2 / sum of t2 (variance of a
    single measurement); of_mean: this level's part of the variance of the grand mean in the
    current design, t2 / (r_n ... r_i), over the sum of those."""

    name: str
    count: int
    s2: float
    t2: float
    share: float
    of_mean: float


@dataclass(frozen=True)
class Decomposition:
    levels: tuple[Level, ...]  # top (repetition) first
    grand_mean: float
    # K&J optimal units per parent for every level below the top ({} without costs); None: as many as time allows
    optimal: dict[str, int | None]
    advice: str
    note: str = ""

    def dominant(self) -> Level:
        """The level holding the largest part of the variance of the grand mean."""
        return max(self.levels, key=lambda lv: lv.of_mean)

    def lines(self) -> list[str]:
        """The decomposition as text, one line per level, then the advice."""
        out = []
        for lv in self.levels:
            opt = self.optimal.get(lv.name)
            best = "" if lv.name not in self.optimal else f", K&J optimum {_count(opt, lv.name)} per parent"
            out.append(
                f"{lv.name:>10}: {lv.count:>3} per parent, component {lv.t2:.4g} ({100 * lv.share:.0f} % of one"
                f" value's variance, {100 * lv.of_mean:.0f} % of the mean's){best}"
            )
        return out + ([self.note] if self.note else []) + [self.advice]


def balance(data: Sequence, depth: int) -> tuple[np.ndarray, str]:
    """Nested lists `depth` deep (leaves: floats) as an array of shape (r_n, ..., r_1): every group
    cut to the smallest size at its level, and a note saying how many values that set aside."""
    sizes: list[int] = []

    def walk(node, d: int) -> None:
        if d == len(sizes):
            sizes.append(len(node))
        sizes[d] = min(sizes[d], len(node))
        if d + 1 < depth:
            for child in node:
                walk(child, d + 1)

    walk(data, 0)

    def cut(node, d: int):
        return [cut(c, d + 1) for c in node[: sizes[d]]] if d + 1 < depth else list(node[: sizes[d]])

    total = sum(1 for _ in _leaves(data, depth))
    a = np.asarray(cut(data, 0), dtype=float)
    cut_to = " x ".join(map(str, sizes))
    note = "" if a.size == total else f"unbalanced: cut to {cut_to}, {total - a.size} values set aside"
    return a, note


def _leaves(node, depth: int):
    if depth == 1:
        yield from node
    else:
        for c in node:
            yield from _leaves(c, depth - 1)


def decompose(
    data: Sequence, names: Sequence[str] = LEVEL_NAMES, costs: Sequence[float] | None = None
) -> Decomposition:
    """Variance components of a nested design, levels top first (`names`), `data` nested lists
    (or an array) of that depth, e.g. data[repetition][fork][iteration].

    With levels numbered from the bottom (1 = iteration), r_i units per parent at level i and
    Ybar the mean over everything below (Kalibera & Jones 2013, section 3):

        S_i^2 = 1 / (prod_{k>i} r_k (r_i - 1)) * sum (Ybar_{j_n..j_i} - Ybar_{j_n..j_{i+1}})^2
        T_1^2 = S_1^2,   T_i^2 = S_i^2 - S_{i-1}^2 / r_{i-1}  (unbiased for the component sigma_i^2)

    A level with one unit per parent carries no information of its own and is merged into the one
    above (said in the note). `costs` (top first, seconds): the cost of one unit at that level
    beyond its units below (a repetition's step overhead, a fork's JVM start and warm-up, one
    iteration). The variance of the grand mean, sum_i sigma_i^2 / (r_n..r_i), at a fixed cost
    sum over levels of c_i (r_n..r_i) is smallest at (K&J eq. for r_i; Cochran 1977, 10.6)

        r_i = ceil( sqrt( c_{i+1} T_i^2 / (c_i T_{i+1}^2) ) ),  i = 1 .. n-1

    (None: T_{i+1}^2 is 0, so all the time goes to level i: as many units as the time allows)."""
    names = list(names)
    a, note = balance(data, len(names)) if not isinstance(data, np.ndarray) else (np.asarray(data, float), "")
    if a.ndim != len(names):
        raise ValueError(f"data is {a.ndim} levels deep, names {names} are {len(names)}")
    cost_list = list(costs) if costs is not None else None
    merged = []
    for axis in range(a.ndim - 1, 0, -1):  # merge a level with one unit per parent into its parent
        if a.shape[axis] == 1:
            merged.append(names[axis])
            a = a.squeeze(axis)
            del names[axis]
            if cost_list is not None:
                c = cost_list.pop(axis)
                cost_list[axis - 1] += c
    if merged:
        note = "; ".join(filter(None, [note, f"one {' / '.join(merged)} per parent: merged into the level above"]))
    if a.shape[0] < 2:
        raise ValueError(f"a variance decomposition needs at least 2 {names[0]}s, got {a.shape[0]}")
    bottom_up = list(reversed(a.shape))  # r_1 .. r_n
    level_names = list(reversed(names))
    s2: list[float] = []
    t2: list[float] = []
    means = a
    for i in range(a.ndim):  # level i+1 from the bottom: its unit means are `means`, units along the last axis
        s2.append(float(np.mean(means.var(axis=-1, ddof=1))))
        t2.append(s2[0] if i == 0 else s2[i] - s2[i - 1] / bottom_up[i - 1])
        means = means.mean(axis=-1)
    t2 = [max(t, 0.0) for t in t2]
    # the grand mean's variance: component i divided by r_n..r_i, i.e. by the units at and above it
    per_mean = [t2[i] / math.prod(bottom_up[i:]) for i in range(len(t2))]
    total, total_mean = sum(t2) or 1.0, sum(per_mean) or 1.0
    levels = tuple(
        Level(level_names[i], bottom_up[i], s2[i], t2[i], t2[i] / total, per_mean[i] / total_mean)
        for i in reversed(range(len(t2)))
    )
    optimal: dict[str, int | None] = {}
    if cost_list is not None and len(cost_list) == len(levels):
        c = list(reversed(cost_list))  # bottom first, like t2
        for i in range(len(levels) - 1):
            if t2[i] == 0:
                optimal[level_names[i]] = 1
            elif t2[i + 1] == 0:
                optimal[level_names[i]] = None
            else:
                optimal[level_names[i]] = max(1, math.ceil(math.sqrt(c[i + 1] * t2[i] / (c[i] * t2[i + 1]))))
    d = Decomposition(levels, float(a.mean()), optimal, "", note)
    return Decomposition(levels, d.grand_mean, optimal, advise(d), note)


def advise(d: Decomposition) -> str:
    """One line: which level to add units at, from the level holding most of the mean's variance."""
    top, dom, bottom = d.levels[0], d.dominant(), d.levels[-1]
    pct = f"the {dom.name} level holds {100 * dom.of_mean:.0f} % of the variance of the mean"
    if len(d.levels) == 1:
        return f"more {top.name}s: {pct}"
    if dom is bottom:
        text = f"longer {_runs_of(d)} (more {bottom.name}s each) would help: {pct}"
    else:
        text = f"more {dom.name}s, not longer {bottom.name}s: {pct}"
    if d.optimal:
        pairs = [(d.levels[i].name, lv) for i, lv in enumerate(d.levels[1:])]
        now = ", ".join(f"{_count(lv.count, lv.name)} per {parent}" for parent, lv in pairs)
        best = ", ".join(f"{_count(d.optimal[lv.name], lv.name)} per {parent}" for parent, lv in pairs)
        text += f"; for the same time, K&J's optimum is {best} (now {now})"
    return text


def _count(n: int | None, name: str) -> str:
    """3 -> "3 forks", 1 -> "1 fork", None -> "as many forks as the time allows"."""
    if n is None:
        return f"as many {name}s as the time allows"
    return f"{n} {name}{'' if n == 1 else 's'}"


def _runs_of(d: Decomposition) -> str:
    return f"{d.levels[-2].name}s" if len(d.levels) >= 2 else "runs"


# --- two-stage sample size (Stein)


@dataclass(frozen=True)
class Plan:
    """k: pilot repetitions; n: total repetitions that reach `precision` at `level`; extra = n - k;
    seconds: the extra repetitions' time (None without seconds per repetition); fits: whether the
    whole run (pilot included) stays within the budget (None without one); reachable: the relative
    half-width the budget reaches (n_budget repetitions, None without a budget)."""

    k: int
    sd: float
    precision: float
    level: float
    n: int
    extra: int
    seconds: float | None = None
    budget: float | None = None
    fits: bool | None = None
    n_budget: int | None = None
    reachable: float | None = None

    def text(self) -> str:
        lv = stats.level_text(self.level)
        out = f"{self.n} repetitions reach ±{100 * self.precision:.2g} % at {lv}"
        out += f" ({self.k} in the pilot, {self.extra} more"
        out += ")" if self.seconds is None else f", {self.seconds / 60:.1f} min)"
        if self.fits is False:
            out += (
                f"; the budget of {self.budget / 60:.1f} min allows {self.n_budget}, "
                f"reaching ±{100 * self.reachable:.2g} %"
            )
        return out


def stein_n(sd: float, k: int, precision: float, level: float = 0.95, df: int | None = None) -> int:
    """n = max(k, ceil((t(1-a/2, df) * sd / d)^2)), d = log(1 + precision): the repetitions whose
    interval on the log scale has half-width at most d (Stein 1945), sd from a pilot of k on df degrees of
    freedom (k - 1; a duet's model, k - 2)."""
    df = k - 1 if df is None else df
    if df < 1:
        raise ValueError(f"a pilot of {k} repetitions has no variance: run at least 2 (better {stats.MIN_RUNS})")
    if precision <= 0:
        raise ValueError(f"precision {precision}: expected a relative half-width > 0, e.g. 0.01 for 1 %")
    d = math.log1p(precision)
    return max(k, math.ceil((stats.t_quantile(level, df) * sd / d) ** 2))


def duet_sd(log_ratios: Sequence[float], halves: Sequence[int]) -> tuple[float, int]:
    """The residual sd of a duet pilot's log ratios once the CPU half is taken out (stats.duet_ratio's model
    d_j = mu + delta h_j + e_j), and its degrees of freedom, n - 2: what a duet's plan needs, since with the
    halves balanced se(mu) = s / sqrt(n). The plain sd would carry the half's effect (a 2 % half against 0.5 %
    noise: an sd of about 2.2 %, and a plan of some 150 repetitions where 12 reach +-0.5 %)."""
    d, h = np.asarray(log_ratios, dtype=float), np.asarray(halves, dtype=float)
    if d.size != h.size:
        raise ValueError(f"duet_sd: {d.size} log ratios, {h.size} halves")
    if not ((h == 1).any() and (h == -1).any()) or d.size < 3:
        return float(d.std(ddof=1)) if d.size > 1 else math.nan, d.size - 1
    mu, delta = stats.duet_fit(d, h)[0]
    df = d.size - 2
    return math.sqrt(float(np.sum((d - mu - delta * h) ** 2)) / df), df


def even(n: int) -> int:
    """n rounded up to an even count: a duet's plan runs as many repetitions on each half."""
    return n + n % 2


def plan(
    pilot_log_ratios: Sequence[float],
    precision: float,
    level: float = 0.95,
    seconds_per_repetition: float | None = None,
    budget: float | None = None,
    halves: Sequence[int] | None = None,
) -> Plan:
    """Stein's second stage from the pilot's log ratios (stats.log_ratios). `budget` (seconds)
    counts the whole run, pilot included: at most floor(budget / seconds_per_repetition)
    repetitions, whose half-width is expm1(t(1-a/2, k-1) s / sqrt(n_budget)).
    halves (a duet's pilot: the numerator's CPU half per log ratio, +1/-1): s is the model's residual sd on
    k - 2 degrees of freedom (duet_sd) and n is even, as many repetitions on each half over the whole plan (the
    second stage continues the pilot's alternation: pirex/runner/duet.py)."""
    d = np.asarray(pilot_log_ratios, dtype=float)
    k = int(d.size)
    sd, df = duet_sd(d, halves) if halves is not None else (float(d.std(ddof=1)) if k > 1 else math.nan, k - 1)
    n = stein_n(sd, k, precision, level, df)
    if halves is not None:
        n = even(n)
    seconds = None if seconds_per_repetition is None else (n - k) * seconds_per_repetition
    if budget is None or seconds_per_repetition is None:
        return Plan(k, sd, precision, level, n, n - k, seconds)
    n_budget = max(k, int(budget // seconds_per_repetition))
    if halves is not None and n_budget > k:
        n_budget -= n_budget % 2
    reachable = math.expm1(stats.t_quantile(level, df) * sd / math.sqrt(n_budget))
    return Plan(k, sd, precision, level, n, n - k, seconds, budget, n <= n_budget, n_budget, reachable)


# --- RunValue lists: grouping, pairs, A/A


def aa_name(variant: str) -> str:
    """The runner's name of a variant's second copy (the A/A control)."""
    return f"{variant}-aa"


def _key(v: RunValue) -> tuple:
    return (v.device, v.bundle, v.repetition)


def run_order(key: tuple) -> tuple:
    """A (device, bundle, repetition) key as the runs happened, for sorting: run ids sort by their start,
    repetitions by number (a key's repr would put repetition 10 before 2)."""
    device, bundle, repetition = key
    return (str(device), str(bundle), int(repetition))


def _select(values: Iterable[RunValue], metric: str, variant: str) -> list[RunValue]:
    return [v for v in values if v.metric == metric and v.variant == variant]


def run_means(values: Iterable[RunValue], metric: str, variant: str) -> dict[tuple, float]:
    """(device, bundle, repetition) -> the mean of that repetition's runs' values."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for v in _select(values, metric, variant):
        groups[_key(v)].append(v.value)
    return {k: sum(g) / len(g) for k, g in groups.items()}


def run_counts(values: Iterable[RunValue], metric: str, variant: str) -> dict[tuple, stats.Count]:
    """(device, bundle, repetition) -> the events its runs counted and the exposure they were counted over, summed
    (RunValue.count, .exposure): what stats.rate_ratio takes. {} when the values carry no counts; ValueError when
    only some of them do (a count metric's every run has one)."""
    chosen = _select(values, metric, variant)
    with_count = [v for v in chosen if v.count is not None]
    if not with_count:
        return {}
    if len(with_count) < len(chosen):
        raise ValueError(f"{metric!r} of {variant!r}: {len(chosen) - len(with_count)} run value(s) without a count")
    counts: dict[tuple, int] = defaultdict(int)
    exposures: dict[tuple, float] = defaultdict(float)
    for v in with_count:
        counts[_key(v)] += v.count
        exposures[_key(v)] += v.exposure
    return {k: stats.Count(counts[k], exposures[k]) for k in counts}


def run_halves(values: Iterable[RunValue], metric: str, variant: str) -> dict[tuple, int]:
    """(device, bundle, repetition) -> the CPU half the variant ran on in that repetition of a duet (+1 the first,
    -1 the second: RunValue.half), only where it ran on one; {} for runs of one step at a time."""
    return {_key(v): v.half for v in _select(values, metric, variant) if v.half}


def nested(values: Iterable[RunValue], metric: str, variant: str) -> list:
    """data[repetition][run][inner] for decompose() (repetitions and runs in order); without
    inner samples data[repetition][run] = the run's value, two levels."""
    groups: dict[tuple, dict[int, RunValue]] = defaultdict(dict)
    for v in _select(values, metric, variant):
        groups[_key(v)][v.run] = v
    reps = [groups[k] for k in sorted(groups, key=repr)]
    if all(r.inner for g in reps for r in g.values()):
        return [[list(g[run].inner) for run in sorted(g)] for g in reps]
    return [[g[run].value for run in sorted(g)] for g in reps]


def decompose_runs(
    values: Iterable[RunValue],
    metric: str,
    variant: str,
    names: Sequence[str] = LEVEL_NAMES,
    costs: Sequence[float] | None = None,
) -> Decomposition:
    """decompose() of one variant's metric; the iteration level only where every run has inner samples."""
    data = nested(values, metric, variant)
    depth = 3 if data and isinstance(data[0][0], list) else 2
    names = list(names)[:depth]
    return decompose(data, names, None if costs is None else list(costs)[:depth])


def in_bundles_of(side: dict[tuple, float], other: dict[tuple, float]) -> dict[tuple, float]:
    """run_means of one side, only in the bundles (device, bundle) where the other side ran: a duet's pairs are
    bundles of their own (the ratio's, the A/A's), and a pair is of the two variants that ran at once, never of
    another pair's bundle."""
    ran = {k[:2] for k in other}
    return {k: v for k, v in side.items() if k[:2] in ran}


def paired_interval(
    values: Iterable[RunValue],
    metric: str,
    numerator: str,
    denominator: str,
    level: float = 0.95,
) -> stats.Interval:
    """stats.paired_ratio of numerator/denominator for one metric, paired by (device, bundle, repetition).
    For a higher-is-better metric (throughput) the ratio is still numerator/denominator: read it so.
    A duet's repetitions (values that say their CPU half) take stats.duet_ratio: the half a factor of the model."""
    values = list(values)
    num = run_means(values, metric, numerator)
    if halves := run_halves(values, metric, numerator):
        den = in_bundles_of(run_means(values, metric, denominator), num)
        return stats.design_ratio(num, den, halves, level, names=(numerator, denominator))
    return stats.paired_ratio(
        num, in_bundles_of(run_means(values, metric, denominator), num), level, names=(numerator, denominator)
    )


def aa_interval(values: Iterable[RunValue], metric: str, variant: str, level: float = 0.95) -> stats.Interval | None:
    """`<variant>-aa` / `<variant>` paired: the noise floor beside every ratio; None when the
    bundles hold no A/A copy of the variant."""
    values = list(values)
    if not any(v.variant == aa_name(variant) and v.metric == metric for v in values):
        return None
    return paired_interval(values, metric, aa_name(variant), variant, level)


def aa_check(interval: stats.Interval | None, tolerance: float = AA_TOLERANCE) -> str | None:
    """An A/A run is a check, not a decoration: the same variant against itself. None when its interval reaches
    into the band 1 +/- `tolerance` (symmetric on logs, as a claim's margin; or there is no A/A interval to
    check); else the reason every verdict of that bundle is inconclusive: the two copies are shown to differ by
    more than the tolerance. Not "excludes 1", a point test: with copies 0.3 % apart and a 1 % spread that blocked
    8 / 14 / 25 / 45 / 75 % of verdicts at n = 5 / 10 / 20 / 40 / 80, more repetitions making a block more likely;
    this one-sided test against the band blocks at most alpha/2 a side whenever the copies are within the
    tolerance, less as n grows (test_duet_model.py prints the rates; issue 50). A duet's A/A (the same variant on
    both halves) also says the half's effect, which its model took out (docs/design.md, "Judging a claim"; Bulej
    et al. 2020, ICPE)."""
    if interval is None or not interval.has_interval:
        return None
    if 1 / (1 + tolerance) <= interval.high and interval.low <= 1 + tolerance:
        return None
    text = (
        f"the machine was not steady: the A/A ratio {interval.text(4)} lies beyond the {100 * tolerance:g} % "
        "the same variant may differ by"
    )
    half = getattr(interval, "half", None)
    if half is not None:
        text += f" (the CPU half's own effect {half.text(4)}, taken out)"
    return text
