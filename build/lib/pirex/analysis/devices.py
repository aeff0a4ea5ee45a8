"""One column per device, for any experiment: the run values every analysis module offers (run_values,
pirex/analysis/interface.py), per metric and variant, side by side for each device the bundles came from (a
fleet's Pis and a server, each named from its record: pirex.analysis.tidy.device_of). Each cell is the mean
over that device's repetitions with its interval over them, or how many repetitions there are and are needed.
The repetition is the unit: the runs inside one (JMH forks, MooBench loops) share its JVM start, its moment and
its machine state, so they are averaged first (precision.run_means) and the interval and its n are over
repetitions, never over forks (counting forks as independent runs is pseudo-replication: Kalibera & Jones 2013,
"Rigorous benchmarking in reasonable time", ISMM; Hurlbert 1984, "Pseudoreplication and the design of ecological
field experiments", Ecol. Monogr. 54(2)). Runs of different setups (RunValue.setup) are never pooled: a row per
setup, which the variant's cell names when there are several."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from pirex.analysis import precision, stats
from pirex.analysis.interface import RunValue
from pirex.analysis.tables import Table

LEVEL = 0.95


def digits(x: float, significant: int = 4) -> int:
    """Decimals that show `significant` digits of x: 18,881,298 and 1.500, not 18,881,298.4263."""
    if not x or not math.isfinite(x):
        return 0
    return max(0, significant - 1 - math.floor(math.log10(abs(x))))


def devices(values: Sequence[RunValue]) -> list[str]:
    return sorted({v.device for v in values})


def repetition_means(values: Sequence[RunValue], metric: str, variant: str) -> dict[str, list[float]]:
    """device -> the mean of each of its repetitions (one per bundle and repetition): the independent units."""
    out: dict[str, list[float]] = defaultdict(list)
    for (device, _bundle, _repetition), mean in precision.run_means(values, metric, variant).items():
        out[device].append(mean)
    return dict(out)


def table(values: Sequence[RunValue], level: float = LEVEL) -> Table:
    """Rows: metric, variant (and setup); columns: one per device (mean over repetitions [interval over them])."""
    devs = devices(values)
    several = len({v.setup for v in values}) > 1
    runs: dict[tuple[str, str, str], list[RunValue]] = defaultdict(list)
    units: dict[str, str] = {}
    lower: dict[str, bool] = {}
    for v in values:
        runs[(v.metric, v.variant, v.setup)].append(v)
        units[v.metric], lower[v.metric] = v.unit, v.lower_is_better
    rows, records = [], []
    for (metric, variant, setup), chosen in runs.items():
        by_device = repetition_means(chosen, metric, variant)
        row = [metric + (f" ({units[metric]})" if units[metric] else ""), f"{variant}, {setup}" if several else variant]
        for dev in devs:
            xs = by_device.get(dev)
            if not xs:
                row.append("")
                continue
            i = stats.mean_interval(xs, level, positive=all(x > 0 for x in xs), what="repetitions")
            row.append(f"{i.text(digits(i.value))}, n={i.n}")
            records.append(
                {
                    "metric": metric,
                    "variant": variant,
                    **({"setup": setup} if several else {}),
                    "device": dev,
                    "repetitions": i.n,
                    "mean": i.value,
                    "low": i.low,
                    "high": i.high,
                    "unit": units[metric],
                    "lower_is_better": lower[metric],
                }
            )
        rows.append(row)
    notes = [
        f"Each cell: the mean over the device's repetitions (the runs inside one, forks or loops, averaged "
        f"first: they are not independent) with its {stats.level_text(level)} interval over them, n = "
        f"repetitions; below {stats.MIN_RUNS} repetitions no interval. Devices are named by their inventory "
        "name where a fleet run recorded one."
    ]
    return Table(
        f"Per device: mean over repetitions ({len(devs)} devices)",
        ["Metric", "Variant", *devs],
        rows,
        records,
        notes,
        label_columns=2,
    )
