"""CPU lists as Linux writes them ("0-2,5": taskset, --cpuset-cpus, /sys's online), and the CPU half of a duet
that each step of a bundle ran on, as the bundle records it: what the runner plans with and the analysis reads
(runner/duet.py runs the duet)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pirex.core.bundle import DUET, Bundle
from pirex.core.errors import PirexError


def parse_cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def cpu_list(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 5} -> "0-2,5" (what taskset and --cpuset-cpus take)."""
    out: list[str] = []
    for c in sorted(set(cpus)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        elif out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def half_of(cpus: str, split: Sequence[str]) -> int:
    """+1 where a step ran on the first of the duet's two halves (run.json's duet.halves[0]), -1 on the second:
    the factor h_j of the duet's model. PirexError when the CPUs are neither."""
    mine = parse_cpus(cpus)
    for sign, half in zip((1, -1), split, strict=False):
        if mine == parse_cpus(half):
            return sign
    raise PirexError(f"a duet step ran on CPUs {cpus}, neither of its halves ({' and '.join(split)})")


def step_halves(bundle: Bundle) -> dict[tuple[str, int], int]:
    """(variant, repetition) -> the half (+1, -1) each completed step of a duet bundle ran on; {} for a bundle
    that ran one step at a time. The halves are run.json's; a bundle without that record takes the steps' own CPU
    lists, the one with the lowest CPU first (as halves() splits them)."""
    if bundle.design != DUET:
        return {}
    done = [s for s in bundle.steps() if s.cpus]
    split = bundle.run_info().duet.get("halves") or sorted({s.cpus for s in done}, key=lambda c: min(parse_cpus(c)))
    return {(s.variant, s.repetition): half_of(s.cpus, split) for s in done}
