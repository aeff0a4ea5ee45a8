"""Claims, verdicts and the report, on claims files and bundles made here with known numbers (no Docker)."""

import copy
import csv
import dataclasses
import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from pirex.analysis import jmh, stats
from pirex.analysis.interface import RunValue
from pirex.core import experiment, machine
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS, git_version
from pirex.reproduce import claims, plan, reproduction, sources
from pirex.reproduce.state import ReproductionState
from pirex.reproduce.verdict import DIFFERS, HOLDS, INCONCLUSIVE, NOT_RUN, Ours, judge, ours
from pirex.runner import deployment_bundle

ICPE18 = yaml.safe_load((PAPERS / "icpe18" / "claims.yaml").read_text())


CALIBRATE = plan.calibration_score


@pytest.fixture(autouse=True)
def _quick_calibration(monkeypatch):
    """A reproduction calibrates for about 3 s; a twentieth of that here (its result is not what these test)."""
    monkeypatch.setattr(plan, "calibration_score", lambda: CALIBRATE(loops=100_000, seconds=0.15))


def test_the_calibration_is_the_best_round_of_its_time():
    import time

    start = time.perf_counter()
    score = CALIBRATE(loops=20_000, seconds=0.2, min_rounds=3)
    took = time.perf_counter() - start
    assert score > 0 and took >= 0.2  # rounds until the time is up
    assert CALIBRATE(loops=20_000, seconds=0.0, min_rounds=3) > 0  # at least min_rounds


def _row(table: str, **match) -> dict:
    with open(PAPERS / "icpe18" / table) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    (found,) = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return found


def test_every_claims_file_loads_and_its_values_come_from_the_published_tables():
    assert set(claims.available()) >= {"icpe18", "ssp17", "fork24"}
    by_id = {c.id: c for p in claims.available() for c in claims.load(p).claims}
    t5 = lambda i: float(_row("table5.csv", id=i, configuration="spass-meter")["mean"])  # noqa: E731
    assert by_id["t5-parallel-gc"].published == pytest.approx(t5("3") / t5("2"))  # the paper's base, Id 2: 1.276
    assert by_id["t5-max-clock"].published == pytest.approx(t5("11") / t5("6"))  # 0.984, not against Id 5
    b1 = lambda v: float(_row("table1.csv", benchmark="B1", device="D2", storage="H1", variant=v)["mean"])  # noqa: E731
    assert by_id["t1-b1-docker"].published == pytest.approx(b1("docker") / b1("native"))
    assert by_id["t1-b3-not-inlined"].direction == "less"  # device-dependent: judged by its sign
    icpe18 = claims.load("icpe18")
    tables = {c.where.split(",")[0] for c in icpe18.claims}
    assert {
        "Table 1",
        "Table 2",
        "Table 3",
        "Table 5",
    } <= tables
    assert not any(c.id == "t4-specj" for c in icpe18.claims)  # Table 4 (the licensed kit): a reason, not a claim


def _claim_of(doc: dict, claim_id: str) -> dict:
    (found,) = [c for c in doc["claims"] if c["id"] == claim_id]
    return found


def _write(tmp_path, change):
    doc = copy.deepcopy(ICPE18)
    change(doc)
    f = tmp_path / "claims.yaml"
    f.write_text(yaml.safe_dump(doc))
    for name in ("table1.csv", "table2.csv", "table3.csv", "table5.csv"):
        (tmp_path / name).write_text((PAPERS / "icpe18" / name).read_text())
    return f


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("claims"), r"claims: expected a non-empty list"),
        (lambda d: d["claims"][0].update(rule="roughly"), r"claims\[0\] \(t1-b1-docker\).rule: expected one of"),
        (lambda d: d["claims"][0].update(experiment="nope"), r"claims\[0\] \(t1-b1-docker\).experiment: expected"),
        (lambda d: d["claims"][0]["ratio"].update(numerator="podman"), r"ratio.numerator: expected a variant among"),
        (lambda d: d["claims"][0]["published"].update(table="missing.csv"), r"published.table: expected a CSV file"),
        (lambda d: d["claims"][0]["published"]["numerator"].update(line="999"), r"exactly one row of table1.csv"),
        (lambda d: d["claims"][0]["published"].update(column="colour"), r"published.column: expected a column"),
        (lambda d: d["claims"][0].update(needs=["a-gpu"]), r"needs: expected a list among"),
        (lambda d: d["needs"].pop("spass-meter"), r"\(t2-spass-docker\).needs: expected a list among"),
        (
            lambda d: d["needs"].update(pmu={"what": "x", "how": "y"}),
            r"needs.pmu: expected a lowercase name that is not",
        ),
        (lambda d: d["needs"]["spass-meter"].update(capability="pmu"), r"needs.spass-meter: expected one check"),
        (lambda d: d["needs"]["spass-meter"].update(glob="/opt/*.jar"), r"needs.spass-meter.glob: expected a path"),
        (lambda d: d["claims"][1].update(id="t1-b1-docker"), r"claims\[1\].id: expected an id not used"),
        (lambda d: d["claims"][0].update(colour="red"), r"claims\[0\]: expected keys among"),
        (lambda d: d["claims"][0].update(rule=["direction"]), r"\(t1-b1-docker\).rule: expected one of"),
        (
            lambda d: _claim_of(d, "t1-devices-agree").update(rule=["equivalent"]),
            r"\(t1-devices-agree\).rule: expected equivalent \(the devices agree",
        ),
        (
            lambda d: _claim_of(d, "t2-kieker-docker").update(tolerance=0),
            r"\(t2-kieker-docker\).tolerance: expected a fraction",
        ),
    ],
)
def test_a_bad_claim_is_a_load_error_naming_file_and_key(tmp_path, change, message):
    f = _write(tmp_path, change)
    with pytest.raises(PirexError, match=message) as e:
        claims.load(f)
    assert str(f) in str(e.value)


