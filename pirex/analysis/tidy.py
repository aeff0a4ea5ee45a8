"""Result bundles read into one tidy table: one row per measured value, with where it came
from (experiment, run, device, storage, variant, benchmark, repetition, fork, iteration)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pirex.bundle import Bundle
from pirex.errors import PirexError

# JMH method names of images/jmh -> the paper's benchmark numbers
JMH_BENCHMARKS = {
    "b1_default": "B1",
    "b2_inline": "B2",
    "b3_dontInline": "B3",
    "b4_exclude": "B4",
    "b5_fileWrite": "B5",
    "b6_tcpSend": "B6",
}


@dataclass(frozen=True)
class Row:
    experiment: str
    run: str
    device: str
    storage: str
    variant: str
    benchmark: str
    repetition: int
    fork: int
    iteration: int
    metric: str
    value: float
    unit: str


def device_of(machine: dict) -> str:
    pi = machine.get("pi") or {}
    if pi.get("model"):
        return pi["model"]
    cpu = (machine.get("cpu") or {}).get("model") or "unknown CPU"
    return f"{cpu} ({machine.get('hostname', '?')})"


def storage_of(machine: dict) -> str:
    st = machine.get("storage") or {}
    parts = [st.get("kind") or "unknown", st.get("model") or "", st.get("fstype") or ""]
    return " ".join(p for p in parts if p).strip()


def jmh_rows(bundle_path: Path) -> list[Row]:
    b = Bundle.open(bundle_path)
    if b.manifest["experiment"] != "jmh":
        raise PirexError(f"{bundle_path} is a {b.manifest['experiment']} bundle, not jmh")
    machine = json.loads((bundle_path / "machine.json").read_text())["before"]
    device, storage = device_of(machine), storage_of(machine)
    rows = []
    for step in b.manifest["completed"]:
        f = b.step_dir(step["variant"], step["repetition"]) / "jmh.json"
        for result in json.loads(f.read_text()):
            name = result["benchmark"].rsplit(".", 1)[1]
            bench = JMH_BENCHMARKS.get(name, name)
            metric = result["primaryMetric"]
            for fork, iterations in enumerate(metric["rawData"]):
                for i, value in enumerate(iterations):
                    rows.append(Row("jmh", b.run_id, device, storage, step["variant"], bench, step["repetition"],
                                    fork, i, "throughput", float(value), metric["scoreUnit"]))  # fmt: skip
    return rows


def write_csv(rows: Sequence, path: Path, kind: type = Row) -> None:
    """Dataclass instances of `kind` (tidy rows by default) as CSV, one column per field."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(kind.__dataclass_fields__))
        w.writeheader()
        w.writerows(asdict(r) for r in rows)
