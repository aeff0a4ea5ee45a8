"""ICPE'18 Table 1 from jmh bundles, the docker/native ratios the paper lacked, and the
comparison with the published table (analysis/icpe18/table1.csv)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pirex.analysis import in_time, precision, stats
from pirex.analysis import tables as T
from pirex.analysis.bundles import open_bundle, per_setup
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.tables import Table
from pirex.analysis.tidy import Row, device_of, storage_of
from pirex.core import cpuset
from pirex.core.bundle import DUET, Step, read_json, reading
from pirex.core.errors import PirexError

LEVEL = 0.999
JMH_JSON = "jmh.json"  # a step's output (experiments/jmh/experiment.yaml: outputs)


# JMH method names of images/jmh -> the paper's benchmark numbers
JMH_BENCHMARKS = {
    "b1_default": "B1",
    "b2_inline": "B2",
    "b3_dontInline": "B3",
    "b4_exclude": "B4",
    "b5_fileWrite": "B5",
    "b6_tcpSend": "B6",
}


def setup_of(step: Step) -> str:
    """What decides a step's throughputs besides the machine: B1-B4's recursion depth and JMH's forks and
    iterations (PirexError naming the bundle when one was not recorded)."""
    p = step.param
    forks = p("forks")
    return (
        f"depth {p('depth')}, {forks} fork{'' if forks == 1 else 's'} per repetition, "
        f"{p('warmup_iterations')} warm-up iterations of {p('warmup_time')}, "
        f"{p('iterations')} measured of {p('time')}"
    )


@dataclass(frozen=True)
class Result:
    """One benchmark of a step's jmh.json: its JMH method (b1_default), its unit, every fork's measured iterations."""

    method: str
    unit: str
    forks: list[list[float]]


def read_results(step: Step) -> list[Result]:
    """A step's jmh.json (JMH's own JSON, one entry per benchmark); PirexError naming the file when it is damaged."""
    f = step.dir / JMH_JSON
    with reading(f):
        return [
            Result(
                r["benchmark"].rsplit(".", 1)[1],
                r["primaryMetric"]["scoreUnit"],
                [[float(x) for x in iterations] for iterations in r["primaryMetric"]["rawData"]],
            )
            for r in read_json(f, list)
        ]


def read_rows(bundle_path: Path) -> list[Row]:
    """A jmh bundle's jmh.json files as tidy rows: one per fork and measured iteration."""
    b = open_bundle(bundle_path, "jmh")
    machine = b.machine_before()
    device, storage = device_of(machine), storage_of(machine)
    rows = []
    for step in b.steps():
        setup = setup_of(step)
        for result in read_results(step):
            bench = JMH_BENCHMARKS.get(result.method, result.method)
            for fork, iterations in enumerate(result.forks):
                for i, value in enumerate(iterations):
                    rows.append(
                        Row(
                            "jmh",
                            b.run_id,
                            device,
                            storage,
                            step.variant,
                            bench,
                            step.repetition,
                            fork,
                            i,
                            "throughput",
                            value,
                            result.unit,
                            setup,
                        )
                    )
    return rows


@dataclass
class Line:
    setup: str
    benchmark: str
    device: str
    storage: str
    variant: str
    summary: stats.Summary

    @property
    def config(self) -> str:
        return f"{self.device}, {self.storage}, {self.variant}"


def table1(rows: list[Row]) -> list[Line]:
    pooled: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        pooled[(r.setup, r.benchmark, r.device, r.storage, r.variant)].append(r.value)
    return [Line(*k, stats.summary(v)) for k, v in sorted(pooled.items())]


# --- the analysis interface (pirex/analysis/interface.py) --------------------------------------

VIEWS: dict[str, str] = {}


def _rows(bundles: Sequence[Path]) -> list[Row]:
    return [r for b in bundles for r in read_rows(b)]


Halves = dict[tuple[str, str, int], int]  # (run id, variant, repetition) -> the CPU half of a duet's step


def _halves(bundles: Sequence[Path]) -> Halves:
    """The CPU half each step of the duet bundles ran on (+1, -1: cpuset.step_halves), the factor of their ratio's
    model (stats.duet_ratio); none for bundles that ran one step at a time."""
    out: Halves = {}
    for path in bundles:
        b = open_bundle(path, "jmh")
        out.update({(b.run_id, v, r): h for (v, r), h in cpuset.step_halves(b).items()})
    return out


