"""MooBench statistics, tables, figure and comparison, against values computed independently by hand."""

import csv
import math
import statistics as pystats

import numpy as np
import pytest

from pirex.analysis import moobench, moobench_read
from pirex.analysis import tables as T
from pirex.core import experiment
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError

T975 = {1: 12.706204736174698, 4: 2.7764451051977987}  # Student t 0.975 quantiles (tables)
ENGINES = ["numpy"] + (["numba"] if moobench_read.has_numba() else [])


def machine(host: str, storage: str = "usb") -> dict:
    return {
        "hostname": host,
        "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
        "storage": {"kind": storage, "model": "WD", "fstype": "ext4"},
    }


QUICK = experiment.load("moobench").resolve("quick")


def make_bundle(
    tmp_path, files, variants=("native",), host="pi-a", storage="usb", params=None, matrix=None, case_params=None
):
    """files(variant, repetition) -> {configuration: [durations in ns, in call order]}; one raw file each.
    params: the manifest's parameters (the quick profile's by default); matrix: run.json's matrix (name, notes,
    same_as_base) and skipped cases; case_params: per variant, what its steps set over the run's parameters (the
    manifest's plan, as a matrix case's)."""
    reps = len(files(variants[0], None))
    params = QUICK if params is None else params
    plan = [
        {"variant": v, "repetition": r, "params": {**params, **(case_params or {}).get(v, {})}}
        for r in range(reps)
        for v in variants
    ]
    b = Bundle.create(
        tmp_path / host, "moobench", "quick", params, list(variants), plan, {}, {"version": "t", "commit": "c"}
    )
    if matrix:
        b.write_run_info({"matrix": matrix, "skipped_variants": matrix.get("skipped", {})})
    b.write_machine(before=machine(host, storage), after=machine(host, storage))
    for v, r in ((s["variant"], s["repetition"]) for s in plan):
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
    # two loops give no interval (the one rule: 5 runs), never the t interval's [-21.4; 29.4] µs
    assert all(math.isnan(x) for x in s.loop_ci()) and s.loop_interval().reason == "no interval: 2 loops, 5 needed"


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
    assert {r.key for r in res} == {
        (dev, "usb WD ext4", v, c) for v in ("native", "docker") for c in ("baseline", "spass-meter", "kieker-text")
    }

    t2 = moobench.table2(res)
    assert t2.columns[:5] == [
        "Experiment",
        f"{dev}, usb WD ext4: mean",
        f"{dev}, usb WD ext4: 95 % CI",
        f"{dev}, usb WD ext4: σ",
        f"{dev}, usb WD ext4: 95 % CI (loops)",
    ]
    assert [row[0] for row in t2.rows] == [
        "Baseline docker",
        "Baseline native",
        "Kieker (file system logging, text) docker",
        "Kieker (file system logging, text) native",
        "SPASS-meter docker",
        "SPASS-meter native",
    ]
    md = T.markdown(t2)
    assert "| SPASS-meter native | 300.0 | [300.0; 300.0] |" in md
    t1 = moobench.table1(res)
    assert t1.columns == ["Experiment", f"{dev}: 95 % CI", f"{dev}: σ", f"{dev}: 95 % CI (loops)"]
    assert t1.rows[0][0] == "Baseline (usb WD ext4, docker)"
    assert r"\begin{tabular}{lrrr}" in T.latex(t1) and r"$\sigma$" in T.latex(t1)
    T.write_csv(t2, tmp_path / "t2.csv")
    rows = list(csv.DictReader(open(tmp_path / "t2.csv")))
    assert len(rows) == 6 and {"mean_us", "ci95_low", "loop_ci95_low", "peaks"} <= set(rows[0])

    ov = {(o.variant, o.configuration): o for o in moobench.overheads(res)}
    assert ov[("native", "spass-meter")].overhead == pytest.approx(299.0)
    assert ov[("native", "spass-meter")].ratio.value == pytest.approx(300.0)
    assert ov[("native", "spass-meter")].ratio.has_interval  # 5 loops


