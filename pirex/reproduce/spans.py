"""Claims that span machines or storage devices (claims.yaml `across: devices|storages`), judged on the bundles
of each: bundles grouped by the device (pirex.analysis.tidy.device_of: the inventory name, else the model with the
host name and the board's or installation's id: never the folder) or by the storage the work directory was on
(its kind, model, file system and path, from the machine record), then

- agreement (`metrics`): every pair of groups' means within 1 +/- margin, two one-sided tests over each group's
  repetition means (pirex.analysis.across.agree), with the variance decomposed into a device (storage) level on
  top of the repetition level;
- a ratio between two sides (`sides`: the Pi against the server, the USB disk against the SD card), unpaired
  (runs on two machines share no rounds), judged by the claim's rule; with `crossover`, per size."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pirex.analysis import across, precision
from pirex.analysis.interface import RunValue
from pirex.analysis.tidy import device_of, storage_of
from pirex.analysis.verdicts import DIFFERS, HOLDS, INCONCLUSIVE, NOT_RUN
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord, RecordLike
from pirex.reproduce.claims import Claim
from pirex.reproduce.verdict import Ours, Verdict, holm, judge, verdict_level

Values = Callable[[Sequence[Path]], list[RunValue]]  # the experiment's run_values over some bundles


@dataclass(frozen=True)
class Group:
    """The bundles of one device (or of one storage device), named as the report and tables name it."""

    name: str
    bundles: tuple[Path, ...]
    record: MachineRecord  # the machine record of its first bundle


def cached(values_of: Values) -> Values:
    """values_of with each set of bundles read once: every claim, and every device of each, reads the same ones."""
    seen: dict[tuple[str, ...], list[RunValue]] = {}

    def read(bundles: Sequence[Path]) -> list[RunValue]:
        key = tuple(map(str, bundles))
        if key not in seen:
            seen[key] = values_of(list(bundles))
        return seen[key]

    return read


def storage_name(record: RecordLike) -> str:
    """A storage device as the report names it: kind, model and file system, and where the work directory was."""
    st = MachineRecord.of(record).storage
    where = st.get("work_dir") or st.get("mount") or ""
    what = "RAM drive (tmpfs)" if not st.get("kind") and st.get("fstype") == "tmpfs" else storage_of(record)
    return what + (f" at {where}" if where else "")


def groups(bundles: Sequence[Path], across_: str) -> list[Group]:
    """Bundles grouped by device or storage, in the order first seen (--storage A --storage B keeps A first)."""
    name = device_of if across_ == "devices" else storage_name
    out: dict[str, tuple[list[Path], MachineRecord]] = {}
    for b in bundles:
        try:
            record = Bundle.open(Path(b)).machine_before()
        except PirexError as e:
            raise PirexError(f"{b}: its machine record cannot tell its device: {e}") from None
        out.setdefault(name(record), ([], record))[0].append(Path(b))
    return [Group(n, tuple(bs), rec) for n, (bs, rec) in out.items()]


def is_side(g: Group, side: str, across_: str) -> bool:
    """A device side: pi (a Pi's board in the record) or server (none); a storage side: the storage's kind."""
    if across_ == "devices":
        has_pi = bool(g.record.pi_model)
        return has_pi if side == "pi" else not has_pi
    return g.record.storage_kind == side


def judge_across(
    claim: Claim, found: list[Group], values_of: Values, level: float, precision_: float | None, indicative: bool
) -> Verdict:
    """A claim across devices (storages) judged on the groups' bundles."""
    what = "devices" if claim.across == "devices" else "storage devices"
    if len(found) < claim.span:
        have = "; ".join(g.name for g in found) or "none"
        return Verdict(claim, NOT_RUN, f"needs {claim.span} {what}; the bundles are of {len(found)} ({have})")
    values = {g.name: values_of(list(g.bundles)) for g in found}
    if claim.metrics:
        return _agreement(claim, found, values, level, indicative)
    pair = _sides(claim, found)
    if isinstance(pair, str):
        return Verdict(claim, NOT_RUN, pair)
    num, den = pair
    if claim.crossover:
        return _per_size(claim, num, den, values, level, precision_, indicative)
    metric = _first_metric(claim, values[num.name], values[den.name])
    if metric is None:
        return Verdict(claim, INCONCLUSIVE, f"the bundles have no {' or '.join(claim.numerator.metrics)}")
    o = _between(claim, metric, metric, num, den, values, level)
    v = judge(claim, o, precision_, indicative)
    return dataclasses.replace(v, reason=f"{v.reason}; {num.name} over {den.name}")


def _sides(claim: Claim, found: list[Group]) -> tuple[Group, Group] | str:
    """The numerator's and the denominator's group, or why the bundles do not have exactly one of each."""
    if claim.sides is None:  # storages, rule different: the two in the order given
        if len(found) != 2:
            names = "; ".join(g.name for g in found)
            return f"needs exactly 2 storage devices; the bundles are of {len(found)}: {names}"
        return found[0], found[1]
    picked = []
    for side in claim.sides:
        match = [g for g in found if is_side(g, side, claim.across)]
        if len(match) != 1:
            names = "; ".join(g.name for g in match) or "none"
            return f"needs exactly one {side} among the bundles' {claim.across}; found {len(match)} ({names})"
        picked.append(match[0])
    return picked[0], picked[1]


def _first_metric(claim: Claim, *values: Sequence[RunValue]) -> str | None:
    present = set.intersection(*({v.metric for v in vs} for vs in values))
    return next((m for m in claim.numerator.metrics if m in present), None)


def _means(values: Sequence[RunValue], metric: str, variant: str) -> list[float]:
    """A group's repetition means of a metric: its independent units (no pairing across machines)."""
    return list(precision.run_means(values, metric, variant).values())


def _between(
    claim: Claim, num_metric: str, den_metric: str, num: Group, den: Group, values: dict, level: float
) -> Ours:
    a = _means(values[num.name], num_metric, claim.numerator.variant)
    b = _means(values[den.name], den_metric, claim.denominator.variant)
    # the regions are read off the 1 - 2 alpha interval and, where two-sided, the 1 - alpha one (verdict.regions)
    names = (num.name, den.name)
    wide = across.between(a, b, level, names)
    return Ours(across.between(a, b, verdict_level(level), names), num_metric, (), wide=wide)


def _agreement(claim: Claim, found: list[Group], values: dict, level: float, indicative: bool) -> Verdict:
    """Every metric's group means agree within the margin (intersection-union: every pair of every metric)."""
    variant = claim.variants[0]
    results, details = [], []
    for metric in claim.metrics:
        means = {g.name: _means(values[g.name], metric, variant) for g in found}
        if not all(means.values()):
            lacking = [n for n, m in means.items() if not m]
            return Verdict(claim, INCONCLUSIVE, f"no {metric} of {variant} in the bundles of {'; '.join(lacking)}")
        setups = {v.setup for g in found for v in values[g.name] if v.metric == metric}
        if len(setups) > 1:
            return Verdict(claim, INCONCLUSIVE, f"the {claim.across} ran {len(setups)} setups of {metric}: give one")
        family = len(claim.metrics) * len(means) * (len(means) - 1) // 2  # every pair of every metric
        a = across.agree(means, claim.margin, level, family)
        results.append((metric, a))
        details.append(_decomposition(claim, found, values, metric, variant))
    detail = " ".join(d for d in details if d)
    text = "; ".join(f"{m}: {a.reason}" for m, a in results)
    if any(a.verdict == DIFFERS for _, a in results):
        odd = sorted({d for _, a in results if a.verdict == DIFFERS for d in a.odd})
        return Verdict(
            claim, DIFFERS, f"{', '.join(odd)} differ{'s' * (len(odd) == 1)}: {text}", None, indicative, detail=detail
        )
    if all(a.verdict == HOLDS for _, a in results):
        return Verdict(claim, HOLDS, text, None, indicative, detail=detail)
    return Verdict(claim, INCONCLUSIVE, text, None, indicative, detail=detail)


def _decomposition(
    claim: Claim, found: list[Group], values: dict, metric: str, variant: str, level: float = across.LEVEL_OF_SHARE
) -> str:
    """Where the variance is, with the device (storage) level on top of the repetition level; "" when the design
    cannot be decomposed (a single repetition somewhere). The shares are of the variance of one value of the
    lowest level (an iteration where the runs have inner samples, else a run): Kalibera & Jones's components of a
    single measurement, not of a repetition's mean. The top level's share is never printed bare: with its
    interval (across.top_share), or, from 2 devices, said to be not estimable."""
    top = "device" if claim.across == "devices" else "storage"
    # each group's values labelled with its name: two storages of one machine are two units of the top level
    labelled = [dataclasses.replace(v, device=g.name) for g in found for v in values[g.name]]
    try:
        d = across.decompose_devices(labelled, metric, variant, (top, "repetition", "run", "iteration"))
    except ValueError:
        return ""
    return (
        f"{metric}: the {top} level holds {across.top_share(d, level).text()} of the variance of one "
        f"{d.levels[-1].name}'s value; by level: {' / '.join(f'{x.name} {100 * x.share:.0f} %' for x in d.levels)}."
    )


SIZE = "{size}"


def _per_size(
    claim: Claim, num: Group, den: Group, values: dict, level: float, precision_: float | None, indicative: bool
) -> Verdict:
    """The ratio's direction per size, the crossover's side of each (a size at the crossover is not judged)."""
    at, below, above = claim.crossover
    template = claim.numerator.metrics[0]
    pattern = re.compile(re.escape(template).replace(re.escape(SIZE), r"(\d+(?:\.\d+)?)") + "$")
    sizes = sorted(
        {float(m.group(1)) for v in values[num.name] if (m := pattern.match(v.metric))}
        & {float(m.group(1)) for v in values[den.name] if (m := pattern.match(v.metric))}
    )
    if not sizes:
        return Verdict(claim, INCONCLUSIVE, f"no {template} that both {num.name} and {den.name} have")
    parts, verdicts, judged = [], [], []
    for size in sizes:
        if size == at:
            continue
        text = f"{size:g}"
        metric = template.replace(SIZE, text)
        sized = dataclasses.replace(claim, direction=below if size < at else above)
        judged.append((text, judge(sized, _between(claim, metric, metric, num, den, values, level), precision_)))
    # "differs" at some size: Holm-adjusted over the claim's sizes (one claim, many tests)
    for (text, _), v in zip(judged, holm([v for _, v in judged], level), strict=True):
        i = v.ours.interval
        bounds = f"[{i.low:.3g}; {i.high:.3g}]" if i.has_interval else f"({i.reason})"
        parts.append(f"{text}: {i.value:.3g} {bounds} {v.verdict}")
        verdicts.append(v.verdict)
    reason = f"{num.name} over {den.name} per size, expected > 1 {'below' if below == 'greater' else 'above'} {at:g}: "
    reason += "; ".join(parts)
    if DIFFERS in verdicts:
        return Verdict(claim, DIFFERS, reason, None, indicative)
    if verdicts and all(v == HOLDS for v in verdicts):
        return Verdict(claim, HOLDS, reason, None, indicative)
    return Verdict(claim, INCONCLUSIVE, reason, None, indicative)
