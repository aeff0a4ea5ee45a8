"""A reproduction's estimates: how long each run will take here, from this machine's bundles or the experiment's
measured durations scaled by a calibration score, and what this machine lacks for a claim (no Docker)."""

from pathlib import Path

import pytest

from pirex.core import experiment
from pirex.core.errors import PirexError
from pirex.reproduce import claims, plan


def _record(cpuinfo: str, arch: str) -> dict:
    """A machine record as `pirex machine` writes it, from a /proc/cpuinfo fixture."""
    from pirex.core import board

    info = board.parse_cpuinfo((Path(board.__file__).parent / "testdata" / "machine" / cpuinfo).read_text())
    return {
        "hostname": "h",
        "architecture": {"uname_machine": arch},
        "cpu": {"model": info["model"], "cores": info["cores"]},
        "pi": {"model": info["board_model"]} if info["board_model"] else None,
    }


@pytest.mark.parametrize(
    ("cpuinfo", "arch", "score", "device"),
    [
        ("x86-server.cpuinfo", "x86_64", 4e7, "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz, 2 cores, x86_64"),
        ("pi4-arm64.cpuinfo", "aarch64", 1e7, "Raspberry Pi 4 Model B Rev 1.4, 4 cores, aarch64"),
        ("pi3-raspbian32.cpuinfo", "armv7l", 4e6, "Raspberry Pi 3 Model B Rev 1.2, 4 cores, armv7l"),
    ],
)
def test_estimates_scale_with_the_machines_speed_but_timed_iterations_do_not(cpuinfo, arch, score, device):

    exp = experiment.load("jmh")
    reference = {"machine": "a reference", "score": 4e7, "paper": {"step": 250.0, "fixed": 200.0}}
    object.__setattr__(exp, "durations", reference)
    need = plan.Need("jmh", None, "paper", ["native", "docker"])
    plan.estimate(need, exp, score=score, here=None)
    slower = 4e7 / score  # 1, 4 and 10 times slower than the reference
    assert need.steps == 2 * exp.resolve("paper")["repetitions"]
    assert need.seconds == pytest.approx(need.steps * (200 + 50 * slower))  # JMH's 200 s of iterations stay 200 s
    assert f"x{slower:.2f} for this one" in need.estimate_from
    here = _record(cpuinfo, arch)
    assert plan.machine_text(here) == device
    measured = plan.measured_durations([need], Path("/nonexistent"), here, score)
    assert measured == {}  # no bundle of this machine: nothing measured to record
    own = {**reference, "paper": {"step": 250.0, "fixed": 200.0, "score": 2e7, "machine": "another VM"}}
    object.__setattr__(exp, "durations", own)  # a profile measured on a machine of its own scales by its score
    plan.estimate(need, exp, score=score, here=None)
    assert need.seconds == pytest.approx(need.steps * (200 + 50 * 2e7 / score))
    assert need.estimate_from.startswith("measured on another VM")
    plan.estimate(need, exp, score=score, here=plan.Measured(12.5, None))  # this machine's own bundles win
    assert need.seconds == pytest.approx(need.steps * 12.5) and need.estimate_from == "bundles of this machine"
    plan.estimate(need, exp, score=score, here=plan.Measured(12.5, 40.0))  # and their run's own part
    assert need.seconds == pytest.approx(need.steps * 12.5 + 40)
    with_run = {**reference, "paper": {"step": 250.0, "fixed": 200.0, "run": 30.0}}
    object.__setattr__(exp, "durations", with_run)  # the run's own part (image export, setup) scales too
    plan.estimate(need, exp, score=score, here=None)
    assert need.seconds == pytest.approx(30 * slower + need.steps * (200 + 50 * slower))
    plan.estimate(need, exp, score=score, here=plan.Measured(12.5, None))  # no bundle here told it: the reference's
    assert need.seconds == pytest.approx(need.steps * 12.5 + 30 * slower)


def test_a_durations_block_that_breaks_its_shape_is_a_load_error(tmp_path):

    src = (experiment.EXPERIMENTS / "fork" / "experiment.yaml").read_text()
    bad_blocks = [
        ("{quick: 3}", "durations.score"),
        ("{score: 1e7, quick: {step: 3, fixed: 9}}", "fixed"),
        ("{score: 1e7, nightly: 3}", "durations.nightly"),
        ("{score: 1e7, quick: -1}", "quick"),
        ("{score: 1e7, quick: {step: 3, machine: a Pi}}", "quick.score"),
        ("{quick: {step: 3, machine: a Pi, score: 0}}", "quick.score"),
        ("{score: 1e7, quick: {step: 3, run: -1}}", "quick.run"),
        ("{score: 1e7, quick: {step: 3, disk: -1}}", "quick.disk: expected megabytes"),
        ("{score: 1e7, quick: {step: 3, disk: a lot}}", "quick.disk"),
        ("{score: 1e7, nomatrix@quick: 3}", "durations.nomatrix@quick"),
        ("{score: 1e7, fluctuation@nightly: 3}", "durations.fluctuation@nightly"),
    ]
    for i, (bad, key) in enumerate(bad_blocks):
        d = tmp_path / str(i)
        d.mkdir()
        (d / "experiment.yaml").write_text(src + f"\ndurations: {bad}\n")
        with pytest.raises(PirexError, match=key):
            experiment.load(d / "experiment.yaml")


