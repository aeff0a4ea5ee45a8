"""The claims' rule vocabulary (issue 35): rules as bands on the log scale, beyond's edge, and contains gone."""

import copy
import dataclasses
import re

import pytest
import yaml

from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS
from pirex.reproduce import claims, plan

ICPE18 = yaml.safe_load((PAPERS / "icpe18" / "claims.yaml").read_text())
TABLES = ("table1.csv", "table2.csv", "table3.csv", "table5.csv")


def _claim_of(doc: dict, claim_id: str) -> dict:
    (found,) = [c for c in doc["claims"] if c["id"] == claim_id]
    return found


def _load(tmp_path, claim_id: str, **change) -> claims.Claim:
    """icpe18's claims file with one claim changed (None drops a key), loaded from tmp_path."""
    doc = copy.deepcopy(ICPE18)
    c = _claim_of(doc, claim_id)
    for k, v in change.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    f = tmp_path / "claims.yaml"
    f.write_text(yaml.safe_dump(doc))
    for name in TABLES:
        (tmp_path / name).write_text((PAPERS / "icpe18" / name).read_text())
    (loaded,) = [x for x in claims.load(f).claims if x.id == claim_id]
    return loaded


def test_contains_is_refused_with_the_reason_and_what_to_use(tmp_path):
    with pytest.raises(PirexError) as e:
        _load(tmp_path, "t1-b2-inlined", rule="contains", margin=None)
    text = str(e.value)
    assert str(tmp_path / "claims.yaml") in text and "(t1-b2-inlined).rule" in text
    assert "contains is a point test (a longer run turns a holding claim into a differing one)" in text
    assert "use within with the paper's own interval or rounding as tolerance, equivalent, or direction" in text
    assert "contains" not in claims.RULES


RESCHEDULING = "t5-one-core-rescheduling-interrupts"  # "avoided more than 98% of the rescheduling interrupts"


def test_beyond_reads_more_than_98_percent_fewer_as_an_edge_below_1(tmp_path):
    c = _load(tmp_path, RESCHEDULING, rule="beyond", edge=0.02, published={"value": 0.02})
    assert (c.rule, c.edge, c.direction, c.published) == ("beyond", 0.02, "less", 0.02)
    assert c.band == (0.02, 0.02)
    c = _load(tmp_path, RESCHEDULING, rule="beyond", edge=2.0, published=None)  # "more than twice": greater
    assert (c.direction, c.band, c.published) == ("greater", (2.0, 2.0), None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"edge": None}, r"\.edge: expected a positive ratio other than 1"),
        ({"edge": 1}, r"\.edge: expected a positive ratio other than 1"),
        ({"edge": 0}, r"\.edge: expected a positive ratio other than 1"),
        ({"edge": -0.5}, r"\.edge: expected a positive ratio other than 1"),
        ({"edge": True}, r"\.edge: expected a positive ratio other than 1"),
        ({"edge": "2%"}, r"\.edge: expected a positive ratio other than 1"),
        ({"published": {"direction": "greater"}}, r"published.direction: expected less, the side of 1 of edge 0.02"),
        ({"published": {"value": 0.5}}, r"published: expected a value at or past edge 0.02 \(less\)"),
        ({"published": {"value": 1.5}}, r"published: expected a value at or past edge 0.02 \(less\)"),
        ({"margin": 0.05}, r"\.margin: expected a margin exactly for the rules"),
    ],
)
def test_a_bad_edge_or_a_published_value_short_of_it_is_a_load_error(tmp_path, change, message):
    with pytest.raises(PirexError, match=message) as e:
        _load(tmp_path, RESCHEDULING, **{"rule": "beyond", "edge": 0.02, "published": {"value": 0.02}, **change})
    assert f"({RESCHEDULING})" in str(e.value) and str(tmp_path) in str(e.value)


