"""MooBench statistics, tables, figure and comparison, against values computed independently by hand."""

import csv
import json
import math
import statistics as pystats

import numpy as np
import pytest

from pirex.analysis import moobench, moobench_read
from pirex.bundle import Bundle

T975 = {1: 12.706204736174698, 4: 2.7764451051977987}  # Student t 0.975 quantiles (tables)
ENGINES = ["numpy"] + (["numba"] if moobench_read.has_numba() else [])


def machine(host: str, storage: str = "usb") -> dict:
    return {"hostname": host, "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
            "storage": {"kind": storage, "model": "WD", "fstype": "ext4"}}  # fmt: skip


def make_bundle(tmp_path, files, variants=("native",), host="pi-a", storage="usb"):
    """files(variant, repetition) -> {configuration: [durations in ns, in call order]}; one raw file each."""
    reps = len(files(variants[0], None))
    plan = [(v, r) for r in range(reps) for v in variants]
    b = Bundle.create(
        tmp_path / host, "moobench", "quick", {}, list(variants), plan, {}, {"version": "t", "commit": "c"}
    )
    b.write_machine(before=machine(host, storage), after=machine(host, storage))
    for v, r in plan:
        with b.step(v, r) as d:
            for cfg, values in files(v, r).items():
                (d / f"raw-{cfg}.csv").write_text("".join(f"1;{x};123456;0\n" for x in values))
    b.finish()
    return b.path


def test_statistics_by_hand():
    # loop A steady 1, 2, 3 µs; loop B 5, 7 µs: pooled n 5, mean 3.6, sum of squares 23.2, var 5.8
    s = moobench.statistics([np.array([1000, 2000, 3000]), np.array([5000, 7000])])
    assert (s.n, s.loops, s.peaks) == (5, 2, 0)
    assert s.mean == pytest.approx(3.6) and s.sd == pytest.approx(math.sqrt(5.8))
    assert (s.summary.min, s.summary.q1, s.summary.median, s.summary.q3, s.summary.max) == pytest.approx(
        (1, 2, 3, 5, 7)
    )
    half = T975[4] * math.sqrt(5.8 / 5)
    assert s.ci() == pytest.approx((3.6 - half, 3.6 + half))
    # over loops: means 2 and 6, sd sqrt(8), 1 degree of freedom
    assert s.loop_means == pytest.approx((2.0, 6.0))
    assert s.loop_ci() == pytest.approx((4 - T975[1] * 2, 4 + T975[1] * 2))


def test_quantiles_interpolate_like_r_type_7():
    # positions (n-1)p = 0.75, 1.5, 2.25 over 1 2 3 4: 1.75, 2.5, 3.25
    s = moobench.statistics([np.array([4000, 1000]), np.array([3000, 2000])])
    assert (s.summary.q1, s.summary.median, s.summary.q3) == pytest.approx((1.75, 2.5, 3.25))
    big = moobench.statistics([np.array([10**9, 1, 2, 3, 4, 5])])  # the counting path's cap: 8 x mean
    assert big.summary.median == pytest.approx(3.5e-3)


def test_peaks_are_strictly_above_five_times_the_mean():
    assert moobench.statistics([np.array([0, 0, 0, 0, 5000])]).peaks == 0  # mean 1 µs, 5 µs is not > 5 x mean
    assert moobench.statistics([np.array([0, 0, 0, 0, 0, 6000])]).peaks == 1  # mean 1 µs, 6 > 5


