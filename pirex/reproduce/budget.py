"""Deciding within a budget (issues 37, 52): a pilot, then rounds that extend every run still worth extending by the
same number of repetitions, read as a group-sequential test per claim whose boundaries are exact for t statistics;
and the yardsticks a budget is measured against (the even split, the oracle).

Why a design at all. An interval computed as if n had been fixed, read again after every round and stopped when it
looks decided, is wrong more often than its level says (optional stopping; ../shared/STATISTICS.md, "Stopping when
decided"): re-reading the 90 % interval at each of six looks gives a wrong "holds" at the edge of a band about three
times as often as the 5 % it promises (test_budget.py measures it).

The design. Each claim's conclusions ("holds", "differs") are one-sided tests at alpha each, read off one interval as
verdict.regions() does. A claim is looked at whenever its run has more repetitions than at its last look: after the
pilot, after each round. Look k spends a fixed part of alpha, set before any data (spend_of): the pilot's look
PILOT_SHARE, the first round's MAIN_SHARE, and every later look (a --resume with more --budget, a round the time
estimates left room for) half of the reserve not yet spent. Its boundary c_k on the t statistic at an edge is exact:
P0(T_1 < c_1, ..., T_{k-1} < c_{k-1}, T_k >= c_k) = spend_k, found by Monte Carlo over normal log ratios (boundary()),
whose joint law at given look counts is free of the mean and the spread (Jennison & Turnbull 2000, ch. 11); the look
reads the t interval at the one-sided nominal level p_k = P(T_{n_k - 1} >= c_k) (nominal()). The first look has no
earlier one: its boundary is the t quantile itself. A look's count is saved with its level, so a resumed or reread
reproduction reads exactly the same test, and a new reproduction that reuses the pilot reads the pilot's look at the
same level (the same shares): the alpha spent on those repetitions is never spent again.

Why this is valid although the rounds choose from the data. The count at a look must not depend on the claim's own
data, except through "not decided yet" (Proschan, Follmann & Waclawiw 1992, Biometrics 48(4)). A round (plan_round)
first drops the runs none of whose claims has a FUTILE chance of deciding at the even extension over all undecided
runs (a run's own data decide only whether the run goes on: a non-binding futility stop, which can only lower the
chance of a wrong verdict); then every kept run gets the same number of repetitions, the budget left over the kept
runs' seconds. Given that a run goes on, how far it goes depends only on the other runs' data (independent
repetitions), so each look is at a count fixed as far as the claim is concerned, and its boundary holds exactly.
What the dropping buys is the budget of claims that cannot decide; what the even extension keeps is the even split's
efficiency (the review of issue 52: the even split with one look beat every allocation by estimates, whose fixed
grid and n_max wasted both alpha and budget).

The yardsticks (even_split(), oracle(), forecast()): at given estimates and spreads taken as the truth, the expected
number of claims decided (each claim's chance, p_decide()) by the budget spread evenly over the runs with one look at
alpha, and by an oracle: the best fixed number of repetitions per run within the same seconds (a knapsack over runs,
solved exactly by dynamic programming on GRAIN steps of the budget), one look at alpha each. The report states both
beside this design's own forecast at the same estimates (the pilot's)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special
from scipy import stats as sps

from pirex.core.errors import PirexError
from pirex.reproduce.claims import Claim
from pirex.reproduce.verdict import edges as rule_edges
from pirex.reproduce.verdict import regions

PILOT = 5  # kick-the-tires' five repetitions: the fewest a run's first look reads
# of alpha: the pilot's look, the first round's; the rest (3 %) is the reserve for later looks. A small pilot share
# costs little (the far claims decide at the pilot anyway) and leaves the round's look near alpha: on make run's mix
# 0.1 / 0.8 decided 0.5 claims fewer in 15 min than 0.03 / 0.94 (make bench-budget)
PILOT_SHARE, MAIN_SHARE = 0.03, 0.94
FUTILE = 0.1  # a run none of whose claims decides with at least this chance at twice the even extension: dropped
DRAWS = 1_000_000  # Monte Carlo paths per boundary: a 5 % spend within 0.02 % (one standard error), about 1 s
MC_FLOOR = 100  # fewer crossing paths than this: the marginal t quantile (conservative: it ignores the earlier looks)
GRAIN = 4000  # the oracle's knapsack grid: the budget in this many steps (a repetition's cost rounded up to one)
_SEED = 52  # fixed: the boundaries are the same on every machine, every time


# --- spending and boundaries


def spend_of(index: int, alpha: float) -> float:
    """The alpha look `index` (0 the pilot's) spends: PILOT_SHARE, MAIN_SHARE, then half of the reserve left each."""
    _check_alpha(alpha)
    if index < 0:
        raise PirexError(f"look {index}: expected an index from 0")
    if index == 0:
        return PILOT_SHARE * alpha
    if index == 1:
        return MAIN_SHARE * alpha
    return (1 - PILOT_SHARE - MAIN_SHARE) * alpha / 2 ** (index - 1)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise PirexError(f"alpha {alpha}: expected an error rate between 0 and 0.5, e.g. 0.05")


@functools.lru_cache(maxsize=512)
def boundary(ns: tuple[int, ...], cs: tuple[float, ...], spend: float) -> float:
    """The t boundary of a look at ns[-1] repetitions after looks at ns[:-1] with boundaries cs, spending `spend`:
    P0(T_j < c_j for every earlier look, T_k >= c) = spend, T_j the one-sample t statistic of the first ns[j]
    normal values. Monte Carlo over DRAWS seeded paths (deterministic); the exact t quantile where there is no earlier
    look, and where too few paths would cross to place it (then conservative)."""
    if len(ns) != len(cs) + 1 or any(n < 2 for n in ns) or list(ns) != sorted(set(ns)):
        raise PirexError(f"looks at {list(ns)} with {len(cs)} earlier boundaries: expected increasing counts from 2")
    if not 0 < spend < 0.5:
        raise PirexError(f"a look spending {spend}: expected between 0 and 0.5")
    marginal = float(sps.t.isf(spend, ns[-1] - 1))
    if not cs or spend * DRAWS < MC_FLOOR:
        return marginal
    rng = np.random.default_rng(_SEED)
    at = np.array(ns) - 1
    alive_last: list[np.ndarray] = []
    chunk = max(1, 4_000_000 // ns[-1])
    for start in range(0, DRAWS, chunk):
        z = rng.standard_normal((min(chunk, DRAWS - start), ns[-1]))
        s1, s2 = np.cumsum(z, axis=1)[:, at], np.cumsum(z * z, axis=1)[:, at]
        n = np.asarray(ns, dtype=float)
        mean = s1 / n
        sd = np.sqrt(np.maximum(s2 - n * mean**2, 1e-300) / (n - 1))
        t = mean / (sd / np.sqrt(n))
        alive = (t[:, :-1] < np.asarray(cs)).all(axis=1)
        alive_last.append(t[alive, -1])
    last = np.sort(np.concatenate(alive_last))[::-1]
    m = int(round(spend * DRAWS))
    if m >= last.size:
        return -math.inf  # every path still going crosses: the look rejects whatever it reads (never at these spends)
    return float(last[m - 1])


def _t_isf(p, df):
    """t_df(1 - p): scipy.special's quantile, without scipy.stats' argument checks (the rounds call it often)."""
    return -special.stdtrit(df, p)


def nominal(c: float, n: int) -> float:
    """The one-sided nominal level of a boundary c on the t statistic of n repetitions: the interval to read at
    that look is the 1 - 2p one."""
    return float(sps.t.sf(c, n - 1))


# --- the design's state, carried over by --resume


@dataclass
class Design:
    """A budgeted reproduction's group-sequential design: alpha per one-sided conclusion, and per budgeted claim
    (keyed by paper:claim) its looks: the repetitions at each, its boundary and the level it was read at."""

    alpha: float = 0.05
    pilot: int = PILOT
    claims: dict[str, dict] = field(default_factory=dict)  # key -> {"looks": [n], "boundaries": [c], "levels": [p]}

    def __post_init__(self) -> None:
        _check_alpha(self.alpha)
        if self.pilot < 2:
            raise PirexError(f"a pilot of {self.pilot} repetitions has no spread: run at least 2 (better {PILOT})")

    def register(self, key: str) -> None:
        """A claim read through the design (on this machine, on a run of its own)."""
        self.claims.setdefault(key, {"looks": [], "boundaries": [], "levels": []})

    def looks(self, key: str) -> list[int]:
        return list(self.claims[key]["looks"])

    def level_of(self, key: str, index: int) -> float:
        """The one-sided level look `index` of the claim was read at (a look taken)."""
        return float(self.claims[key]["levels"][index])

    def next_spend(self, key: str) -> float:
        """The alpha the claim's next look would spend."""
        return spend_of(len(self.claims[key]["looks"]), self.alpha)

    def look(self, key: str, n: int) -> float:
        """Take the claim's next look at n repetitions (more than at its last): its boundary, saved with the level p
        it is read at, which is returned (the interval to read is the 1 - 2p one)."""
        entry = self.claims[key]
        if entry["looks"] and n <= entry["looks"][-1]:
            raise PirexError(f"claim {key}: a look at {n} repetitions after one at {entry['looks'][-1]}")
        ns = (*entry["looks"], int(n))
        c = boundary(ns, tuple(entry["boundaries"]), self.next_spend(key))
        entry["looks"].append(int(n))
        entry["boundaries"].append(c)
        entry["levels"].append(nominal(c, n))
        return entry["levels"][-1]

    def spent_alpha(self, key: str) -> float:
        """The alpha the claim's looks have spent (per conclusion)."""
        return float(sum(spend_of(i, self.alpha) for i in range(len(self.claims.get(key, {}).get("looks", [])))))

    def to_json(self) -> str:
        claims = {k: {**v, "alpha_spent": self.spent_alpha(k)} for k, v in sorted(self.claims.items())}
        body = {"method": "group-sequential", "boundaries": "exact-t", "alpha": self.alpha, "pilot": self.pilot}
        body["shares"] = {"pilot": PILOT_SHARE, "main": MAIN_SHARE}
        return json.dumps({**body, "claims": claims}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Design:
        try:
            data = json.loads(text)
            if data.get("method") != "group-sequential" or data.get("boundaries") != "exact-t":
                raise KeyError("boundaries: a design of an earlier pirex")
            claims = {
                str(k): {
                    "looks": [int(n) for n in v["looks"]],
                    "boundaries": [float(c) for c in v["boundaries"]],
                    "levels": [float(p) for p in v["levels"]],
                }
                for k, v in data["claims"].items()
            }
            design = cls(float(data["alpha"]), int(data["pilot"]), claims)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise PirexError(f"the budget's saved design cannot be read ({e}): start again without --resume") from e
        for k, v in claims.items():
            if v["looks"] != sorted(set(v["looks"])) or not len(v["looks"]) == len(v["boundaries"]) == len(v["levels"]):
                raise PirexError(f"the saved design's looks of {k} ({v['looks']}) are out of order: start again")
        return design


# --- what a look at n decides


@dataclass(frozen=True)
class Pending:
    """A budgeted claim with an interval: its estimate (a ratio), the sd of its log ratios per repetition, the
    repetitions so far, the run it depends on (a need key)."""

    key: str
    run: str
    estimate: float
    sd: float
    n: int
    claim: Claim

    @property
    def edges(self) -> tuple[float, ...]:
        return rule_edges(self.claim)


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(41)  # the estimate's normal law, by Gauss-Hermite quadrature
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def p_decide(claim: Claim, estimate: float, sd: float, n, p):
    """The chance that a look at n repetitions (an array) at one-sided level p (an array) decides the claim if its
    estimate and spread were the truth: the mean of the log ratios normal around the estimate with sd/sqrt(n), the
    interval's half-widths t_{n-1}(1-p) and t_{n-1}(1-p/2) times sd/sqrt(n), verdict.regions() deciding. The spread
    is taken as known (its own chance is small beside the mean's at these n)."""
    n, p = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(p, dtype=float))
    if not (sd > 0 and math.isfinite(sd)) or not estimate > 0:
        return np.zeros(n.shape)
    se = sd / np.sqrt(np.maximum(n, 1))
    ok = (n >= 2) & (p > 0)
    df = np.maximum(n - 1, 1)
    pp = np.where(ok, p, 0.25)
    h, hw = _t_isf(pp, df) * se, _t_isf(pp / 2, df) * se
    mean = math.log(estimate) + _NODES[:, None] * se.reshape(1, -1)
    h, hw = h.reshape(1, -1), hw.reshape(1, -1)
    with np.errstate(over="ignore"):
        holds, differs = regions(claim, np.exp(mean - h), np.exp(mean + h), np.exp(mean - hw), np.exp(mean + hw))
    out = (_WEIGHTS[:, None] * (holds | differs)).sum(axis=0).reshape(n.shape)
    return np.where(ok, out, 0.0)


def distance(estimate: float, edges: Sequence[float]) -> float:
    """The log distance from the estimate (a ratio) to the nearest edge between regions."""
    return float(np.min(np.abs(math.log(estimate) - np.log(np.asarray(edges, dtype=float)))))


def more_for(p: Pending, level: float, chance: float = 0.8, limit: int = 100_000) -> tuple[int | None, float]:
    """The fewest repetitions in all at which a look at one-sided level `level` decides the claim with at least
    `chance` at its estimate and spread, and that chance; (None, best chance) where no count up to `limit` does
    (an estimate on an edge: the chance stays near the level)."""
    ns = np.unique(np.round(np.geomspace(max(p.n + 1, 2), limit, 400)).astype(int))
    ch = p_decide(p.claim, p.estimate, p.sd, ns, level)
    hit = np.nonzero(ch >= chance)[0]
    if not hit.size:
        return None, float(ch.max())
    i = int(hit[0])
    lo = int(ns[i - 1]) + 1 if i else max(p.n + 1, 2)  # refine between the grid's points
    fine = np.arange(lo, int(ns[i]) + 1)
    fch = p_decide(p.claim, p.estimate, p.sd, fine, level)
    j = int(np.nonzero(fch >= chance)[0][0])
    return int(fine[j]), float(fch[j])


# --- a round


@dataclass(frozen=True)
class Round:
    """The next slice of the budget: per kept run the repetitions to extend it to, each its seconds; the runs
    dropped (none of their claims likely to decide); the claims expected to decide (the sum of their chances)."""

    targets: dict[str, int]
    seconds: float
    dropped: tuple[str, ...]
    expected: float


def plan_round(
    pending: Sequence[Pending], seconds: Mapping[str, float], left: float, design: Design, *, least: int = 1
) -> Round:
    """Where to spend the budget left (seconds): the runs with an undecided claim, less those none of whose claims
    has a FUTILE chance at twice the even extension over all of them (each run judged on its own claims alone);
    then every kept run extended by the same repetitions, the budget left over their seconds; none where that is
    fewer than `least` (a later look must add information: a resume asks for half the run's count again)."""
    if left < 0:
        raise PirexError(f"a budget of {left:g} s left: expected seconds >= 0")
    if missing := sorted({p.run for p in pending} - set(seconds)):
        raise PirexError(f"no seconds per repetition for run {', '.join(missing)}: the plan estimates them")
    runs = sorted({p.run for p in pending})
    counts = {r: {p.n for p in pending if p.run == r} for r in runs}
    if bad := [r for r in runs if len(counts[r]) > 1]:
        raise PirexError(f"the claims of run {bad[0]} report different repetition counts {sorted(counts[bad[0]])}")
    if not runs:
        return Round({}, 0.0, (), 0.0)
    n_of = {r: next(iter(counts[r])) for r in runs}
    even = int(left // sum(seconds[r] for r in runs))
    kept = []
    for r in runs:
        mine = [p for p in pending if p.run == r]
        best = max(
            float(p_decide(p.claim, p.estimate, p.sd, n_of[r] + 2 * even, design.next_spend(p.key))) for p in mine
        )
        if best >= FUTILE:
            kept.append(r)
    dropped = tuple(r for r in runs if r not in kept)
    if not kept:
        return Round({}, 0.0, dropped, 0.0)
    extra = int(left // sum(seconds[r] for r in kept))
    if extra < max(least, 1):
        return Round({}, 0.0, dropped, 0.0)
    targets = {r: n_of[r] + extra for r in kept}
    expected = sum(
        float(p_decide(p.claim, p.estimate, p.sd, targets[p.run], design.next_spend(p.key)))
        for p in pending
        if p.run in targets
    )
    return Round(targets, float(extra * sum(seconds[r] for r in kept)), dropped, expected)


# --- the yardsticks


def _curves(
    claims: Sequence[Pending], runs: Sequence[str], top: Mapping[str, int], alpha: float
) -> dict[str, np.ndarray]:
    """Per run: the expected claims decided by one look at alpha at n = 0..top[run] repetitions (0 below 2)."""
    out = {}
    for r in runs:
        ns = np.arange(top[r] + 1)
        out[r] = sum((p_decide(p.claim, p.estimate, p.sd, ns, alpha) for p in claims if p.run == r), np.zeros(ns.size))
    return out


def even_split(claims: Sequence[Pending], seconds: Mapping[str, float], total: float, alpha: float) -> float:
    """Expected claims decided when the budget (seconds, the pilot's included) is spread evenly over the runs, every
    run the same repetitions, with one look at alpha."""
    runs = sorted({p.run for p in claims})
    if not runs:
        return 0.0
    n = int(total // sum(seconds[r] for r in runs))
    return float(sum(p_decide(p.claim, p.estimate, p.sd, n, alpha) for p in claims))


def oracle(
    claims: Sequence[Pending], seconds: Mapping[str, float], total: float, alpha: float
) -> tuple[float, dict[str, int]]:
    """The best fixed repetitions per run within the budget (seconds), one look at alpha each, at estimates taken as
    the truth: the expected claims decided and the count per run. A knapsack over runs (a run's claims all count),
    solved by dynamic programming on a grid of the budget's GRAIN-th parts."""
    runs = sorted({p.run for p in claims})
    if not runs:
        return 0.0, {}
    units, grain = GRAIN, total / GRAIN
    cost = {r: max(1, math.ceil(seconds[r] / grain - 1e-9)) for r in runs}
    top = {r: units // cost[r] for r in runs}
    curve = _curves(claims, runs, top, alpha)
    best = np.zeros(units + 1)  # best expected decisions within u units, over the runs so far
    choice: list[np.ndarray] = []
    for r in runs:
        new, pick = best.copy(), np.zeros(units + 1, dtype=int)
        for n in range(2, top[r] + 1):
            u = n * cost[r]
            cand = np.full(units + 1, -np.inf)
            cand[u:] = best[: units + 1 - u] + curve[r][n]
            better = cand > new
            new[better], pick[better] = cand[better], n
        choice.append(pick)
        best = new
    counts, u = {}, units
    for r, pick in zip(reversed(runs), reversed(choice), strict=True):
        counts[r] = int(pick[u])
        u -= counts[r] * cost[r]
    return float(best[units]), dict(sorted(counts.items()))


@dataclass(frozen=True)
class Forecast:
    """At one set of estimates taken as the truth (the pilot's): the expected claims decided by this design's first
    round, by the even split and by the oracle, in the same seconds (`total`, the pilot's included)."""

    total: float
    design: float
    even: float
    oracle: float
    claims: int

    def to_json(self) -> dict:
        return {k: round(v, 2) if isinstance(v, float) else v for k, v in vars(self).items()}


def forecast(
    claims: Sequence[Pending],
    pending: Sequence[Pending],
    seconds: Mapping[str, float],
    pilot: float,
    left: float,
    design: Design,
    first: Round | None = None,
) -> Forecast:
    """The three figures the report states, at the pilot's estimates: `claims` every budgeted claim with an
    interval after the pilot, `pending` those it left undecided, `pilot` the seconds it took, `left` the budget for
    the rounds. This design: the claims the pilot decided, plus its first round's expected decisions (`first`, where
    the caller planned it already: plan_round(pending, seconds, left, design))."""
    r = first or plan_round(pending, seconds, left, design)
    total = pilot + left
    ours = len(claims) - len(pending) + r.expected
    even = even_split(claims, seconds, total, design.alpha)
    return Forecast(total, ours, even, oracle(claims, seconds, total, design.alpha)[0], len(claims))