def test_an_edge_belongs_to_beyond_only(tmp_path):
    with pytest.raises(PirexError, match=r"\(t5-one-core\)\.edge: expected no edge: it belongs to the rule beyond"):
        _load(tmp_path, "t5-one-core", edge=2.0)


def test_different_is_a_rule_of_one_machine_too(tmp_path):
    c = _load(tmp_path, "t1-b6-docker", rule="different", margin=0.05, published=None)
    assert (c.rule, c.across, c.direction, c.band) == ("different", None, None, (1 / 1.05, 1.05))


def _with(rule: str, **fields) -> claims.Claim:
    base = claims.Claim("p", "c", "Table 1", "x")
    return dataclasses.replace(base, rule=rule, **fields)


def test_the_bands_of_the_rules_are_symmetric_on_the_log_scale():
    assert _with("within", published=2.0, tolerance=0.1).band == pytest.approx((2 / 1.1, 2.2))
    assert _with("equivalent", margin=0.03).band == pytest.approx((1 / 1.03, 1.03))
    assert _with("different", margin=0.05).band == pytest.approx((1 / 1.05, 1.05))
    assert _with("direction-at-most", margin=0.02, direction="greater").band == pytest.approx((1.0, 1.02))
    assert _with("direction-at-most", margin=0.02, direction="less").band == pytest.approx((1 / 1.02, 1.0))
    assert _with("beyond", edge=0.02, direction="less").band == (0.02, 0.02)
    assert _with("direction", direction="less").band is None
    for rule in ("equivalent", "different"):
        low, high = _with(rule, margin=0.03).band
        assert 1 / high == pytest.approx(low) and low != pytest.approx(1 - 0.03)  # not the linear 1 - m
    low, high = _with("within", published=0.5, tolerance=0.2).band
    assert low * high == pytest.approx(0.5**2)  # the published value in the middle on the log scale


def test_a_ratio_and_its_inverse_lie_inside_the_same_bands():
    """Issue 35's counterexample: [0.9702, 0.9831] was equivalent at 3 % (inside 1 -/+ 0.03) and its inverse
    [1.0172, 1.0307] not; on the log scale both lie across the band's edge, and a narrower pair inside it."""
    low, high = _with("equivalent", margin=0.03).band
    inside = lambda a, b: low <= a and b <= high  # noqa: E731
    assert not inside(0.9702, 0.9831) and not inside(1.0172, 1.0307)
    assert inside(0.9712, 0.9831) and inside(1 / 0.9831, 1 / 0.9712)
    gt, lt = (_with("direction-at-most", margin=0.02, direction=d).band for d in ("greater", "less"))
    assert lt == pytest.approx((1 / gt[1], 1 / gt[0]))  # slightly slower as a/b is slightly faster as b/a
    wa, wb = (_with("within", published=p, tolerance=0.1).band for p in (1.25, 0.8))
    assert wb == pytest.approx((1 / wa[1], 1 / wa[0]))


def test_every_claim_of_the_papers_has_a_rule_of_the_vocabulary_and_its_band():
    for paper in claims.available():
        for c in claims.load(paper).claims:
            assert c.rule in claims.RULES, c.id
            if c.judged and c.rule != "direction":
                low, high = c.band
                assert 0 < low <= high, c.id


def test_a_claim_names_its_papers_setup_per_level_and_a_bad_one_is_a_load_error(tmp_path):
    c = _load(tmp_path, "t2-kieker-docker", setup={"full": "paper-spass-meter"})
    assert c.profile("full", "paper") == "paper-spass-meter" and c.profile("kick-the-tires", "quick") == "quick"
    for bad, message in (
        ({"full": "nope"}, r"\(t2-kieker-docker\)\.setup\.full: expected a profile of moobench"),
        ({"fast": "quick"}, r"\(t2-kieker-docker\)\.setup: expected a mapping of level"),
        ("paper", r"\(t2-kieker-docker\)\.setup: expected a mapping of level"),
    ):
        with pytest.raises(PirexError, match=message):
            _load(tmp_path, "t2-kieker-docker", setup=bad)
    assert set(claims.SETUP_LEVELS) == set(plan.LEVELS)


