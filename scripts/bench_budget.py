"""`make bench-budget`: the budget's design against the even split and the oracle on a mix like make run's, and the
wrong-verdict rates at the rules' edges under the design, a resume and a reuse of the pilot (issue 52).

Every reproduction is simulated through budget.py's own pieces: the looks' boundaries (Design.look), the rounds
(plan_round), the chance of deciding (p_decide, the oracle's and the forecast's); each look reads the t interval on
the first n log ratios at the look's level through verdict.regions(), as on_values does. Seeded: the same table on
every run. `--draws 20 --edge-draws 400` is the smoke run (tests/test_bench_budget.py)."""

from __future__ import annotations

import argparse
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from pirex.reproduce import budget
from pirex.reproduce.claims import Claim, Side
from pirex.reproduce.verdict import edges, regions

ALPHA = 0.05
SIDE = Side(("B1",), "native")


def _claim(rule: str, **kw) -> Claim:
    return Claim("p", rule, "Table 1", "a claim", "jmh", None, ("native", "docker"), SIDE, SIDE, rule=rule, **kw)


RULES = {
    "direction (greater)": _claim("direction", direction="greater"),
    "equivalent (3 %)": _claim("equivalent", margin=0.03),
    "different (5 %)": _claim("different", margin=0.05),
    "within (0.9 ± 5 %)": _claim("within", published=0.9, tolerance=0.05),
}


@dataclass(frozen=True)
class Sim:
    claim: Claim
    run: str
    truth: float  # the true ratio
    sd: float  # of the log ratios per repetition
    at_edge: bool = False


def mix() -> tuple[list[Sim], dict[str, float]]:
    """34 claims on 8 runs (one of seven claims, like jmh's), 100 s a repetition of every run (make run's five took
    8 min 7 s): a third far from their edges (6 standard errors at five repetitions), half near (1-2.5), the rest
    on an edge. Rules cycle through direction, equivalent 3 %, different 5 % and within 5 %."""
    rng = np.random.default_rng(37)
    seconds = [20.0, 18.0, 15.0, 12.0, 10.0, 10.0, 8.0, 7.0]
    counts = [7, 6, 5, 4, 4, 3, 3, 2]
    rules = list(RULES.values())
    sims, k = [], 0
    for run, count in enumerate(counts):
        sd = (0.01, 0.02, 0.03)[run % 3] * math.sqrt(2)
        for _ in range(count):
            claim = rules[k % len(rules)]
            kind = ("far", "near", "near", "edge", "far", "near")[k % 6]
            z = {"far": 6.0, "near": float(rng.uniform(1.0, 2.5)), "edge": 0.0}[kind]
            e = math.log(rng.choice(edges(claim)))
            step = (1 if rng.random() < 0.5 else -1) * z * sd / math.sqrt(5)
            lo, hi = (math.log(x) for x in (min(edges(claim)), max(edges(claim))))
            if lo < e + math.copysign(1e-12, step) < hi:  # into a band: at most to its centre
                step = math.copysign(min(abs(step), (hi - lo) / 2), step)
            sims.append(Sim(claim, f"run{run}", math.exp(e + step), sd, at_edge=kind == "edge"))
            k += 1
    return sims, {f"run{r}": s for r, s in enumerate(seconds)}


def _decide(claim: Claim, x: np.ndarray, p: float) -> tuple[bool, bool]:
    """A look on log ratios x at one-sided level p: (holds, differs), as on_values reads them."""
    n, m, s = x.size, float(x.mean()), float(x.std(ddof=1))
    h, hw = -special.stdtrit(n - 1, p) * s / math.sqrt(n), -special.stdtrit(n - 1, p / 2) * s / math.sqrt(n)
    holds, differs = regions(claim, math.exp(m - h), math.exp(m + h), math.exp(m - hw), math.exp(m + hw))
    return bool(holds), bool(differs)


@dataclass
class Outcome:
    verdicts: dict[int, str]  # claim index -> "holds" / "differs" (the undecided absent)
    seconds: float  # spent in all, the pilot's included
    forecast: budget.Forecast | None = None