def _claim(rule="within", published=1.0, direction=None, tolerance=0.02):
    return claims.Claim(
        "p",
        "c",
        "Table 1",
        "x",
        "jmh",
        None,
        ("native", "docker"),
        claims.Side(("B1",), "docker"),
        claims.Side(("B1",), "native"),
        published,
        direction,
        rule,
        tolerance,
    )


def _values(ratio: float, n: int, sd: float = 0.002, seed: int = 1, aa: bool = False) -> list[RunValue]:
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(n):
        base = 100 * (1 + rng.normal(0, 0.05))  # repetitions differ a lot; the pairing removes it
        sides = {"native": base, "docker": base * ratio * (1 + rng.normal(0, sd))}
        if aa:
            sides["native-aa"] = base * (1 + rng.normal(0, sd))
        out += [RunValue("jmh", "b", "d", v, rep, "B1", x, "ops/s") for v, x in sides.items()]
    return out


def test_verdicts_are_three_valued_and_paired():
    o = ours(_claim(published=0.998), _values(1.0, 12, aa=True), 0.95)
    assert o.interval.low < 1 < o.interval.high and o.interval.relative_half_width < 0.005  # paired: narrow
    assert o.interval.level == pytest.approx(0.90) and o.aa.level == 0.95  # the regions' interval; the A/A check's
    assert o.aa.low < 1 < o.aa.high  # the A/A copy of native is drawn alike
    near = dict(tolerance=0.01)
    assert judge(_claim("within", 1.0, **near), o, None, False).verdict == HOLDS
    assert judge(_claim("within", 0.90, **near), o, None, False).verdict == DIFFERS
    wide = ours(_claim(), _values(1.0, 6, sd=0.05), 0.95)
    v = judge(_claim("within", 1.01, **near), wide, 0.01, False)
    assert v.verdict == INCONCLUSIVE and "crosses an edge" in v.reason and "more repetitions would decide" in v.reason
    few = ours(_claim(), _values(1.0, 3), 0.95)
    assert judge(_claim(), few, None, True).verdict == INCONCLUSIVE
    assert "3 paired repetitions, 5 needed" in judge(_claim(), few, None, True).reason
    slower = ours(_claim(), _values(0.5, 8), 0.95)
    assert judge(_claim("direction", None, "less"), slower, None, False).verdict == HOLDS
    assert judge(_claim("direction", None, "greater"), slower, None, False).verdict == DIFFERS
    within = judge(_claim("within", 0.98, tolerance=0.1), o, None, False)  # [0.891; 1.078] holds ours
    assert within.verdict == HOLDS and "±10 %" in within.reason


def test_a_ratio_over_bundles_of_two_setups_is_refused_not_pooled():
    depth10 = [dataclasses.replace(v, setup="depth 10") for v in _values(1.0, 6)]
    depth1 = [dataclasses.replace(v, bundle="b1", setup="depth 1") for v in _values(0.5, 6, seed=2)]
    why = ours(_claim(), depth10 + depth1, 0.95)
    assert isinstance(why, str) and "2 setups (depth 1; depth 10)" in why
    assert not isinstance(ours(_claim(), depth10, 0.95), str)


def test_the_summary_keeps_its_limit_with_many_claims():
    from dataclasses import replace

    from pirex.reproduce import report
    from pirex.reproduce.verdict import Verdict

    o = ours(_claim(published=0.998), _values(1.0, 12), 0.95)
    held = [Verdict(replace(_claim(), id=f"holds-{i}"), HOLDS, "ok", o) for i in range(24)]
    odd = [
        Verdict(replace(_claim(), id="odd"), DIFFERS, "no", o),
        Verdict(replace(_claim(), id="wide"), INCONCLUSIVE, "wide", o),
    ]
    away = [Verdict(replace(_claim(), id=f"away-{i}"), NOT_RUN, f"needs thing {i}") for i in range(5)]
    few = report.summary(held[:3] + odd, Path("R.md"))
    assert len(few.splitlines()) == 3 + 2 + 2 and "p:holds-0" in few  # room: a line per claim
    text = report.summary(held + odd + away, Path("R.md"))
    lines = text.splitlines()
    assert len(lines) <= 25, text
    assert all(f"p:holds-{i}" in text for i in range(24))  # every claim that holds is named
    assert any(line.startswith("DIFFERS") and "p:odd" in line and "paper" in line for line in lines)
    assert any(line.startswith("inconclusive") and "p:wide" in line for line in lines)
    assert lines[-1] == "report: R.md" and "24 holds, 1 differs, 1 inconclusive, 5 not run here" in lines[-2]


