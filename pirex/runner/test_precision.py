"""--precision: the pilot decides the second stage once (Stein), and the report says what was reached."""

import dataclasses

from pirex.reproduce.test_reproduce import _jmh_bundle
from pirex.runner import precision
from pirex.runner.run import Options


def test_the_pilot_plans_the_second_stage_and_the_precision_reached_is_reported(tmp_path):
    runs = []

    def run(opts):
        reps = (opts.overrides or {}).get("repetitions", 5)
        runs.append(reps)
        return _jmh_bundle(tmp_path / f"r{len(runs)}", reps)

    opts = Options("jmh", "quick", "native,docker", results_dir=tmp_path, precision=0.0005, confidence=0.95)
    lines = []
    bundles = precision.two_stage(opts, run, lines.append)
    assert len(bundles) == 2 and runs[0] == 5 and runs[1] > 0  # the pilot, then what Stein's n asks for
    plan = precision.plan(__import__("pirex").experiment.load("jmh"), bundles[0], precision.Target(0.0005))
    assert runs[1] == plan.extra and "precision plan (from the pilot" in lines[0]
    assert any("B1:" in ln and f"over {5 + plan.extra} repetitions" in ln for ln in lines[1:])


def test_a_budget_caps_the_second_stage(tmp_path):
    runs = []

    def run(opts):
        runs.append((opts.overrides or {}).get("repetitions", 5))
        return _jmh_bundle(tmp_path / f"r{len(runs)}", runs[-1])

    opts = dataclasses.replace(
        Options("jmh", "quick", "native,docker", results_dir=tmp_path), precision=0.00001, budget=7 * 40.0
    )  # 7 repetitions of 2 steps x 20 s
    lines = []
    precision.two_stage(opts, run, lines.append)
    assert runs == [5, 2] and "the budget of" in lines[0] and "not reached" in "".join(lines)
