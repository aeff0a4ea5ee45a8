"""scripts/bench_resolution.py on a constructed bundle (no Docker): what `make bench-resolution` prints."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np

from pirex import paths

spec = importlib.util.spec_from_file_location("bench_resolution", paths.REPO / "scripts" / "bench_resolution.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_resolution"] = bench  # dataclasses look their module up
spec.loader.exec_module(bench)


def _bundle(root: Path, variants: list[str], reps: int = 6, forks: int = 2) -> Path:
    rng = np.random.default_rng(4)
    path = root / "jmh" / "20261124T050000Z-abcdef"
    completed = []
    for rep in range(reps):
        for i, variant in enumerate(variants):
            step = path / variant / str(rep)
            step.mkdir(parents=True)
            scale = 1.02 if variant == "docker" else 1.0
            jvms = scale * 1e6 * np.exp(rng.normal(0, 0.02, forks))  # fork-to-fork CV 2 %
            raw = [[float(jvm * math.exp(rng.normal(0, 0.005))) for _ in range(4)] for jvm in jvms]
            doc = [
                {
                    "benchmark": "io.github.pirexbench.jmh.RecursionBenchmark.b1_default",
                    "primaryMetric": {"rawData": raw, "scoreUnit": "ops/s"},
                },
                {
                    "benchmark": "io.github.pirexbench.jmh.RecursionBenchmark.b2_inline",
                    "primaryMetric": {"rawData": [[1.0]], "scoreUnit": "ops/s"},
                },
            ]
            (step / "jmh.json").write_text(json.dumps(doc))
            minute = 3 * rep + i
            completed.append(
                {
                    "variant": variant,
                    "repetition": rep,
                    "started": f"2026-11-24T05:{minute:02d}:00Z",
                    "ended": f"2026-11-24T05:{minute:02d}:30Z",
                }
            )
    params = {
        "repetitions": reps,
        "forks": forks,
        "warmup_iterations": 2,
        "iterations": 4,
        "warmup_time": "1s",
        "time": "1s",
    }
    manifest = {
        "started": "2026-11-24T05:00:00Z",
        "ended": "2026-11-24T06:00:00Z",
        "parameters": params,
        "completed": completed,
    }
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_report_of_a_constructed_bundle(tmp_path, capsys):
    path = _bundle(tmp_path, ["native", "docker", "native-aa"])
    assert bench.main(["--bundle", str(path)]) == 0
    out = capsys.readouterr().out
    assert "time spent: 60.0 min" in out
    assert "docker/native" in out and "native-aa/native" in out and "99.9 %" in out
    assert "no interval" not in out  # 6 paired repetitions
    assert "variance decomposition (K&J costs: repetition 6.0 s, fork 8.0 s, iteration 1.0 s)" in out
    assert "K&J's optimum" in out and "plan (this run as Stein's pilot" in out
    b = bench.read_bundle(path)
    assert len(b.forks["native"]) == 6 and len(b.forks["native"][0]) == 2 and len(b.forks["native"][0][0]) == 4


def test_without_the_aa_copy_and_with_too_few_repetitions(tmp_path, capsys):
    path = _bundle(tmp_path, ["native", "docker"], reps=4, forks=1)
    (path / "native" / "3" / "jmh.json").write_text("")  # a lost step: its repetition is unpaired
    bench.main(["--bundle", str(path)])
    out = capsys.readouterr().out
    assert "unreadable jmh.json, step left out: native/3 (JSONDecodeError)" in out
    assert "unpaired, dropped: 1 repetition only in docker" in out
    assert "no A/A copy in this bundle" in out
    assert "no interval: 3 paired repetitions, 5 needed" in out and "no interval: 3 repetitions, 5 needed" in out


def test_dry_run_prints_the_pirex_commands(capsys):
    assert bench.main(["--dry-run", "--allocations", "paper,short", "--variants", "native,docker"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("paper (10 repetitions x 1 fork x (20 + 20) x 1s): ")
    assert "--set benchmarks=RecursionBenchmark.b1_default" in out[0] and "--set repetitions=30" in out[1]
    assert bench.seconds("200ms") == 0.2 and bench.seconds("1s") == 1.0


def test_another_experiments_metric_through_its_run_values(tmp_path, capsys):
    """--experiment moobench --metric kieker-text on a bundle: docker/native and A/A paired by repetition."""
    from pirex.analysis.test_moobench import make_bundle

    rng = np.random.default_rng(2)

    def files(v, r):
        if r is None:
            return [None] * 6
        scale = {"docker": 1.05}.get(v, 1.0) * math.exp(rng.normal(0, 0.01))
        calls = [int(100_000 * scale * math.exp(rng.normal(0, 0.02))) for _ in range(40)]
        return {"baseline": [1000] * 40, "kieker-text": calls}

    path = make_bundle(tmp_path, files, variants=("native", "docker", "native-aa"))
    assert bench.main(["--experiment", "moobench", "--metric", "kieker-text", "--bundle", str(path)]) == 0
    out = capsys.readouterr().out
    assert "== moobench kieker-text" in out and "docker/native" in out and "native-aa/native" in out
    assert "6 paired" in out and "variance decomposition (repetition > run > sample):" in out
    assert "plan (this run as Stein's pilot" in out