@pytest.mark.parametrize(
    ("n_held", "n_wide", "n_odd", "n_away", "id_length"),
    [(24, 20, 3, 5, 8), (0, 40, 2, 0, 8), (5, 3, 60, 9, 8), (1, 1, 1, 40, 8), (120, 0, 2, 0, 36), (3, 2, 1, 12, 70)],
)
def test_the_summary_keeps_its_limit_whatever_the_verdicts(n_held, n_wide, n_odd, n_away, id_length):
    """Whatever mix of verdicts (CI once printed 26 lines when 18 claims came out inconclusive): at most 25
    lines, every claim named or counted, the claims that differ shown before any other."""
    from dataclasses import replace

    from pirex.reproduce import report
    from pirex.reproduce.verdict import Verdict

    o = ours(_claim(published=0.998), _values(1.0, 12), 0.95)

    def named(kind: str, i: int) -> str:
        return f"{kind}-{i}".ljust(id_length, "x")

    verdicts = (
        [Verdict(replace(_claim(), id=named("holds", i)), HOLDS, "ok", o) for i in range(n_held)]
        + [Verdict(replace(_claim(), id=named("wide", i)), INCONCLUSIVE, "wide", o) for i in range(n_wide)]
        + [Verdict(replace(_claim(), id=named("odd", i)), DIFFERS, "no", o) for i in range(n_odd)]
        + [Verdict(replace(_claim(), id=named("away", i)), NOT_RUN, f"needs thing {i % 30}") for i in range(n_away)]
    )
    text = report.summary(verdicts, Path("R.md"), took=60.0)
    lines = text.splitlines()
    # a claim's own line is as long as its values; the lines of names are wrapped at 110 characters
    assert len(lines) <= 25 and all(len(line) <= 110 for line in lines[:-2] if " paper " not in line), text
    assert lines[-1] == "report: R.md" and lines[-2].startswith(f"{n_held} holds" if n_held else f"{n_odd} differs")
    if n_odd <= 10:  # room for them: each claim that differs is named, with both values when it has a line
        assert all(f"p:{named('odd', i)}" in text for i in range(n_odd)), text
    shown = {w.strip(",") for line in lines for w in line.split() if w.startswith("p:")}
    counted = sum(
        int(n)
        for line in lines
        if "not shown" in line or " more" in line
        for n in re.findall(r"(\d+) (?:holds|differs|inconclusive|more)", line)
    )
    assert len(shown) + counted == len(verdicts), text  # every claim named once, or counted where it is left out


BENCHMARKS = (
    ("b1_default", 1.0),
    ("b2_inline", 1.0),
    ("b3_dontInline", 0.5),
    ("b4_exclude", 0.05),
    ("b5_fileWrite", 0.1),
    ("b6_tcpSend", 0.02),
)


def _jmh_bundle(
    results, reps: int, commit: str | None = None, variants=("native", "docker"), design=None, images=None, finish=True
):
    record = machine.record(results, docker=False)
    steps = [(v, r) for r in range(reps) for v in variants]

    params = {**experiment.load("jmh").resolve("quick"), "repetitions": reps, "sink_port": 40123}
    b = Bundle.create(
        results,
        "jmh",
        "quick",
        params,
        list(variants),
        steps,
        images or {},
        {"version": "t", "commit": commit or git_version()[1]},
        design=design,
    )
    b.write_machine(before=record, after=record)
    rng = np.random.default_rng(3)
    for v, r in steps:
        base = 1e7 * (1 + 0.01 * r) * (0.998 if v == "docker" else 1)  # the paper's B1 docker/native
        with b.step(v, r) as d:
            raw = {name: [[base * f * (1 + rng.normal(0, 0.001)) for _ in range(3)]] for name, f in BENCHMARKS}
            (d / "jmh.json").write_text(
                json.dumps(
                    [
                        {
                            "benchmark": f"io.github.pirexbench.jmh.X.{n}",
                            "primaryMetric": {"rawData": x, "scoreUnit": "ops/s"},
                        }
                        for n, x in raw.items()
                    ]
                )
            )
            (d / "step.json").write_text(json.dumps({"seconds": 20.0}))
    if finish:
        b.finish()
    return b.path


def _retime(bundle: Path, start: int, steps: list[tuple[int, int]], end: int, resumed: bool = False) -> None:
    """Give a bundle's manifest known times: the run from start to end, its steps from-to (seconds)."""
    iso = lambda t: f"2026-01-01T00:{t // 60:02d}:{t % 60:02d}Z"  # noqa: E731
    m = json.loads((bundle / "manifest.json").read_text())
    m.update(started=iso(start), ended=iso(end), resumed=[iso(end - 1)] if resumed else [])
    for entry, (a, b) in zip(m["completed"], steps, strict=True):
        entry.update(started=iso(a), ended=iso(b))
    (bundle / "manifest.json").write_text(json.dumps(m))


def test_this_machines_bundles_give_the_median_step_and_the_runs_own_part(tmp_path):
    results = tmp_path / "results"
    here = machine.record(results, docker=False)
    need = plan.Need("jmh", None, "quick", ["native", "docker"])
    assert plan.measured_here(need, results, here) is None
    a, b, c = (_jmh_bundle(results, 1) for _ in range(3))
    _retime(a, 0, [(30, 40), (40, 52)], 60)  # steps of 10 and 12 s, 38 s outside them
    _retime(b, 0, [(10, 24), (24, 38)], 100)  # 14 and 14 s, 72 s outside
    _retime(c, 0, [(5, 15), (15, 25)], 3000, resumed=True)  # its wall time holds a pause: steps only
    got = plan.measured_here(need, results, here)
    # steps 10, 12, 14, 14, 10, 10; runs 38 and 72; disk: the median of the complete, never-resumed bundles' per step
    per_step = sorted(plan._bytes(x) / 1e6 / 2 for x in (a, b))
    assert got == plan.Measured(step=11.0, run=55.0, disk=pytest.approx(sum(per_step) / 2))
    durations = plan.measured_durations([need], results, here, 1e7)
    assert durations["jmh"]["score"] == 1e7
    assert durations["jmh"]["quick"] == {"step": 11.0, "run": 55.0, "disk": round(sum(per_step) / 2, 3)}


