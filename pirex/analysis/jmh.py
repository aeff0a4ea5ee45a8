"""ICPE'18 Table 1 from jmh bundles, the docker/native ratios the paper lacked, and the
comparison with the published table (analysis/icpe18/table1.csv)."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pirex.analysis import stats, tidy
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.tables import Table
from pirex.analysis.tidy import Row
from pirex.paths import PAPERS

PUBLISHED = PAPERS / "icpe18" / "table1.csv"
LEVEL = 0.999


@dataclass
class Line:
    benchmark: str
    device: str
    storage: str
    variant: str
    summary: stats.Summary

    @property
    def config(self) -> str:
        return f"{self.device}, {self.storage}, {self.variant}"


def runs(rows: list[Row]) -> dict[tuple, list[float]]:
    """Per (benchmark, device, storage, variant): the mean of every fork (an independent JVM)."""
    forks: dict[tuple, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        forks[(r.benchmark, r.device, r.storage, r.variant)][(r.run, r.repetition, r.fork)].append(r.value)
    return {k: [sum(v) / len(v) for v in f.values()] for k, f in forks.items()}


def table1(rows: list[Row]) -> list[Line]:
    pooled: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        pooled[(r.benchmark, r.device, r.storage, r.variant)].append(r.value)
    return [Line(*k, stats.summary(v)) for k, v in sorted(pooled.items())]


def ratios(rows: list[Row], numerator: str = "docker", denominator: str = "native") -> list[tuple]:
    per_run = runs(rows)
    out = []
    for (bench, dev, sto, var), num in sorted(per_run.items()):
        if var != numerator or (bench, dev, sto, denominator) not in per_run:
            continue
        out.append((bench, dev, sto, stats.ratio_ci(num, per_run[(bench, dev, sto, denominator)], LEVEL)))
    return out


def _fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{digits}f}"


def ratio_text(r: stats.Ratio) -> str:
    if not r.has_interval:
        return f"{r.value:.4f} (no interval: {min(r.n_num, r.n_den)} forks, {stats.MIN_RUNS} needed)"
    return f"{r.value:.4f} [{r.low:.4f} ; {r.high:.4f}]"


def markdown(lines: list[Line], rats: list[tuple]) -> str:
    out = [
        "| Benchmark | Configuration | Mean throughput (ops/s) | 99.9 % CI | σ | n |",
        "|---|---|---:|---|---:|---:|",
    ]
    for ln in lines:
        lo, hi = ln.summary.ci(LEVEL)
        out.append(f"| {ln.benchmark} | {ln.config} | {_fmt(ln.summary.mean)} | [{_fmt(lo)} ; {_fmt(hi)}] | "
                   f"{_fmt(ln.summary.sd)} | {ln.summary.n} |")  # fmt: skip
    if rats:
        out += ["", "docker/native throughput per benchmark, 99.9 % bootstrap CI over forks (independent JVMs):", "",
                "| Benchmark | Device, storage | docker/native |", "|---|---|---|"]  # fmt: skip
        out += [f"| {b} | {d}, {s} | {ratio_text(r)} |" for b, d, s, r in rats]
    out += [
        "",
        "CIs of the first table pool every iteration, as the paper did (t interval, n iterations); "
        "they are far narrower than the run-to-run spread. Judge differences by the ratio intervals over forks.",
    ]
    return "\n".join(out)


def latex(lines: list[Line]) -> str:
    out = [r"\begin{tabular}{llrrr}", r"\toprule",
           r"Benchmark & Configuration & Mean throughput & 99.9\,\% CI & $\sigma$ \\", r"\midrule"]  # fmt: skip
    for ln in lines:
        lo, hi = ln.summary.ci(LEVEL)
        cfg = ln.config.replace("_", r"\_").replace("%", r"\%")
        out.append(f"{ln.benchmark} & {cfg} & {_fmt(ln.summary.mean)} & [{_fmt(lo)} ; {_fmt(hi)}] & "
                   f"{_fmt(ln.summary.sd)} \\\\")  # fmt: skip
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out) + "\n"


def write_csv(lines: list[Line], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "device", "storage", "variant", "n", "mean", "ci999_low", "ci999_high", "sd"])
        for ln in lines:
            lo, hi = ln.summary.ci(LEVEL)
            w.writerow([ln.benchmark, ln.device, ln.storage, ln.variant, ln.summary.n, ln.summary.mean, lo, hi,
                        ln.summary.sd])  # fmt: skip


# --- comparison with the published table ------------------------------------------------------


def published() -> list[dict]:
    with open(PUBLISHED) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def published_ratios() -> dict[str, float]:
    """The ratios that can be compared across hardware, from Table 1 (device D2, disk H1)."""
    p = {(r["benchmark"], r["device"], r["storage"], r["variant"]): float(r["mean"]) for r in published()}
    d2 = lambda b, v="native": p[(b, "D2", "H1", v)]  # noqa: E731
    return {
        "B2/B1": d2("B2") / d2("B1"),
        "B3/B1": d2("B3") / d2("B1"),
        "B4/B1": d2("B4") / d2("B1"),
        "B1 docker/native": d2("B1", "docker") / d2("B1"),
        "B5 docker/native": d2("B5", "docker") / d2("B5"),
        "B6 docker/native": d2("B6", "docker") / d2("B6"),
    }


# Depend on the device (the interpreter's speed, the disk, the network): shown, not judged.
NO_VERDICT = {"B4/B1", "B5 docker/native", "B6 docker/native"}


def compare(rows: list[Row]) -> list[tuple[str, str, float, stats.Ratio, str]]:
    per_run = runs(rows)
    ours: list[tuple[str, str, stats.Ratio]] = []
    configs = sorted({(k[1], k[2], k[3]) for k in per_run})
    for dev, sto, var in configs:
        for b in ("B2", "B3", "B4"):
            if (b, dev, sto, var) in per_run and ("B1", dev, sto, var) in per_run:
                r = stats.ratio_ci(per_run[(b, dev, sto, var)], per_run[("B1", dev, sto, var)], LEVEL)
                ours.append((f"{b}/B1", f"{dev}, {sto}, {var}", r))
    for b, dev, sto, r in ratios(rows):
        ours.append((f"{b} docker/native", f"{dev}, {sto}", r))
    pub = published_ratios()
    out = []
    for name, cfg, r in ours:
        if name not in pub:
            continue
        if name in NO_VERDICT:
            verdict = "shown without verdict (device-dependent)"
        elif not r.has_interval:
            verdict = f"no verdict: {min(r.n_num, r.n_den)} forks, {stats.MIN_RUNS} needed"
        elif r.low <= pub[name] <= r.high:
            verdict = "consistent with the paper"
        else:
            verdict = "differs from the paper"
        out.append((name, cfg, pub[name], r, verdict))
    return out


def compare_markdown(result: list[tuple]) -> str:
    out = ["| Ratio | Our configuration | ICPE'18 (D2, H1) | Ours (99.9 % bootstrap CI over forks) | Verdict |",
           "|---|---|---:|---|---|"]  # fmt: skip
    out += [f"| {n} | {c} | {p:.4f} | {ratio_text(r)} | {v} |" for n, c, p, r, v in result]
    return "\n".join(out)


# --- the analysis interface (pirex/analysis/interface.py) --------------------------------------

VIEWS: dict[str, str] = {}


def _rows(bundles: Sequence[Path]) -> list[Row]:
    return [r for b in bundles for r in tidy.jmh_rows(b)]


def _table1(lines: list[Line]) -> Table:
    cells, records = [], []
    for ln in lines:
        lo, hi = ln.summary.ci(LEVEL)
        cells.append([ln.benchmark, ln.config, _fmt(ln.summary.mean), f"[{_fmt(lo)} ; {_fmt(hi)}]",
                      _fmt(ln.summary.sd), str(ln.summary.n)])  # fmt: skip
        records.append({"benchmark": ln.benchmark, "device": ln.device, "storage": ln.storage, "variant": ln.variant,
                        "n": ln.summary.n, "mean": ln.summary.mean, "ci999_low": lo, "ci999_high": hi,
                        "sd": ln.summary.sd})  # fmt: skip
    note = ("The CIs pool every iteration, as the paper did (t interval, n iterations); they are far narrower than "
            "the run-to-run spread. Judge differences by the ratio intervals over forks.")  # fmt: skip
    return Table("ICPE'18 Table 1: JMH throughput (ops/s)",
                 ["Benchmark", "Configuration", "Mean throughput (ops/s)", "99.9 % CI", "σ", "n"], cells, records,
                 [note], label_columns=2)  # fmt: skip


def _ratio_table(rats: list[tuple]) -> Table:
    return Table(
        "docker/native throughput per benchmark, 99.9 % bootstrap CI over forks (independent JVMs)",
        ["Benchmark", "Device, storage", "docker/native"],
        [[b, f"{d}, {s}", ratio_text(r)] for b, d, s, r in rats],
        [
            {
                "benchmark": b,
                "device": d,
                "storage": s,
                "ratio": r.value,
                "low": r.low,
                "high": r.high,
                "n_docker": r.n_num,
                "n_native": r.n_den,
            }
            for b, d, s, r in rats
        ],  # fmt: skip
        label_columns=2,
    )


def tables(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    rows = _rows(bundles)
    out = [NamedTable("table1", _table1(table1(rows)))]
    if rats := ratios(rows):
        out.append(NamedTable("ratios", _ratio_table(rats)))
    return out


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    return []


def compare_table(result: list[tuple]) -> Table:
    return Table(
        "Our ratios beside ICPE'18 Table 1",
        ["Ratio", "Our configuration", "ICPE'18 (D2, H1)", "Ours (99.9 % bootstrap CI over forks)", "Verdict"],
        [[n, c, f"{p:.4f}", ratio_text(r), v] for n, c, p, r, v in result],
        [
            {
                "ratio": n,
                "configuration": c,
                "published": p,
                "ours": r.value,
                "low": r.low,
                "high": r.high,
                "verdict": v,
            }
            for n, c, p, r, v in result
        ],  # fmt: skip
        label_columns=2,
    )


def comparisons(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    return [NamedTable("compare-icpe18", compare_table(compare(_rows(bundles))))]


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    """One value per fork (an independent JVM): its mean throughput over the measured iterations."""
    forks: dict[tuple, list[float]] = defaultdict(list)
    for r in _rows(bundles):
        forks[(r.run, r.device, r.variant, r.repetition, r.fork, r.benchmark, r.unit)].append(r.value)
    return [RunValue("jmh", run, dev, var, rep, bench, sum(v) / len(v), unit, lower_is_better=False, run=fork,
                     inner=tuple(v)) for (run, dev, var, rep, fork, bench, unit), v in forks.items()]  # fmt: skip
