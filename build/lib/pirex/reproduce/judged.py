"""`pirex compare EXPERIMENT`: the papers' claims on one experiment judged on given bundles, as a
table (the same verdicts `pirex reproduce` writes, without planning or running anything)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from pirex.analysis.interface import NamedTable
from pirex.analysis.tables import Table
from pirex.core import experiment
from pirex.reproduce import claims, report, spans
from pirex.reproduce.verdict import Verdict, holm, on_values, verdict_level

LEVEL = 0.95


def verdicts(
    exp: experiment.Experiment, mod: ModuleType, bundles: Sequence[Path], view: str | None, level: float = LEVEL
) -> list[Verdict]:
    mine = [
        c
        for p in claims.available()
        for c in claims.load(p).claims
        if c.experiment == exp.id and c.view == view and c.judged
    ]
    if not mine:
        return []
    read = spans.cached(lambda bs: mod.run_values(list(bs), view))  # each set of bundles read once
    grouped = {kind: spans.groups(list(bundles), kind) for kind in ("devices", "storages")}
    devices = grouped["devices"]
    out = []
    for c in mine:
        if c.across:  # across devices or storages: over all the bundles' groups
            out.append(spans.judge_across(c, grouped[c.across], read, level, None, False))
            continue
        per_device = []
        for g in devices:  # a claim on one machine: on each device's own bundles
            v = on_values(c, read(g.bundles), level, None, False)
            per_device.append(dataclasses.replace(v, device=g.name) if len(devices) > 1 else v)
        out += holm(per_device, level)  # as pirex reproduce: one claim's "differs" over its devices, Holm-adjusted
    return out


def tables(exp: experiment.Experiment, mod: ModuleType, bundles: Sequence[Path], view: str | None) -> list[NamedTable]:
    vs = verdicts(exp, mod, bundles, view)
    if not vs:
        return []
    rows = report.rows(vs)
    records = [
        {
            "claim": f"{v.claim.paper}:{v.claim.id}",
            "device": v.device,
            "published": v.claim.published,
            "direction": v.claim.direction,
            "ours": v.ours.interval.value if v.ours else None,
            "low": v.ours.interval.low if v.ours else None,
            "high": v.ours.interval.high if v.ours else None,
            "verdict": v.verdict,
            "why": v.reason,
        }
        for v in vs
    ]
    return [
        NamedTable(
            "claims",
            Table(
                f"The papers' claims on {exp.id}, judged on these bundles ({100 * verdict_level(LEVEL):g} % "
                f"intervals over repetitions, each verdict a test at {100 * (1 - LEVEL):g} %; the A/A at "
                f"{100 * LEVEL:g} %)",
                report.COLUMNS,
                rows,
                records,
                label_columns=2,
            ),
        )
    ]
