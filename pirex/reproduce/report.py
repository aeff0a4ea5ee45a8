"""The reproduction's report: REPORT.md, a self-contained report.html (figure embedded, opens
offline), and the short summary printed at the end (at most about 25 lines)."""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Sequence
from pathlib import Path

from pirex.reproduce import claims
from pirex.reproduce.plan import Need
from pirex.reproduce.verdict import HOLDS, NOT_RUN, Verdict

Timing = tuple[str, float | None, float]  # a run's key, its estimate and what it took (seconds)
MARK = {"holds": "holds", "differs": "DIFFERS", "inconclusive": "inconclusive", "not run here": "not run here"}


def _ours(v: Verdict) -> str:
    if not v.ours:
        return "-"
    return v.ours.interval.text(4)


def _aa(v: Verdict) -> str:
    return v.ours.aa.text(4) if v.ours and v.ours.aa else "-"


def rows(verdicts: Sequence[Verdict]) -> list[list[str]]:
    out = []
    for v in verdicts:
        verdict = MARK[v.verdict] + (" (indicative)" if v.indicative and v.ours else "")
        metric = f" ({v.ours.metric})" if v.ours else ""
        out.append(
            [
                f"{v.claim.paper}:{v.claim.id}",
                v.claim.where,
                v.published_text,
                _ours(v) + metric,
                _aa(v),
                verdict,
                v.reason,
            ]
        )
    return out


COLUMNS = ["Claim", "Where", "Published", "Ours (interval over repetitions)", "A/A", "Verdict", "Why"]


def summary(verdicts: Sequence[Verdict], report: Path | None, width: int = 110, max_lines: int = 25) -> str:
    """At most max_lines: one line per judged claim (published, ours, verdict), or, when they would not
    fit, the claims that hold listed together and a line for each of the others; the claims not run
    here grouped by reason; then the counts and the report's path (which has every detail)."""
    judged = [v for v in verdicts if v.verdict != NOT_RUN]
    tail = 2 if report else 1
    held = [v for v in judged if v.verdict == HOLDS]
    fold = len(judged) + tail + any(v.verdict == NOT_RUN for v in verdicts) > max_lines and len(held) > 1
    lines = []
    for v in judged:
        if fold and v.verdict == HOLDS:
            continue  # too many for a line each: the claims that hold share lines, the others keep theirs
        ours = v.ours.interval.text(4) if v.ours and v.ours.interval.has_interval else v.reason
        lines.append(f"{MARK[v.verdict]:<13} {v.claim.paper}:{v.claim.id:<24} paper {v.published_text:>7}  ours {ours}")
    if fold:
        ids = ", ".join(f"{v.claim.paper}:{v.claim.id}" for v in held)
        lines[:0] = textwrap.wrap(ids, width, initial_indent=f"{MARK[HOLDS]:<13} ", subsequent_indent=" " * 14)
    by_reason: dict[str, list[str]] = {}
    for v in verdicts:
        if v.verdict == NOT_RUN:
            by_reason.setdefault(_short_reason(v.reason), []).append(f"{v.claim.paper}:{v.claim.id}")
    room = max_lines - tail - len(lines)
    groups = [f"not run here  {why}: {', '.join(ids)}" for why, ids in by_reason.items()]
    if len(groups) > room:  # keep the limit: the rest is in the report
        rest = sum(len(ids) for ids in list(by_reason.values())[max(room - 1, 0) :])
        groups = groups[: max(room - 1, 0)] + [f"not run here  {rest} more claims: see the report"]
    lines += [textwrap.shorten(g, width, placeholder=" ...") for g in groups]
    counts = {k: sum(v.verdict == k for v in verdicts) for k in MARK}
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n))
    if report:
        lines.append(f"report: {report}")
    return "\n".join(lines)


def _short_reason(reason: str) -> str:
    """The first clause of a not-run reason: what is missing, without the how-to (in the report)."""
    return reason.split(" (")[0].split(": ")[0].split("; ")[0]


