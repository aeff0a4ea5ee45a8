"""MooBench's tables: ICPE'18 Table 2, SSP'17 Table 1, ICPE'18 Table 5, the overhead over the baseline, and our
ratios beside the published ones (no verdicts: claims.yaml and pirex/reproduce/verdict.py judge). Each table is of
one setup's results (moobench_read.groups); the caller says which setup in its notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from pirex.analysis import stats
from pirex.analysis import tables as T
from pirex.analysis.moobench_paper import (
    SPASS_NOTE,
    Case,
    fluctuation_cases,
    id1_note,
)
from pirex.analysis.moobench_read import Key
from pirex.analysis.moobench_stats import (
    BASELINE,
    LEVEL,
    PEAK_FACTOR,
    Result,
    Stats,
    config_order,
    label,
    overheads,
)
from pirex.analysis.tables import Table

SAME_MARK = " [same as its base here]"


def _loop_text(s: Stats, digits: int = 1) -> str:
    """The interval over loops, or how many loops there are and are needed (the one rule of stats.too_few)."""
    i = s.loop_interval()
    return T.bounds((i.low, i.high), digits) if i.has_interval else i.reason


def _record(r: Result, level: float = LEVEL) -> dict:
    s = r.stats
    (lo, hi), (llo, lhi) = s.ci(level), s.loop_ci(level)
    return {
        "device": r.device,
        "storage": r.storage,
        "variant": r.variant,
        "configuration": r.configuration,
        "n": s.n,
        "loops": s.loops,
        "mean_us": s.mean,
        "sd_us": s.sd,
        "ci95_low": lo,
        "ci95_high": hi,
        "loop_ci95_low": llo,
        "loop_ci95_high": lhi,
        "min_us": s.summary.min,
        "q1_us": s.summary.q1,
        "median_us": s.summary.median,
        "q3_us": s.summary.q3,
        "max_us": s.summary.max,
        "peaks": s.peaks,
    }


LOOP_NOTE = (
    "95 % CI: t interval over every pooled steady-state call, as the papers computed it; "
    "95 % CI (loops): t interval over the loops' means (independent JVMs), the one to judge differences by."
)


def table2(results: list[Result], digits: int = 1) -> Table:
    """ICPE'18 Table 2: rows configuration x variant, columns per device (device, storage): mean, 95 % CI, σ, and
    the 95 % CI over loops beside them. Response times in µs."""
    cols = sorted({(r.device, r.storage) for r in results})
    by = {r.key: r for r in results}
    rows_keys = sorted({(r.configuration, r.variant) for r in results}, key=lambda k: (config_order(k[0]), k[1]))
    columns = ["Experiment"]
    for dev, sto in cols:
        columns += [f"{dev}, {sto}: {c}" for c in ("mean", "95 % CI", "σ", "95 % CI (loops)")]
    rows = []
    for cfg, var in rows_keys:
        row = [f"{label(cfg)} {var}"]
        for dev, sto in cols:
            r = by.get((dev, sto, var, cfg))
            if r is None:
                row += ["", "", "", ""]
                continue
            row += [
                T.number(r.stats.mean, digits),
                T.bounds(r.stats.ci(), digits),
                T.number(r.stats.sd, digits),
                _loop_text(r.stats, digits),
            ]
        rows.append(row)
    return Table(
        "MooBench stable state response times in µs (ICPE'18 Table 2 layout)",
        columns,
        rows,
        [_record(r) for r in results],
        [LOOP_NOTE, *_spass_note(results)],
    )


def table1(results: list[Result], digits: int = 1) -> Table:
    """SSP'17 Table 1: rows configuration (storage[, variant]), columns per device: 95 % CI and σ (no mean), plus
    the 95 % CI over loops. Response times in µs."""
    devices = sorted({r.device for r in results})
    variants = {r.variant for r in results}
    by = {r.key: r for r in results}
    row_keys = sorted(
        {(r.configuration, r.storage, r.variant) for r in results}, key=lambda k: (config_order(k[0]), k[1], k[2])
    )
    columns = ["Experiment"]
    for dev in devices:
        columns += [f"{dev}: 95 % CI", f"{dev}: σ", f"{dev}: 95 % CI (loops)"]
    rows = []
    for cfg, sto, var in row_keys:
        name = f"{label(cfg)} ({sto}{', ' + var if len(variants) > 1 else ''})"
        row = [name]
        for dev in devices:
            r = by.get((dev, sto, var, cfg))
            row += (
                ["", "", ""]
                if r is None
                else [T.bounds(r.stats.ci(), digits), T.number(r.stats.sd, digits), _loop_text(r.stats, digits)]
            )
        rows.append(row)
    return Table(
        "Raw stable state response times in µs as CI and σ (SSP'17 Table 1 layout)",
        columns,
        rows,
        [_record(r) for r in results],
        [LOOP_NOTE, *_spass_note(results)],
    )


def _spass_note(results: list[Result]) -> list[str]:
    """Where the papers' SPASS-meter rows would be: why there are none."""
    if any(r.configuration.startswith("spass-meter") for r in results):
        return []
    return [f"No SPASS-meter rows (the papers' second framework): {SPASS_NOTE}."]


