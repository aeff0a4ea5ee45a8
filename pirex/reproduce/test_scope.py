"""A verdict only where this machine can speak to the claim (issue 51): every claim states its scope, and the scope
decides per machine record, the same for a 2-vCPU x86 VM (the x86 fixture of PI-FACTS.md's kind), an emulated Pi 3
(its /proc/cpuinfo fixture) and a 40-thread server (constructed). Stand-in verdicts and harness checks are
reported apart from the replications, and a case that equals its base here is not run at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from pirex.analysis.interface import RunValue
from pirex.core import board
from pirex.reproduce import claims, plan, report
from pirex.reproduce.verdict import HARNESS, NOT_RUN, REPLICATION, STAND_IN, Verdict, on_values

MACHINE = Path(__file__).parents[1] / "core" / "testdata" / "machine"


def _record(cpuinfo: str, threads: int | None = None) -> dict:
    """A machine record's cpu and pi sections as machine.record() builds them from /proc/cpuinfo."""
    info = board.parse_cpuinfo((MACHINE / cpuinfo).read_text())
    rec = {"cpu": {"model": info["model"], "cores": threads or info["cores"]}, "capabilities": {}}
    if (info["board_model"] or "").startswith("Raspberry Pi"):  # as board.pi_section reads it
        rec["pi"] = {"model": info["board_model"]}
    return rec


VM = _record("x86-server.cpuinfo")  # 2 vCPUs of a Xeon Gold: the CI machine's kind
PI3 = _record("pi3-raspbian32.cpuinfo")  # the emulated Pi of tests/emulated_pi.py
SERVER = _record("x86-server.cpuinfo", threads=40)  # the thesis's server: 40 threads
ALL = {c.id: c for p in claims.available() for c in claims.load(p).claims}
FORK24 = {c.id: c for c in claims.load("fork24").claims}
ICPE18 = {c.id: c for c in claims.load("icpe18").claims}


def _blocked(claim: claims.Claim, record: dict) -> str | None:
    return plan.blocked(claim, plan.missing(record, {}, here=False))


def test_every_claim_states_its_scope(capsys):
    """Lists every claim with its scope and the facts pirex checks (its needs); fails on a claim without one."""
    with capsys.disabled():
        print("\nclaim | scope | checked (needs)")
        for p in claims.available():
            for c in claims.load(p).claims:
                print(f"{p}:{c.id} | {c.scope} | {', '.join(c.needs) or '-'}")
    assert all(c.scope.strip() for c in ALL.values()), [k for k, c in ALL.items() if not c.scope.strip()]


def test_a_claim_without_a_scope_is_a_load_error(tmp_path):
    f = tmp_path / "claims.yaml"
    f.write_text("paper: x\ntitle: X\nclaims:\n  - id: a\n    where: Table 1\n    says: something\n")
    with pytest.raises(claims.PirexError, match=r"claims\[0\].*scope"):
        claims.load(f)


@pytest.mark.parametrize("claim_id", ["migration-server-consistent", "concurrent-close-server"])
def test_the_theses_server_claims_need_a_server_of_its_kind(claim_id):
    c = FORK24[claim_id]
    assert "threads:8" in c.needs
    why = _blocked(c, VM)
    assert why and "needs at least 8 hardware threads" in why and "this machine has 2" in why
    assert "Raspberry Pi" in (_blocked(c, PI3) or "")
    assert _blocked(c, SERVER) is None


@pytest.mark.parametrize("claim_id", ["t5-two-cores", "t5-two-cores-timer-interrupts"])
def test_a_case_pinned_to_every_cpu_is_not_informative_on_two_cpus_only(claim_id):
    c = ICPE18[claim_id]
    why = _blocked(c, VM)
    assert why and why.startswith(plan.NOT_INFORMATIVE) and "CPUs 0-1 are every CPU" in why
    assert _blocked(c, PI3) is None and _blocked(c, SERVER) is None  # four and forty CPUs: two leave some idle
    # and it costs no repetitions: the plan leaves the claim out of the runs
    needs = plan.needs([c], "kick-the-tires", missing=plan.missing(VM, {}, here=False))
    assert not any(c.id in n.claims for n in needs)


def test_this_machines_cases_that_change_nothing_are_named_with_the_reason(monkeypatch):
    from pirex.runner import host

    monkeypatch.setattr(host, "online_cpus", lambda: {0, 1})
    found = plan.vacuous_cases({"cpu": {"cores": 2}}, here=True)
    key = plan.case_key("moobench", "fluctuation", "two-cores")
    assert found[key].startswith(plan.NOT_INFORMATIVE) and "every CPU this machine has" in found[key]
    assert plan.case_key("moobench", "fluctuation", "one-core") not in found


def _values(metric: str, ratio: float, sides: tuple[str, str] = ("one-core", "ram-drive")) -> list[RunValue]:
    out = []
    for rep in range(5):
        for variant, x in ((sides[0], ratio * (1 + 0.001 * rep)), (sides[1], 1.0 + 0.001 * (rep % 2))):
            out.append(RunValue("moobench", "b", "d", variant, rep, metric, 100 * x, "us"))
    return out