def test_table5_with_kieker_standing_in(tmp_path):
    def files(v, r):
        if r is None:
            return [None] * 2
        slow = 2 if v == "min-clock" else 1
        return {
            "baseline": [9000, 9000, 1000 * slow, 1000 * slow],
            "kieker-text": [9000, 9000, 100_000 * slow, 100_000 * slow + 6_000_000],
        }

    res = moobench.analyse([make_bundle(tmp_path, files, ("base", "min-clock", "unknown-case"))])
    t5 = moobench.table5(res)
    assert t5.columns[:6] == [
        "Id",
        "Experiment (paper's base)",
        "Our case (our base)",
        "Device",
        "Instrumented",
        "Baseline: mean",
    ]
    assert [row[:3] for row in t5.rows] == [
        ["1", "from [16]", "base"],
        ["12", "min CPU clock (6)", "min-clock (ram-drive: Id 5)"],
    ]
    assert t5.rows[0][4] == "Kieker (file system logging, text)"  # no SPASS-meter, no kieker-dump here
    # Kieker native: 100, 6,100, 100, 6,100 µs: mean 3,100, sd sqrt(4 x 3,000² / 3); min 100, max 6,100
    # 95 % CI: 3,100 -/+ t(0.975, 3) 3.1824 x 3,464.1 / 2
    assert t5.rows[0][12:17] == ["3,100.0", "3,464.1", "100.0", "6,100.0", "[-2,412.2; 8,612.2]"]
    assert any("stands in for SPASS-meter" in n for n in t5.notes)
    assert any(n.startswith("Cases without data here: 2 object pools: not reproduced") for n in t5.notes)
    assert any("SSP'17's run on device D1 with the USB hard disk" in n for n in t5.notes)
    assert len(t5.records) == 4


def test_figure_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    res = moobench.analyse([make_bundle(tmp_path, published_like, ("native", "docker"))])
    png, svg = moobench.figure(res, tmp_path / "fig" / "moobench")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg.read_bytes()[:400]


def test_published_tables_transcribed():
    assert len(moobench.published_ssp17()) == 15
    assert len(moobench.published_icpe18_table2()) == 15
    for name in ("icpe18/table1.csv", "icpe18/table2.csv"):  # C3 is the class-10 Transcend card (section 3)
        head = "".join(line for line in open(moobench.PUBLISHED_DIR / name) if line.startswith("#"))
        assert "class-10 Transcend" in head and "C3: class-4" not in head and "C3, H_2 (device, class-4" not in head
    t5 = moobench.published_icpe18_table5()
    assert len(t5) == 28 and {r["id"] for r in t5} == {str(i) for i in range(1, 15)}
    one = {r["configuration"]: r for r in t5 if r["id"] == "1"}
    assert (one["spass-meter"]["mean"], one["spass-meter"]["peaks"]) == ("164.8", "1155")
    assert one["baseline"]["peaks"] == "1667"
    # Table 5's Id 1 is SSP'17's D1 USB-HDD SPASS-meter run: the same numbers in both published tables
    note = moobench.id1_note()
    assert "[164.8; 164.8], σ 44.1; Table 5: mean 164.8, σ 44.1" in note and "2,000,000 calls" in note


def test_raw_files_refuse_other_experiments(tmp_path):
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["native"], [("native", 0)], {}, {"version": "t", "commit": "c"})
    b.write_machine(before=machine("x"), after=machine("x"))
    b.finish()
    with pytest.raises(PirexError, match="not moobench"):
        moobench_read.groups([b.path])


