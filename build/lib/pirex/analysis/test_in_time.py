"""A duet's JMH iterations paired in time (pirex/analysis/in_time.py), on duet bundles written here with known output
lines, line times and jmh.json values."""

import json

import numpy as np
import pytest

from pirex.analysis import in_time, jmh, tables
from pirex.core import experiment
from pirex.core.bundle import STDOUT, STDOUT_TIMES, Bundle
from pirex.core.errors import PirexError

T0 = 1_795_000_000.0
WARMUP, MEASURED = 2, 4
NAME = "io.github.pirexbench.jmh.RecursionBenchmark.b1_default"
PARAMS = experiment.load("jmh").resolve("quick")
TOOL = {"version": "t", "commit": "c"}


def jmh_output(start: float, values: list[float], mode: str = "Throughput") -> tuple[list[str], list[float]]:
    """JMH's output lines for one fork of 1 s iterations whose fork starts at `start`, and when each line arrived;
    the printed values are rounded, as JMH's are."""
    lines = [
        "# JMH version: 1.37",
        f"# Benchmark mode: {mode}, ops/time",
        f"# Warmup: {WARMUP} iterations, 1 s each",
        f"# Measurement: {MEASURED} iterations, 1 s each",
        f"# Benchmark: {NAME}",
        "# Parameters: (depth = 10)",
        "",
        "# Fork: 1 of 1",
    ]
    times = [start - 0.1] * len(lines)
    t = start + 0.5  # the forked JVM's start
    for k in range(WARMUP):
        t += 1.0
        lines.append(f"# Warmup Iteration   {k + 1}: 80000000.000 ops/s")
        times.append(t)
    for k, v in enumerate(values):
        t += 1.0
        lines.append(f"Iteration   {k + 1}: {round(v, -3):.3f} ops/s")
        times.append(t)
    lines += ["", f'Result "{NAME}":']
    times += [t + 0.01, t + 0.01]
    return lines, times


def duet_bundle(tmp_path, native: list[list[float]], docker: list[list[float]], offset: float, times: bool = True):
    """A jmh duet bundle: per repetition both sides' measured values; docker's fork starts `offset` s after native's."""
    plan = [(v, r) for r in range(len(native)) for v in ("native", "docker")]
    b = Bundle.create(tmp_path, "jmh", "quick", PARAMS, ["native", "docker"], plan, {}, TOOL, design="duet")
    b.write_machine(before={"hostname": "h"}, after={"hostname": "h"})
    for r in range(len(native)):
        start = T0 + 100 * r
        for variant, values, at in (("native", native[r], start), ("docker", docker[r], start + offset)):
            with b.step(variant, r) as d:
                lines, stamps = jmh_output(at, values)
                (d / STDOUT).write_text("\n".join(lines) + "\n")
                if times:
                    (d / STDOUT_TIMES).write_text("".join(f"{t:.3f}\n" for t in stamps))
                raw = [
                    {
                        "benchmark": NAME,
                        "params": {"depth": "10"},
                        "primaryMetric": {"rawData": [values], "scoreUnit": "ops/s"},
                    }
                ]
                (d / "jmh.json").write_text(json.dumps(raw))
    b.finish()
    return b.path


def test_overlapping_iterations_are_paired_one_to_one_and_their_values_come_from_jmh_json(tmp_path):
    native = [[1e8 + 1.0 + k for k in range(MEASURED)] for _ in range(6)]
    near = in_time.in_time(duet_bundle(tmp_path / "a", native, [[0.9 * x for x in n] for n in native], 0.4), *SIDES)
    (r,) = near
    assert r.benchmark == "b1_default depth=10" and (r.pairs, r.measured) == (6 * MEASURED, 6 * MEASURED)
    # docker exactly 0.9 of the native iteration it overlapped: a point, from jmh.json's values (the printed ones are
    # rounded to thousands, which would not give exactly 0.9)
    assert r.iterations.value == pytest.approx(0.9, rel=1e-12) and r.iterations.low == pytest.approx(0.9, rel=1e-12)
    # 0.6 s late, docker's iteration k overlaps native's k+1 most (60 % against 40 %): one pair fewer per repetition
    late = duet_bundle(tmp_path / "b", native, [[0.9 * x for x in n] for n in native], 0.6)
    (r,) = in_time.in_time(late, *SIDES)
    assert r.pairs == 6 * (MEASURED - 1)
    # iteration k+1 of native against k of docker: 0.9 (1e8 + k) / (1e8 + 1 + k), not 0.9
    assert r.iterations.value == pytest.approx(0.9 * (1 - 1 / 1e8), rel=1e-10)


SIDES = ("docker", "native")


def test_what_both_sides_saw_at_once_cancels_in_the_pairs_and_shows_in_their_correlation(tmp_path):
    rng = np.random.default_rng(7)
    native, docker, alone_n, alone_d = [], [], [], []
    for _ in range(8):
        moment = rng.normal(0, 0.05, MEASURED)  # a neighbour, a clock change: both sides at once
        jvm_n, jvm_d = rng.normal(0, 0.01, 2)  # each JVM's own level
        native.append(list(1e8 * np.exp(jvm_n + moment)))
        docker.append(list(0.9e8 * np.exp(jvm_d + moment)))
        alone_n.append(list(1e8 * np.exp(jvm_n + rng.normal(0, 0.05, MEASURED))))
        alone_d.append(list(0.9e8 * np.exp(jvm_d + rng.normal(0, 0.05, MEASURED))))
    (shared,) = in_time.in_time(duet_bundle(tmp_path / "shared", native, docker, 0.3), *SIDES)
    assert shared.correlation == pytest.approx(1.0)
    # the fork means of two sides that ran over the same moments cancel those moments already: pairing the
    # iterations gives the same interval, not a narrower one
    assert shared.iterations.relative_half_width == pytest.approx(shared.repetitions.relative_half_width, rel=1e-6)
    (apart,) = in_time.in_time(duet_bundle(tmp_path / "apart", alone_n, alone_d, 0.3), *SIDES)
    assert abs(apart.correlation) < 0.5  # independent noise: nothing in common to cancel