def _table1(lines: list[Line]) -> Table:
    cells, records = [], []
    for ln in lines:
        lo, hi = ln.summary.ci(LEVEL)
        cells.append(
            [
                ln.benchmark,
                ln.config,
                T.number(ln.summary.mean, 3),
                f"[{T.number(lo, 3)} ; {T.number(hi, 3)}]",
                T.number(ln.summary.sd, 3),
                str(ln.summary.n),
            ]
        )
        records.append(
            {
                "benchmark": ln.benchmark,
                "device": ln.device,
                "storage": ln.storage,
                "variant": ln.variant,
                "n": ln.summary.n,
                "mean": ln.summary.mean,
                "ci999_low": lo,
                "ci999_high": hi,
                "sd": ln.summary.sd,
            }
        )
    note = (
        "The CIs pool every iteration, as the paper did (t interval, n iterations); they are far narrower than "
        "the run-to-run spread. Judge differences by the ratio intervals over forks."
    )
    return Table(
        "ICPE'18 Table 1: JMH throughput (ops/s)",
        ["Benchmark", "Configuration", "Mean throughput (ops/s)", "99.9 % CI", "σ", "n"],
        cells,
        records,
        [note],
        label_columns=2,
    )


def paired_ratios(
    values: Sequence[RunValue], numerator: str = "docker", denominator: str = "native", level: float = LEVEL
) -> list[tuple[str, str, stats.Interval, stats.Interval | None]]:
    """Per benchmark and device: numerator/denominator paired by repetition (the interleaved plan's
    pairs), and the A/A interval of the denominator's second copy where the bundle ran one."""
    out = []
    for device, bench in sorted({(v.device, v.metric) for v in values}):
        mine = [v for v in values if v.device == device and v.metric == bench]
        if {numerator, denominator} <= {v.variant for v in mine}:
            out.append(
                (
                    bench,
                    device,
                    precision.paired_interval(mine, bench, numerator, denominator, level),
                    precision.aa_interval(mine, bench, denominator, level),
                )
            )
    return out


HOW = {
    frozenset({False}): "ran back to back",
    frozenset({True}): "ran at the same moment, each on half of the CPUs (duet)",
    frozenset({False, True}): "ran back to back or, in a duet's bundles, at the same moment",
}


NO_AA = {  # by whether the bundles are duets: a duet's A/A is a bundle of its own (pirex table jmh BUNDLE AA-BUNDLE)
    False: "not run (--variants native,docker,native-aa)",
    True: "a duet of its own (--design duet --variants native,native-aa): give its bundle too",
}


def _half_text(r: stats.Interval) -> str:
    """A duet's CPU half effect (stats.DuetInterval.half), or why there is none."""
    half = getattr(r, "half", None)
    if half is not None:
        return half.text(4)
    return "-" if r.method != "none" else "n/a"


HALF_NOTE = (
    "CPU half: a duet's half effect exp(delta), how much the numerator's ratio moved on the first half of the CPUs "
    "against the second (the halves swap every repetition); the ratio is estimated with the half as a factor, "
    "d_j = mu + delta h_j + e_j, t on n - 2 (stats.duet_ratio)."
)


def _ratio_table(pairs: list[tuple], duets: frozenset[bool] = frozenset({False})) -> Table:
    how = HOW[duets]
    halves = True in duets  # a duet's ratios: their CPU half's effect beside them
    return Table(
        f"docker/native throughput per benchmark, {stats.level_text(LEVEL)} interval over repetitions "
        f"(paired: each repetition's docker and native forks {how})",
        ["Benchmark", "Device", "docker/native", "A/A native-aa/native"] + (["CPU half"] if halves else []),
        [
            [b, d, r.text(4), aa.text(4) if aa else NO_AA[duets == frozenset({True})]]
            + ([_half_text(r)] if halves else [])
            for b, d, r, aa in pairs
        ],
        [
            {
                **(_half_record(r) if halves else {}),
                "benchmark": b,
                "device": d,
                "ratio": r.value,
                "low": r.low,
                "high": r.high,
                "repetitions": r.n,
                "method": r.method,
                "aa": aa.value if aa else None,
                "aa_low": aa.low if aa else None,
                "aa_high": aa.high if aa else None,
            }
            for b, d, r, aa in pairs
        ],
        [HALF_NOTE] if halves else [],
        label_columns=2,
    )


def _half_record(r: stats.Interval) -> dict:
    half = getattr(r, "half", None)
    return {"half": half.value, "half_low": half.low, "half_high": half.high} if half else {"half": None}


def _sink_note(bundles: Sequence[Path]) -> str | None:
    """B6 sent to a sink on the measuring host itself (the paper's went to another machine)."""
    local = [b.name for b in bundles if not open_bundle(b, "jmh").param("sink_host")]
    if not local:
        return None
    return (
        f"B6 sent to a sink on the measuring host ({', '.join(local)}); ICPE'18 sent to another machine: run "
        "`pirex service jmh sink --set sink_port=PORT` there and `--set sink_host=ADDRESS --set sink_port=PORT` "
        "here."
    )