def test_fluctuation_cases_come_from_the_matrix_and_the_published_table():
    from pirex.core import experiment

    matrix = experiment.load("moobench").matrices["fluctuation"]
    cases = {c.id: c for c in moobench.fluctuation_cases()}
    assert sorted(cases) == list(range(1, 15))
    assert {c.ours for c in cases.values() if c.ours} == {c.name for c in matrix.cases}
    # the paper's "(base)" column, read from icpe18/table5.csv
    assert {i: cases[i].paper_base for i in (1, 3, 4, 5, 9, 14)} == {1: None, 3: 2, 4: 2, 5: 2, 9: 6, 14: 6}
    assert (cases[3].ours, cases[3].base, cases[3].base_id) == ("parallel-gc", "base", 1)
    assert (cases[11].ours, cases[11].base, cases[11].base_id) == ("max-clock", "ram-drive", 5)
    assert cases[4].configs[0] == "spass-meter-time-only" and cases[3].configs[0] == "spass-meter"
    assert cases[2].ours is None and cases[6].ours is None


def spass_like(scale):
    """5 loops per case; baseline 1 µs, SPASS-meter 100 µs x the case's scale."""

    def files(v, r):
        if r is None:
            return [None] * 5
        inst = "spass-meter-time-only" if v == "time-only" else "spass-meter"
        x = int(100_000 * scale[v])
        return {"baseline": [9000, 9000, 1000 + r, 1000 - r], inst: [50 * x, 50 * x, x + r, x - r]}

    return files


def test_table5_marks_a_case_that_ran_as_its_base_here(tmp_path):
    scale = {"base": 1.0, "parallel-gc": 1.3, "time-only": 0.9, "ram-drive": 1.1, "max-clock": 1.21}
    path = make_bundle(
        tmp_path,
        spass_like(scale),
        tuple(scale),
        matrix={
            "name": "fluctuation",
            "notes": {"max-clock": ["same as its base here: the performance governor is in effect for both"]},
            "same_as_base": ["max-clock"],
        },
    )
    (t5,) = moobench.tables([path], view="fluctuation")
    assert t5.name == "table5" and any("same as its base here" in n for n in t5.table.notes)
    assert [r[2] for r in t5.table.rows if r[0] == "11"] == ["max-clock (ram-drive: Id 5) [same as its base here]"]


def test_table5_names_the_collector_each_case_ran_with(tmp_path):
    """The base pins the Pi 3 JVM's serial collector, Id 3 changes only that: the notes say what each step ran (the
    manifest's plan), and the cases' own parameters do not split the table into setups."""
    matrix = experiment.load("moobench").matrices["fluctuation"]
    scale = {"base": 1.0, "parallel-gc": 1.3, "depth-1": 0.5}
    case_params = {c: matrix.resolved(c).set for c in scale}  # as the runner plans them: jvm_options, depth 1
    path = make_bundle(
        tmp_path, spass_like(scale), tuple(scale), matrix={"name": "fluctuation"}, case_params=case_params
    )
    (t5,) = moobench.tables([path], view="fluctuation")
    assert t5.name == "table5"
    (note,) = [n for n in t5.table.notes if n.startswith("Setups as run")]
    assert "base: 20,000 calls at recursion depth 5, jvm options -XX:+UseSerialGC; " in note
    assert "parallel-gc: 20,000 calls at recursion depth 5, jvm options -XX:+UseParallelGC; " in note
    assert "depth-1: 20,000 calls at recursion depth 1, jvm options -XX:+UseSerialGC." in note


def test_the_matrix_at_the_paper_profile_runs_moobench_defaults():
    from pirex.core import experiment

    exp = experiment.load("moobench")
    m = exp.matrices["fluctuation"]
    paper = {**exp.resolve("paper"), **m.parameters_for("paper")}
    assert (paper["calls"], paper["recursion_depth"], paper["settle"]) == (2_000_000, 10, "yes")
    assert moobench.profile_setup("paper", "fluctuation") == moobench.profile_setup("paper-spass-meter")
    # the papers ran the Pi's JVM with a sequential collector (ICPE'18 5.3), as the fluctuation base case does
    assert moobench.profile_setup("paper-spass-meter").text == (
        "2,000,000 calls at recursion depth 10, jvm options -XX:+UseSerialGC, settle yes"
    )
    quick = {**exp.resolve("quick"), **m.parameters_for("quick")}
    assert quick["calls"] == exp.resolve("quick")["calls"] and quick["recursion_depth"] == 10
    import yaml

    doc = yaml.safe_load(exp.path.read_text())
    doc["matrices"]["fluctuation"]["profiles"]["paper"] = {"cals": 2_000_000}  # a typo is refused at load
    with pytest.raises(PirexError, match="matrices.fluctuation.profiles.paper: unknown parameter 'cals'"):
        experiment.parse(doc, exp.path)