def test_a_verdict_on_the_stand_in_is_a_stand_in_check_and_on_spass_meter_a_replication():
    """t5-one-core judges [spass-meter, kieker-text]: with SPASS-meter's values (its jar was there) a replication;
    with Kieker's text writer standing in, a stand-in check that says what it shares and what it cannot show."""
    c = ICPE18["t5-one-core"]
    assert [s.metric for s in c.stand_ins] == ["kieker-text"] and c.stand_ins[0].replaces == "spass-meter"
    real = on_values(c, _values("spass-meter", 3.0), 0.95, None, False)
    stand = on_values(c, _values("kieker-text", 3.0), 0.95, None, False)
    assert real.verdict == stand.verdict == "holds"
    assert real.evidence == REPLICATION and stand.evidence == STAND_IN
    (row,) = report.rows([stand])
    assert row[5] == "holds (stand-in check)" and "checked on a stand-in, kieker-text for spass-meter" in row[6]
    assert "it cannot show" in row[6]


def test_the_stand_ins_metric_named_alone_is_the_claims_own_subject():
    """kieker-text stands in for SPASS-meter in Table 5's metric lists; Table 2's kieker-text claims are about the
    papers' Kieker itself: replications, never stand-in checks."""
    own = [c for c in ICPE18.values() if c.numerator and c.numerator.metrics[0].startswith("kieker-text")]
    assert {"t2-kieker-docker", "t2-kieker-overhead", "t2-kieker-docker-sd"} <= {c.id for c in own}
    assert all(not c.stand_ins for c in own)
    v = on_values(ICPE18["t2-kieker-docker"], _values("kieker-text", 1.01, ("docker", "native")), 0.95, None, False)
    assert v.evidence == REPLICATION
    table5 = [c for c in ICPE18.values() if c.id.startswith("t5-") and "spass-meter" not in c.needs]
    assert table5 and all([s.metric for s in c.stand_ins] == ["kieker-text"] for c in table5)


def test_the_spass_meter_claims_are_judged_with_its_jar_and_not_run_without(monkeypatch, tmp_path):
    requirements = claims.load("icpe18").needs
    c = next(x for x in ICPE18.values() if "spass-meter" in x.needs)
    monkeypatch.setattr(plan, "REPO", tmp_path)
    assert plan.blocked(c, plan.missing(SERVER, requirements, here=False))  # no jar: not run here
    jar = tmp_path / requirements["spass-meter"].glob.replace("*", "spass-meter")
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK\x03\x04")  # a fixture jar
    assert plan.blocked(c, plan.missing(SERVER, requirements, here=False)) is None


def test_the_count_line_names_replications_checks_and_not_run_apart():
    harness = next(c for c in ALL.values() if c.harness)
    one_core = ICPE18["t5-one-core"]
    plain = ICPE18["t1-b1-docker"]
    verdicts = [
        on_values(one_core, _values("kieker-text", 3.0), 0.95, None, False),
        Verdict(harness, "holds", "inside"),
        Verdict(plain, "inconclusive", "wide"),
        Verdict(plain, NOT_RUN, "not here"),
    ]
    assert verdicts[1].evidence == HARNESS
    line = report.count_text(verdicts)
    assert line == ("1 inconclusive; stand-in checks: 1 holds; harness checks: 1 holds; 1 not run here"), line
    assert report.count_text([verdicts[2], verdicts[3]]) == "1 inconclusive, 1 not run here"  # as it always was
    summary = report.summary(verdicts, None)
    assert "(stand-in check)" in summary and "(harness check)" in summary


@pytest.mark.parametrize(
    ("paper", "claim_id"),
    [("icpe18", "t1-b5-docker"), ("icpe18", "t2-kieker-docker"), ("ssp17", "t1-kieker-sd-over-mean")],
)
def test_a_size_a_pis_usb_disk_decided_is_judged_on_that_kind_only(paper, claim_id):
    """ICPE'18's B5 and Kieker under Docker on disk H2, SSP'17's 24 x the mean on a USB-2 hard disk: a VM's virtio
    disk and a Pi's SD card cannot speak to them; a Pi whose work directory is on a USB disk can."""
    c = next(x for x in claims.load(paper).claims if x.id == claim_id)
    assert "needs the work directory on usb storage" in (_blocked(c, {**PI3, "storage": {"kind": "sd-card"}}) or "")
    assert "not a Raspberry Pi" in (_blocked(c, {**VM, "storage": {"kind": "virtio"}}) or "")
    assert _blocked(c, {**PI3, "storage": {"kind": "usb"}}) is None


def test_the_report_lists_only_what_its_papers_claims_need():
    """A user's paper on its own experiment: the report's "what this machine cannot do" is not ICPE'18's list."""
    missing = {
        "pmu": "no performance counters",
        "spass-meter": "SPASS-meter is bring-your-own",
        plan.case_key("moobench", "fluctuation", "two-cores"): plan.NOT_INFORMATIVE,
    }
    fork24 = claims.load("fork24").claims
    assert set(plan.concerning(missing, fork24)) <= {"pmu"}
    icpe18 = claims.load("icpe18").claims
    assert set(plan.concerning(missing, icpe18)) == {
        "spass-meter",
        plan.case_key("moobench", "fluctuation", "two-cores"),
    }
