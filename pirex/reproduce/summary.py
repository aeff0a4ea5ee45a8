"""The short summary `pirex reproduce` prints at its end (at most about 25 lines, whatever the verdicts), and the
counts by verdict that it, REPORT.md and report.html give at their top."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pirex.analysis.verdicts import DIFFERS, HOLDS, INCONCLUSIVE, NOT_RUN
from pirex.reproduce.verdict import EVIDENCE, REPLICATION, Verdict

MARK = {HOLDS: HOLDS, DIFFERS: DIFFERS.upper(), INCONCLUSIVE: INCONCLUSIVE, NOT_RUN: NOT_RUN}


def summary(
    verdicts: Sequence[Verdict],
    report: Path | None,
    width: int = 110,
    max_lines: int = 25,
    took: float | None = None,
    attempts: int = 1,
) -> str:
    """At most max_lines (when there is room for the counts and the report's path at all), whatever the verdicts:
    one line per judged claim (published, ours, verdict) or, when they would not fit, the routine ones named together
    (the claims that hold first, then the inconclusive ones, each kind on shared lines) so that the claims that differ
    keep a line each; when even that is too long, the claims that hold are left out first and a line counts what was
    left out, by verdict. Then the claims not run here grouped by reason, the counts with the time taken, and the
    report's path (which has every detail)."""
    judged = [v for v in verdicts if v.verdict != NOT_RUN]
    away = [v for v in verdicts if v.verdict == NOT_RUN]
    foot = 2 if report else 1
    room = max(max_lines - foot - bool(away), 0)
    for folded in ((), (HOLDS,), (HOLDS, INCONCLUSIVE)):
        judged_lines = _judged_lines(judged, folded, width)
        if len(judged_lines) <= room:
            break
    else:  # too many even so: the claims that differ keep their own lines unless they alone are too many
        if sum(v.verdict == DIFFERS for v in judged) >= room:
            judged_lines = _judged_lines(judged, (HOLDS, INCONCLUSIVE, DIFFERS), width)
    lines = _within(judged_lines, room)
    by_reason: dict[str, list[str]] = {}
    for v in away:
        by_reason.setdefault(_short_reason(v.reason), []).append(f"{v.claim.paper}:{v.claim.id}")
    room = max(max_lines - foot - len(lines), 0)
    groups = [_clipped(f"not run here  {why}: ", ids, width) for why, ids in by_reason.items()]
    if len(groups) > room:  # keep the limit: the rest is in the report
        rest = sum(len(ids) for ids in list(by_reason.values())[max(room - 1, 0) :])
        groups = groups[: max(room - 1, 0)] + [f"not run here  {rest} more claims: see the report"] * bool(room)
    lines += groups
    lines.append(count_text(verdicts) + took_text(took, attempts, " in "))
    if report:
        lines.append(f"report: {report}")
    return "\n".join(lines)


def _judged_lines(judged: Sequence[Verdict], folded: Sequence[str], width: int) -> list[tuple[str, str, int]]:
    """The judged claims' lines with the verdict and how many claims each names: the verdicts in `folded` (of more
    than one claim) on shared lines of names at the top, every other claim on a line of its own."""
    fold = [k for k in folded if sum(v.verdict == k for v in judged) > 1]
    out: list[tuple[str, str, int]] = []
    for kind in fold:
        names = [f"{v.claim.paper}:{v.claim.id}" for v in judged if v.verdict == kind]
        out += [(text, kind, n) for text, n in _named_together(MARK[kind], names, width)]
    for v in judged:
        if v.verdict in fold:
            continue
        ours = v.ours.interval.text(4) if v.ours and v.ours.interval.has_interval else v.reason
        on = f" on {v.device}" if v.device else ""
        on += f" ({v.evidence})" if v.evidence != REPLICATION else ""
        text = f"{MARK[v.verdict]:<13} {v.claim.paper}:{v.claim.id:<24} paper {v.published_text:>7}  ours {ours}{on}"
        out.append((text, v.verdict, 1))
    return out


def _named_together(mark: str, ids: Sequence[str], width: int) -> list[tuple[str, int]]:
    """`mark` and the ids, comma-separated, wrapped at width (an id longer than a line keeps a line of its own)."""
    out: list[tuple[str, int]] = []
    text, n = f"{mark:<13} ", 0
    for i, name in enumerate(ids):
        piece = name + ("," if i < len(ids) - 1 else "")
        if n and len(text) + 1 + len(piece) > width:
            out.append((text, n))
            text, n = " " * 14, 0
        text, n = f"{text} {piece}" if n else f"{text}{piece}", n + 1
    return [*out, (text, n)] if n else out


def _clipped(lead: str, ids: Sequence[str], width: int) -> str:
    """lead and the ids on one line of at most width (where the first id fits), the ids that do not fit counted."""
    for shown in range(len(ids), 0, -1):
        text = lead + ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if shown < len(ids) else "")
        if len(text) <= width:
            return text
    return lead + f"{len(ids)} claims"


