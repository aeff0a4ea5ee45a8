"""Tables in a paper's layout (MooBench's, Table 3's): the printed cells, the numbers behind
them for CSV, and Markdown and LaTeX renderings; and the cells' text every analysis module shares
(a number, an interval's bounds, a ratio with its interval or why there is none)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from pirex.analysis import stats


@dataclass
class Table:
    """A table in the paper's layout: cells as printed, records (numbers) for CSV."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    records: list[dict]
    notes: list[str] = field(default_factory=list)
    label_columns: int = 1  # left-aligned leading columns


def number(x: float | None, digits: int = 1) -> str:
    """1234.5 -> "1,234.5"; None or NaN -> "n/a"."""
    return "n/a" if x is None or math.isnan(x) else f"{x:,.{digits}f}"


def bounds(low_high: tuple[float, float], digits: int = 1, sep: str = "; ") -> str:
    """An interval's bounds, "[1.0; 2.0]" (Table 3's layout: sep " ; "), or "n/a" without one (NaN)."""
    low, high = low_high
    return "n/a" if math.isnan(low) else f"[{number(low, digits)}{sep}{number(high, digits)}]"


def ratio_text(r: stats.Interval, digits: int = 3, sep: str = "; ") -> str:
    """A ratio with its interval, "1.003 [0.991; 1.015]", or with the reason there is none,
    "1.003 (no interval: 3 paired repetitions, 5 needed)"."""
    value = f"{r.value:,.{digits}f}"
    if not r.has_interval:
        return f"{value} ({r.reason or 'no interval'})"
    return f"{value} {bounds((r.low, r.high), digits, sep)}"


def markdown(t: Table) -> str:
    out = [
        f"**{t.title}**",
        "",
        "| " + " | ".join(t.columns) + " |",
        "|" + "|".join("---" if i < t.label_columns else "---:" for i in range(len(t.columns))) + "|",
    ]
    out += ["| " + " | ".join(row) + " |" for row in t.rows]
    out += [""] + t.notes if t.notes else []
    return "\n".join(out)


def _tex(s: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("σ", r"$\sigma$"),
        ("µ", r"$\mu$"),
        ("×", r"$\times$"),
    ):
        s = s.replace(a, b)
    return s


def latex(t: Table) -> str:
    spec = "l" * t.label_columns + "r" * (len(t.columns) - t.label_columns)
    out = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(_tex(c) for c in t.columns) + r" \\", r"\midrule"]
    out += [" & ".join(_tex(c) for c in row) + r" \\" for row in t.rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out) + "\n"


def write_csv(t: Table, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for rec in t.records for k in rec))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(t.records)
