#!/usr/bin/env python3
"""Benchmark of the MooBench analysis: pirex's reader and statistics against a straightforward pandas version.

Generates a moobench bundle of the papers' size (10 loops x 1,000,000 calls x 5 configurations = 50 M rows, about
1 GB; seeded), then times, each in its own subprocess so that peak RSS (VmHWM of the child) is per implementation:

  (a) pirex: pirex.analysis.moobench.analyse() (reader engine: numba if installed, else numpy; --engine picks)
  (b) pandas: read_csv per file, second half per thread, pooled statistics

each --repeat times, alternating, and prints the median time (and range), rows/s, the speed ratio and the peak
RSS of both, and checks that they computed the same statistics.

    .venv/bin/python scripts/bench_analysis.py                       # full size, in a temporary directory
    .venv/bin/python scripts/bench_analysis.py --calls 20000 --loops 3 --configurations 2   # smoke run
    .venv/bin/python scripts/bench_analysis.py --dir /var/tmp/mb     # keep (and reuse) the generated data

Needs pandas (and numba for the fast path): pip install -e '.[analysis,fast,bench]'. numba compiles pirex's
scanner once and caches it; a first run of the pirex child before the timed ones fills that cache, and its time,
compilation included, is printed apart.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# name -> (mean µs of the steady state, relative sd, peak probability, peak factor range): plausible for a Pi 3
PROFILES = {
    "baseline": (1.6, 0.12, 0.0017, (5, 70)),
    "spass-meter": (150.0, 0.25, 0.0004, (5, 120)),
    "kieker-text": (120.0, 0.30, 0.0008, (5, 400)),
    "kieker-binary": (90.0, 0.30, 0.0006, (5, 300)),
    "kieker-dump": (25.0, 0.20, 0.0005, (5, 60)),
    "kieker-deactivated": (4.0, 0.15, 0.0010, (5, 60)),
    "kieker-tcp": (70.0, 0.30, 0.0006, (5, 200)),
    "opentelemetry": (60.0, 0.25, 0.0005, (5, 100)),
    "spass-meter-time-only": (130.0, 0.22, 0.0003, (5, 100)),
}


def durations(rng: np.random.Generator, cfg: str, calls: int, loop_factor: float) -> np.ndarray:
    mean, rel_sd, p_peak, (lo, hi) = PROFILES[cfg]
    i = np.arange(calls)
    warmup = 1 + 9 * np.exp(-i / (calls / 20))  # JIT warm-up: 10x slower at first
    drift = 1 + 0.04 * i / calls  # the slope SSP'17 saw over a run
    sigma = math.sqrt(math.log(1 + rel_sd**2))
    noise = rng.lognormal(-(sigma**2) / 2, sigma, calls)
    peaks = np.where(rng.random(calls) < p_peak, rng.uniform(lo, hi, calls), 1.0)
    return np.maximum(mean * 1000 * loop_factor * warmup * drift * noise * peaks, 1).astype(np.int64)


def write_raw(path: Path, d: np.ndarray, rng: np.random.Generator) -> None:
    import pandas as pd

    n = d.size
    gc = (rng.random(n) < 0.002).astype(np.int64)
    heap = 20_000_000 + (np.arange(n) * 48) % 90_000_000
    frame = pd.DataFrame({"thread": np.ones(n, np.int64), "duration": d, "heap": heap, "gc": gc})
    frame.to_csv(path, sep=";", header=False, index=False)


def parameters(calls: int, loops: int, configurations: list[str], seed: int) -> dict:
    """The run's parameters as the runner records them: experiments/moobench's paper profile (recursion depth 5, the
    defaults of method_time, threads, heap, JVM options, settling) with these calls, loops and configurations. The
    tables read every setup parameter from the bundle (moobench_read.SETUP) and refuse a bundle that lacks one."""
    from pirex.analysis.moobench_read import MOOBENCH
    from pirex.core import experiment

    return {
        **experiment.load(MOOBENCH).resolve("paper"),
        "calls": calls,
        "repetitions": loops,
        "configurations": ",".join(configurations),
        "seed": seed,
    }


def generate(root: Path, calls: int, loops: int, configurations: list[str], seed: int) -> Path:
    from pirex.core.bundle import Bundle

    plan = [("native", r) for r in range(loops)]
    params = parameters(calls, loops, configurations, seed)
    b = Bundle.create(root, "moobench", "bench", params, ["native"], plan, {}, {"version": "bench", "commit": "-"})
    machine = {"hostname": "bench", "cpu": {"model": "synthetic"}, "storage": {"kind": "bench"}}
    b.write_machine(before=machine, after=machine)
    rng = np.random.default_rng(seed)
    for v, r in plan:
        with b.step(v, r) as d:
            for cfg in configurations:
                loop_factor = rng.normal(1.0, 0.03)  # loops differ: a fresh JVM lands elsewhere
                write_raw(d / f"raw-{cfg}.csv", durations(rng, cfg, calls, loop_factor), rng)
    b.finish()
    return b.path


# --- the two implementations, each run in a child process ---------------------------------------------------------


def run_pirex(bundle: Path, engine: str | None) -> dict:
    from pirex.analysis import moobench

    out = {}
    for r in moobench.analyse([bundle], engine):
        s = r.stats
        out[r.configuration] = {
            "n": s.n,
            "mean": s.mean,
            "sd": s.sd,
            "ci": list(s.ci()),
            "min": s.summary.min,
            "q1": s.summary.q1,
            "median": s.summary.median,
            "q3": s.summary.q3,
            "max": s.summary.max,
        }
    return out


def run_pandas(bundle: Path) -> dict:
    import pandas as pd
    from scipy import stats as sps

    files: dict[str, list[Path]] = {}
    for f in sorted(bundle.glob("*/*/raw-*.csv")):
        files.setdefault(f.name[4:-4], []).append(f)
    out = {}
    for cfg, paths in files.items():
        halves = []
        for p in paths:
            df = pd.read_csv(p, sep=";", header=None, names=["thread", "duration", "heap", "gc"])
            pos = df.groupby("thread").cumcount()
            n = df.groupby("thread")["duration"].transform("size")
            halves.append(df[pos >= n - n // 2])
        x = pd.concat(halves)["duration"] / 1000.0
        mean, sd, k = x.mean(), x.std(), len(x)
        half = sps.t.ppf(0.975, k - 1) * sd / math.sqrt(k)
        q = x.quantile([0.25, 0.5, 0.75])
        out[cfg] = {
            "n": k,
            "mean": mean,
            "sd": sd,
            "ci": [mean - half, mean + half],
            "min": x.min(),
            "q1": q[0.25],
            "median": q[0.5],
            "q3": q[0.75],
            "max": x.max(),
        }
    return out


def child(which: str, bundle: Path, engine: str | None) -> None:
    if which == "pandas":  # imports are not timed
        import pandas  # noqa: F401
        import scipy.stats  # noqa: F401
    else:
        import pirex.analysis.moobench  # noqa: F401

        if engine == "numba":
            import pirex.analysis.moobench_scan  # noqa: F401
    t = time.perf_counter()
    result = run_pandas(bundle) if which == "pandas" else run_pirex(bundle, engine)
    seconds = time.perf_counter() - t
    hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"seconds": seconds, "peak_rss_kb": hwm_kb, "stats": result}, default=float))


def measure(which: str, bundle: Path, engine: str | None) -> dict:
    cmd = [sys.executable, __file__, "--child", which, "--dir", str(bundle)] + (["--engine", engine] if engine else [])
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode:
        sys.exit(f"{which} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def same(a: dict, b: dict) -> list[str]:
    diffs = []
    for cfg in sorted(set(a) | set(b)):
        for k in ("n", "mean", "sd", "min", "q1", "median", "q3", "max"):
            x, y = a.get(cfg, {}).get(k), b.get(cfg, {}).get(k)
            if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                diffs.append(f"{cfg} {k}: {x} vs {y}")
    return diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1_000_000, help="calls per loop (default 1,000,000)")
    ap.add_argument("--loops", type=int, default=10, help="loops = repetitions (default 10)")
    ap.add_argument("--configurations", type=int, default=5, help=f"how many of {', '.join(PROFILES)} (default 5)")
    ap.add_argument("--seed", type=int, default=2018)
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs of each implementation (default 3)")
    ap.add_argument("--dir", type=Path, help="keep the data here (a bundle found there is reused); default: a temp dir")
    ap.add_argument("--engine", choices=["numba", "numpy"], help="pirex's reader (default: numba if installed)")
    ap.add_argument("--child", choices=["pirex", "pandas"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error(f"--repeat {a.repeat}: at least 1")
    if a.child:
        child(a.child, a.dir, a.engine)
        return
    configurations = list(PROFILES)[: a.configurations]
    tmp = None
    if a.dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="pirex-bench-"))
    root = a.dir or tmp
    from pirex.core.bundle import MANIFEST, Bundle  # here, not at the top: the children's peak RSS is theirs alone

    try:
        existing = sorted(root.glob(f"moobench/*/{MANIFEST}"))
        bundle = None
        wanted = parameters(a.calls, a.loops, configurations, a.seed)
        for m in existing:
            if Bundle.open(m.parent).parameters == wanted:
                bundle = m.parent
        if bundle is None:
            t = time.perf_counter()
            bundle = generate(root, a.calls, a.loops, configurations, a.seed)
            print(f"generated {bundle} in {time.perf_counter() - t:.1f} s")
        else:
            print(f"reusing {bundle}")
        rows = a.calls * a.loops * len(configurations)
        size = sum(f.stat().st_size for f in bundle.glob("*/*/raw-*.csv"))
        print(
            f"{rows:,} rows ({a.loops} loops x {a.calls:,} calls x {len(configurations)} configurations), "
            f"{size / 1e9:.2f} GB"
        )
        from pirex.analysis.moobench_read import default_engine

        engine = a.engine or default_engine(size)
        if engine == "numba":  # numba compiles the scanner on first use and caches it: not part of the timed runs
            first = measure("pirex", bundle, engine)
            print(f"first pirex run (numba compiles its scanner if not cached yet): {first['seconds']:.2f} s")
        runs: dict[str, list[dict]] = {"pirex": [], "pandas": []}
        for _ in range(a.repeat):  # alternating, so that a slow spell of the machine hits both
            runs["pirex"].append(measure("pirex", bundle, engine))
            runs["pandas"].append(measure("pandas", bundle, None))
        secs = {k: sorted(r["seconds"] for r in v) for k, v in runs.items()}
        med = {k: statistics.median(v) for k, v in secs.items()}
        rss = {k: max(r["peak_rss_kb"] for r in v) for k, v in runs.items()}
        print(f"{a.repeat} alternating runs each; median (min-max):")
        for k, name in (("pirex", f"pirex ({engine})"), ("pandas", "pandas")):
            print(
                f"{name:16s} {med[k]:6.2f} s ({secs[k][0]:.2f}-{secs[k][-1]:.2f})  "
                f"{rows / med[k] / 1e6:7.2f} M rows/s  peak RSS {rss[k] / 1024:6.0f} MiB"
            )
        ratios = sorted(p["seconds"] / o["seconds"] for o, p in zip(runs["pirex"], runs["pandas"], strict=True))
        ratio, rss_ratio = med["pandas"] / med["pirex"], rss["pirex"] / rss["pandas"]
        print(
            f"speed ratio pandas/pirex: {ratio:.2f}x (per pair {ratios[0]:.2f}-{ratios[-1]:.2f}x); "
            f"peak RSS pirex/pandas: {rss_ratio:.2f}"
        )
        ref = runs["pandas"][0]["stats"]
        diffs = sorted({d for r in runs["pirex"] + runs["pandas"][1:] for d in same(r["stats"], ref)})
        print("statistics: identical (rel. 1e-9)" if not diffs else "statistics DIFFER:\n  " + "\n  ".join(diffs))
        if diffs:
            sys.exit(1)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("POLARS_MAX_THREADS", str(os.cpu_count() or 1))
    main()