def reproduce(
    sims: Sequence[Sim],
    seconds: dict[str, float],
    rounds: float,
    data: dict[int, np.ndarray],
    design: budget.Design | None = None,
    pilot: int = budget.PILOT,
    reused: int = 0,
) -> tuple[Outcome, budget.Design]:
    """One budgeted reproduction: a pilot of `pilot` repetitions of every run (the first `reused` repetitions of each
    claim's data are a reused pilot's), then rounds within `rounds` seconds; `design` carries a resumed one's looks
    (its claims' data then continue where they stopped)."""
    design = design or budget.Design(ALPHA, pilot)
    verdicts: dict[int, str] = {}
    count = {r: pilot for r in seconds}
    for i, s in enumerate(sims):
        design.register(str(i))
        count[s.run] = max(count[s.run], design.looks(str(i))[-1] if design.looks(str(i)) else pilot)
    spent = sum(pilot * seconds[r] for r in seconds) if not design.looks("0") else 0.0

    def judge() -> list[budget.Pending]:
        pending = []
        for i, s in enumerate(sims):
            key, n = str(i), count[s.run]
            if i in verdicts:
                continue
            looks = design.looks(key)
            for j, at in enumerate(looks):  # the looks taken, reread at their levels
                h, d = _decide(s.claim, data[i][:at], design.level_of(key, j))
                if h or d:
                    verdicts[i] = "holds" if h else "differs"
            if i in verdicts:
                continue
            if not looks or n > looks[-1]:
                h, d = _decide(s.claim, data[i][:n], design.look(key, n))
                if h or d:
                    verdicts[i] = "holds" if h else "differs"
                    continue
            x = data[i][:n]
            pending.append(budget.Pending(key, s.run, math.exp(x.mean()), float(x.std(ddof=1)), n, s.claim))
        return pending

    left, forecast, first = rounds, None, True
    while True:
        pending = judge()
        if first and not design.looks("0")[1:]:
            everyone = [
                budget.Pending(
                    str(i), s.run, math.exp(data[i][:pilot].mean()), float(data[i][:pilot].std(ddof=1)), pilot, s.claim
                )
                for i, s in enumerate(sims)
            ]
            forecast = budget.forecast(everyone, pending, seconds, spent, left, design)
        least = 1 if first else math.ceil(min((p.n for p in pending), default=2) / 2)  # as budgeted.spend
        plan = budget.plan_round(pending, {r: seconds[r] for r in {p.run for p in pending}}, left, design, least=least)
        first = False
        if not plan.targets:
            break
        for r, n in plan.targets.items():
            cost = (n - count[r]) * seconds[r]
            left -= cost
            spent += cost
            count[r] = n
    return Outcome(verdicts, spent, forecast), design


def _data(rng, sims: Sequence[Sim], n: int) -> dict[int, np.ndarray]:
    return {i: math.log(s.truth) + s.sd * rng.standard_normal(n) for i, s in enumerate(sims)}


def _truly(s: Sim) -> str | None:
    if s.at_edge:
        return None
    h, _ = regions(s.claim, s.truth, s.truth)
    return "holds" if bool(h) else "differs"