def _figure_png(verdicts: Sequence[Verdict]) -> bytes | None:
    """Our interval against the published value per judged claim, on a log axis."""
    judged = [v for v in verdicts if v.ours and v.ours.interval.has_interval]
    if not judged:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.4 * len(judged) + 1.2))
    for y, v in enumerate(judged):
        i = v.ours.interval
        ax.plot([i.low, i.high], [y, y], color="tab:blue", lw=3)
        ax.plot([i.value], [y], "o", color="tab:blue")
        if v.claim.published is not None:
            ax.plot([v.claim.published], [y], "x", color="tab:red", ms=9)
    ax.axvline(1, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yticks(range(len(judged)), [f"{v.claim.paper}:{v.claim.id}" for v in judged])
    ax.set_xlabel("ratio (blue: ours with its interval; red x: published)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def markdown(
    title: str,
    header: list[str],
    verdicts: Sequence[Verdict],
    needs: Sequence[Need],
    missing: dict[str, str],
    timing: Sequence[Timing] = (),
) -> str:
    out = [
        f"# {title}",
        "",
        *header,
        "",
        "## Verdicts",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows(verdicts)]
    out += [
        "",
        "Intervals are over independent repetitions, each the ratio of the two sides' run means in the same "
        "repetition (paired by the interleaved plan; t or BCa on log ratios); none below 5 repetitions. A/A: "
        "the same variant run twice under two names, the noise floor of this machine. Device-dependent claims "
        "are judged by their direction only.",
        "",
        "## Runs",
        "",
        "| Run | Variants | Steps | Time here | Bundles |",
        "|---|---|---:|---|---|",
    ]
    for n in needs:
        t = f"{n.seconds / 60:.1f} min ({n.estimate_from})" if n.seconds is not None else n.estimate_from or "-"
        out.append(
            f"| {n.key} | {', '.join(n.variants)} | {n.steps} | {t} | "
            f"{', '.join(p.name for p in n.bundles) or 'none'} |"
        )
    if timing:
        out += [
            "",
            "Estimated before the run against what it took (the estimate from the plan, the run's wall time):",
            "",
            "| Run | Estimated | Took |",
            "|---|---:|---:|",
        ]
        out += [
            f"| {key} | {f'{est / 60:.1f} min' if est else 'unknown'} | {took / 60:.1f} min |"
            for key, est, took in timing
        ]
    if missing:
        out += ["", "## What this machine cannot do", ""] + [f"- {k}: {v}" for k, v in missing.items()]
    out += ["", "## Deviations from the papers", ""] + [f"- {d}" for d in claims.deviations()]
    out += ["", "## Claims", ""]
    for v in verdicts:
        c = v.claim
        out.append(
            f"- **{c.paper}:{c.id}** ({c.where}): {c.says}."
            + (f" Published: {c.source}." if c.source else "")
            + (f" Judged by direction only: {c.device_dependent}." if c.device_dependent else "")
        )
    return "\n".join(out) + "\n"


def write(
    out: Path,
    title: str,
    header: list[str],
    verdicts: Sequence[Verdict],
    needs: Sequence[Need],
    missing: dict[str, str],
    timing: Sequence[Timing] = (),
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(title, header, verdicts, needs, missing, timing)
    (out / "REPORT.md").write_text(md)
    png = _figure_png(verdicts)
    img = (
        (
            f'<img alt="our intervals against the published values" src="data:image/png;base64,'
            f'{base64.b64encode(png).decode()}">'
        )
        if png
        else ""
    )
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows(verdicts))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:80em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}th{{background:#eee}}
pre{{background:#f6f6f6;padding:1em;white-space:pre-wrap}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{"<br>".join(html.escape(h) for h in header)}</p>
<h2>Verdicts</h2><table><tr>{head}</tr>{cells}</table>
<h2>Our intervals against the published values</h2>{img or "<p>no interval to draw</p>"}
<h2>The whole report</h2><pre>{html.escape(md)}</pre>
</body></html>
"""
    (out / "report.html").write_text(page)
    return out / "REPORT.md", out / "report.html"
