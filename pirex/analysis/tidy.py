"""Result bundles read into one tidy table: one row per measured value, with where it came
from (experiment, run, device, storage, variant, benchmark, repetition, fork, iteration)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


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
    """The device as tables name it: its inventory name when a fleet run recorded one (hostnames and
    run ids may collide across hosts; the inventory name is the device's identity), with its model."""
    pi = machine.get("pi") or {}
    cpu = (machine.get("cpu") or {}).get("model") or "unknown CPU"
    named = (machine.get("device") or {}).get("name")
    if named:
        host = machine.get("hostname")
        return f"{named} ({pi.get('model') or cpu}" + (f", host {host}" if host and host != named else "") + ")"
    if pi.get("model"):
        return pi["model"]
    return f"{cpu} ({machine.get('hostname', '?')})"


def storage_of(machine: dict) -> str:
    st = machine.get("storage") or {}
    parts = [st.get("kind") or "unknown", st.get("model") or "", st.get("fstype") or ""]
    return " ".join(p for p in parts if p).strip()


def write_csv(rows: Sequence, path: Path, kind: type = Row) -> None:
    """Dataclass instances of `kind` (tidy rows by default) as CSV, one column per field."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(kind.__dataclass_fields__))
        w.writeheader()
        w.writerows(asdict(r) for r in rows)
