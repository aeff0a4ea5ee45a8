"""ICPE'18 Figure 3 and section 5.2's interrupt kinds from the counters the runner records around each step, against
counts made by hand from the records in testdata/interrupts (README.md there)."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pirex.analysis import interrupts, moobench, precision, stats
from pirex.analysis.interface import RunValue
from pirex.core import experiment
from pirex.core.bundle import Bundle, write_step_info
from pirex.reproduce import claims, verdict

DATA = Path(__file__).parent / "testdata" / "interrupts"
QUICK = experiment.load("moobench").resolve("quick")


def _counters(timer: int, eth: int) -> dict:
    return {
        "cpus": 2,
        "lines": {
            "11": {"counts": [timer, timer], "description": "GICv2 30 Level arch_timer"},
            "56": {"counts": [eth, 0], "description": "BCM2835 DWC OTG Controller"},
        },
    }


def test_interrupts_per_second_per_source_and_the_figure(tmp_path):
    b = Bundle.create(
        tmp_path,
        "jmh",
        "quick",
        {},
        ["native", "docker"],
        [(v, r) for v in ("native", "docker") for r in (0, 1)],
        {},
        {"version": "t", "commit": "c"},
    )
    for v, eth in (("native", 100), ("docker", 300)):
        with b.step(v, 0) as d:
            (d / "interrupts.json").write_text(json.dumps({"before": _counters(0, 0), "after": _counters(500, eth)}))
            write_step_info(d, ["java"], 0, 10.0)
        with b.step(v, 1) as d:  # /proc/interrupts unreadable then: no record, no value
            (d / "interrupts.json").write_text(json.dumps({"before": None, "after": None}))
            write_step_info(d, ["java"], 0, 10.0)
    b.finish()
    data = interrupts.per_step([b.path])
    assert data["native"]["11 arch_timer"] == [100.0]  # 2 CPUs x 500 in 10 s
    assert data["docker"]["56 Controller"] == [30.0]
    files = interrupts.figure([b.path], tmp_path / "fig")
    assert [f.name for f in files] == ["interrupts.png", "interrupts.svg"] and all(f.stat().st_size for f in files)
    assert interrupts.figure([], tmp_path / "none") == []


def _step_with(tmp_path: Path, record: str) -> Path:
    d = tmp_path / record
    d.mkdir()
    shutil.copy(DATA / record, d / "interrupts.json")
    return d


def test_kinds_of_a_pi3_by_hand(tmp_path):
    # timer: IRQ 17's arch_timer, (3500-1000)+(3000-2000)+(3500-3000)+(4000-4000); IRQ 16's none; IPI1's 4 timer
    # broadcasts and the USB controller's 12,000 are other kinds
    counts = interrupts.kind_counts(_step_with(tmp_path, "pi3.json"))
    assert counts == {"timer": 4000, "work": 1000, "rescheduling": 3, "function-call": 2}


def test_kinds_of_an_x86_vm_by_hand(tmp_path):
    # LOC 6000+2000; IWI none; RES 300+100; CAL 50+50; IRQ 0's legacy timer, TLB and the new line 30 left out
    counts = interrupts.kind_counts(_step_with(tmp_path, "x86-ram-drive.json"))
    assert counts == {"timer": 8000, "work": 0, "rescheduling": 400, "function-call": 100}
    assert interrupts.kind_counts(tmp_path) is None  # a step of an older bundle: no record


@pytest.mark.parametrize(
    ("description", "kind"),
    [
        ("Local timer interrupts", "timer"),
        ("GICv2  30 Level     arch_timer", "timer"),
        ("IO-APIC   2-edge      timer", None),
        ("Timer broadcast interrupts", None),
        ("Single function call interrupts", "function-call"),
        ("NMI function call interrupts", None),
        ("", None),
    ],
)
def test_a_line_is_of_a_kind_by_its_description(description, kind):
    assert interrupts.kind(description) == kind


def _fluctuation_bundle(tmp_path: Path, steps: dict, configurations=("kieker-text",), matrix=True) -> Path:
    """steps: case -> interrupts.json record per repetition (a file in DATA); every raw file 20 calls of 1 µs."""
    cases = list(steps)
    reps = len(steps[cases[0]])
    plan = [{"variant": v, "repetition": r, "params": dict(QUICK)} for r in range(reps) for v in cases]
    b = Bundle.create(tmp_path, "moobench", "quick", QUICK, cases, plan, {}, {"version": "t", "commit": "c"})
    if matrix:
        b.write_run_info({"matrix": {"name": "fluctuation"}, "skipped_variants": {}})
    b.write_machine(before={"hostname": "vm"}, after={"hostname": "vm"})
    for s in plan:
        with b.step(s["variant"], s["repetition"]) as d:
            for cfg in configurations:
                (d / f"raw-{cfg}.csv").write_text("1;1000;123456;0\n" * 20)
            shutil.copy(DATA / steps[s["variant"]][s["repetition"]], d / "interrupts.json")
    b.finish()
    return b.path


def _interrupt_values(values) -> dict:
    return {(v.variant, v.repetition, v.metric): v for v in values if " interrupts " in v.metric}


def test_a_step_of_one_configuration_gives_its_interrupts_per_1000_calls(tmp_path):
    path = _fluctuation_bundle(
        tmp_path, {"ram-drive": ["x86-ram-drive.json"] * 2, "one-core": ["x86-one-core.json", "x86-ram-drive.json"]}
    )
    got = _interrupt_values(moobench.run_values([path], "fluctuation"))
    # count / 20 calls x 1,000, nothing added, the count and the calls beside; IRQ work: none in any step, no values
    timer = got[("one-core", 0, "kieker-text interrupts timer")]
    assert (timer.value, timer.count, timer.exposure) == (pytest.approx(16100 / 20 * 1000), 16100, 20.0)
    assert got[("one-core", 0, "kieker-text interrupts rescheduling")].value == pytest.approx(3 / 20 * 1000)
    assert got[("one-core", 1, "kieker-text interrupts function-call")].value == pytest.approx(100 / 20 * 1000)
    assert got[("ram-drive", 1, "kieker-text interrupts timer")].unit == "per 1,000 calls"
    assert {m for _, _, m in got} == {f"kieker-text interrupts {k}" for k in ("timer", "rescheduling", "function-call")}
    mean = next(v for v in moobench.run_values([path], "fluctuation") if v.metric == "kieker-text")
    assert got[("ram-drive", 0, "kieker-text interrupts timer")].setup == mean.setup  # never pooled across setups


def test_a_step_of_several_configurations_or_a_plain_run_gives_none(tmp_path):
    both = _fluctuation_bundle(
        tmp_path / "a", {"ram-drive": ["x86-ram-drive.json"]}, configurations=("baseline", "kieker-text")
    )
    assert not _interrupt_values(moobench.run_values([both], "fluctuation"))  # whose interrupts: unknown
    plain = _fluctuation_bundle(tmp_path / "b", {"native": ["x86-ram-drive.json"]}, matrix=False)
    assert not _interrupt_values(moobench.run_values([plain]))  # the default view: means only


def test_section_5_claims_judge_these_values(tmp_path):
    """The claims name the metrics run_values makes (Kieker standing in for SPASS-meter), and their ratio is the
    ratio of counts per call, paired by repetition."""
    paper = claims.load("icpe18")
    found = [c for c in paper.claims if c.numerator and any(" interrupts " in m for m in c.numerator.metrics)]
    assert found, "analysis/icpe18/claims.yaml has no claim on section 5.2's interrupts"
    for c in found:
        for m in (*c.numerator.metrics, *c.denominator.metrics):
            cfg, _, k = m.partition(" interrupts ")
            assert k in interrupts.KINDS and cfg in ("spass-meter", "kieker-text"), (c.id, m)
    path = _fluctuation_bundle(
        tmp_path, {"ram-drive": ["x86-ram-drive.json"] * 2, "one-core": ["x86-one-core.json", "x86-ram-drive.json"]}
    )
    values = moobench.run_values([path], "fluctuation")
    timer = next(c for c in found if c.numerator.metrics[-1] == "kieker-text interrupts timer")
    if (timer.numerator.variant, timer.denominator.variant) != ("one-core", "ram-drive"):
        pytest.skip(f"{timer.id} compares other cases")
    o = verdict.ours(timer, values, 0.95)
    assert o.metric == "kieker-text interrupts timer"
    # the counts per (device, bundle, repetition) the verdict compares, and their rate ratio: (16100 + 8000) events
    # against (8000 + 8000) over the same calls; two repetitions are too few for an interval
    m = "kieker-text interrupts timer"
    num = precision.run_counts(values, m, "one-core")
    den = precision.run_counts(values, m, "ram-drive")
    key = next(iter(num))[:2]
    assert (num[(*key, 0)], den[(*key, 1)]) == (stats.Count(16100, 20.0), stats.Count(8000, 20.0))
    r = stats.rate_ratio(num, den, 0.95)
    assert r.value == pytest.approx(24100 / 16000) and r.reason == "no interval: 2 paired repetitions, 5 needed"


def test_a_step_without_interrupts_of_a_kind_is_a_count_of_0_and_its_ratio_an_upper_bound(tmp_path):
    """The issue's case for "avoided more than 98 %": one core took none of a kind in five steps where the other
    took one each. With 0.5 added the ratio was 0.333 [0.332; 0.334]; the counts give 0 [0; 1.09]."""
    mean = RunValue("moobench", "b", "vm", "one-core", 0, "kieker-text", 1.0, "µs")
    steps = [
        (
            _counts_dir(tmp_path / f"{variant}-{j}", n),
            [interrupts.Loop(replace(mean, variant=variant, repetition=j), 20)],
        )
        for j in range(5)
        for variant, n in (("one-core", 0), ("ram-drive", 1))
    ]
    values = [v for v in interrupts.run_values(steps) if v.metric.endswith("rescheduling")]
    assert {(v.variant, v.count, v.value) for v in values} == {("one-core", 0, 0.0), ("ram-drive", 1, 50.0)}
    m = "kieker-text interrupts rescheduling"
    r = stats.rate_ratio(precision.run_counts(values, m, "one-core"), precision.run_counts(values, m, "ram-drive"))
    assert (r.value, r.low, r.method) == (0.0, 0.0, "poisson-exact") and r.high == pytest.approx(1.09, abs=0.005)


def _counts_dir(d: Path, rescheduling: int) -> Path:
    """A step folder whose interrupts.json says `rescheduling` rescheduling interrupts (and 10 timer ones)."""
    d.mkdir()
    lines = {"LOC": "Local timer interrupts", "RES": "Rescheduling interrupts"}
    before = {irq: {"counts": [0], "description": text} for irq, text in lines.items()}
    after = {
        irq: {"counts": [rescheduling if irq == "RES" else 10], "description": text} for irq, text in lines.items()
    }
    (d / "interrupts.json").write_text(json.dumps({"before": {"lines": before}, "after": {"lines": after}}))
    return d
