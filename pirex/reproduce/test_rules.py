"""Each rule's regions, edges and "differs" pieces agree with one another, for every rule in the registry (a new rule
is checked by these tests without a line here but its example claim), and the schema names exactly the registry's
rules."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pirex.analysis import stats
from pirex.analysis.verdicts import DIFFERS, HOLDS
from pirex.core import schema
from pirex.reproduce import rules
from pirex.reproduce.claims import RULES, Claim

EXAMPLES = {  # one claim per rule and direction, with the numbers the rule takes
    "within": [dict(published=1.3, tolerance=0.1, direction="greater"), dict(published=0.6, tolerance=0.05)],
    "direction": [dict(direction="greater"), dict(direction="less")],
    "equivalent": [dict(margin=0.05)],
    "direction-at-most": [dict(margin=0.1, direction="greater"), dict(margin=0.1, direction="less")],
    "different": [dict(margin=0.05)],
    "beyond": [dict(edge=0.02, direction="less"), dict(edge=3.0, direction="greater")],
}
CLAIMS = [
    Claim(paper="p", id=f"{name}-{k}", where="s", says="x", rule=name, **numbers)
    for name, examples in EXAMPLES.items()
    for k, numbers in enumerate(examples)
]
GRID = np.exp(np.linspace(np.log(0.005), np.log(10), 4001))


def test_every_rule_has_an_example_and_the_schema_names_them_all():
    assert set(EXAMPLES) == set(rules.REGISTRY) == set(RULES)
    words = schema.load("claims")["definitions"]["claim"]["properties"]["rule"]["description"]
    named = re.findall(r"[a-z]+(?:-[a-z]+)*", words.split("(")[0])
    assert set(RULES) <= set(named), words
    assert (
        rules.MARGINED
        == tuple(n for n in RULES if rules.REGISTRY[n].margined)
        == (
            "equivalent",
            "direction-at-most",
            "different",
        )
    )


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_point_intervals_away_from_the_edges_decide_and_never_both_ways(claim):
    rule = claim.rule_kind
    holds, differs = rule.regions(claim, GRID, GRID, GRID, GRID)
    assert not np.any(holds & differs)
    edges = np.array(rule.edges(claim))
    away = np.min(np.abs(np.log(GRID)[:, None] - np.log(edges)[None, :]), axis=1) > 1e-9
    assert np.all((holds | differs)[away]), "a point interval off every edge decides"
    assert np.any(holds) and np.any(differs)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_an_interval_across_an_edge_decides_nothing(claim):
    rule = claim.rule_kind
    for e in rule.edges(claim):
        holds, differs = rule.regions(claim, e / 1.01, e * 1.01, e / 1.02, e * 1.02)
        assert not holds and not differs, e


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_the_differs_pieces_are_the_differs_region(claim):
    """p_differs() reads "differs" off the pieces, regions() off the interval: for point intervals they agree."""
    rule = claim.rule_kind
    _, differs = rule.regions(claim, GRID, GRID, GRID, GRID)
    kind, parts = rule.differs_parts(claim)
    sides = [GRID > e if way == "above" else GRID < e for e, way in parts]
    assert (kind == "one") == (len(parts) == 1)
    pieces = sides[0] if kind == "one" else np.any(sides, axis=0) if kind == "union" else np.all(sides, axis=0)
    assert np.array_equal(pieces, differs)


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_each_rule_says_where_an_interval_lies_in_its_own_words(claim):
    rule = claim.rule_kind
    holds, differs = rule.regions(claim, GRID, GRID, GRID, GRID)
    for verdict, region in ((HOLDS, holds), (DIFFERS, differs)):
        x = float(GRID[np.argmax(region)])
        i = stats.Interval(x, x, x, 5, 0.9, "t")
        assert rule.region_text(claim, verdict, i).startswith("lies ")
    assert rule.crossing_text(claim) and "interval" in rule.words(claim, "90 %")