def test_a_reproduction_judges_the_bundles_there_are_and_writes_its_report(tmp_path):
    results = tmp_path / "results"
    bundle = _jmh_bundle(results, 6)
    out = reproduction.reproduce(
        reproduction.Options(["icpe18"], results_dir=results, reuse_only=True), run_one=None, echo=lambda *_: None
    )
    report = (out / "REPORT.md").read_text()
    html = (out / "report.html").read_text()
    state = ReproductionState.read(out).verdicts
    assert state["icpe18:t1-b1-docker"] == HOLDS  # docker 0.2 % slower, as the paper's
    assert state["icpe18:t1-b3-not-inlined"] == HOLDS  # half the throughput: the paper's direction
    assert state["icpe18:t3-read-docker"] == NOT_RUN  # no jpa-rest bundle, and --reuse-only
    assert state["icpe18:t2-spass-docker"] == NOT_RUN and "SPASS-meter" in report  # bring-your-own, not here
    assert "## Deviations from the papers" in report and "Java 17" in report
    assert len(state) == len(claims.load("icpe18").claims)  # every claim has a verdict or a reason
    assert bundle.name in report and "data:image/png;base64," in html
    assert (out / "tables" / "jmh-quick" / "table1.csv").is_file()


def test_a_resumed_reproduction_does_not_rerun_what_finished(tmp_path):
    results = tmp_path / "results"
    _jmh_bundle(results, 5)
    ran = []

    def run_one(need, opts):
        ran.append(need.key)
        raise PirexError("killed")

    first = reproduction.reproduce(reproduction.Options(["icpe18"], results_dir=results), run_one, echo=lambda *_: None)
    assert "jmh@quick" not in ran and ran  # the jmh bundle of this commit and machine is reused
    ran.clear()
    again = reproduction.reproduce(
        reproduction.Options([], results_dir=results, resume=first), run_one, echo=lambda *_: None
    )
    assert again == first and "jmh@quick" not in ran


