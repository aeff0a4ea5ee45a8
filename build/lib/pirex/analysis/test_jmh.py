"""Table 1 and the comparison, on a bundle made here with known numbers (no Docker)."""

import json

import numpy as np
import pytest

from pirex.analysis import jmh, tables
from pirex.core import experiment
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError

MACHINE = {
    "hostname": "pi-a",
    "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
    "storage": {"kind": "usb", "model": "WD Elements", "fstype": "ext4"},
}


def jmh_json(scores: dict[str, list[list[float]]]) -> str:
    return json.dumps(
        [
            {"benchmark": f"io.github.pirexbench.jmh.X.{name}", "primaryMetric": {"rawData": raw, "scoreUnit": "ops/s"}}
            for name, raw in scores.items()
        ]
    )


PARAMS = experiment.load("jmh").resolve("quick")  # depth 10, 3 + 5 iterations of 200ms


def make_bundle(tmp_path, forks_per_variant: int, params: dict = PARAMS):
    plan = [(v, r) for r in range(forks_per_variant) for v in ("native", "docker")]
    b = Bundle.create(tmp_path, "jmh", "quick", params, ["native", "docker"], plan, {}, {"version": "t", "commit": "c"})
    b.write_machine(before=MACHINE, after=MACHINE)
    for v, r in plan:
        base = 100.0 if v == "native" else 90.0  # docker 10 % slower, exactly
        with b.step(v, r) as d:
            (d / "jmh.json").write_text(
                jmh_json(
                    {
                        "b1_default": [[base + r, base - r]],
                        "b3_dontInline": [[base / 2 + r, base / 2 - r]],
                    }
                )
            )
    b.finish()
    return b.path


def test_tidy_rows_and_table1(tmp_path):
    rows = jmh.read_rows(make_bundle(tmp_path, 2))
    assert {r.benchmark for r in rows} == {"B1", "B3"}
    assert rows[0].device == "Raspberry Pi 3 Model B Rev 1.2 (pi-a)" and rows[0].storage == "usb WD Elements ext4"
    lines = {(ln.benchmark, ln.variant): ln.summary for ln in jmh.table1(rows)}
    # native B1: values 100, 100, 101, 99 -> mean 100, n 4
    assert lines[("B1", "native")].n == 4 and lines[("B1", "native")].mean == pytest.approx(100.0)
    assert lines[("B1", "docker")].mean == pytest.approx(90.0)
    named = {nt.name: nt.table for nt in jmh.tables([make_bundle(tmp_path / "again", 2)])}
    md = tables.markdown(named["table1"])
    assert "| B1 | Raspberry Pi 3 Model B Rev 1.2 (pi-a), usb WD Elements ext4, native | 100.000 |" in md
    assert "0.9000 (no interval: 2 paired repetitions, 5 needed)" in tables.markdown(named["ratios"])
    assert "B6 sent to a sink on the measuring host" in md  # the paper's went to another machine


def test_ratio_interval_paired_by_repetition(tmp_path):
    values = jmh.run_values([make_bundle(tmp_path, 6)])
    ((bench, _, ratio, aa), *_) = jmh.paired_ratios(values)
    # docker exactly 10 % slower in every repetition: the paired interval is a point
    assert bench == "B1" and ratio.has_interval and ratio.low == pytest.approx(0.9) == ratio.high and aa is None
    means = [v for v in values if v.metric in ("B1", "B3")]
    assert {v.run for v in means} == {0} and all(len(v.inner) == 2 for v in means)  # a fork, its iterations


def test_the_sd_of_a_repetition_pools_its_forks_iterations_as_table_1(tmp_path):
    b = Bundle.create(
        tmp_path, "jmh", "quick", PARAMS, ["native"], [("native", 0)], {}, {"version": "t", "commit": "c"}
    )
    b.write_machine(before=MACHINE, after=MACHINE)
    forks = [[100.0, 104.0, 98.0], [90.0, 91.0, 95.0]]  # two forks: their means differ as well as their iterations
    with b.step("native", 0) as d:
        (d / "jmh.json").write_text(jmh_json({"b1_default": forks}))
    b.finish()
    (sd,) = [v for v in jmh.run_values([b.path]) if v.metric == "B1 sd"]
    assert sd.value == pytest.approx(np.std(forks[0] + forks[1], ddof=1)) and sd.repetition == 0
    assert sd.value > max(np.std(f, ddof=1) for f in forks)  # not a fork's own spread: between forks too


def test_two_depths_are_two_setups_never_one_row(tmp_path):
    """depth 10 and depth 1 pooled would print one B1 row, its mean halfway between two different benchmarks."""
    ten, one = make_bundle(tmp_path / "ten", 2), make_bundle(tmp_path / "one", 2, {**PARAMS, "depth": 1})
    named = {nt.name: nt.table for nt in jmh.tables([ten, one])}
    assert list(named) == ["table1-setup1", "table1-setup2", "ratios-setup1", "ratios-setup2"]
    setup = "1 fork per repetition, 3 warm-up iterations of 200ms, 5 measured of 200ms"
    assert named["table1-setup1"].title == f"ICPE'18 Table 1: JMH throughput (ops/s); depth 1, {setup}"
    assert named["table1-setup2"].title.endswith(f"; depth 10, {setup}")
    for t in (named["table1-setup1"], named["table1-setup2"]):
        b1 = [r for r in t.records if r["benchmark"] == "B1"]
        assert [r["n"] for r in b1] == [4, 4]  # 2 steps x 2 iterations each: one bundle's, never both
    assert {v.setup for v in jmh.run_values([ten, one])} == {f"depth 1, {setup}", f"depth 10, {setup}"}


def test_a_parameter_the_table_needs_is_never_taken_as_0(tmp_path):
    b = make_bundle(tmp_path, 1, {k: v for k, v in PARAMS.items() if k != "depth"})
    with pytest.raises(PirexError, match="manifest.json: the run records no parameter 'depth'"):
        jmh.tables([b])
