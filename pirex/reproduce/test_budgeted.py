"""`pirex reproduce --budget` wired to runs (budgeted.py): a pilot, rounds that extend the runs whose claims are
closest to a verdict, verdicts read at the design's looks, and --resume after a kill, on jmh bundles made here with
known ratios (no Docker; tests/test_reproduce_budget.py runs the real thing)."""

import dataclasses
import json
import re

import numpy as np
import pytest

from pirex.core import experiment, machine
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.paths import git_version
from pirex.reproduce import budget, budgeted, claims, plan, reproduction
from pirex.reproduce.state import Budget, ReproductionState
from pirex.reproduce.verdict import DIFFERS, HOLDS, INCONCLUSIVE

# per benchmark: its throughput against B1's, and docker's against native's
BENCHMARKS = {
    "b1_default": (1.0, 0.99),  # t1-b1-docker: 1 % slower, between its edges 0.98 and 1: needs repetitions
    "b2_inline": (1.0, 1.0),
    "b3_dontInline": (0.5, 1.0),  # far from every edge: decided at the first look
    "b4_exclude": (0.05, 1.0),
    "b5_fileWrite": (0.1, 0.95),  # 5 % slower: decided after a round or two
    "b6_tcpSend": (0.02, 1.0),  # on the edge (1): no number of repetitions decides it
}
SECONDS_PER_STEP = 20.0


@pytest.fixture(autouse=True)
def _quick_calibration(monkeypatch):
    score = plan.calibration_score(loops=100_000, seconds=0.1)
    monkeypatch.setattr(plan, "calibration_score", lambda: score)


class Lab:
    """A fake runner on a fake clock: each run writes a jmh bundle of the repetitions asked (1 % noise a fork)."""

    def __init__(self, results, monkeypatch, seed=5):
        self.results, self.clock, self.ran, self.rng = results, [0.0], [], np.random.default_rng(seed)
        self.kill_at: int | None = None  # the call that is "killed" (SIGKILL: nothing after it runs)
        self.kill_after: int | None = None  # the call killed once its bundle is complete, before it returns
        monkeypatch.setattr(reproduction, "monotonic", lambda: self.clock[0])
        monkeypatch.setattr(budgeted, "monotonic", lambda: self.clock[0])
        # a Pi on a USB disk, the paper's kind for B5 under Docker (t1-b5-docker's scope): this machine's record
        # with the board and the storage of the paper's, for the reproduction and the bundles alike
        real = machine.record
        pi = {"pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"}}
        self.record = lambda *a, **kw: {**real(*a, **kw), **pi, "storage": {**real(*a, **kw)["storage"], "kind": "usb"}}
        monkeypatch.setattr(machine, "record", self.record)

    def __call__(self, need, opts):
        if self.kill_at is not None and len(self.ran) == self.kill_at:
            raise KeyboardInterrupt("killed")
        reps = need.overrides.get("repetitions") or plan.repetitions(experiment.load("jmh"), need.profile)
        self.ran.append((need.key, reps, need.continues))
        self.clock[0] += reps * len(need.variants) * SECONDS_PER_STEP
        path = self._bundle(reps, need.variants, need.extends)
        if self.kill_after is not None and len(self.ran) - 1 == self.kill_after:
            raise KeyboardInterrupt("killed")
        return path

    def _bundle(self, reps, variants, extends=None):
        record = self.record(self.results, docker=False)
        steps = [(v, r) for r in range(reps) for v in variants]
        params = {**experiment.load("jmh").resolve("quick"), "repetitions": reps}
        meta = {"version": "t", "commit": git_version()[1]}
        b = Bundle.create(self.results, "jmh", "quick", params, list(variants), steps, {}, meta)
        b.write_machine(before=record, after=record)
        b.write_run_info({"matrix": None, "requested": params, **({"extends": extends} if extends else {})})
        for v, r in steps:
            with b.step(v, r) as d:
                rows = []
                for name, (f, docker) in BENCHMARKS.items():
                    base = 1e7 * f * (docker if v == "docker" else 1.0)
                    fork = base * (1 + self.rng.normal(0, 0.01))  # the repetition's own level: what varies
                    raw = [[fork * (1 + e) for e in self.rng.normal(0, 1e-3, 3)]]  # its iterations
                    metric = {"rawData": raw, "scoreUnit": "ops/s"}
                    rows.append({"benchmark": f"io.github.pirexbench.jmh.X.{name}", "primaryMetric": metric})
                (d / "jmh.json").write_text(json.dumps(rows))
                (d / "step.json").write_text(json.dumps({"seconds": SECONDS_PER_STEP}))
        b.finish()
        return b.path


