"""Table 1 and the comparison, on a bundle made here with known numbers (no Docker)."""

import json

import pytest

from pirex.analysis import jmh, tables
from pirex.bundle import Bundle

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


def make_bundle(tmp_path, forks_per_variant: int):
    plan = [(v, r) for r in range(forks_per_variant) for v in ("native", "docker")]
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["native", "docker"], plan, {}, {"version": "t", "commit": "c"})
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
    assert rows[0].device == "Raspberry Pi 3 Model B Rev 1.2" and rows[0].storage == "usb WD Elements ext4"
    lines = {(ln.benchmark, ln.variant): ln.summary for ln in jmh.table1(rows)}
    # native B1: values 100, 100, 101, 99 -> mean 100, n 4
    assert lines[("B1", "native")].n == 4 and lines[("B1", "native")].mean == pytest.approx(100.0)
    assert lines[("B1", "docker")].mean == pytest.approx(90.0)
    named = {nt.name: nt.table for nt in jmh.tables([make_bundle(tmp_path / "again", 2)])}
    md = tables.markdown(named["table1"])
    assert "| B1 | Raspberry Pi 3 Model B Rev 1.2, usb WD Elements ext4, native | 100.000 |" in md
    assert "0.9000 (no interval: 2 paired repetitions, 5 needed)" in tables.markdown(named["ratios"])
    assert "B6 sent to a sink on the measuring host" in md  # the paper's went to another machine


def test_ratio_interval_paired_by_repetition(tmp_path):
    values = jmh.run_values([make_bundle(tmp_path, 6)])
    ((bench, _, ratio, aa), *_) = jmh.paired_ratios(values)
    # docker exactly 10 % slower in every repetition: the paired interval is a point
    assert bench == "B1" and ratio.has_interval and ratio.low == pytest.approx(0.9) == ratio.high and aa is None
    assert {v.run for v in values} == {0} and all(len(v.inner) == 2 for v in values)  # a fork, its iterations