def _case_source(
    variant: str | None, configs: Sequence[str], by: dict[Key, Result], device: str, storage: str
) -> tuple[str, str] | None:
    """(variant, instrumented configuration) of a case on a device, None without its data."""
    if variant is None or (device, storage, variant, BASELINE) not in by:
        return None
    for cfg in configs:
        if (device, storage, variant, cfg) in by:
            return variant, cfg
    return None


def table5(
    results: list[Result],
    cases: Sequence[Case] | None = None,
    digits: int = 1,
    run_notes: Sequence[str] = (),
    same: set[str] = frozenset(),
) -> Table:
    """ICPE'18 Table 5: per fluctuation case and device, the baseline and the instrumented configuration (SPASS-meter
    in the paper; Kieker stands in where the bundle has none): mean, σ, min, max, 95 % CI, peaks, 95 % CI (loops).
    run_notes: what the runs recorded (skipped cases, cases equal to their base here), appended to the notes."""
    cases = fluctuation_cases() if cases is None else cases
    by = {r.key: r for r in results}
    parts = ("mean", "σ", "min", "max", "95 % CI", "peaks", "95 % CI (loops)")
    columns = ["Id", "Experiment (paper's base)", "Our case (our base)", "Device", "Instrumented"]
    columns += [f"Baseline: {p}" for p in parts] + [f"Instrumented: {p}" for p in parts]
    rows, records, missing, stand_in = [], [], [], set()
    for case in cases:
        found = False
        for dev, sto in sorted({(r.device, r.storage) for r in results}):
            src = _case_source(case.ours, case.configs, by, dev, sto)
            if src is None:
                continue
            found = True
            variant, cfg = src
            if not cfg.startswith("spass-meter"):
                stand_in.add(cfg)
            base, inst = by[(dev, sto, variant, BASELINE)], by[(dev, sto, variant, cfg)]
            paper_base = f" ({case.paper_base})" if case.paper_base else ""
            ours = f"{variant} ({case.base}: Id {case.base_id})" if case.base else variant
            ours += SAME_MARK if variant in same else ""
            row = [str(case.id), case.experiment + paper_base, ours, f"{dev}, {sto}", label(cfg)]
            for r in (base, inst):
                s = r.stats
                row += [
                    T.number(s.mean, digits),
                    T.number(s.sd, digits),
                    T.number(s.summary.min, digits),
                    T.number(s.summary.max, digits),
                    T.bounds(s.ci(), digits),
                    f"{s.peaks:,}",
                    _loop_text(s, digits),
                ]
                records.append(
                    {
                        "id": case.id,
                        "experiment": case.experiment,
                        "paper_base": case.paper_base,
                        "case": case.ours,
                        "base_case": case.base,
                        "base_id": case.base_id,
                        "role": "baseline" if r is base else "instrumented",
                        **_record(r),
                    }
                )
            rows.append(row)
        if not found:
            why = (
                "not reproduced (SPASS-meter's internals, or services disabled by hand)"
                if case.ours is None
                else ("no data in these bundles")
            )
            missing.append(f"{case.id} {case.experiment}: {why}")
    notes = [
        LOOP_NOTE,
        f"peaks: calls longer than {PEAK_FACTOR:g} x the mean, over the pooled steady state.",
        "Our case (our base): the case of experiments/moobench's fluctuation matrix and the case it changes one "
        "factor of; where the paper's base is Id 6 (services disabled by hand, not reproduced), ours is Id 5.",
        id1_note(),
    ]
    if stand_in:
        notes.append(
            f"No SPASS-meter in the bundle: {', '.join(label(c) for c in sorted(stand_in))} stands in "
            f"for SPASS-meter in the instrumented columns ({SPASS_NOTE})."
        )
    if missing:
        notes.append("Cases without data here: " + "; ".join(missing) + ".")
    notes += list(run_notes)
    title = "Fluctuation cases, response times in µs (ICPE'18 Table 5 layout)"
    return Table(title, columns, rows, records, notes, label_columns=5)


def overhead_table(results: list[Result], digits: int = 1) -> Table:
    ov = overheads(results)
    columns = ["Device, storage", "Variant", "Configuration", "Mean (µs)", "Overhead (µs)", "× baseline (95 % CI)"]
    by = {r.key: r for r in results}
    rows, records = [], []
    for o in ov:
        r = by[(o.device, o.storage, o.variant, o.configuration)]
        rows.append(
            [
                f"{o.device}, {o.storage}",
                o.variant,
                label(o.configuration),
                T.number(r.stats.mean, digits),
                T.number(o.overhead, digits),
                T.ratio_text(o.ratio),
            ]
        )
        records.append(
            {
                "device": o.device,
                "storage": o.storage,
                "variant": o.variant,
                "configuration": o.configuration,
                "overhead_us": o.overhead,
                "ratio": o.ratio.value,
                "ratio_low": o.ratio.low,
                "ratio_high": o.ratio.high,
            }
        )
    note = (
        f"× baseline: per loop, the configuration's mean over the baseline's in the same step; their geometric "
        f"mean with a 95 % interval over loops (t on the log ratios; Welch's t on logs for loops of separate runs; "
        f"no interval below {stats.MIN_RUNS} loops)."
    )
    return Table(
        "Monitoring overhead over the baseline of the same device and variant",
        columns,
        rows,
        records,
        [note],
        label_columns=3,
    )