def mix_table(draws: int, minutes: Sequence[int]) -> list[str]:
    sims, seconds = mix()
    rows = []
    for m in minutes:
        total = 60.0 * m
        pilot_seconds = budget.PILOT * sum(seconds.values())
        rng = np.random.default_rng(m)
        got = {"design": [0.0, 0.0, 0.0], "even": [0.0, 0.0, 0.0]}
        fc = np.zeros(3)
        n_even = int(total // sum(seconds.values()))
        for _ in range(draws):
            data = _data(rng, sims, 400)
            out, _ = reproduce(sims, seconds, total - pilot_seconds, data)
            right = sum(_truly(sims[i]) == v for i, v in out.verdicts.items())
            got["design"] = [a + b for a, b in zip(got["design"], (len(out.verdicts), right, out.seconds), strict=True)]
            fc += [out.forecast.design, out.forecast.even, out.forecast.oracle]
            dec = right_e = 0
            for i, s in enumerate(sims):
                h, d = _decide(s.claim, data[i][:n_even], ALPHA)
                if h or d:
                    dec += 1
                    right_e += _truly(s) == ("holds" if h else "differs")
            got["even"] = [
                a + b for a, b in zip(got["even"], (dec, right_e, n_even * sum(seconds.values())), strict=True)
            ]
        truth = [budget.Pending(str(i), s.run, s.truth, s.sd, 0, s.claim) for i, s in enumerate(sims)]
        oracle, counts = budget.oracle(truth, seconds, total, ALPHA)
        d, e = (np.array(got[k]) / draws for k in ("design", "even"))
        fc /= draws
        rows.append(
            f"| {m} min | {d[0]:.1f} / {d[1]:.1f} ({d[2] / 60:.1f} min) | {e[0]:.1f} / {e[1]:.1f} | {oracle:.1f} | "
            f"{100 * d[1] / oracle:.0f} % | {fc[0]:.1f} / {fc[1]:.1f} / {fc[2]:.1f} |"
        )
    return rows


def edge_table(draws: int, rules: Sequence[str] | None = None) -> list[str]:
    """Every rule's every edge: a wrong verdict is any verdict. The claim shares its run with one 1.5 standard errors
    (at five) from its edge, which keeps the run going. Three reproductions per draw: the first (pilot and rounds),
    its resume with as much budget again, and a new reproduction reusing the first's pilot (new rounds, new data)."""
    rows = []
    sd = 0.02 * math.sqrt(2)
    for name, claim in RULES.items():
        if rules is not None and name not in rules:
            continue
        for e in edges(claim):
            sims = [
                Sim(claim, "r", e, sd, True),
                Sim(RULES["direction (greater)"], "r", math.exp(1.5 * sd / math.sqrt(5)), sd),
            ]
            seconds = {"r": 10.0}
            rng = np.random.default_rng(zlib.crc32(f"{name}/{e}".encode()))
            wrong = np.zeros(6)
            for _ in range(draws):
                data = _data(rng, sims, 400)
                first, design = reproduce(sims, seconds, 150.0, data)
                resumed, _ = reproduce(sims, seconds, 150.0, data, design=design)
                fresh = {i: np.concatenate([x[: budget.PILOT], x[-200:]]) for i, x in data.items()}
                reused, _ = reproduce(sims, seconds, 150.0, fresh)
                wrong += [o.verdicts.get(0) == v for o in (first, resumed, reused) for v in ("holds", "differs")]
            w = 100 * wrong / draws
            rows.append(
                f"| {name} | {e:.4g} | " + " | ".join(f"{w[i]:.2f} % / {w[i + 1]:.2f} %" for i in (0, 2, 4)) + " |"
            )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1000, help="reproductions per budget (default 1000)")
    ap.add_argument("--edge-draws", type=int, default=2000, help="reproductions per edge (default 2000)")
    ap.add_argument("--minutes", default="15,30,60", help="budgets, minutes in all, the pilot's included")
    args = ap.parse_args(argv)
    minutes = [int(m) for m in args.minutes.split(",")]
    print(f"A mix like make run's (34 claims, 8 runs, 100 s a repetition of every run), {args.draws} reproductions:")
    print(
        "| budget | this design: decided / correct (spent) | even split, one look | oracle (correct) | of the oracle "
        "| forecast at the pilot: design / even / oracle |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(mix_table(args.draws, minutes)), flush=True)
    print(f"\nWrong verdicts at the rules' edges (alpha = {100 * ALPHA:g} % a conclusion), {args.edge_draws} draws:")
    print("| rule | truth at | wrong holds / differs: first reproduction | resumed (+150 s) | new, the pilot reused |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(edge_table(args.edge_draws)))


if __name__ == "__main__":
    main()