def test_set_changes_one_experiments_runs_and_a_bundle_of_other_parameters_is_not_reused(tmp_path):
    sets = reproduction.parse_sets(["jmh.iterations=2", "jmh.time=100ms", "moobench.calls=500"])
    assert sets == {"jmh": {"iterations": 2, "time": "100ms"}, "moobench": {"calls": 500}}
    for bad, says in [
        ("iterations=2", "EXPERIMENT.NAME=VALUE"),
        ("jmh.iterations=-1", "iterations"),
        ("jmh.frobnicate=1", "frobnicate"),
        ("nosuch.x=1", "no experiment"),
    ]:
        with pytest.raises(PirexError, match=says):
            reproduction.parse_sets([bad])
    results = tmp_path / "results"
    _jmh_bundle(results, 5)  # the quick profile's parameters
    here = machine.record(results, docker=False)
    (need,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires", sets) if n.experiment == "jmh"]
    assert need.overrides == {"iterations": 2, "time": "100ms"}
    assert plan.matching_bundles(need, results, git_version()[1], here) == []  # other parameters: not reused
    (plain,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires") if n.experiment == "jmh"]
    assert len(plan.matching_bundles(plain, results, git_version()[1], here)) == 1


def test_a_views_claims_run_only_the_cases_they_compare():
    from pirex.runner import runplan

    every = claims.load("icpe18").claims
    (view,) = [n for n in plan.needs(every, "full") if n.view == "fluctuation"]
    assert set(view.cases) == {
        "base",
        "parallel-gc",
        "time-only",
        "ram-drive",
        "one-core",
        "two-cores",
        "max-clock",
        "min-clock",
        "no-swap",
        "depth-1",
    }
    missing = {"cpufreq": "no cpufreq", "swap": "no swap", "spass-meter": "bring it"}  # a VM without SPASS-meter
    (view,) = [
        n
        for n in plan.needs([c for c in every if not plan.blocked(c, missing)], "full", missing=missing)
        if n.view == "fluctuation"
    ]
    assert set(view.cases) == {"base", "parallel-gc", "ram-drive", "one-core", "two-cores", "depth-1"}
    matrix = experiment.load("moobench").matrices["fluctuation"]
    assert runplan._chosen_cases(matrix, ("base", "depth-1")) == {"base", "depth-1"}
    assert len(runplan._chosen_cases(matrix, None)) == len(matrix.cases)
    with pytest.raises(PirexError, match="--cases nosuch: the fluctuation matrix has the cases base, "):
        runplan._chosen_cases(matrix, ("base", "nosuch"))


def test_a_reproduction_runs_only_the_metrics_its_claims_compare_and_an_aa_copy_at_full():
    icpe18 = claims.load("icpe18").claims
    missing = {"spass-meter": "bring your own"}
    by_key = {n.key: n for n in plan.needs(icpe18, "full", aa=True, missing=missing)}
    assert by_key["moobench@paper"].overrides == {"configurations": "baseline,kieker-text"}
    assert by_key["moobench[fluctuation]@paper"].overrides == {"configurations": "kieker-text"}
    assert by_key["moobench@paper"].variants == ["native", "docker", "native-aa"]
    assert "native-aa" not in by_key["moobench[fluctuation]@paper"].variants  # cases, not variants, there
    chosen = plan.needs(icpe18, "kick-the-tires", {"moobench": {"configurations": "baseline"}}, missing=missing)
    assert {n.key: n.overrides for n in chosen}["moobench@quick"] == {"configurations": "baseline"}  # --set wins
    assert all("native-aa" not in n.variants for n in chosen)  # no A/A unless asked


def test_a_reused_bundle_that_fails_verification_is_left_out_and_run_again_or_with_reuse_only_not_judged(tmp_path):
    results = tmp_path / "results"
    bundle = _jmh_bundle(results, 5)
    f = bundle / "docker" / "3" / "jmh.json"
    f.write_text(f.read_text().replace("1", "2", 1))  # one byte (b1_default becomes b2_default), same size
    ran = []

    def run_one(need, opts):
        ran.append(need.key)
        raise PirexError("not here")

    out = reproduction.reproduce(reproduction.Options(["icpe18"], results_dir=results), run_one, echo=lambda *_: None)
    assert "jmh@quick" in ran  # not reused: run again
    state = ReproductionState.read(out)
    assert list(state.left_out) == [str(bundle)] and str(f) in state.left_out[str(bundle)]
    out = reproduction.reproduce(
        reproduction.Options(["icpe18"], results_dir=results, reuse_only=True), run_one=None, echo=lambda *_: None
    )
    state = ReproductionState.read(out)
    assert state.verdicts["icpe18:t1-b1-docker"] == NOT_RUN  # nothing judged from it
    report = (out / "REPORT.md").read_text()
    assert f"- `{bundle}`: {f}: changed: its sha256 differs from the manifest's" in report


def test_reuse_only_judges_bundles_with_fewer_repetitions_than_a_run_would_make(tmp_path):
    results = tmp_path / "results"
    _jmh_bundle(results, 3)  # make run's quick bundle: 3 repetitions
    here = machine.record(results, docker=False)
    (need,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires") if n.experiment == "jmh"]
    assert plan.matching_bundles(need, results, git_version()[1], here) == []  # a reproduction runs 5
    assert len(plan.matching_bundles(need, results, git_version()[1], here, any_repetitions=True)) == 1
    out = reproduction.reproduce(
        reproduction.Options(["icpe18"], results_dir=results, reuse_only=True), run_one=None, echo=lambda *_: None
    )
    verdict = ReproductionState.read(out).verdicts["icpe18:t1-b1-docker"]
    assert verdict == INCONCLUSIVE  # judged on what there is: too few repetitions for an interval


def test_reuse_only_judges_another_commits_bundle_and_says_so_but_a_run_does_not_reuse_it(tmp_path):
    results = tmp_path / "results"
    older = _jmh_bundle(results, 5, commit="0" * 40)
    ran = []

    def run_one(need, opts):
        ran.append(need.key)
        raise PirexError("not here")

    reproduction.reproduce(reproduction.Options(["icpe18"], results_dir=results), run_one, echo=lambda *_: None)
    assert "jmh@quick" in ran  # a run measures with this commit
    said = []
    out = reproduction.reproduce(
        reproduction.Options(["icpe18"], results_dir=results, reuse_only=True), run_one=None, echo=said.append
    )
    assert "jmh@quick" in said[0] and "bundle(s) of commit 000000000000, this machine" in said[0]
    report = (out / "REPORT.md").read_text()
    assert "Bundles of another commit" in report and "jmh@quick at 000000000000" in report and older.name in report
    assert ReproductionState.read(out).verdicts["icpe18:t1-b1-docker"] == HOLDS
    newer = _jmh_bundle(results, 5, commit="1" * 40)  # two commits' bundles: the newest commit's alone, never a mix
    assert plan.of_newest_commit([older, newer]) == [max(older, newer, key=lambda b: b.name)]  # one commit's


def test_a_bundle_with_more_metrics_than_the_claims_compare_is_as_good():
    wanted = {"repetitions": 5, "configurations": "baseline,kieker-text", "calls": 100}
    have = {"repetitions": 5, "configurations": "baseline,kieker-dump,kieker-text", "calls": 100}
    assert plan._same_parameters(have, wanted, "configurations")
    assert not plan._same_parameters({**have, "configurations": "baseline"}, wanted, "configurations")
    assert not plan._same_parameters({**have, "calls": 99}, wanted, "configurations")
    assert not plan._same_parameters(have, wanted)  # without a metrics parameter: exact


def test_a_resumed_reproduction_keeps_its_bundles_from_an_earlier_commit(tmp_path, monkeypatch):
    results = tmp_path / "results"
    ran = []

    def run_one(need, opts):  # the first session: jmh completes, then the session ends
        ran.append(need.key)
        if need.experiment == "jmh":
            return _jmh_bundle(results, 5)
        raise PirexError("the session ended")

    sets = {"moobench": {"calls": 500}}
    first = reproduction.reproduce(
        reproduction.Options(["icpe18"], results_dir=results, sets=sets, aa=True), run_one, echo=lambda *_: None
    )
    assert "jmh@quick" in ran
    monkeypatch.setattr(reproduction, "git_version", lambda: ("v2", "a-later-commit"))  # the next session's code
    ran.clear()
    seen = {}

    def run_again(need, opts):
        seen[need.key] = (need.overrides, need.variants)
        return run_one(need, opts)

    reproduction.reproduce(reproduction.Options([], results_dir=results, resume=first), run_again, echo=lambda *_: None)
    assert "jmh@quick" not in ran and ran  # its bundle is kept; the rest is tried again
    overrides, variants = seen["moobench@quick"]
    assert overrides["calls"] == 500 and "native-aa" in variants  # --set and --aa kept across the resume


def test_a_wide_interval_that_contains_the_value_is_inconclusive_not_holds():
    wide = ours(_claim(), _values(1.0, 8, sd=0.2), 0.95)
    assert wide.interval.low < 0.998 < wide.interval.high  # it contains the paper's value...
    v = judge(_claim("within", 0.998, tolerance=0.02), wide, None, False)
    assert v.verdict == INCONCLUSIVE and "crosses an edge" in v.reason  # ...and proves nothing


def _at(low: float, high: float) -> Ours:
    """Ours with a given interval (log_ratios for the repetitions an inconclusive verdict asks for)."""
    value = (low * high) ** 0.5
    return Ours(stats.Interval(value, low, high, 8, 0.95, "t-log"), "B1", (0.0, 0.01, -0.01, 0.02))


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.97, 1.04, HOLDS),  # no change beyond 1 +/- 5 %, whatever the paper's own ratio (0.964)
        (0.96, 0.99, HOLDS),  # a significant but small change is still "no significant change" within the margin
        (1.06, 1.09, DIFFERS),  # an 8 % change: more than the margin, above 1 as below
        (0.90, 0.94, DIFFERS),
        (0.93, 0.99, INCONCLUSIVE),  # crosses 0.95: more repetitions decide
        (0.90, 1.10, INCONCLUSIVE),
    ],
)
def test_no_change_is_judged_against_1_within_the_margin(low, high, verdict):
    c = dataclasses.replace(_claim("equivalent", 0.964), margin=0.05)
    v = judge(c, _at(low, high), None, False)
    assert v.verdict == verdict and "1 ±5 %" in v.reason


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.990, 0.999, HOLDS),  # slower, by at most 2 %
        (1.001, 1.010, DIFFERS),  # not slower at all
        (0.950, 0.970, DIFFERS),  # slower by more than "slightly"
        (0.995, 1.004, INCONCLUSIVE),  # contains 1
        (0.970, 0.990, INCONCLUSIVE),  # crosses 0.98
    ],
)
def test_slightly_slower_is_a_direction_and_a_size(low, high, verdict):
    c = dataclasses.replace(_claim("direction-at-most", 0.998, "less"), margin=0.02)
    assert judge(c, _at(low, high), None, False).verdict == verdict
    greater = dataclasses.replace(c, direction="greater")  # the mirror image: above 1 by at most 2 %
    assert judge(greater, _at(2 - high, 2 - low), None, False).verdict == verdict