# which judged claims a summary too long for its lines leaves out first
LEFT_OUT_FIRST = (HOLDS, INCONCLUSIVE, DIFFERS)


def _within(lines: Sequence[tuple[str, str, int]], room: int) -> list[str]:
    """The lines' text in at most room lines: when they are more, lines of the claims that hold are left out first
    (from the end), then of the inconclusive ones, then of those that differ, and the last line counts them."""
    if len(lines) <= room:
        return [t for t, _, _ in lines]
    if room <= 0:
        return []
    keep = list(lines)
    left: dict[str, int] = {}
    for kind in LEFT_OUT_FIRST:
        while len(keep) > room - 1 and any(k == kind for _, k, _ in keep):
            i = max(i for i, (_, k, _) in enumerate(keep) if k == kind)
            left[kind] = left.get(kind, 0) + keep.pop(i)[2]
    what = ", ".join(f"{n} {k}" for k, n in left.items())
    return [t for t, _, _ in keep] + [f"{'...':<13} not shown here: {what} (see the report)"]


def counts(verdicts: Sequence[Verdict], evidence: str = REPLICATION) -> dict[str, int]:
    """Verdicts by kind among those of one kind of evidence (the replications: what supports or refutes a paper),
    and every claim not run here."""
    return {
        k: sum(v.verdict == k and (k == NOT_RUN or v.evidence == evidence) for v in verdicts)
        for k in MARK
        if k != NOT_RUN or evidence == REPLICATION
    }


def count_groups(verdicts: Sequence[Verdict]) -> list[tuple[str, dict[str, int]]]:
    """The counts the summary and the report's top give, in order: the replication verdicts (holds, differs,
    inconclusive), then the stand-in checks and the harness checks where there are any, then the claims not run here:
    [(label, {kind: n})], the replications' label "" (issue 51)."""
    rep = counts(verdicts)
    away = rep.pop(NOT_RUN)
    out = [("", rep)]
    for kind in EVIDENCE[1:]:
        c = counts(verdicts, kind)
        if any(c.values()):
            out.append((f"{kind}s", c))
    return out + [("", {NOT_RUN: away})]


def count_text(verdicts: Sequence[Verdict], zeros: bool = False) -> str:
    """ "11 holds, 2 differs, 9 inconclusive; stand-in checks: 5 holds, 3 inconclusive; 28 not run here": without
    checks the line it always was ("11 holds, 2 differs, 9 inconclusive, 28 not run here"). zeros: every kind of the
    replications and not run here, even at 0 (REPORT.md's top)."""
    groups = count_groups(verdicts)
    rep, away = groups[0][1], groups[-1][1]
    checks = groups[1:-1]

    def joined(c: dict[str, int], keep: bool) -> str:
        return ", ".join(f"{n} {k}" for k, n in c.items() if n or keep)

    if not checks:
        return joined(rep | away, zeros)
    parts = [joined(rep, zeros), *(f"{label}: {joined(c, False)}" for label, c in checks), joined(away, zeros)]
    return "; ".join(p for p in parts if p)


def duration(seconds: float) -> str:
    """7 min 12 s, 1 h 3 min, 40 s."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def took_text(took: float | None, attempts: int, lead: str) -> str:
    if took is None:
        return ""
    return lead + duration(took) + (f" over {attempts} attempts (--resume)" if attempts > 1 else "")


def _short_reason(reason: str) -> str:
    """The first clause of a not-run reason: what is missing, without the how-to (in the report)."""
    return reason.split(" (")[0].split(": ")[0].split("; ")[0]
