"""Result bundles read into one tidy table: one row per measured value, with where it came
from (experiment, run, device, storage, variant, benchmark, repetition, fork, iteration) and the
setup it ran with (the resolved parameters that decide what the value means, as text)."""

from __future__ import annotations

from dataclasses import dataclass

from pirex.core.machine import MachineRecord, RecordLike


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


def device_of(machine: RecordLike) -> str:
    """The device as tables name it: its inventory name when a fleet run recorded one (hostnames and
    run ids may collide across hosts; the inventory name is the device's identity), with its model; else
    the model (a Pi's, or the CPU's) with the host name and a short id of the board (a Pi's serial, as
    the record keeps it: a keyed digest) or of the installation (machine_id): three Pis called raspberrypi
    stay three devices, and no folder name decides."""
    rec = MachineRecord.of(machine)
    model = rec.pi_model or rec.cpu_model or "unknown CPU"
    host, named = rec.hostname, rec.device_name
    if named:
        return f"{named} ({model}" + (f", host {host}" if host and host != named else "") + ")"
    board = (rec.pi.get("serial_hmac_sha256") or "")[:8]
    ident = f"board {board}" if board else (f"id {rec.machine_id[:8]}" if rec.machine_id else "")
    inside = ", ".join(x for x in (host or "unknown host", ident) if x)
    return f"{model} ({inside})"


def storage_of(machine: RecordLike) -> str:
    st = MachineRecord.of(machine).storage
    parts = [st.get("kind") or "unknown", st.get("model") or "", st.get("fstype") or ""]
    return " ".join(p for p in parts if p).strip()