def _opts(results, **kw):
    return reproduction.Options(["icpe18"], results_dir=results, experiments=["jmh"], **kw)


def _state(out):
    return ReproductionState.read(out)


def test_a_budget_extends_the_runs_near_a_verdict_and_reads_each_claim_at_its_looks(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    lines = []
    out = reproduction.reproduce(_opts(results, budget=1800.0), lab, echo=lines.append)
    state = _state(out)
    entry = state.budget
    design = budget.Design.from_json(json.dumps(entry.design))
    assert lab.ran[0] == ("jmh@quick", 5, 0)  # the pilot: kick-the-tires' five repetitions
    assert len(lab.ran) >= 2 and entry.rounds >= 1  # then rounds that extend the run
    before = 5
    for key, reps, continues in lab.ran[1:]:  # each extension after the repetitions before it
        assert key == "jmh@quick" and continues == before
        before += reps
    assert any("budget round 1:" in line for line in lines)
    assert any(line.startswith("budget: the pilot first (the runs above: about") for line in lines)
    assert len(state.bundles["jmh@quick"]) == len(lab.ran)
    # the budget is the rounds': the pilot ran before it
    assert entry.pilot == 5 * 2 * SECONDS_PER_STEP and entry.spent == entry.pilot + entry.rounds_spent
    assert entry.rounds_spent <= 1800 + max(r * 2 * SECONDS_PER_STEP for _, r, _ in lab.ran)  # not cut short
    f = entry.forecast  # the yardsticks at the pilot's estimates
    assert f["total"] == pytest.approx(entry.pilot + 1800) and 0 < f["even"] <= f["oracle"] + 1e-9 and f["design"] > 0

    verdicts, report = state.verdicts, (out / "REPORT.md").read_text()
    assert verdicts["icpe18:t1-b3-not-inlined"] == HOLDS and verdicts["icpe18:t1-b5-docker"] == HOLDS
    looks = {k: v["looks"] for k, v in entry.design["claims"].items()}
    assert looks["icpe18:t1-b3-not-inlined"] == [5]  # decided at its first look: looked at no more
    assert any(len(ns) >= 2 for ns in looks.values())  # the rounds' looks: after the pilot, at more repetitions
    for k, ns in looks.items():
        assert ns == sorted(set(ns)) and design.spent_alpha(k) <= design.alpha + 1e-12
        assert entry.design["claims"][k]["alpha_spent"] <= design.alpha + 1e-12
        if ns:
            assert design.level_of(k, 0) == pytest.approx(budget.PILOT_SHARE * design.alpha)  # no earlier look
    # each verdict read at its look: the level of that look's interval, far above the fixed 90 %
    line = next(x for x in report.splitlines() if "icpe18:t1-b3-not-inlined**" in x)
    assert "Read at look 1 at 5 repetitions" in line
    level = float(re.search(r"our (\d+(?:\.\d+)?) % interval", line).group(1))
    assert level > 99
    assert "group-sequential test" in report and "of the oracle" in report and "spread evenly" in report
    # on the edge: inconclusive, and says why in the user's terms
    assert verdicts["icpe18:t1-b6-docker"] in (INCONCLUSIVE, HOLDS, DIFFERS)
    undecided = [x for x in report.splitlines() if x.startswith("- **icpe18:") and "What would decide it" in x]
    for x in undecided:
        assert re.search(r"edge|--resume|spread", x), x


def test_killed_in_a_round_and_resumed_with_a_new_budget_counts_each_look_once(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    lab.kill_at = 1  # the pilot ran; the first round's extension is killed as it starts
    with pytest.raises(KeyboardInterrupt):
        reproduction.reproduce(_opts(results, budget=1800.0), lab, echo=lambda *_: None)
    (out,) = (results / "reproduce").iterdir()
    saved = _state(out).budget
    assert saved.given == [1800.0] and saved.rounds == 1
    looks_before = {k: v["looks"] for k, v in saved.design["claims"].items()}
    assert any(looks_before.values())

    lab.kill_at = None
    reproduction.reproduce(_opts(results, budget=600.0, resume=out), lab, echo=lambda *_: None)
    entry = _state(out).budget
    assert entry.given == [1800.0, 600.0]
    for k, v in entry.design["claims"].items():
        assert v["looks"][: len(looks_before[k])] == looks_before[k]  # carried over, not taken again
        assert v["looks"] == sorted(set(v["looks"])) and v["alpha_spent"] <= entry.design["alpha"] + 1e-12
        assert v["levels"][: len(looks_before[k])] == saved.design["claims"][k]["levels"]  # read at the same levels
    assert "icpe18:t1-b5-docker" in _state(out).verdicts


def test_an_extension_finished_but_not_saved_when_killed_is_judged_after_the_resume(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    lab.kill_after = 1  # the first extension's bundle is complete; the kill comes before the state is saved
    with pytest.raises(KeyboardInterrupt):
        reproduction.reproduce(_opts(results, budget=1800.0), lab, echo=lambda *_: None)
    (out,) = (results / "reproduce").iterdir()
    assert len(_state(out).bundles["jmh@quick"]) == 1  # the pilot's only: the extension was not saved
    lab.kill_after = None
    reproduction.reproduce(_opts(results, budget=600.0, resume=out), lab, echo=lambda *_: None)
    judged = [str(b) for b in _state(out).bundles["jmh@quick"]]
    every = sorted(str(m.parent) for m in results.glob("jmh/*/manifest.json"))
    assert sorted(judged) == every  # the orphaned extension adopted, none run twice


def test_a_round_killed_by_sigkill_is_counted_once_by_the_resume_from_its_steps(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    lab.kill_after = 1  # the first extension's steps all ran; then the kill: nothing after it runs or saves
    with pytest.raises(KeyboardInterrupt):
        reproduction.reproduce(_opts(results, budget=1800.0), lab, echo=lambda *_: None)
    (out,) = (results / "reproduce").iterdir()
    killed = _state(out)
    assert killed.running.extends and killed.budget.pilot == 5 * 2 * SECONDS_PER_STEP
    assert killed.budget.rounds_spent == 0  # what the killed round took: not saved by it, counted by the resume
    # its last step ended 120 s after it started (the bundle's steps say so: epoch seconds)
    monkeypatch.setattr(reproduction, "_last_step_end", lambda *a, **kw: killed.running.started + 120.0)
    lab.kill_after = None
    ran_before = len(lab.ran)
    reproduction.reproduce(_opts(results, budget=600.0, resume=out), lab, echo=lambda *_: None)
    after = _state(out)
    entry = after.budget
    this_attempt = sum(r * 2 * SECONDS_PER_STEP for _, r, _ in lab.ran[ran_before:])
    assert entry.rounds_spent == pytest.approx(120.0 + this_attempt, abs=0.2)  # the killed round's seconds, once
    assert entry.spent == pytest.approx(entry.pilot + entry.rounds_spent, abs=0.2)
    assert entry.pilot == killed.budget.pilot and "jmh@quick" not in after.partial  # not the pilot's
    assert after.extended["jmh@quick"] == pytest.approx(120.0 + this_attempt, abs=0.2)


def test_an_undecided_claim_says_how_many_more_at_the_next_looks_level_and_its_chance():
    design = budget.Design()
    claim = next(c for c in claims.load("icpe18").claims if c.id == "t1-b1-docker")
    design.register("p:c")
    design.look("p:c", 5)
    design.look("p:c", 9)  # the next look is the reserve's
    p = budget.Pending("p:c", "jmh@quick", 0.995, 0.02, 9, claim)
    text = budgeted.advice(p, design, 40.0, "pirex reproduce --resume results/reproduce/x")
    n, chance = budget.more_for(p, design.next_spend("p:c"))
    said = f"{100 * chance:.0f}"
    article = "an" if said.startswith("8") else "a"  # chance >= 0.8: an 80 to an 89 %, a 90 to a 100 %
    assert f"about {n - 9} more repetitions, {n} in all" in text and f" {article} {said} % chance" in text
    assert [budgeted._a(k) for k in (8, 11, 18, 80, 89, 1, 9, 90, 100)] == ["an"] * 5 + ["a"] * 4
    assert chance >= 0.8 and "--resume results/reproduce/x --budget" in text and "(" not in text
    on_edge = budget.Pending("p:c", "jmh@quick", 1.0, 0.02, 9, claim)
    assert "no number of repetitions is likely to decide it" in budgeted.advice(on_edge, design, 40.0, "x")


def test_a_budget_that_is_not_a_duration_above_zero_is_refused():
    with pytest.raises(PirexError, match="expected a duration above zero"):
        budgeted.start(ReproductionState(), 0.0, None)


def test_a_fresh_machines_plan_adds_the_first_export_of_each_image_once():
    needs = plan.needs(claims.load("icpe18").claims, "kick-the-tires")
    exp = experiment.load("moobench")
    for n in needs:
        n.seconds, n.estimate_from = 60.0, "measured on a VM"
    plan.add_first_exports(needs, exported=lambda name: name == "jmh")  # jmh's export is here already
    moobench = [n for n in needs if n.experiment == "moobench"]
    added = [n for n in moobench if n.seconds > 60]
    assert len(added) == 1 and added[0].seconds == 60 + exp.durations["first"]  # once per image, not per run
    assert f"first export of {exp.image} for native" in added[0].estimate_from
    assert all(n.seconds == 60 for n in needs if n.experiment == "jmh")


def test_a_new_reproduction_reuses_the_pilot_never_an_extension(tmp_path, monkeypatch):
    """An extension's size was chosen from the data: a later reproduction (make run again) that took it as a plain
    run would look again, with fresh alpha, at repetitions a design already chose to add."""
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    first = reproduction.reproduce(_opts(results, budget=1800.0), lab, echo=lambda *_: None)
    ran = _state(first).bundles["jmh@quick"]
    assert len(ran) >= 2
    again = reproduction.reproduce(_opts(results), run_one=None, echo=lambda *_: None)  # no budget: reuse only
    assert _state(again).bundles["jmh@quick"] == ran[:1]  # the pilot


def test_a_budget_on_the_resume_of_a_reproduction_without_one_is_refused(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    out = reproduction.reproduce(_opts(results), lab, echo=lambda *_: None)
    before = (out / "state.json").read_text()
    with pytest.raises(PirexError, match="ran without --budget"):
        reproduction.reproduce(_opts(results, budget=600.0, resume=out), lab, echo=lambda *_: None)
    assert (out / "state.json").read_text() == before  # untouched


def test_only_the_claims_on_one_run_of_this_machine_are_read_through_the_design():
    need = plan.Need("jmh", None, "quick", ["native", "docker"], claims=["t1-b1-docker"], overrides={"repetitions": 10})
    design = budget.Design()
    budgeted.register(design, [need], claims.load("icpe18").claims)
    assert list(design.claims) == ["icpe18:t1-b1-docker"]
    twice = plan.Need("jmh", None, "quick", ["native", "docker-aa"], claims=["t1-b1-docker"])
    design = budget.Design()
    budgeted.register(design, [need, twice], claims.load("icpe18").claims)  # on two runs: the fixed level
    assert design.claims == {}


def test_budgeted_spend_with_the_production_reading_decides_as_the_bench_simulation_does(monkeypatch):
    """scripts/bench_budget.py's reproductions stand for budgeted.spend with budgeted.Reading (verdict.on_values at
    each look): on the same log ratios, two runs of three claims each, both give the same verdicts, the same looks
    and the same rounds. What make bench-budget's tables say is then what pirex reproduce --budget does."""
    import math

    from pirex.analysis.interface import RunValue
    from pirex.reproduce.claims import Side
    from scripts import bench_budget as bench

    rules = list(bench.RULES.values())
    sims, claims_ = [], []
    truths = [1.0, 1.012, 0.985, 1.05, 0.9, 1.0]  # an edge, near ones, a far one
    for i, truth in enumerate(truths):
        rule = rules[i % len(rules)]
        c = dataclasses.replace(
            rule, id=f"c{i}", numerator=Side((f"m{i}",), "docker"), denominator=Side((f"m{i}",), "native")
        )
        claims_.append(c)
        sims.append(bench.Sim(c, f"run{i // 3}", truth * (0.9 if rule.rule == "within" else 1.0), 0.02))
    seconds = {"run0": 10.0, "run1": 14.0}
    clock = [0.0]  # the extensions' time: what they cost, on a fake clock
    monkeypatch.setattr(budgeted, "monotonic", lambda: clock[0])
    for seed in range(4):
        rng = np.random.default_rng(seed)
        data = {i: math.log(s.truth) + s.sd * rng.standard_normal(400) for i, s in enumerate(sims)}
        expected, sim_design = bench.reproduce(sims, seconds, 200.0, data)

        needs = [
            plan.Need("jmh", None, "quick", ["native", "docker"], claims=[f"c{i}" for i in range(3 * r, 3 * r + 3)])
            for r in range(2)
        ]
        for r, n in enumerate(needs):
            n.seconds, n.overrides = 5 * seconds[f"run{r}"], {"repetitions": 5}
            n.view = f"run{r}"  # one key per run
        design = budget.Design(0.05)
        budgeted.register(design, needs, claims_)
        reading = budgeted.Reading(design, 0.95, None)
        count = {n.key: 5 for n in needs}

        def values_of(i, n, data=data):
            out = []
            for j in range(n):
                for variant, v in (("native", 1.0), ("docker", math.exp(data[i][j]))):
                    out.append(RunValue("jmh", "b", "d", variant, j, f"m{i}", v, "ops/s", lower_is_better=False))
            return out

        def judge(needs=needs, count=count, reading=reading):
            return [
                reading(c, [needs[i // 3]], values_of(i, count[needs[i // 3].key]), False)
                for i, c in enumerate(claims_)
            ]

        def extend(n, extra, before, count=count):
            assert before == count[n.key]
            count[n.key] += extra
            clock[0] += extra * n.seconds / 5

        entry = Budget(given=[200.0])
        _, verdicts = budgeted.spend(200.0, needs, reading, judge, extend, entry, lambda: None, lambda _: None)
        verdicts = verdicts or judge()
        got = {i: v.verdict for i, v in enumerate(verdicts) if v.verdict in (HOLDS, DIFFERS)}
        assert got == expected.verdicts, (seed, got, expected.verdicts)
        for i in range(len(sims)):
            assert design.looks(f"p:c{i}") == sim_design.looks(str(i)), seed


def test_more_budget_on_a_finished_reproduction_spends_it_on_the_claims_still_undecided(tmp_path, monkeypatch):
    results = tmp_path / "results"
    lab = Lab(results, monkeypatch)
    lines = []
    out = reproduction.reproduce(_opts(results, budget=200.0, whole_pilot=True), lab, echo=lines.append)
    first = _state(out)
    assert any(x.startswith("budget: the pilot took 3.3 min, 1 round(s)") for x in lines), lines[-4:]
    said = next(x for x in lines if x.startswith("More time decides more:"))
    minutes = int(re.search(rf"--resume {re.escape(str(out))} --budget (\d+)m spends", said).group(1))
    ran = len(lab.ran)
    undecided = [k for k, v in first.verdicts.items() if v == INCONCLUSIVE]
    more = []
    reproduction.reproduce(_opts(results, budget=60.0 * minutes, resume=out), lab, echo=more.append)
    entry = _state(out).budget
    assert len(lab.ran) > ran, "\n".join(more)  # what the command said: a round on the claims still undecided
    assert entry.given == [200.0, 60.0 * minutes] and entry.rounds > first.budget.rounds
    assert entry.rounds_spent > first.budget.rounds_spent and entry.pilot == first.budget.pilot  # no pilot again
    for k, v in entry.design["claims"].items():  # the later looks spend the reserve: alpha never exceeded
        assert v["alpha_spent"] < entry.design["alpha"]
        if k in undecided and len(v["looks"]) > len(first.budget.design["claims"][k]["looks"]):
            assert budget.spend_of(len(v["looks"]) - 1, 0.05) < 0.001
