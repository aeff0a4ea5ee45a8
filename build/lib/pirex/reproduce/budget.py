"""Deciding within a budget (issue 37): a pilot, then rounds that spend the budget on the runs that decide the most
claims per second, with verdicts that keep their error rates although the number of repetitions depends on the data.

Why a design at all. An interval computed as if n had been fixed, read again after every round and stopped when it
looks decided, is wrong more often than its level says (optional stopping; ../shared/STATISTICS.md, "Stopping when
decided"): re-reading the 90 % interval at each of six looks gives a wrong "holds" at the edge of a band about three
times as often as the 5 % it promises (test_budget.py measures it).

The design: a group-sequential test per claim (Jennison & Turnbull 2000, "Group Sequential Methods with
Applications to Clinical Trials", ch. 7 and 19), one for each one-sided conclusion ("holds", "differs"), each at
alpha, read off one interval as verdict.regions() does:

- Looks at a fixed grid of repetition counts (grid(): the pilot, then about x1.5 each step, up to n_max). The
  information fraction of a look at n is t = n / n_max (capped at 1). n_max is fixed before any data: the
  repetitions the whole budget could buy of the claim's run.
- Alpha is spent by a Lan-DeMets function of O'Brien-Fleming shape (Lan & DeMets 1983, Biometrika 70(3)):
  alpha*(t) = 2 (1 - Phi(z_{1-alpha/2} / sqrt t)), which spends alpha*(1) = alpha in all and very little early
  (spent()); or of Pocock shape, alpha ln(1 + (e - 1) t), which spends more early.
- Each look k reads the t interval on logs, with that look's degrees of freedom, at level 1 - 2 p_k, p_k the
  look's one-sided nominal level (nominal()). Two ways to set p_k:
  * "bonferroni" (the default): p_k = alpha*(t_k) - alpha*(t_{k-1}), the increment. Valid by the union bound,
    whatever the correlation between looks and at every n: each look's t test is exact for normal log ratios, so
    P(a wrong conclusion at any look) <= sum of the increments = alpha. Conservative: 3.5-4 % for 5 %.
  * "exact": p_k = 1 - Phi(c_k), c_k the exact group-sequential boundary for the z statistics (boundaries():
    recursive numerical integration, Armitage, McPherson & Rowe 1969, J. R. Statist. Soc. A 132(2); checked
    against gsDesign's published values and scipy's multivariate normal CDF with corr sqrt(t_j / t_k)), and the t
    quantile at that nominal level (the usual practice, Jennison & Turnbull, sect. 3.8). It uses the correlation
    between looks and so spends the whole alpha, but with t statistics at these n it is not exact: measured
    5.2 % at n_max 20 and 5.3 % at n_max 10 for a nominal 5 % (100,000 draws). It decides about 3 % more claims
    on make run's mix (20.6 against 20.0 of 34 in 15 min): not worth an error rate above the one stated.

Why a fixed grid, when Lan-DeMets allows looks at any n: the validity of alpha spending needs look times that do not
depend on the estimates (Proschan, Follmann & Waclawiw 1992, Biometrics 48(4)), and the allocation below chooses how
far to extend a run from how close its claims are to a verdict. So the allocation may only choose how far along the
grid a run goes; when it jumps several grid points at once, the verdict is read at every grid point passed, in order,
on the first n repetitions (Design.looks_between()), and the first look that decides is the verdict. Each claim is
then exactly a group-sequential test at fixed looks whose data-dependent part is only when it stops, and stopping
early without a conclusion can only lower the chance of a wrong one (a non-binding futility rule): valid whatever
the allocation, shared runs included.

Allocation (allocate()): for every undecided claim, the grid point at which the interval's half-width at that look's
level, at the claim's current spread, falls below the estimate's log distance to the nearest edge (need(): Stein's
estimate, per look); then a greedy knapsack over runs: repeatedly extend the run (to one of its grid points) that
decides the most claims per second of the budget left (a run's claims all count), until the budget or the
decidable claims run out (greedy()). Claims whose estimate sits on an edge, or that need more than n_max or the
budget left, are "not decidable within the budget", with the repetitions and minutes that would decide them.

State for --resume (Design.to_json / from_json): the design's alpha, shape, boundary method, pilot and n_max per
claim, the looks taken per claim (n at each) and the alpha each has spent."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy import stats as sps

from pirex.core.errors import PirexError

OBRIEN_FLEMING, POCOCK = "obrien-fleming", "pocock"
SHAPES = (OBRIEN_FLEMING, POCOCK)
BONFERRONI, EXACT = "bonferroni", "exact"
METHODS = (BONFERRONI, EXACT)
PILOT = 5  # kick-the-tires' five repetitions
GROWTH = 1.5  # the grid's step: each look about 1.5 times the repetitions of the one before
ON_EDGE = 1e-9  # a log distance to the nearest edge below this is "on the edge": no n decides it
_POINTS = 401  # the integration grid per look (the boundaries agree with scipy's mvn CDF to ~1e-6)


# --- spending and boundaries


def spent(t, alpha: float, shape: str = OBRIEN_FLEMING):
    """alpha*(t): the alpha a one-sided conclusion has spent by information fraction t (capped to [0, 1]).

    O'Brien-Fleming shape (Lan & DeMets 1983): alpha*(t) = 2 (1 - Phi(z_{1-alpha/2} / sqrt t)). At t = 1 this is
    2 (1 - Phi(z_{1-alpha/2})) = alpha: the whole one-sided alpha (not 2 alpha: the z inside is at alpha/2 whatever
    the sidedness of alpha). Pocock shape: alpha ln(1 + (e - 1) t). Both are 0 at t = 0 and increasing."""
    _check_alpha(alpha)
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if shape == OBRIEN_FLEMING:
        with np.errstate(divide="ignore"):
            out = 2 * sps.norm.sf(sps.norm.isf(alpha / 2) / np.sqrt(t))
    elif shape == POCOCK:
        out = alpha * np.log1p((math.e - 1) * t)
    else:
        raise PirexError(f"spending shape {shape!r}: expected one of {', '.join(SHAPES)}")
    return out if out.ndim else float(out)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise PirexError(f"alpha {alpha}: expected an error rate between 0 and 0.5, e.g. 0.05")


def boundaries(t: Sequence[float], increments: Sequence[float]) -> np.ndarray:
    """The z boundaries c_1..c_K of a one-sided group-sequential test at information fractions t (increasing, in
    (0, 1]) such that P0(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = increments[k] (inf where nothing is spent).

    Recursive numerical integration on the score scale S_k = Z_k sqrt(t_k), whose increments are independent
    N(0, t_k - t_{k-1}) (Jennison & Turnbull 2000, ch. 19): the sub-density of S over the continuation region is
    carried from look to look on a grid of _POINTS points (trapezoid rule), and c_k solves the crossing
    probability by Brent's method on its logarithm (the early increments are 1e-8 and less)."""
    t = np.asarray(t, dtype=float)
    inc = np.asarray(increments, dtype=float)
    if t.size == 0 or (np.diff(t) <= 0).any() or t[0] <= 0 or t[-1] > 1 + 1e-12:
        raise PirexError(f"information fractions {t.tolist()}: expected increasing values in (0, 1]")
    out = np.full(t.size, np.inf)
    x = np.array([0.0])  # the score's grid, and its sub-density times the trapezoid weights
    mass = np.array([1.0])
    previous = 0.0
    for k, (tk, ik) in enumerate(zip(t, inc, strict=True)):
        sd = math.sqrt(tk - previous)

        def cross(b: float, x=x, mass=mass, sd=sd) -> float:
            return float(mass @ sps.norm.sf((b - x) / sd))

        if ik > 0:
            gap = lambda b, ik=ik: math.log(max(cross(b), 1e-300)) - math.log(ik)  # noqa: E731
            b = optimize.brentq(gap, -12.0, 12.0, xtol=1e-12)
            out[k] = b / math.sqrt(tk)
        top = min(out[k] * math.sqrt(tk), 9 * math.sqrt(tk))
        y = np.linspace(-9 * math.sqrt(tk), top, _POINTS)
        w = np.full(y.size, y[1] - y[0])
        w[[0, -1]] /= 2
        density = (sps.norm.pdf((y[:, None] - x[None, :]) / sd) / sd) @ mass
        x, mass, previous = y, density * w, tk
    return out


def nominal(t: Sequence[float], alpha: float, shape: str = OBRIEN_FLEMING, method: str = BONFERRONI) -> np.ndarray:
    """The one-sided nominal level p_k of each look at information fractions t (0 where the look spends nothing):
    "bonferroni", the increment of alpha*(t) spent at the look; "exact", 1 - Phi(c_k) of the exact z boundary."""
    t = np.minimum(np.asarray(t, dtype=float), 1.0)
    cumulative = spent(t, alpha, shape)
    increments = np.diff(np.concatenate([[0.0], np.atleast_1d(cumulative)]))
    if method == BONFERRONI:
        return np.maximum(increments, 0.0)
    if method == EXACT:
        return sps.norm.sf(boundaries(t, increments))
    raise PirexError(f"boundary method {method!r}: expected one of {', '.join(METHODS)}")


def grid(n_max: int, pilot: int = PILOT) -> tuple[int, ...]:
    """The repetition counts where a claim's run may be looked at: the pilot, then about GROWTH times the last
    (at least 2 more each), and n_max last. Fixed before any data, so that the looks do not depend on the estimates."""
    if pilot < 2:
        raise PirexError(f"a pilot of {pilot} repetitions has no spread: run at least 2 (better {PILOT})")
    if n_max < pilot:
        raise PirexError(f"n_max {n_max} is below the pilot's {pilot} repetitions: the budget cannot buy the pilot")
    out = [pilot]
    while out[-1] < n_max:
        out.append(min(n_max, max(out[-1] + 2, round(out[-1] * GROWTH))))
    if len(out) > 1 and out[-1] - out[-2] < 2 and len(out) > 2:
        out.pop(-2)  # no look one repetition before the last
    return tuple(out)


def n_max_for(budget_seconds: float, seconds: Mapping[str, float], pilot: int = PILOT) -> dict[str, int]:
    """Each run's n_max, fixed before any data from the budget and the plan's seconds per repetition alone: the
    repetitions the budget buys when spread evenly over the runs, ceil(budget / sum of seconds), and no more than it
    buys of that run after everyone's pilot. Why not what the whole budget could buy of the run: the O'Brien-Fleming
    shape spends alpha*(n / n_max), so a large n_max leaves the pilot and the early looks nearly nothing to spend and
    the budget runs out long before n_max (on make run's mix, 15 min: 9.5 claims decided with n_max up to 60, 20.0
    with the even share; test_budget.py, docs/statistics.md)."""
    if not seconds:
        raise PirexError("no runs to plan: nothing to spend the budget on")
    if bad := sorted(r for r, s in seconds.items() if not s > 0):
        raise PirexError(f"run {bad[0]}: expected its seconds per repetition > 0")
    total = sum(seconds.values())
    left = budget_seconds - pilot * total
    if left < 0:
        raise PirexError(
            f"a budget of {_minutes(budget_seconds)} does not buy the pilot ({pilot} repetitions of every run: "
            f"{_minutes(pilot * total)}): give at least that"
        )
    even = max(pilot, math.ceil(budget_seconds / total))
    return {r: min(even, pilot + int(left // s)) for r, s in seconds.items()}


def confidence(p: float) -> float | None:
    """The confidence to hand verdict.ours() so that its verdict_level() (1 - 2 alpha) is this look's interval
    level 1 - 2 p: 1 - p; None where the look spends nothing (no interval can decide there)."""
    return None if p <= 0 else 1 - p


# --- the design's state, carried over by --resume


@dataclass
class Design:
    """A budgeted reproduction's group-sequential design: alpha per one-sided conclusion, the spending shape, the
    pilot, and per claim (keyed by claim id, plus the device where one claim is judged on several): its n_max and
    the looks taken (n at each)."""

    alpha: float = 0.05
    n_max: int = 40  # the default for a claim first seen without its own
    shape: str = OBRIEN_FLEMING
    pilot: int = PILOT
    claims: dict[str, dict] = field(default_factory=dict)  # key -> {"n_max": int, "looks": [n, ...]}
    method: str = BONFERRONI

    def __post_init__(self) -> None:
        _check_alpha(self.alpha)
        if self.shape not in SHAPES:
            raise PirexError(f"spending shape {self.shape!r}: expected one of {', '.join(SHAPES)}")
        if self.method not in METHODS:
            raise PirexError(f"boundary method {self.method!r}: expected one of {', '.join(METHODS)}")
        grid(self.n_max, self.pilot)

    def register(self, key: str, n_max: int | None = None) -> None:
        """Fix a claim's n_max before its first look (the repetitions the budget could buy of its run)."""
        n = self.n_max if n_max is None else int(n_max)
        grid(n, self.pilot)
        entry = self.claims.setdefault(key, {"n_max": n, "looks": []})
        if entry["n_max"] != n and entry["looks"]:
            raise PirexError(
                f"claim {key}: its n_max is {entry['n_max']} since its first look; changing it after looking would "
                "make the looks depend on the data"
            )
        entry["n_max"] = n

    def n_max_of(self, key: str) -> int:
        """The claim's n_max: its own once registered, else the design's default."""
        return self.claims[key]["n_max"] if key in self.claims else self.n_max

    def grid_of(self, key: str) -> tuple[int, ...]:
        return grid(self.n_max_of(key), self.pilot)

    def _entry(self, key: str) -> dict:
        if key not in self.claims:
            self.register(key)
        return self.claims[key]

    def levels(self, key: str) -> dict[int, float]:
        """Per grid point n of the claim: the one-sided nominal level p of a look there (looks at every grid point:
        the design's). Deterministic, so a resumed reproduction reads the same levels."""
        g = self.grid_of(key)
        p = nominal(np.array(g) / self.n_max_of(key), self.alpha, self.shape, self.method)
        return dict(zip(g, (float(x) for x in p), strict=True))

    def level_at(self, key: str, n: int) -> float:
        """The interval level 1 - 2 p to read the claim's regions off at a look at n repetitions (a grid point)."""
        levels = self.levels(key)
        if n not in levels:
            raise PirexError(
                f"claim {key}: a look at {n} repetitions is not on its grid {list(levels)}: the looks are fixed "
                "before the data, read the verdict at each grid point passed (looks_between)"
            )
        return 1 - 2 * levels[n]

    def looks_between(self, key: str, done: int, now: int) -> tuple[int, ...]:
        """The grid points a run extended from `done` to `now` repetitions passed: the looks to read, in order, on the
        first n repetitions each, until one decides. A count between grid points is read at the last one below it."""
        return tuple(n for n in self.grid_of(key) if done < n <= now)

    def look(self, key: str, n: int) -> float:
        """Record a look at n (a grid point after the last look) and return its interval level."""
        entry = self._entry(key)
        if entry["looks"] and n <= entry["looks"][-1]:
            raise PirexError(f"claim {key}: a look at {n} repetitions after one at {entry['looks'][-1]}")
        level = self.level_at(key, n)
        entry["looks"].append(int(n))
        return level

    def spent_alpha(self, key: str) -> float:
        """The alpha the claim's looks have spent (per conclusion): alpha*(t) at its last look, 0 before any."""
        entry = self.claims.get(key)
        if not entry or not entry["looks"]:
            return 0.0
        return float(spent(entry["looks"][-1] / entry["n_max"], self.alpha, self.shape))

    def exhausted(self, key: str, n: int) -> bool:
        """Whether the claim's run has reached its n_max: its alpha is spent, no later look can decide."""
        return n >= self.n_max_of(key)

    def to_json(self) -> str:
        claims = {
            k: {"n_max": v["n_max"], "looks": list(v["looks"]), "alpha_spent": self.spent_alpha(k)}
            for k, v in sorted(self.claims.items())
        }
        body = {"method": "group-sequential", "boundaries": self.method, "alpha": self.alpha, "shape": self.shape}
        body["pilot"] = self.pilot
        return json.dumps({**body, "n_max": self.n_max, "claims": claims}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Design:
        try:
            data = json.loads(text)
            if data.get("method") != "group-sequential":
                raise KeyError("method")
            claims = {
                str(k): {"n_max": int(v["n_max"]), "looks": [int(n) for n in v["looks"]]}
                for k, v in data["claims"].items()
            }
            design = cls(
                float(data["alpha"]),
                int(data["n_max"]),
                str(data["shape"]),
                int(data["pilot"]),
                claims,
                str(data["boundaries"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise PirexError(f"the budget's saved design cannot be read ({e}): start again without --resume") from e
        for k, v in claims.items():
            off = [n for n in v["looks"] if n not in design.grid_of(k)]
            if off or v["looks"] != sorted(set(v["looks"])):
                raise PirexError(f"the saved design's looks of {k} ({v['looks']}) are not on its grid: start again")
        return design


# --- what would decide a claim, and where to spend the budget


@dataclass(frozen=True)
class Pending:
    """An undecided claim: its estimate (a ratio), the sd of its log ratios per repetition, the repetitions so far,
    the run it depends on (a need key) and its rule's edges (verdict.edges)."""

    key: str
    run: str
    estimate: float
    sd: float
    n: int
    edges: tuple[float, ...]


@dataclass(frozen=True)
class Need:
    """What would decide a claim at its current estimate and spread: n repetitions in all (None: none does), their
    seconds beyond what ran, and whether that fits the design (n_max) and the budget left; `reason` says it."""

    key: str
    run: str
    n: int | None
    seconds: float | None
    decidable: bool
    reason: str


def distance(estimate, edges: Sequence[float]):
    """The log distance from the estimate (a ratio, or an array of them) to the nearest edge between regions: what
    the half-width of the interval must get below for the interval to lie in one region."""
    e = np.log(np.asarray(edges, dtype=float))
    m = np.log(np.asarray(estimate, dtype=float))[..., None]
    out = np.min(np.abs(m - e), axis=-1)
    return out if out.ndim else float(out)


def half_width_factors(ns: Sequence[int], ps: Sequence[float]) -> np.ndarray:
    """t_{n-1}(1 - p) / sqrt(n) per look: times the sd of the log ratios, the half-width of the look's interval."""
    ns, ps = np.asarray(ns, dtype=float), np.asarray(ps, dtype=float)
    with np.errstate(divide="ignore"):
        q = np.where(ps > 0, sps.t.isf(np.maximum(ps, 1e-300), ns - 1), np.inf)
    return q / np.sqrt(ns)


def needed_index(dist, sd, n, ns: Sequence[int], factors: Sequence[float]):
    """The index of the first grid point after n whose half-width (factors * sd) is below the distance; len(ns)
    where none is (arrays broadcast: one claim, or many simulated ones)."""
    ns, factors = np.asarray(ns), np.asarray(factors)
    dist, sd, n = (np.asarray(a, dtype=float)[..., None] for a in (dist, sd, n))
    ok = (ns > n) & (factors * sd < dist) & (dist > ON_EDGE)
    first = np.argmax(ok, axis=-1)
    out = np.where(ok.any(axis=-1), first, len(ns))
    return out if out.ndim else int(out)


def fixed_n(dist: float, sd: float, p: float) -> int:
    """Stein's count at a fixed level: the n whose t interval at one-sided level p has half-width below dist."""
    n = 2
    while n < 1_000_000 and sps.t.isf(p, n - 1) * sd / math.sqrt(n) >= dist:
        n = max(n + 1, int(n * 1.1))
    return n


def need(claim: Pending, design: Design, seconds_per_repetition: float, remaining: float) -> Need:
    """The repetitions that would decide the claim at its estimate and spread: the first look of its grid whose
    half-width at that look's level falls below the estimate's distance to the nearest edge; or why none does
    within the budget, with the repetitions and minutes that would."""
    d = distance(claim.estimate, claim.edges)
    levels = design.levels(claim.key)
    ns, ps = list(levels), list(levels.values())
    if d <= ON_EDGE:
        return Need(
            claim.key,
            claim.run,
            None,
            None,
            False,
            "the estimate sits on an edge of the rule: no number of repetitions decides it at this estimate",
        )
    if not (claim.sd > 0 and math.isfinite(claim.sd)):
        return Need(claim.key, claim.run, None, None, False, "the repetitions have no spread to plan from")
    i = needed_index(d, claim.sd, claim.n, ns, half_width_factors(ns, ps))
    if i < len(ns):
        n = ns[i]
        seconds = (n - claim.n) * seconds_per_repetition
        if seconds <= remaining:
            reason = f"about {n} repetitions ({_minutes(seconds)}) would decide it"
            return Need(claim.key, claim.run, n, seconds, True, reason)
    else:  # beyond the design: at the final look's level, as a fixed-n reproduction would need
        n = fixed_n(d, claim.sd, ps[-1] or design.alpha)
        seconds = max(n - claim.n, 0) * seconds_per_repetition
    return Need(
        claim.key,
        claim.run,
        n,
        seconds,
        False,
        f"not decidable within the budget: the estimate is {100 * math.expm1(d):.1f} % from the nearest edge, "
        f"about {n} repetitions ({max(n - claim.n, 0)} more, {_minutes(seconds)}) would decide it "
        "(--resume with a larger --budget)",
    )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def greedy(benefit, cost, budget) -> np.ndarray:
    """A greedy knapsack over runs: benefit[..., R, G] claims decided when run r is extended to its grid option g
    (non-decreasing in g), cost[..., R, G] its seconds (inf where not an option), budget[...] seconds. Repeatedly
    takes the extension (a run to a further option) with the most claims decided per extra second that fits what
    is left, until none adds a claim. Returns the chosen option per run, -1 for a run not extended. Vectorised over
    the leading axes (the simulation runs thousands of reproductions at once). Greedy by ratio is within one item
    of the optimum for such small knapsacks, and each round re-plans from the new estimates anyway."""
    benefit, cost = np.asarray(benefit, dtype=float), np.asarray(cost, dtype=float)
    *lead, runs, options = benefit.shape
    budget = np.broadcast_to(np.asarray(budget, dtype=float), lead).reshape(-1)
    benefit, cost = benefit.reshape(-1, runs, options), cost.reshape(-1, runs, options)
    draws = np.arange(benefit.shape[0])
    chosen = np.full((draws.size, runs), -1)
    got_b, got_c = np.zeros((draws.size, runs)), np.zeros((draws.size, runs))
    left = budget.copy()
    option = np.arange(options)
    with np.errstate(invalid="ignore"):
        for _ in range(runs * options):
            db, dc = benefit - got_b[..., None], cost - got_c[..., None]
            ok = (option > chosen[..., None]) & (db > 0) & (dc > 0) & (dc <= left[:, None, None])
            ratio = np.where(ok, db / np.where(ok, dc, 1.0), -1.0).reshape(draws.size, runs * options)
            best = np.argmax(ratio, axis=-1)
            take = ratio[draws, best] > 0
            if not take.any():
                break
            i = draws[take]
            r, g = np.divmod(best[take], options)
            left[i] -= cost[i, r, g] - got_c[i, r]
            chosen[i, r], got_b[i, r], got_c[i, r] = g, benefit[i, r, g], cost[i, r, g]
    return chosen.reshape(*lead, runs)


@dataclass(frozen=True)
class Allocation:
    """The next slice of the budget: per run the repetitions to extend it to; the claims that would decide (at
    their estimates), the seconds it costs, and every pending claim's need."""

    targets: dict[str, int]
    decides: tuple[str, ...]
    seconds: float
    needs: tuple[Need, ...]

    @property
    def undecidable(self) -> tuple[Need, ...]:
        return tuple(n for n in self.needs if not n.decidable)


def allocate(
    pending: Sequence[Pending],
    seconds: Mapping[str, float],
    remaining: float,
    design: Design,
) -> Allocation:
    """Where to spend the budget left (seconds) next: each pending claim's need, then greedy() over its run's grid
    points (a run's claims all count; a run is extended to the grid point its chosen claims need)."""
    if remaining < 0:
        raise PirexError(f"a budget of {remaining:g} s left: expected seconds >= 0")
    missing = sorted({p.run for p in pending} - set(seconds))
    if missing:
        raise PirexError(f"no seconds per repetition for run {', '.join(missing)}: the plan estimates them")
    needs = tuple(need(p, design, seconds[p.run], remaining) for p in pending)
    runs = sorted({p.run for p in pending})
    ns = {r: {p.n for p in pending if p.run == r} for r in runs}
    if bad := [r for r in runs if len(ns[r]) > 1]:
        raise PirexError(f"the claims of run {bad[0]} report different repetition counts {sorted(ns[bad[0]])}")
    options = sorted({x.n for x in needs if x.decidable})
    if not options:
        return Allocation({}, (), 0.0, needs)
    benefit = np.zeros((len(runs), len(options)))
    cost = np.full((len(runs), len(options)), np.inf)
    for i, r in enumerate(runs):
        n_now = next(iter(ns[r]))
        for j, n in enumerate(options):
            if n > n_now:
                benefit[i, j] = sum(1 for x in needs if x.run == r and x.decidable and x.n <= n)
                cost[i, j] = (n - n_now) * seconds[r]
    chosen = greedy(benefit, cost, remaining)
    targets = {r: options[g] for r, g in zip(runs, chosen.tolist(), strict=True) if g >= 0}
    decides = tuple(x.key for x in needs if x.decidable and x.run in targets and x.n <= targets[x.run])
    total = sum((n - next(iter(ns[r]))) * seconds[r] for r, n in targets.items())
    return Allocation(targets, decides, float(total), needs)
