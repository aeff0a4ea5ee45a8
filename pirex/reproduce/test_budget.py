"""Deciding within a budget (budget.py): the alpha shares, the exact t boundaries, the design's saved state, a round's
plan, the yardsticks (even split, oracle), and the design's error rates at the rules' edges by simulation through
scripts/bench_budget.py's reproductions (../shared/STATISTICS.md, "Stopping when decided", "The yardstick for a
budget"). `make bench-budget` prints the full tables (docs/statistics.md, "Deciding within a budget")."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from pirex.core.errors import PirexError
from pirex.reproduce import budget
from scripts import bench_budget as bench

ALPHA = 0.05
RULE = bench.RULES["direction (greater)"]
BAND = bench.RULES["equivalent (3 %)"]


def test_the_shares_spend_alpha_in_all_and_never_more():
    spends = [budget.spend_of(i, ALPHA) for i in range(40)]
    assert spends[0] == pytest.approx(budget.PILOT_SHARE * ALPHA) and spends[1] == pytest.approx(0.94 * ALPHA)
    assert sum(spends) < ALPHA and sum(spends) == pytest.approx(ALPHA, abs=1e-12)
    with pytest.raises(PirexError, match="expected an error rate"):
        budget.spend_of(0, 0.7)


def test_the_first_boundary_is_the_t_quantile_and_later_ones_hold_their_spend():
    c1 = budget.boundary((5,), (), 0.0015)
    assert c1 == pytest.approx(sps.t.isf(0.0015, 4))
    c2 = budget.boundary((5, 15), (c1,), 0.047)
    # below the marginal quantile at the spend: paths that crossed at the pilot are not counted twice
    assert c2 < sps.t.isf(0.047, 14) and budget.nominal(c2, 15) > 0.047
    # checked against fresh paths (another seed): P(T1 < c1, T2 >= c2) = 0.047 within 3 standard errors of both
    rng = np.random.default_rng(99)
    z = rng.standard_normal((200_000, 15))
    t = [z[:, :n].mean(1) / (z[:, :n].std(1, ddof=1) / math.sqrt(n)) for n in (5, 15)]
    rate = float(((t[0] < c1) & (t[1] >= c2)).mean())
    assert abs(rate - 0.047) < 3 * math.sqrt(0.047 * 0.953 * (1 / 200_000 + 1 / budget.DRAWS))
    assert budget.boundary((5, 15), (c1,), 0.047) == c2  # seeded: the same every time
    with pytest.raises(PirexError, match="increasing counts"):
        budget.boundary((5, 5), (c1,), 0.01)


def test_the_design_round_trips_through_json_and_refuses_what_it_cannot_read():
    d = budget.Design(ALPHA)
    d.register("p:a")
    p1 = d.look("p:a", 5)
    p2 = d.look("p:a", 12)
    assert p1 == pytest.approx(budget.PILOT_SHARE * ALPHA) and p2 > budget.MAIN_SHARE * ALPHA
    with pytest.raises(PirexError, match="after one at 12"):
        d.look("p:a", 12)
    again = budget.Design.from_json(d.to_json())
    assert again.claims == d.claims and again.level_of("p:a", 1) == p2
    assert json.loads(d.to_json())["claims"]["p:a"]["alpha_spent"] == pytest.approx(0.97 * ALPHA)
    old = json.dumps({"method": "group-sequential", "boundaries": "bonferroni", "alpha": 0.05, "claims": {}})
    with pytest.raises(PirexError, match="start again without --resume"):
        budget.Design.from_json(old)


def test_the_chance_of_deciding_grows_with_n_and_stays_near_the_level_on_an_edge():
    far = budget.p_decide(RULE, 1.02, 0.02, [3, 10, 40], 0.05)
    assert far[0] < far[1] < far[2] and far[2] > 0.99
    edge = budget.p_decide(RULE, 1.0, 0.02, [5, 50, 500], 0.05)
    assert (edge <= 0.11).all()  # either side at 5 %
    # against simulated intervals through verdict.regions (the production rule): within 1.5 points
    rng = np.random.default_rng(3)
    x = np.log(1.01) + 0.02 * rng.standard_normal((20_000, 12))
    hits = np.mean([any(bench._decide(BAND, row, 0.05)) for row in x[:4000]])
    assert abs(hits - float(budget.p_decide(BAND, 1.01, 0.02, 12, 0.05))) < 0.03


def _pending(key, run, estimate, sd=0.02, n=5, claim=RULE):
    return budget.Pending(key, run, estimate, sd, n, claim)


def test_a_round_drops_runs_that_cannot_decide_and_extends_the_rest_evenly():
    d = budget.Design(ALPHA)
    for k in ("a", "b", "c"):
        d.register(k)
        d.look(k, 5)
    pending = [_pending("a", "near", 1.01), _pending("b", "edge", 1.0), _pending("c", "near", 0.99)]
    r = budget.plan_round(pending, {"near": 10.0, "edge": 10.0}, 300.0, d)
    assert r.dropped == ("edge",) and r.targets == {"near": 5 + 30} and r.seconds == 300.0
    assert 1 < r.expected <= 2
    assert budget.plan_round(pending, {"near": 10.0, "edge": 10.0}, 300.0, d, least=40).targets == {}
    with pytest.raises(PirexError, match="no seconds per repetition for run edge"):
        budget.plan_round(pending, {"near": 10.0}, 300.0, d)


def test_the_oracle_is_at_least_the_even_split_and_spends_no_more_than_the_budget():
    claims = [_pending("a", "cheap", 1.01), _pending("b", "dear", 1.0), _pending("c", "dear", 1.5)]
    seconds = {"cheap": 5.0, "dear": 20.0}
    best, counts = budget.oracle(claims, seconds, 600.0, ALPHA)
    assert sum(n * seconds[r] for r, n in counts.items()) <= 600.0 + 1e-9
    assert best >= budget.even_split(claims, seconds, 600.0, ALPHA) - 1e-9
    assert counts["cheap"] > counts["dear"]  # the far claim decides with few; the edge one never


@pytest.mark.parametrize("rule", list(bench.RULES))
def test_wrong_verdicts_at_every_edge_are_at_most_alpha_first_resumed_and_reusing_the_pilot(rule):
    """Each rule's edges, 400 draws each (a 5 % rate's standard error 1.1 %): the design's wrong "holds" and wrong
    "differs" at most alpha + 3 standard errors, in the first reproduction, its resume with more budget, and a new
    reproduction that reuses the pilot (make bench-budget: 2,000 draws)."""
    limit = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 400)
    for row in bench.edge_table(400, [rule]):
        rates = [float(x) / 100 for x in row.replace("%", "").replace("/", "|").split("|")[3:-1]]
        assert len(rates) == 6 and max(rates) <= limit, row
