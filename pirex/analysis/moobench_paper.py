"""The papers' side of MooBench: the published tables (analysis/ssp17/table1.csv, analysis/icpe18/table{2,5}.csv), the
ratios comparable across hardware with the setups (profiles) their rows ran at, and ICPE'18 Table 5's fluctuation
cases matched with experiments/moobench's matrix `fluctuation` (one source of truth: fluctuation_cases() reads it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from pirex.analysis.moobench_read import profile_setup
from pirex.analysis.moobench_stats import BASELINE
from pirex.core.paths import PAPERS

PUBLISHED_DIR = PAPERS
PAPER_SPASS = "spass-meter"
PAPER_KIEKER = "kieker-text"  # the papers' Kieker: file system logging (Kieker's ASCII file writer in 2017)
# Table 5's instrumented column: SPASS-meter as in the paper, else Kieker stands in (the first one present; the
# fluctuation matrix of experiments/moobench falls back to kieker-text when the image has no SPASS-meter; an
# older bundle's kieker-dump, the stand-in before, is still read).
INSTRUMENTED = (
    "spass-meter",
    "kieker-text",
    "kieker-dump",
    "kieker-binary",
    "kieker-tcp",
    "kieker-deactivated",
    "opentelemetry",
)
# Where the papers' SPASS-meter rows would be and a bundle has none.
SPASS_NOTE = (
    "SPASS-meter is bring-your-own and not in the image: images/moobench/spass-meter/README.md builds it "
    "from its sources for Java 17"
)


@dataclass(frozen=True)
class Case:
    """One row of ICPE'18 Table 5 and the matrix case of ours that reproduces it.

    paper_base: the Id in the paper's "(base)" column (icpe18_table5.csv), None for Id 1.
    ours: our matrix case (a variant of the bundle), None when not reproduced (SPASS-meter's internals, the services
        the authors disabled by hand).
    base: our case this one changes one factor of (None for the base case itself); base_id: its Table 5 Id.
    configs: the instrumented configurations to look for, in order of preference (SPASS-meter, or what the case
        sets, then the stand-ins).
    """

    id: int
    experiment: str
    paper_base: int | None
    ours: str | None = None
    base: str | None = None
    base_id: int | None = None
    configs: tuple[str, ...] = INSTRUMENTED


FLUCTUATION = "fluctuation"  # the matrix (and view) of Table 5


def fluctuation_cases(matrix=None) -> tuple[Case, ...]:
    """Every Id of the published Table 5, with the case of experiments/moobench's fluctuation matrix whose
    table_id it is (the matrix is the one source of truth of what we run)."""
    if matrix is None:
        from pirex.core import experiment

        matrix = experiment.load("moobench").matrices[FLUCTUATION]
    ours = {c.table_id: c for c in matrix.cases if c.table_id is not None}
    out, seen = [], set()
    for row in published_icpe18_table5():
        pid = int(row["id"])
        if pid in seen:
            continue
        seen.add(pid)
        paper_base = int(row["base"]) if row["base"] else None
        mc = ours.get(pid)
        if mc is None:
            out.append(Case(pid, row["experiment"], paper_base))
            continue
        sets = matrix.resolved(mc.name).set.get("configurations", "")
        own = tuple(c for c in str(sets).split(",") if c and c != BASELINE and c not in INSTRUMENTED)
        base = matrix.case(mc.base) if mc.base else None
        out.append(
            Case(
                pid,
                row["experiment"],
                paper_base,
                mc.name,
                base and base.name,
                base and base.table_id,
                (*own, *INSTRUMENTED),
            )
        )
    return tuple(out)


def _published(name: str) -> list[dict]:
    with open(PUBLISHED_DIR / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def published_ssp17() -> list[dict]:
    return _published("ssp17/table1.csv")


def published_icpe18_table2() -> list[dict]:
    return _published("icpe18/table2.csv")


def published_icpe18_table5() -> list[dict]:
    return _published("icpe18/table5.csv")


# The setup of SSP'17's SPASS-meter rows (MooBench's defaults), which Table 5's Id 1 repeats.
SPASS_PROFILE = "paper-spass-meter"


def id1_note() -> str:
    """Table 5's Id 1 ("from [16]") is SSP'17's SPASS-meter run on D1 with the USB hard disk: said with the two
    published numbers side by side (icpe18_table5.csv, ssp17_table1.csv)."""
    t5 = next(r for r in published_icpe18_table5() if r["id"] == "1" and r["configuration"] == PAPER_SPASS)
    ssp = next(
        r for r in published_ssp17() if (r["configuration"], r["storage"], r["device"]) == (PAPER_SPASS, "usb", "D1")
    )
    return (
        f"Id 1 (\"from [16]\"): the paper's published values are SSP'17's run on device D1 with the USB hard "
        f"disk (SSP'17 Table 1, SPASS-meter (USB-HDD), D1: 95 % CI [{ssp['ci_low']}; {ssp['ci_high']}], σ "
        f"{ssp['sd']}; Table 5: mean {t5['mean']}, σ {t5['sd']}) at MooBench's defaults "
        f"({profile_setup(SPASS_PROFILE).text})."
    )
