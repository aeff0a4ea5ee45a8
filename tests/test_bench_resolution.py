"""scripts/bench_resolution.py on a constructed bundle (no Docker): what `make bench-resolution` prints."""

import contextlib
import importlib.util
import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pirex.analysis import stats
from pirex.core import paths
from pirex.core.proc import group_members
from scripts import noisy_neighbour

spec = importlib.util.spec_from_file_location("bench_resolution", paths.REPO / "scripts" / "bench_resolution.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_resolution"] = bench  # dataclasses look their module up
spec.loader.exec_module(bench)


def _bundle(
    root: Path, variants: list[str], reps: int = 6, forks: int = 2, design: str | None = None, half: float = 1.0
) -> Path:
    """A jmh bundle of B1 (and a B2 of one value): docker 2 % faster, fork-to-fork CV 2 %; a duet's steps on CPU
    "0" are `half` times faster than on CPU "1"."""
    rng = np.random.default_rng(4)
    path = root / "jmh" / "20261124T050000Z-abcdef"
    completed = []
    for rep in range(reps):
        for i, variant in enumerate(variants):
            step = path / variant / str(rep)
            step.mkdir(parents=True)
            scale = 1.02 if variant == "docker" else 1.0
            if design == "duet":
                scale *= half if (rep + i) % 2 == 0 else 1.0  # on CPU "0"
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
            if design == "duet":  # both at once, on swapped halves; the docker side a second longer
                start = 1_795_000_000.0 + 60 * rep
                cpus = str((rep + i) % 2)
                completed[-1] |= {"cpus": cpus, "start": start, "end": start + 20.0 + (variant == "docker")}
    params = {
        "repetitions": reps,
        "forks": forks,
        "warmup_iterations": 2,
        "iterations": 4,
        "warmup_time": "1s",
        "time": "1s",
    }
    # a whole manifest (pirex.core.bundle's SCHEMA_VERSION 1): the script reads it through pirex.core.bundle
    manifest = {
        "schema_version": 1,
        "run_id": path.name,
        "experiment": "jmh",
        "profile": "paper",
        "parameters": params,
        "variants": variants,
        **({"design": design} if design else {}),
        "images": {},
        "tool": {"version": "t", "commit": "c"},
        "started": "2026-11-24T05:00:00Z",
        "ended": "2026-11-24T06:00:00Z",
        "resumed": [],
        "status": "complete",
        "plan": [{"variant": s["variant"], "repetition": s["repetition"]} for s in completed],
        "completed": completed,
        "files": {},
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


def test_designs_side_by_side_from_constructed_bundles(tmp_path, capsys):
    """A duet bundle's steps cost a repetition the longer of the two (they ran at once), not their sum; the summary
    sets the designs' half-widths side by side (the duet's with its CPU half modelled and without) and tests
    whether the two designs' ratios differ."""
    inter = bench.read_bundle(_bundle(tmp_path / "i", ["native", "docker", "native-aa"]))
    at_once = bench.read_bundle(_bundle(tmp_path / "d", ["native", "docker"], design="duet"))
    assert at_once.design == "duet" and inter.design == "interleaved"
    assert at_once.cpus["native"] == {r: str(r % 2) for r in range(6)}  # swapped every repetition
    assert bench.per_repetition(at_once, ("docker", "native")) == 21.0  # max(21, 20), from start/end
    assert bench.per_repetition(inter, ("docker", "native")) == 60.0  # 30 + 30, one after the other
    lines = bench.summary({"interleaved": inter, "duet": at_once})
    text = "\n".join(lines)
    duet, plain, one = (
        bench.ratio(at_once, "docker", "native"),
        bench.half_width(at_once, "docker", "native"),
        bench.ratio(inter, "docker", "native"),
    )
    assert duet.method == "duet-half-t" and plain.method == one.method == "t-log"
    z, p = stats.difference_test(duet, one)
    assert f"duet {duet.value:.4f} against interleaved {one.value:.4f}: z = {z:+.2f}, p = {p:.3g}: " in text
    assert ("differ" if p < 0.05 else "no detectable difference") in text and "lies inside" not in text
    widths = f"interleaved {one.percent(2)}, duet with the CPU half modelled {duet.percent(2)}, duet unmodelled"
    assert f"b1_default 95 % half-widths: {widths} {plain.percent(2)}" in text
    assert "6 pairs, 2.1 min of steps" in text and "6 pairs, 6.0 min of steps" in text  # 6 x 21 s; 6 x 60 s
    assert "A/A" in lines[1] and "A/A" not in lines[2]  # the duet bundle has no native-aa
    bench.main(["--bundle", str(at_once.path)])
    out = capsys.readouterr().out
    assert "design duet" in out and "plan (this run as Stein's pilot, at once, the CPU half modelled, 21 s" in out


def test_dry_run_of_the_designs_prints_one_pirex_run_each(capsys):
    assert bench.main(["--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(" (")[0] for ln in out] == ["interleaved", "duet", "duet-aa"]
    assert "--variants native,docker,native-aa" in out[0] and "--set repetitions=55" in out[0]
    assert "--design" not in out[0]
    assert "--variants native,docker " in out[1] and "--design duet" in out[1] and "--set repetitions=110" in out[1]
    assert "--variants native,native-aa " in out[2] and "--design duet" in out[2]
    bench.main(["--dry-run", "--designs", "duet", "--allocation", "small"])
    assert "--set repetitions=6 " in capsys.readouterr().out  # small's 5, even for a duet: 3 on each half
    bench.main(["--dry-run", "--scale", "0.4"])
    assert [ln.split("--set repetitions=")[1].split()[0] for ln in capsys.readouterr().out.splitlines()] == [
        "22",
        "44",
        "44",
    ]


def test_a_duets_half_effect_is_modelled_out_of_its_ratio_and_planned_from(tmp_path, capsys):
    """A 3 % CPU half beside 2 % fork noise: the duet's ratio with the half as a factor is narrower than without
    it, the half's effect is shown, and Stein's plan is taken from the model."""
    at_once = bench.read_bundle(_bundle(tmp_path, ["native", "docker"], reps=8, design="duet", half=1.03))
    assert at_once.halves("native") == {r: 1 if r % 2 == 0 else -1 for r in range(8)}  # CPU "0" the first half
    assert at_once.halves("docker") == {r: -1 if r % 2 == 0 else 1 for r in range(8)}
    duet, plain = bench.ratio(at_once, "docker", "native"), bench.half_width(at_once, "docker", "native")
    assert duet.relative_half_width < plain.relative_half_width / 2
    assert duet.half.low < 1.03 < duet.half.high  # docker/native when docker had CPU "0", the faster half
    bench.main(["--bundle", str(at_once.path)])
    out = capsys.readouterr().out
    assert f"half modelled      95 %: {duet.text(4)}" in out and f"the CPU half's effect {duet.half.text(4)}" in out
    assert "plan (this run as Stein's pilot, at once, the CPU half modelled, 21 s per repetition" in out


def test_the_difference_test_says_differ_only_past_its_level():
    a = stats.Interval(1.0, 0.99, 1.0101, 10, 0.95, "t-log")
    far = stats.Interval(1.05, 1.04, 1.0606, 10, 0.95, "t-log")
    assert bench.difference_line("duet", far, "interleaved", a).endswith("differ (difference test on logs at 5 %)")
    assert "no detectable difference" in bench.difference_line("duet", a, "interleaved", a)
    none = stats.Interval(1.0, None, None, 3, 0.95, "none", "no interval: 3 paired repetitions, 5 needed")
    assert "no test" in bench.difference_line("duet", none, "interleaved", a)


def test_the_noisy_neighbour_option_is_checked_and_dry_runs_start_nothing(capsys):
    assert noisy_neighbour.phases("5,5") == (5.0, 5.0, __import__("os").cpu_count())
    assert noisy_neighbour.phases("2, 0.5, 3") == (2.0, 0.5, 3)
    for bad in ("5", "a,b", "0,5", "5,5,0", "1,2,3,4"):
        with pytest.raises(SystemExit, match="--noisy-neighbour"):
            noisy_neighbour.phases(bad)
    assert bench.main(["--dry-run", "--noisy-neighbour", "5,5", "--benchmarks", "b1_default,b6_tcpSend"]) == 0
    out = capsys.readouterr().out
    assert "noisy neighbour" not in out and "--set benchmarks=b1_default|b6_tcpSend" in out
    assert "--set repetitions=110" in out  # a duet's count stays even


def _busy(pids: list[int]) -> bool:
    """Whether any of the processes has used CPU time beyond a tenth of a second."""
    ticks = __import__("os").sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks > 0.1


def test_the_noisy_neighbour_runs_its_workers_and_is_gone_after_the_block():
    with noisy_neighbour.NoisyNeighbour(0.3, 0.2, 2) as hog:
        deadline = time.monotonic() + 30
        while len(members := group_members(hog.proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(members) == 2
        while not _busy(members) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _busy(members)
    assert group_members(hog.proc.pid) == [] and hog.proc.returncode is not None


def test_ctrl_c_stops_the_noisy_neighbour_too():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), noisy_neighbour.NoisyNeighbour(0.2, 0.2, 1) as hog:
        assert signal.getsignal(signal.SIGTERM) is noisy_neighbour._terminate  # SIGTERM unwinds through the block too
        raise KeyboardInterrupt
    assert group_members(hog.proc.pid) == [] and signal.getsignal(signal.SIGTERM) is before


def test_a_killed_benchmark_leaves_no_hog_behind(tmp_path):
    """SIGKILL gives the benchmark no say: the hog's workers see it gone and end of themselves."""
    code = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(paths.REPO)!r})\n"
        "from scripts import noisy_neighbour as b\n"
        "with b.NoisyNeighbour(0.2, 0.2, 2) as hog:\n"
        f"    open({str(tmp_path / 'pgid')!r}, 'w').write(str(hog.proc.pid))\n"
        "    time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "pgid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pgid = int((tmp_path / "pgid").read_text())
        while len(group_members(pgid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(group_members(pgid)) == 2
        proc.kill()
        proc.wait()
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group_members(pgid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