def test_fewer_than_two_loops_give_no_loop_interval():
    s = moobench.statistics([np.array([1000, 3000])])
    assert all(math.isnan(x) for x in s.loop_ci())
    assert moobench.statistics([]).n == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_all_loops_are_pooled_not_only_the_last(tmp_path, engine):
    # three loops of 4 calls whose steady states differ: (1, 1), (2, 2), (6, 6) µs
    steady = {0: 1000, 1: 2000, 2: 6000}
    path = make_bundle(tmp_path, lambda v, r: [None] * 3 if r is None else {"baseline": [9000, 9000] + [steady[r]] * 2})
    (res,) = moobench.analyse([path], engine)
    pooled = pystats.mean([1, 1, 2, 2, 6, 6])

    # MooBench's statistics.r: resultsBIG[array_idx, 1:numOfRowsToRead] <- results, for every loop in turn,
    # then mean(resultsBIG[array_idx, 1:numOfRowsToRead]): the last loop's rows overwrite the others.
    rows_per_loop = 2
    results_big = [math.nan] * (3 * rows_per_loop)
    for loop in range(3):
        results_big[0:rows_per_loop] = [steady[loop] / 1000] * rows_per_loop
    r_script_mean = pystats.mean(results_big[0:rows_per_loop])

    assert r_script_mean == 6.0 and pooled == 3.0
    assert res.stats.mean == pytest.approx(pooled) and res.stats.mean != pytest.approx(r_script_mean)
    assert res.stats.n == 6 and res.stats.loop_means == pytest.approx((1.0, 2.0, 6.0))
    assert res.stats.sd == pytest.approx(pystats.stdev([1, 1, 2, 2, 6, 6]))


def published_like(v, r):
    """5 loops; baseline 1 µs, SPASS-meter 300 µs (docker the same), Kieker (text) 100 µs; warm-up calls first."""
    if r is None:
        return [None] * 5
    base = {"baseline": 1000, "spass-meter": 300_000, "kieker-text": 100_000}
    return {cfg: [50 * x, 50 * x, x + r, x - r] for cfg, x in base.items()}


def test_engines_give_identical_results(tmp_path):
    path = make_bundle(tmp_path, published_like, ("native", "docker"))
    results = [moobench.analyse([path], e) for e in ENGINES]
    for other in results[1:]:
        assert [(r.key, r.stats) for r in other] == [(r.key, r.stats) for r in results[0]]


def test_tables_overhead_and_compare(tmp_path):
    path = make_bundle(tmp_path, published_like, ("native", "docker"))
    res = moobench.analyse([path])
    dev = "Raspberry Pi 3 Model B Rev 1.2 (pi-a)"
    assert {r.key for r in res} == {(dev, "usb WD ext4", v, c) for v in ("native", "docker")
                                    for c in ("baseline", "spass-meter", "kieker-text")}  # fmt: skip

    t2 = moobench.table2(res)
    assert t2.columns[:5] == ["Experiment", f"{dev}, usb WD ext4: mean", f"{dev}, usb WD ext4: 95 % CI",
                              f"{dev}, usb WD ext4: σ", f"{dev}, usb WD ext4: 95 % CI (loops)"]  # fmt: skip
    assert [row[0] for row in t2.rows] == ["Baseline docker", "Baseline native", "Kieker (file system logging, text) "
                                           "docker", "Kieker (file system logging, text) native", "SPASS-meter docker",
                                           "SPASS-meter native"]  # fmt: skip
    md = moobench.markdown(t2)
    assert "| SPASS-meter native | 300.0 | [300.0; 300.0] |" in md
    t1 = moobench.table1(res)
    assert t1.columns == ["Experiment", f"{dev}: 95 % CI", f"{dev}: σ", f"{dev}: 95 % CI (loops)"]
    assert t1.rows[0][0] == "Baseline (usb WD ext4, docker)"
    assert r"\begin{tabular}{lrrr}" in moobench.latex(t1) and r"$\sigma$" in moobench.latex(t1)
    moobench.write_csv(t2, tmp_path / "t2.csv")
    rows = list(csv.DictReader(open(tmp_path / "t2.csv")))
    assert len(rows) == 6 and {"mean_us", "ci95_low", "loop_ci95_low", "peaks"} <= set(rows[0])

    ov = {(o.variant, o.configuration): o for o in moobench.overheads(res)}
    assert ov[("native", "spass-meter")].overhead == pytest.approx(299.0)
    assert ov[("native", "spass-meter")].ratio.value == pytest.approx(300.0)
    assert ov[("native", "spass-meter")].ratio.has_interval  # 5 loops

    verdicts = {(c.published.name, c.config.rsplit(", ", 1)[1]): c.verdict for c in moobench.compare(res)}
    assert verdicts[("SPASS-meter / Baseline (native)", "native")] == "consistent with the paper"  # 263.5..341.2
    assert verdicts[("Kieker (file system logging, text) / Baseline (native)", "native")] == "differs from the paper"
    assert verdicts[("SPASS-meter docker / native", "docker")] == "consistent with the paper"
    assert ("SPASS-meter / Baseline (usb)", "native") in verdicts  # SSP'17, the USB hard disk rows
    assert "| ICPE'18 Table 2 | SPASS-meter docker / native |" in moobench.compare_markdown(moobench.compare(res))