def test_views_split_matrix_and_variant_bundles(tmp_path):
    plain = make_bundle(tmp_path / "a", published_like, ("native",))
    matrix = make_bundle(tmp_path / "b", spass_like({"base": 1.0}), ("base",), matrix={"name": "fluctuation"})
    names = [t.name for t in moobench.tables([plain, matrix])]
    assert names == ["table2", "table1", "overhead"]
    assert [t.name for t in moobench.tables([plain, matrix], view="fluctuation")] == ["table5"]
    with pytest.raises(PirexError, match="none of the 1 bundle"):
        moobench.tables([plain], view="fluctuation")
    with pytest.raises(PirexError, match="no view 'nope'"):
        moobench.tables([plain], view="nope")
    assert set(moobench.VIEWS) == {"fluctuation"}


def test_run_values_one_per_loop(tmp_path):
    path = make_bundle(tmp_path, published_like, ("native", "docker"))
    values = moobench.run_values([path])
    # variants x loops x configurations x (mean, sd, peaks, max), but no sd where loop 0's steady calls are equal
    assert len(values) == 2 * 5 * 3 * 4 - 2 * 3
    v = next(x for x in values if (x.variant, x.repetition, x.metric) == ("native", 2, "kieker-text"))
    assert v.value == pytest.approx(100.0) and v.unit == "µs" and v.bundle == path.name  # (100,002 + 99,998) / 2
    assert v.inner == pytest.approx((100.0,))
    mb = make_bundle(tmp_path / "m", spass_like({"base": 1.0}), ("base",), matrix={"name": "fluctuation"})
    (m,) = {x.variant for x in moobench.run_values([mb], "fluctuation")}
    assert m == "base"


def test_a_loops_spread_is_a_run_value_of_its_own(tmp_path):
    """sd, peaks and max of each loop's steady state, against numpy on the same calls."""
    calls = [1000] * 19 + [100_000]  # steady state: the last 10 calls; their mean 10,900 ns, one call > 5 x it

    def files(v, r):
        return [None] * 5 if r is None else {"kieker-text": [c + r for c in calls]}

    values = {(v.repetition, v.metric): v for v in moobench.run_values([make_bundle(tmp_path, files)])}
    for r in range(5):
        steady = np.array(calls[10:], dtype=float) + r
        sd, peaks, top = (values[(r, f"kieker-text {s}")] for s in ("sd", "peaks", "max"))
        assert sd.value == pytest.approx(np.std(steady, ddof=1) / 1000) and sd.unit == "µs"
        assert peaks.value == pytest.approx(1 / 10 * 1e6) and peaks.unit == "per million calls"  # nothing added
        assert (peaks.count, peaks.exposure) == (1, 10)  # what stats.rate_ratio compares
        assert top.value == pytest.approx((100_000 + r) / 1000) and not top.inner
        assert sd.setup == values[(r, "kieker-text")].setup  # a loop's spread never pools two setups either
        assert sd.count is None and top.count is None


def test_a_loop_without_peaks_counts_0_and_keeps_its_value(tmp_path):
    """No peak in a loop is a count of 0 over its calls, not a missing value nor half a peak."""

    def files(v, r):
        return [None] * 5 if r is None else {"kieker-text": [1000 + (c % 3) for c in range(20)]}

    values = {(v.repetition, v.metric): v for v in moobench.run_values([make_bundle(tmp_path, files)])}
    for r in range(5):
        peaks = values[(r, "kieker-text peaks")]
        assert (peaks.value, peaks.count, peaks.exposure) == (0.0, 0, 10)