def test_a_matrix_has_durations_of_its_own(tmp_path):

    src = (experiment.EXPERIMENTS / "moobench" / "experiment.yaml").read_text()
    block = "{score: 1e7, quick: 6, fluctuation@quick: {step: 3, run: 2}}"
    src = src[: src.index("\ndurations:")] + f"\ndurations: {block}\n"
    (tmp_path / "experiment.yaml").write_text(src)
    exp = experiment.load(tmp_path / "experiment.yaml")
    view = plan.Need("moobench", "fluctuation", "quick", ["native"], cases=["base", "depth-1"])
    plan.estimate(view, exp, score=1e7, here=None)
    assert view.seconds == pytest.approx(2 + view.steps * 3)  # the matrix's own steps
    plain = plan.Need("moobench", None, "quick", ["native", "docker"])
    plan.estimate(plain, exp, score=1e7, here=None)
    assert plain.seconds == pytest.approx(plain.steps * 6)


def test_a_profile_calibrated_again_on_the_blocks_machine_scales_by_its_own_score(tmp_path):

    src = (experiment.EXPERIMENTS / "moobench" / "experiment.yaml").read_text()
    block = "{machine: a VM, score: 1e7, quick: 6, paper: {step: 150, fixed: 100, score: 2e7}}"
    (tmp_path / "experiment.yaml").write_text(src[: src.index("\ndurations:")] + f"\ndurations: {block}\n")
    exp = experiment.load(tmp_path / "experiment.yaml")
    need = plan.Need("moobench", None, "paper", ["native", "docker"])
    plan.estimate(need, exp, score=1e7, here=None)
    assert need.seconds == pytest.approx(need.steps * (100 + 50 * 2))  # its own score: this machine is half as fast
    assert need.estimate_from == "measured on a VM, x2.00 for this one"  # the block's machine, not "another"


def test_blocked_claims_say_what_this_machine_lacks():
    paper = claims.load("icpe18")
    by_id = {c.id: c for c in paper.claims}
    missing = {"cpufreq": "no cpufreq here", "spass-meter": "bring the jar"}
    assert plan.blocked(by_id["t5-max-clock"], missing) == "no cpufreq here"
    assert plan.blocked(by_id["t2-spass-docker"], missing) == "bring the jar"
    assert plan.blocked(by_id["t1-b1-docker"], missing) is None
    assert "needs 3 devices" in plan.blocked(claims.load("ssp17").claims[0], {})


def test_what_this_machine_lacks_comes_from_its_record_and_the_papers_declared_needs(monkeypatch):
    declared = claims.load("icpe18").needs
    assert declared["spass-meter"].glob == "images/moobench/spass-meter/*.jar"
    here = {"capabilities": {"cpufreq": {"available": True}, "pmu": {"available": False, "why": "no PMU here"}}}
    needs = {
        "kit": claims.Requirement("kit", "a kit", "bring the kit"),  # nothing pirex can check: never there
        "tool": claims.Requirement("tool", "a tool", "drop its jar in", glob="pirex/reproduce/*.nothing"),
        "in-tree": claims.Requirement("in-tree", "this module", "-", glob="pirex/reproduce/plan.py"),
        "counters": claims.Requirement("counters", "counters", "a Pi has them", capability="pmu"),
    }
    monkeypatch.setattr(plan.capabilities, "probe", lambda *_: pytest.fail("probed although the record has them"))
    lacks = {k: v for k, v in plan.missing(here, needs).items() if not k.startswith("case ")}  # test_scope.py's
    assert lacks == {
        "pmu": "no PMU here",
        "kit": "bring the kit",
        "tool": "drop its jar in",
        "counters": "a Pi has them",
        "pi": "this machine is not a Raspberry Pi; the claim is about the paper's Pi",  # the kind of machine
    }
    monkeypatch.setattr(plan.capabilities, "probe", lambda *_: {"swap": {"available": False, "why": "no swap"}})
    lacks = {k: v for k, v in plan.missing({}, {}).items() if not k.startswith("case ")}
    assert lacks == {"swap": "no swap", **plan.kind_missing({})}, "a record from before capabilities"
    assert set(plan.kind_missing({"pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"}})) == {"server"}


# JMH's six benchmarks and their throughputs relative to B1 in the synthetic bundles