def test_bundles_it_cannot_pair_are_refused_with_what_to_do(tmp_path):
    values = [[1e8] * MEASURED] * 5
    old = duet_bundle(tmp_path / "old", values, values, 0.3, times=False)
    with pytest.raises(PirexError, match="no stdout.times.*run the duet again"):
        in_time.in_time(old, *SIDES)
    with pytest.raises(PirexError, match="has no docker-aa and native steps"):
        in_time.in_time(duet_bundle(tmp_path / "ok", values, values, 0.3), "docker-aa", "native")
    plan = [("native", 0), ("docker", 0)]
    one_at_a_time = Bundle.create(tmp_path / "i", "jmh", "quick", {}, ["native", "docker"], plan, {}, TOOL)
    one_at_a_time.finish()
    with pytest.raises(PirexError, match="only a duet's iterations overlap"):
        in_time.in_time(one_at_a_time.path, *SIDES)
    damaged = duet_bundle(tmp_path / "damaged", values, values, 0.3)
    step = next(damaged.glob("docker/0"))
    (step / "jmh.json").write_text(
        json.dumps([{"benchmark": NAME, "params": {"depth": "10"}, "primaryMetric": {"rawData": [[1.0]]}}])
    )
    with pytest.raises(PirexError, match="jmh.json.*stdout.txt shows iterations"):
        in_time.windows(next(s for s in Bundle.open(damaged).steps() if s.variant == "docker"))


def test_pirex_table_shows_a_duets_pairs_two_ways_and_why_an_older_one_has_no_times(tmp_path):
    native = [[1e8 + k for k in range(MEASURED)] for _ in range(5)]
    new = duet_bundle(tmp_path / "new", native, [[0.9 * x for x in n] for n in native], 0.3)
    old = duet_bundle(tmp_path / "old", native, native, 0.3, times=False)
    named = {nt.name: nt.table for nt in jmh.tables([new, old])}
    md = tables.markdown(named["in-time"])
    assert (
        "| docker/native | b1_default depth=10 | 0.9000 [0.9000; 0.9000] | 0.9000 [0.9000; 0.9000] | 20 of 20 |" in md
    )
    assert "no stdout.times" in md and "run the duet again" in md


def test_a_damaged_value_or_time_is_a_clear_error_and_the_other_tables_still_come(tmp_path):
    values = [[1e8] * MEASURED] * 5
    zero = duet_bundle(tmp_path / "zero", values, values, 0.3)
    raw = [
        {
            "benchmark": NAME,
            "params": {"depth": "10"},
            "primaryMetric": {"rawData": [[1e8, 0, 1e8, 1e8]], "scoreUnit": "ops/s"},
        }
    ]
    (zero / "docker" / "1" / "jmh.json").write_text(json.dumps(raw))
    with pytest.raises(PirexError, match="docker/1/jmh.json.*not a positive number"):
        in_time.in_time(zero, *SIDES)
    named = {nt.name: nt.table for nt in jmh.tables([zero])}
    assert "not a positive number" in tables.markdown(named["in-time"]) and "ratios" in named
    nan = duet_bundle(tmp_path / "nan", values, values, 0.3)
    f = nan / "native" / "2" / STDOUT_TIMES
    f.write_text(f.read_text().replace(f.read_text().split()[3], "nan", 1))
    with pytest.raises(PirexError, match="native/2/stdout.times.*not a number"):
        in_time.in_time(nan, *SIDES)


def test_two_modes_of_one_benchmark_are_two_comparisons(tmp_path):
    plan = [("native", 0), ("docker", 0)]
    b = Bundle.create(tmp_path, "jmh", "quick", PARAMS, ["native", "docker"], plan, {}, TOOL, design="duet")
    for variant in ("native", "docker"):
        with b.step(variant, 0) as d:
            thrpt, t1 = jmh_output(T0, [1e8] * MEASURED)
            avgt, t2 = jmh_output(T0 + 20, [10.0] * MEASURED, "Average time")
            (d / STDOUT).write_text("\n".join(thrpt + avgt) + "\n")
            (d / STDOUT_TIMES).write_text("".join(f"{t:.3f}\n" for t in t1 + t2))
            raw = [
                {"benchmark": NAME, "mode": m, "params": {"depth": "10"}, "primaryMetric": {"rawData": [v]}}
                for m, v in (("thrpt", [1e8] * MEASURED), ("avgt", [10.0] * MEASURED))
            ]
            (d / "jmh.json").write_text(json.dumps(raw))
    b.finish()
    step = Bundle.open(b.path).steps()[0]
    assert sorted(k[1] for k in in_time.windows(step)) == ["avgt", "thrpt"]
    assert sorted(r.benchmark for r in in_time.in_time(b.path, *SIDES)) == [
        "b1_default avgt depth=10",
        "b1_default thrpt depth=10",
    ]
