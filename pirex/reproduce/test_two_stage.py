"""--precision: the pilot decides the second stage once (Stein), and the report says what was reached."""

import subprocess
import sys

from pirex.core import experiment
from pirex.reproduce import two_stage as precision
from pirex.reproduce.test_reproduce import _jmh_bundle
from pirex.runner.run import Options


def test_the_pilot_plans_the_second_stage_and_the_precision_reached_is_reported(tmp_path):
    runs = []

    def run(opts, later=None):
        reps = (opts.overrides or {}).get("repetitions", 5)
        runs.append(reps)
        return _jmh_bundle(tmp_path / f"r{len(runs)}", reps)

    opts = Options("jmh", "quick", "native,docker", results_dir=tmp_path)
    lines = []
    bundles = precision.two_stage(opts, precision.Target(0.0005, 0.95), run, lines.append)
    assert len(bundles) == 2 and runs[0] == 5 and runs[1] > 0  # the pilot, then what Stein's n asks for
    plan = precision.plan(experiment.load("jmh"), bundles[0], precision.Target(0.0005))
    assert runs[1] == plan.extra and "precision plan (from the pilot" in lines[0]
    assert any("B1:" in ln and f"over {5 + plan.extra} repetitions" in ln for ln in lines[1:])


def test_a_budget_caps_the_second_stage(tmp_path):
    runs = []

    def run(opts, later=None):
        runs.append((opts.overrides or {}).get("repetitions", 5))
        return _jmh_bundle(tmp_path / f"r{len(runs)}", runs[-1])

    opts = Options("jmh", "quick", "native,docker", results_dir=tmp_path)
    lines = []
    precision.two_stage(opts, precision.Target(0.00001, budget=7 * 40.0), run, lines.append)  # 7 reps of 2 x 20 s
    assert runs == [5, 2] and "the budget of" in lines[0] and "not reached" in "".join(lines)


def test_a_duets_repetition_costs_its_longer_step_not_both(tmp_path):
    runs = []

    def run(opts, later=None):
        runs.append((opts.overrides or {}).get("repetitions", 5))
        return _jmh_bundle(tmp_path / f"r{len(runs)}", runs[-1], design=opts.design)

    opts = Options("jmh", "quick", "native,docker", results_dir=tmp_path)
    opts.design = "duet"
    # the same 7 repetitions as above in half the time: a duet's two 20 s steps run at once
    precision.two_stage(opts, precision.Target(0.00001, budget=7 * 20.0), run, [].append)
    assert runs == [5, 2]


NO_ANALYSIS = (
    "import sys\nfor m in ('numpy', 'scipy', 'matplotlib'):\n    sys.modules[m] = None  # as on a runner-only install\n"
)


def without_analysis(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_ANALYSIS + code], capture_output=True, text=True, timeout=120)


def test_the_runner_and_its_cli_import_neither_numpy_nor_scipy():
    r = without_analysis("import pirex.cli.main, pirex.runner.run, pirex.reproduce.two_stage")
    assert r.returncode == 0, r.stderr


def test_precision_without_the_analysis_extra_says_to_install_it_before_the_pilot_runs():
    r = without_analysis(
        "from pirex.core.errors import PirexError\n"
        "from pirex.reproduce import two_stage as precision\n"
        "from pirex.runner.run import Options\n"
        "pilots = []\n"
        "try:\n"
        "    precision.two_stage(Options('jmh'), precision.Target(0.01), pilots.append, print)\n"
        "except PirexError as e:\n"
        "    print('refused:', e, 'pilots:', len(pilots))\n"
    )
    assert r.returncode == 0, r.stderr
    assert "refused: --precision" in r.stdout and "analysis extra" in r.stdout and "`make`" in r.stdout
    assert r.stdout.rstrip().endswith("pilots: 0")
