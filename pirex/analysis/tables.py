"""Tables in a paper's layout (MooBench's, Table 3's): the printed cells, the numbers behind
them for CSV, and Markdown and LaTeX renderings."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Table:
    """A table in the paper's layout: cells as printed, records (numbers) for CSV."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    records: list[dict]
    notes: list[str] = field(default_factory=list)
    label_columns: int = 1  # left-aligned leading columns


def markdown(t: Table) -> str:
    out = [f"**{t.title}**", "", "| " + " | ".join(t.columns) + " |",
           "|" + "|".join("---" if i < t.label_columns else "---:" for i in range(len(t.columns))) + "|"]  # fmt: skip
    out += ["| " + " | ".join(row) + " |" for row in t.rows]
    out += [""] + t.notes if t.notes else []
    return "\n".join(out)


def _tex(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"),
                 ("σ", r"$\sigma$"), ("µ", r"$\mu$"), ("×", r"$\times$")):  # fmt: skip
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