def test_bundles_of_two_depths_are_two_setups(tmp_path):
    """Loops of different recursion depths are never pooled: two setups, each in its tables' names and notes."""
    deep = make_bundle(tmp_path / "a", published_like, params={**QUICK, "recursion_depth": 10})
    flat = make_bundle(tmp_path / "b", published_like)
    with pytest.raises(PirexError, match="2 setups"):
        moobench.analyse([deep, flat])
    named = {t.name: t.table for t in moobench.tables([deep, flat])}
    assert sorted(named) == [f"{t}-20000-d{d}" for t in ("overhead", "table1", "table2") for d in (10, 5)]
    assert named["table2-20000-d10"].notes[-1] == f"Setup: 20,000 calls at recursion depth 10 ({deep.name})."
    assert named["table2-20000-d5"].notes[-1] == f"Setup: 20,000 calls at recursion depth 5 ({flat.name})."
    # a parameter that changes what is measured splits too, and says so; the same depth keeps its calls and depth
    gc = make_bundle(tmp_path / "c", published_like, params={**QUICK, "jvm_options": "-XX:+UseParallelGC"})
    named = {t.name: t.table for t in moobench.tables([flat, gc])}
    assert sorted(named)[:2] == ["overhead-20000-d5-1", "overhead-20000-d5-2"]
    assert (
        named["table2-20000-d5-2"]
        .notes[-1]
        .startswith("Setup: 20,000 calls at recursion depth 5, jvm options -XX:+UseParallelGC (")
    )


def test_a_bundle_without_its_setup_is_refused_by_name(tmp_path):
    """Calls and depth are never taken as 0: a bundle that does not record them is named, with what to do."""
    path = make_bundle(tmp_path, published_like, params={k: v for k, v in QUICK.items() if k != "calls"})
    with pytest.raises(PirexError, match=rf"{path}/manifest.json: the run records no parameter 'calls'"):
        moobench.tables([path])


def test_tables_say_where_spass_meter_rows_would_be(tmp_path):
    def files(v, r):
        return [None] * 2 if r is None else {"baseline": [1000] * 4, "kieker-text": [100_000] * 4}

    names = {t.name: t.table for t in moobench.tables([make_bundle(tmp_path, files)])}
    for name in ("table2", "table1"):
        assert any("No SPASS-meter rows" in n and "spass-meter/README.md" in n for n in names[name].notes)


def test_raw_envelope_keeps_every_peak():
    low = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    high = np.array([10, 20, 999, 40, 50, 60, 70], dtype=float)
    x, lo, hi = moobench.envelope(low, high, points=3)  # 7 blocks -> 3 points of up to 3 blocks
    assert x.tolist() == [0, 3000, 6000, 7000] and lo.tolist() == [1, 4, 7] and hi.tolist() == [999, 60, 70]
    x, lo, hi = moobench.envelope(low, high)  # few blocks: one point each
    assert hi.tolist() == high.tolist()


@pytest.mark.parametrize("engine", ENGINES)
def test_blocks_keep_their_minimum_and_maximum(tmp_path, engine):
    f = tmp_path / "raw.csv"
    values = [5] * 999 + [7_000_000] + [3] + [4] * 500
    f.write_text("".join(f"1;{x};0;0\n" for x in values))
    loop = moobench_read.read_loop(f, engine)
    assert loop.block_max.tolist() == [7_000_000, 4] and loop.block_min.tolist() == [5, 3]


def test_figures_mean_and_raw(tmp_path):
    pytest.importorskip("matplotlib")
    path = make_bundle(tmp_path, published_like, ("native",))
    files = moobench.figures([path], tmp_path / "fig")
    assert [f.name for f in files] == [
        "response-time.png",
        "response-time.svg",
        "response-time-raw.png",
        "response-time-raw.svg",
    ]
    assert files[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