def test_a_margin_belongs_to_the_rules_that_need_one(tmp_path):
    f = _write(tmp_path, lambda d: _claim_of(d, "t5-ram-drive").pop("margin"))
    with pytest.raises(PirexError, match=r"\(t5-ram-drive\).margin: expected a margin exactly for the rules"):
        claims.load(f)
    f = _write(tmp_path, lambda d: _claim_of(d, "t1-b3-not-inlined").update(margin=0.1))
    with pytest.raises(PirexError, match=r"\(t1-b3-not-inlined\).margin: expected a margin exactly"):
        claims.load(f)
    by_id = {c.id: c for c in claims.load("icpe18").claims}
    assert by_id["t5-ram-drive"].rule == "equivalent" and by_id["t5-ram-drive"].margin == 0.05
    assert by_id["t1-b1-docker"].rule == "direction-at-most" and by_id["t1-b1-docker"].direction == "less"


def test_the_budget_is_for_the_whole_reproduction_and_refuses_runs_of_unknown_length(tmp_path, monkeypatch):
    results, clock, ran = tmp_path / "results", [0.0], []
    monkeypatch.setattr(reproduction, "monotonic", lambda: clock[0])  # this module's clock only
    monkeypatch.setattr(plan, "calibration_score", lambda: 8810138.0)  # the same estimates in both
    opts = reproduction.Options(["icpe18"], results_dir=results, budget=1.0)
    out = reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)  # nothing fits in a second
    state = ReproductionState.read(out)
    estimates = {k: s for k, s in state.estimates.items() if s is not None}
    assert len(estimates) >= 2 and all("over the budget" in state.failed[k] for k in estimates)

    def run_one(need, opts):  # each run takes its estimate, then fails (no bundle needed here)
        ran.append(need.key)
        clock[0] += need.seconds
        raise PirexError("stopped")

    first, *rest = sorted(estimates.values())
    assert rest[0] > first
    budget = first + min(rest[0] - first, first) / 2  # room for the shortest run alone, and not for a second one
    opts = reproduction.Options(["icpe18"], results_dir=results, budget=budget)
    state = ReproductionState.read(reproduction.reproduce(opts, run_one, echo=lambda *_: None))
    assert len(ran) == 1 and state.estimates[ran[0]] == first
    assert all("over the budget" in state.failed[k] for k in estimates if k not in ran)
    unknown = [k for k, s in state.estimates.items() if s is None]
    assert all("time unknown" in state.failed[k] for k in unknown)