def tables(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    """Table 1 and the ratios, one of each per setup (depth, forks, iterations): never two setups pooled."""
    rows = _rows(bundles)
    by_setup: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_setup[r.setup].append(r)
    out = per_setup("table1", by_setup, lambda rs: _table1(table1(rs)))
    if note := _sink_note(bundles):
        for nt in out:
            nt.table.notes.append(note)
    halves = _halves(bundles)
    pairs = {s: p for s, rs in by_setup.items() if (p := paired_ratios(_run_values(rs, halves)))}
    duets = frozenset(open_bundle(b, "jmh").design == DUET for b in bundles) or frozenset({False})
    out += per_setup("ratios", pairs, lambda p: _ratio_table(p, duets))
    if in_time_rows := _in_time_rows(bundles):
        out.append(NamedTable("in-time", _in_time_table(in_time_rows)))
    return out


def _in_time_rows(bundles: Sequence[Path]) -> list[tuple[str, str, in_time.InTime | str]]:
    """Per duet bundle of two variants and benchmark: its pairs two ways, or why its iterations cannot be paired."""
    out: list[tuple[str, str, in_time.InTime | str]] = []
    for path in bundles:
        b = open_bundle(path, "jmh")
        if b.design != DUET or len(b.variants) != 2:
            continue
        num, den = in_time.sides(b.variants)
        try:
            out += [(b.run_id, f"{num}/{den}", r) for r in in_time.in_time(path, num, den, 0.95)]
        except PirexError as e:
            out.append((b.run_id, f"{num}/{den}", str(e)))
    return out


def _in_time_table(rows: list[tuple[str, str, in_time.InTime | str]]) -> Table:
    def cells(bundle: str, ratio: str, r: in_time.InTime | str) -> list[str]:
        if isinstance(r, str):
            return [bundle, ratio, "-", r, "-", "-", "-"]
        return [
            bundle,
            ratio,
            r.benchmark,
            r.repetitions.text(4),
            r.iterations.text(4),
            f"{r.pairs} of {r.measured}",
            r.correlation_text,
        ]

    return Table(
        "A duet's ratio paired two ways, 95 % t-log interval over repetitions: by repetition (each side's fork means) "
        "and by the measured iterations that overlapped in time within each repetition (their geometric mean); "
        "the correlation is that of the paired iterations' logs, each side's fork mean removed",
        ["Bundle", "Ratio", "Benchmark", "by repetition", "by iterations in time", "iteration pairs", "correlation"],
        [cells(*row) for row in rows],
        [
            {"bundle": b, "ratio": q, "reason": r}
            if isinstance(r, str)
            else {
                "bundle": b,
                "ratio": q,
                "benchmark": r.benchmark,
                "by_repetition": r.repetitions.value,
                "by_repetition_low": r.repetitions.low,
                "by_repetition_high": r.repetitions.high,
                "in_time": r.iterations.value,
                "in_time_low": r.iterations.low,
                "in_time_high": r.iterations.high,
                "repetitions": r.repetitions.n,
                "pairs": r.pairs,
                "measured": r.measured,
                "correlation": r.correlation,
            }
            for b, q, r in rows
        ],
        label_columns=3,
    )


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    return []


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    """One value per fork (an independent JVM): its mean throughput over the measured iterations; and per
    repetition "<benchmark> sd" (_spreads)."""
    rows, halves = _rows(bundles), _halves(bundles)
    return _run_values(rows, halves) + _spreads(rows, halves)


def _spreads(rows: Sequence[Row], halves: Halves | None = None) -> list[RunValue]:
    """Per repetition, "<benchmark> sd": the standard deviation (n - 1) of every measured iteration of its forks
    pooled, as Table 1's σ over one run's 10 forks x 20 iterations (between forks and within them: a fork's own
    iterations alone would miss what one JIT compilation does differently from another). None where every
    iteration gave the same value: a ratio of no spread is undefined."""
    reps: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        reps[(r.run, r.device, r.variant, r.repetition, r.benchmark, r.unit, r.setup)].append(r.value)
    sds = {k: stats.summary(v).sd for k, v in reps.items() if len(v) > 1}
    half = halves or {}
    return [
        RunValue(
            "jmh",
            run,
            dev,
            var,
            rep,
            stats.spread_metric(bench, "sd"),
            sd,
            unit,
            setup=setup,
            half=half.get((run, var, rep), 0),
        )
        for (run, dev, var, rep, bench, unit, setup), sd in sds.items()
        if sd > 0
    ]


def _run_values(rows: Sequence[Row], halves: Halves | None = None) -> list[RunValue]:
    half = halves or {}
    forks: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        forks[(r.run, r.device, r.variant, r.repetition, r.fork, r.benchmark, r.unit, r.setup)].append(r.value)
    return [
        RunValue(
            "jmh",
            run,
            dev,
            var,
            rep,
            bench,
            sum(v) / len(v),
            unit,
            lower_is_better=False,
            run=fork,
            inner=tuple(v),
            setup=setup,
            half=half.get((run, var, rep), 0),
        )
        for (run, dev, var, rep, fork, bench, unit, setup), v in forks.items()
    ]
