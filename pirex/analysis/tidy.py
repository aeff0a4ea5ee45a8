"""Result bundles read into one tidy table: one row per measured value, with where it came
from (experiment, run, device, storage, variant, benchmark, repetition, fork, iteration) and the
setup it ran with (the resolved parameters that decide what the value means, as text)."""

from __future__ import annotations

from dataclasses import dataclass


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
    setup: str = ""


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