def test_a_duet_reproduction_runs_each_pair_of_variants_at_once_where_the_experiment_suits_it():
    icpe18 = claims.load("icpe18").claims
    needs = {n.key: n for n in plan.needs(icpe18, "full", aa=True, design="duet")}
    docker, aa = needs["jmh@paper duet native,docker"], needs["jmh@paper duet native,native-aa"]
    assert docker.design == aa.design == "duet" and docker.variants == ["native", "docker"]
    assert "t1-b1-docker" in docker.claims and "t1-b1-docker" in aa.claims  # the A/A pair: its noise floor
    assert "t1-b3-not-inlined" in docker.claims and "t1-b3-not-inlined" not in aa.claims  # one variant: joins a pair
    rest = needs["jpa-rest@paper"]  # three servers need every CPU: experiment.yaml says it does not suit the duet
    assert rest.design == "interleaved" and rest.variants == ["native", "docker", "native-aa"]
    assert needs["moobench[fluctuation]@paper"].design == "interleaved"  # a view's cases set the machine
    note = plan.design_note(list(needs.values()))
    assert "for jmh@paper, moobench@paper" in note and "jpa-rest@paper (a step runs three processes" in note
    # a duet's repetition takes one step's time: half what the interleaved run of the same steps takes
    (plain,) = [n for n in plan.needs(icpe18, "full") if n.key == "jmh@paper"]
    plain.variants = ["native", "docker"]
    for n in (docker, plain):
        plan.estimate(n, experiment.load("jmh"), 1e7, plan.Measured(10.0, 5.0))
    assert docker.steps == 2 * 10 and docker.seconds == 10 * 10.0 + 5.0  # ten repetitions, two steps each at once
    assert plain.steps == 2 * 10 and plain.seconds == 20 * 10.0 + 5.0
    flipped = dataclasses.replace(icpe18[0], numerator=icpe18[0].denominator, denominator=icpe18[0].numerator)
    both = plan.needs([icpe18[0], flipped], "full", design="duet")  # docker/native and native/docker: one run
    assert [n.key for n in both] == ["jmh@paper duet native,docker"] and len(both[0].claims) == 2
    with pytest.raises(PirexError, match="--design 'sideways'"):
        plan.needs(icpe18, "full", design="sideways")


def test_a_duet_ratio_pairs_the_variants_that_ran_at_once_and_its_aa_comes_from_its_own_pair():
    rng = np.random.default_rng(5)
    values = []
    for bundle, other, ratio in (("duet-1", "docker", 0.95), ("duet-aa", "native-aa", 1.0)):
        for rep in range(8):
            base = 100 * (1 + rng.normal(0, 0.05))
            for v, x in (("native", base), (other, base * ratio * (1 + rng.normal(0, 0.002)))):
                values.append(RunValue("jmh", bundle, "d", v, rep, "B1", x, "ops/s"))
    o = ours(_claim(published=0.95), values, 0.95)
    assert o.interval.n == 8 and "only in" not in (o.interval.note or "")  # the A/A pair's native is not dropped
    assert abs(o.interval.value - 0.95) < 0.005 and o.aa.low < 1 < o.aa.high


def test_a_duet_bundle_answers_a_duet_need_and_only_a_duet_need(tmp_path, monkeypatch):
    results = tmp_path / "results"
    bundle = _jmh_bundle(results, 6, design="duet")
    (ratios,) = [t.table for t in jmh.tables([bundle]) if t.name.startswith("ratios")]
    assert "forks ran at the same moment, each on half of the CPUs (duet)" in ratios.title
    here = machine.record(results, docker=False)
    commit = git_version()[1]
    icpe18 = claims.load("icpe18").claims
    (duet,) = [n for n in plan.needs(icpe18, "kick-the-tires", design="duet") if n.experiment == "jmh"]
    (plain,) = [n for n in plan.needs(icpe18, "kick-the-tires") if n.experiment == "jmh"]
    assert len(plan.matching_bundles(duet, results, commit, here)) == 1
    assert plan.matching_bundles(plain, results, commit, here) == []  # its steps ran on half of the CPUs, at once
    aa_need = dataclasses.replace(duet, variants=["native", "native-aa"])
    assert sources.answering(duet, [bundle]) == [bundle]  # --bundles: a duet bundle answers its own pair only
    assert sources.answering(aa_need, [bundle]) == sources.answering(plain, [bundle]) == []
    assert plan.measured_durations([duet], results, here, 1e7) == {}  # half the CPUs: no step of durations.yaml
    opts = reproduction.Options(["icpe18"], results_dir=results, reuse_only=True, design="duet")
    out = reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)
    state = ReproductionState.read(out)
    assert state.design == "duet" and state.verdicts["icpe18:t1-b1-docker"] == HOLDS
    assert "Design: duet" in (out / "REPORT.md").read_text()
    asked = []  # a run of a duet need asks the runner for the duet
    from pirex.runner import run as runner

    monkeypatch.setattr(runner, "run", lambda o, later=None: asked.append(o) or results)
    reproduction.run_with_runner(dataclasses.replace(duet, variants=["native", "native-aa"]), opts)
    assert asked[0].design == "duet" and asked[0].variants == "native,native-aa"