def test_table5_with_kieker_standing_in(tmp_path):
    def files(v, r):
        if r is None:
            return [None] * 2
        slow = 2 if v == "min-clock" else 1
        return {"baseline": [9000, 9000, 1000 * slow, 1000 * slow],
                "kieker-text": [9000, 9000, 100_000 * slow, 100_000 * slow + 6_000_000]}  # fmt: skip

    res = moobench.analyse([make_bundle(tmp_path, files, ("base", "min-clock", "unknown-case"))])
    t5 = moobench.table5(res)
    assert t5.columns[:6] == ["Id", "Experiment (base)", "Variant (base)", "Device", "Instrumented", "Baseline: mean"]
    assert [row[:3] for row in t5.rows] == [["1", "from [16]", "base"],
                                            ["12", "min CPU clock (6)", "min-clock (ram-drive)"]]  # fmt: skip
    assert t5.rows[0][4] == "Kieker (file system logging, text)"  # no SPASS-meter, no kieker-dump here
    # Kieker native: 100, 6,100, 100, 6,100 µs: mean 3,100, sd sqrt(4 x 3,000² / 3); min 100, max 6,100
    # 95 % CI: 3,100 -/+ t(0.975, 3) 3.1824 x 3,464.1 / 2
    assert t5.rows[0][12:17] == ["3,100.0", "3,464.1", "100.0", "6,100.0", "[-2,412.2; 8,612.2]"]
    assert any("stands in for SPASS-meter" in n for n in t5.notes)
    assert any(n.startswith("Cases without data here: 2 object pools; 3 parallel GC") for n in t5.notes)
    assert len(t5.records) == 4


def test_figure_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    res = moobench.analyse([make_bundle(tmp_path, published_like, ("native", "docker"))])
    png, svg = moobench.figure(res, tmp_path / "fig" / "moobench")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:400]


def test_published_tables_transcribed():
    assert len(moobench.published_ssp17()) == 15
    assert len(moobench.published_icpe18_table2()) == 15
    t5 = moobench.published_icpe18_table5()
    assert len(t5) == 28 and {r["id"] for r in t5} == {str(i) for i in range(1, 15)}
    one = {r["configuration"]: r for r in t5 if r["id"] == "1"}
    assert (one["spass-meter"]["mean"], one["spass-meter"]["peaks"]) == ("164.8", "1155")
    assert one["baseline"]["peaks"] == "1667"
    ratios = {p.name: p for p in moobench.published_ratios()}
    kd = ratios["Kieker (file system logging, text) docker / native"]
    assert kd.value == pytest.approx(np.mean([131.4 / 121.5, 123.3 / 115.9, 120.5 / 118.6]))
    assert kd.low == pytest.approx((120.5 - 0.05) / (118.6 + 0.05))
    mc = ratios["min CPU clock: SPASS-meter min-clock / ram-drive (paper: Id 12 / Id 5)"]
    assert mc.value == pytest.approx(294.8 / 146.8)  # our base ram-drive is the paper's Id 5


def test_raw_files_refuse_other_experiments(tmp_path):
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["native"], [("native", 0)], {}, {"version": "t", "commit": "c"})
    b.write_machine(before=machine("x"), after=machine("x"))
    b.finish()
    with pytest.raises(Exception, match="not moobench"):
        moobench.raw_files([b.path])
    assert json.loads((b.path / "manifest.json").read_text())["experiment"] == "jmh"


def test_fluctuation_cases_name_the_matrix_cases_of_the_experiment():
    from pirex import experiment

    matrix = experiment.load("moobench").matrices["fluctuation"]
    named = {variant for case in moobench.FLUCTUATION_CASES for variant, _ in case.sources}
    assert named == {c.name for c in matrix.cases}
    bases = {case.base for case in moobench.FLUCTUATION_CASES if case.base}
    assert bases <= named
