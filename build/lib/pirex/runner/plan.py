"""The order in which a run's steps happen. Randomized multiple interleaved trials: every
repetition runs each variant once, in an order shuffled per repetition, so that a machine's
drift (temperature, background jobs, a throttling Pi) spreads over all variants instead of
showing up as the difference between them. `sequential` keeps the paper's order."""

from __future__ import annotations

import random

ORDERS = ("interleaved", "sequential")


def make(variants: tuple[str, ...], repetitions: int, order: str, seed: int) -> list[dict]:
    if order == "sequential":
        return [{"variant": v, "repetition": r} for v in variants for r in range(repetitions)]
    rng = random.Random(seed)
    steps = []
    for r in range(repetitions):
        vs = list(variants)
        rng.shuffle(vs)
        steps += [{"variant": v, "repetition": r} for v in vs]
    return steps