def test_every_need_wants_what_its_runs_record_as_requested():
    """The parameters a reproduction's reuse compares (plan.parameters) are those its runs record (runplan.requested,
    with the options run_with_runner gives): for a view too, whose matrix sets its own (moobench's fluctuation:
    recursion depth 10). They once differed there, so no fluctuation bundle was ever reused: `--reuse-only` left
    every Table 5 claim not run, and every reproduction ran the matrix again."""
    from pirex.runner import run, runplan

    missing = {"spass-meter": "bring it", "cpufreq": "none", "swap": "none"}
    for level in ("kick-the-tires", "full"):
        for n in plan.needs(claims.load("icpe18").claims + claims.load("ssp17").claims, level, missing=missing):
            exp = experiment.load(n.experiment)
            reps = plan.repetitions(exp, n.profile)
            opts = run.Options(n.experiment, n.profile, overrides={"repetitions": reps, **n.overrides}, matrix=n.view)
            asked = runplan.requested(exp, opts)
            assert plan._same_parameters(asked, plan.parameters(n, exp), exp.metrics_parameter), (n.key, asked)
    (view,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires", missing=missing) if n.view]
    assert plan.parameters(view, experiment.load("moobench"))["recursion_depth"] == 10


def _ran(digest: str) -> dict:
    return {"jmh": {"name": "jmh", "digest": digest, "platform": "linux/amd64", "origin": {"kind": "imported"}}}


def test_a_rerun_of_an_artifact_reuses_and_resumes_only_bundles_that_ran_its_images(tmp_path, monkeypatch):
    """A rerun (--artifact) on a machine that has bundles of this commit from its own build: none of them is the
    rerun's (they ran other images), neither a complete one to reuse nor an unfinished one to finish."""
    results = tmp_path / "results"
    theirs, ours = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    _jmh_bundle(results, 5, images={"jmh": {**_ran(ours)["jmh"], "origin": {"kind": "built"}}})
    ran = []

    def run_one(need, opts):
        ran.append(need.key)
        raise PirexError("not here")

    opts = dict(results_dir=results, experiments=["jmh"], artifact=tmp_path / "a.tar", artifact_images={"jmh": theirs})
    out = reproduction.reproduce(reproduction.Options(["icpe18"], **opts), run_one, echo=lambda *_: None)
    assert ran == ["jmh@quick"]  # this checkout's bundle is not the artifact's rerun
    assert ReproductionState.read(out).artifact_images == {"jmh": theirs}
    rerun_bundle = _jmh_bundle(results, 5, images=_ran(theirs))
    ran.clear()
    out = reproduction.reproduce(reproduction.Options(["icpe18"], **opts), run_one, echo=lambda *_: None)
    assert ran == [] and ReproductionState.read(out).bundles["jmh@quick"] == [rerun_bundle]
    plain = reproduction.reproduce(reproduction.Options(["icpe18"], results_dir=results), run_one, echo=lambda *_: None)
    assert ReproductionState.read(plain).artifact_images is None

    from pirex.runner import run as runner

    other = tmp_path / "other"
    _jmh_bundle(other, 5, images=_ran(ours), finish=False)  # a killed plain reproduction's run
    calls = []
    monkeypatch.setattr(runner, "resume", lambda b: calls.append(("resume", b)) or b)
    monkeypatch.setattr(runner, "run", lambda o, later=None: calls.append(("run", o.tag)) or other)
    (need,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires") if n.experiment == "jmh"]
    opts = reproduction.Options(["icpe18"], results_dir=other, tag="artifact-x", artifact_images={"jmh": theirs})
    reproduction.run_with_runner(need, opts)
    assert calls == [("run", "artifact-x")]  # a new run on the artifact's images, not the other images' finished
    calls.clear()
    reproduction.run_with_runner(need, dataclasses.replace(opts, artifact_images={"jmh": ours}))
    assert [c[0] for c in calls] == ["resume"]


def test_a_deployments_bundle_answers_no_need_even_one_naming_its_variant(tmp_path):
    """`pirex compose` and `pirex swarm` write a bundle of one step (runner/deployment_bundle.py): not a planned run."""
    jpa, here = experiment.load("jpa-rest"), machine.record(tmp_path, docker=False)
    with deployment_bundle.writing(tmp_path, jpa, "quick", (), "swarm", {}) as b:
        b.write_machine(before=here, after=here)
        with deployment_bundle.driver_step(b):
            pass
    need = plan.Need("jpa-rest", None, "quick", ["swarm"])
    assert sources.answering(need, [b.path]) == []
    assert plan.matching_bundles(need, tmp_path, None, here, any_repetitions=True) == []


def test_bundles_of_one_dirty_commit_that_ran_different_builds_are_never_pooled(tmp_path):
    """Issue 54: a build with a deliberate x0.5 bug and the fixed build, both on one "-dirty" commit, were judged as
    one run of 10 repetitions. Of a commit's bundles that ran different images, only the newest build's answer."""
    results = tmp_path / "results"
    old = _jmh_bundle(results, 5, commit="12bb975-dirty", images=_ran("sha256:" + "a" * 64))
    time.sleep(1.1)  # run ids sort by their start's second: the next build's bundles are the newer
    new = _jmh_bundle(results, 5, commit="12bb975-dirty", images=_ran("sha256:" + "b" * 64))
    same = _jmh_bundle(results, 5, commit="12bb975-dirty", images=_ran("sha256:" + "b" * 64))
    (need,) = [n for n in plan.needs(claims.load("icpe18").claims, "kick-the-tires") if n.experiment == "jmh"]
    here = machine.record(results, docker=False)
    left: dict[str, str] = {}
    assert sorted(plan.matching_bundles(need, results, "12bb975-dirty", here, superseded=left)) == sorted([new, same])
    assert list(left) == [str(old)] and "another build of commit 12bb975-dirty (jmh aaaaaaaaaaaa)" in left[str(old)]
    assert "left out: " + str(old) in reproduction._plan_text([], [], [], {}, reproduction.Options([]), {}, left)
    assert old not in plan.matching_bundles(need, results, None, here, any_repetitions=True)
    # a rerun of an artifact reuses none of the bundles the artifact's reproduction judged (issue 54)
    assert plan.matching_bundles(need, results, "12bb975-dirty", here, not_runs={new.name}) == [same]