def test_spass_meter_claims_run_at_its_setup_kiekers_at_its_own_and_a_setup_is_shared():
    """SSP'17 section 2: SPASS-meter at 2,000,000 calls and depth 10, Kieker at 1,000,000 and depth 5."""
    every = [c for p in ("icpe18", "ssp17") for c in claims.load(p).claims if c.experiment == "moobench"]
    full = {n.key: n for n in plan.needs(every, "full")}
    spass, kieker = full["moobench@paper-spass-meter"], full["moobench@paper"]
    assert {"t2-spass-docker", "t1-devices-agree-spass", "t1-spass-sd-under-mean", "t1-devices-agree"} <= set(
        spass.claims
    )
    assert "t2-kieker-docker" in kieker.claims and not set(spass.claims) & set(kieker.claims)
    assert (plan.setup(spass)["calls"], plan.setup(spass)["recursion_depth"]) == (2_000_000, 10)
    assert (plan.setup(kieker)["calls"], plan.setup(kieker)["recursion_depth"]) == (1_000_000, 5)
    for n in (spass, kieker):
        assert "jvm_options=-XX:+UseSerialGC" in plan.setup_text(n)  # ICPE'18 5.3: the Pi's sequential collector
    assert len([k for k in full if k.startswith("moobench@")]) == 2  # one run per setup, whatever the claims
    quick = plan.needs(every, "kick-the-tires")
    assert [n.key for n in quick if n.experiment == "moobench" and not n.view] == ["moobench@quick"]  # CI: no new run


def test_a_claim_about_a_kind_of_machine_is_judged_only_on_that_kind():
    by_id = {c.id: c for c in claims.load("fork24").claims}
    server = plan.kind_missing({"cpu": {"model": "AMD EPYC"}})
    pi = plan.kind_missing({"pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"}})
    assert plan.blocked(by_id["migration-costs-more"], server) and not plan.blocked(by_id["migration-costs-more"], pi)
    assert plan.blocked(by_id["concurrent-close-server"], pi) and not plan.blocked(
        by_id["concurrent-close-server"], server
    )
    (need,) = plan.needs(list(by_id.values()), "kick-the-tires", missing=server)
    assert "concurrent-close-server" in need.claims and "concurrent-costs-more" not in need.claims


def test_statements_count_their_rows_and_name_only_claims_that_exist():
    """analysis/STATEMENTS.md: every row a claim or a reason, the count at its top right, no id of a removed claim
    given as a row's claim."""
    text = (PAPERS / "STATEMENTS.md").read_text()
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| statement")]
    last = [r.rstrip(" |").rsplit(" | ", 1)[-1] for r in rows]
    claimed = sum(cell.startswith("`") for cell in last)
    assert (
        f"**{len(rows)} statements: {claimed} claimed" in text and f"{len(rows) - claimed} listed with a reason" in text
    )
    by_id = {c.id: c for p in claims.available() for c in claims.load(p).claims}
    named = [re.findall(r"`([a-z0-9-]+)`", cell.split(" (")[0]) for cell in last if cell.startswith("`")]
    given = {m for ids in named for m in ids}
    assert given <= set(by_id) and all(cell.startswith(("`", "none", "not kept")) for cell in last)
    # a claimed row is a stand-in check (a harness check) when every claim it names is one (issue 51)
    stand_in = sum(bool(ids) and all(by_id[i].stand_ins for i in ids) for ids in named)
    harness = sum(bool(ids) and all(by_id[i].harness for i in ids) for ids in named)
    both = sum(bool(ids) and all(by_id[i].harness and by_id[i].stand_ins for i in ids) for ids in named)
    assert f"of them {stand_in} stand-in checks and {harness} harness checks, {both} both" in text
