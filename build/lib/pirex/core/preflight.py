"""Preflight: checks over a machine record for what the papers learned the hard way.

A Pi on the default governor, with swap, on a weak power supply, hot, or with its work directory on an
SD card gives numbers that say more about that state than about the software measured. Every check is a
pure function of a record (pirex.core.machine.record), so it is tested on made-up machines. `check` runs them
all before a run; `compare` looks at the records taken before and after one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pirex.core.machine import MachineRecord, RecordLike

Level = Literal["ok", "warn", "fail"]
_RANK = {"ok": 0, "warn": 1, "fail": 2}

TEMP_WARN_C = 70.0
"""Above this, a Pi is close to its soft limit (Pi 3B+: 60 C; throttling from 80 C on all)."""
TEMP_FAIL_C = 80.0
"""Above this, the firmware throttles the ARM cores."""
TEMP_RISE_WARN_C = 10.0
"""A run that warmed the machine by this much may have run its last repetitions slower."""
LOAD_PER_CORE_WARN = 0.5
"""A 1-minute load average above this times the cores means something else is running."""

GOVERNOR_FIX = "echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"

_THROTTLE_NAMES = {
    "under_voltage": "under-voltage",
    "arm_freq_capped": "ARM frequency capped",
    "throttled": "throttled",
    "soft_temp_limit": "soft temperature limit",
}
_POWER_FIX = (
    "use the official supply (Pi 3: 5.1 V 2.5 A, Pi 4: 3 A, Pi 5: 5 A) and a short cable; "
    "power USB disks from a powered hub"
)
_COOL_FIX = "cool the Pi (heatsink or fan, open case) and let it idle before the run"


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: ok, warn (the run goes ahead, the bundle notes it) or fail (do not run)."""

    level: Level
    check: str
    message: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def worst(findings: Iterable[Finding]) -> Level:
    """The most severe level among findings ('ok' for none)."""
    levels = [f.level for f in findings]
    return max(levels, key=_RANK.__getitem__) if levels else "ok"


def _gib(n: int | float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _temperature(rec: MachineRecord) -> tuple[float | None, str]:
    """The SoC temperature: vcgencmd's on a Pi, else thermal zone 0."""
    if rec.temp_c is not None:
        return rec.temp_c, "vcgencmd measure_temp"
    return rec.thermal_zone0_c, "thermal_zone0"


def check_governor(record: RecordLike) -> list[Finding]:
    cores = MachineRecord.of(record).core_governors
    if not cores:
        return [Finding("ok", "governor", "no cpufreq on this machine (VM or container): not checked")]
    governors = sorted({g or "unknown" for g in cores})
    if governors == ["performance"]:
        return [Finding("ok", "governor", f"all {len(cores)} cores on the performance governor")]
    return [
        Finding(
            "warn",
            "governor",
            f"CPU frequency governor is {', '.join(governors)}, not performance: the clock follows the load",
            GOVERNOR_FIX,
        )
    ]


def check_swap(record: RecordLike) -> list[Finding]:
    mem = MachineRecord.of(record).memory
    if not mem or mem.get("swap_total_bytes") is None:
        return [Finding("warn", "swap", "could not read swap state")]
    total, used = mem["swap_total_bytes"], mem.get("swap_used_bytes") or 0
    if total == 0:
        return [Finding("ok", "swap", "no swap enabled")]
    what = f"{_gib(used)} of {_gib(total)} swap in use" if used else f"{_gib(total)} swap enabled (none in use)"
    return [Finding("warn", "swap", f"{what}: a run that swaps measures the disk", "sudo swapoff -a")]


def check_throttling(record: RecordLike) -> list[Finding]:
    rec = MachineRecord.of(record)
    t = rec.throttled
    if not t:
        if rec.pi:
            return [
                Finding(
                    "warn",
                    "throttling",
                    "a Raspberry Pi, but vcgencmd get_throttled could not be read: under-voltage would go unseen",
                    "run pirex on the host, where vcgencmd is installed (package libraspberrypi-bin)",
                )
            ]
        return [Finding("ok", "throttling", "not a Raspberry Pi (no vcgencmd): not checked")]
    out = []
    now = [k for k, v in t["now"].items() if v]
    since = [k for k, v in t["since_boot"].items() if v]
    if now:
        fix = _POWER_FIX if "under_voltage" in now else _COOL_FIX
        out.append(Finding("fail", "throttling", f"{', '.join(_THROTTLE_NAMES[k] for k in now)} now ({t['hex']})", fix))
    if since:
        fix = (_POWER_FIX if "under_voltage" in since else _COOL_FIX) + "; reboot to clear the since-boot bits"
        out.append(
            Finding(
                "warn",
                "throttling",
                f"{', '.join(_THROTTLE_NAMES[k] for k in since)} has occurred since boot ({t['hex']})",
                fix,
            )
        )
    return out or [Finding("ok", "throttling", f"no throttling or under-voltage ({t['hex']})")]


def check_temperature(record: RecordLike) -> list[Finding]:
    t, source = _temperature(MachineRecord.of(record))
    if t is None:
        return [Finding("ok", "temperature", "no temperature sensor readable: not checked")]
    if t > TEMP_FAIL_C:
        return [Finding("fail", "temperature", f"{t:.1f} C ({source}): the firmware throttles", _COOL_FIX)]
    if t > TEMP_WARN_C:
        return [Finding("warn", "temperature", f"{t:.1f} C ({source}): close to throttling", _COOL_FIX)]
    return [Finding("ok", "temperature", f"{t:.1f} C ({source})")]


def check_storage(record: RecordLike, io_heavy: bool = False) -> list[Finding]:
    st = MachineRecord.of(record).storage
    if not st:
        return [Finding("ok", "storage", "storage under the work directory unknown: not checked")]
    where = f"{st.get('work_dir')} on {st.get('device') or st.get('source')} ({st.get('fstype')})"
    if st.get("kind") == "sd-card":
        if io_heavy:
            return [
                Finding(
                    "warn",
                    "storage",
                    f"{where} is an SD card: I/O results will be the card's, and heavy I/O wears cards out",
                    "put the work directory on a USB or NVMe disk",
                )
            ]
        return [Finding("ok", "storage", f"{where} is an SD card (fine for an experiment without heavy I/O)")]
    return [Finding("ok", "storage", f"{where}: {st.get('kind') or 'no block device'}")]


def _enough(check: str, have: int | None, need: int, what: str, unknown: str, fix: str) -> list[Finding]:
    """have >= need, or a finding that says by how much not; unknown only matters when something is needed."""
    if have is None:
        return [Finding("warn" if need else "ok", check, unknown)]
    if have < need:
        return [Finding("fail", check, f"{_gib(have)} {what}, the experiment needs {_gib(need)}", fix)]
    return [Finding("ok", check, f"{_gib(have)} {what}")]


def check_free_disk(record: RecordLike, need_bytes: int) -> list[Finding]:
    return _enough(
        "free-disk",
        MachineRecord.of(record).storage.get("free_bytes"),
        need_bytes,
        "free under the work directory",
        "free disk space under the work directory unknown",
        "free some space or choose another work directory",
    )


def check_free_memory(record: RecordLike, need_bytes: int) -> list[Finding]:
    mem = MachineRecord.of(record).memory
    return _enough(
        "free-memory",
        mem.get("available_bytes", mem.get("free_bytes")),
        need_bytes,
        "memory available",
        "available memory unknown",
        "stop other programs (desktop, browsers) or use a machine with more memory",
    )


def check_load(record: RecordLike) -> list[Finding]:
    rec = MachineRecord.of(record)
    load, cores = rec.load_1m, rec.cores
    if load is None or not cores:
        return [Finding("ok", "load", "load average unknown: not checked")]
    if load > LOAD_PER_CORE_WARN * cores:
        return [
            Finding(
                "warn",
                "load",
                f"load average {load:.2f} on {cores} cores: something else is running",
                "wait for it to finish, or stop it (see top)",
            )
        ]
    return [Finding("ok", "load", f"load average {load:.2f} on {cores} cores")]


MIN_LINK_MBPS = 1000
"""The papers' Experiment 3 ran over a Gigabit switch: a slower link to a peer measures the link."""


def check_network(record: RecordLike) -> list[Finding]:
    """The route to each remote peer (B6's sink, the split roles' hosts): Wi-Fi or under 1 Gbit/s warns."""
    peers = [p for p in MachineRecord.of(record).peers if not p.get("local")]
    if not peers:
        return [Finding("ok", "network", "no remote peer: not checked")]
    out = []
    for p in peers:
        where = f"{p['peer']} via {p.get('interface') or 'unknown interface'}"
        speed, duplex = p.get("speed_mbps"), p.get("duplex")
        if not p.get("interface"):
            out.append(Finding("warn", "network", f"no route to {p['peer']}", "check the address and the cabling"))
        elif p.get("wireless"):
            out.append(
                Finding(
                    "warn",
                    "network",
                    f"{where} is Wi-Fi: latency and throughput will be the radio's",
                    "connect both hosts by cable to a Gigabit switch",
                )
            )
        elif speed is not None and (speed < MIN_LINK_MBPS or duplex == "half"):
            msg = f"{where}: {speed} Mbit/s {duplex or ''} duplex, the papers had 1 Gbit/s full duplex"
            out.append(Finding("warn", "network", msg, "use a Gigabit switch and cables (Cat 5e or better)"))
        else:
            link = f"{speed} Mbit/s {duplex or ''} duplex" if speed else "link speed not reported (virtual link)"
            out.append(Finding("ok", "network", f"{where}: {link}"))
    return out


def check_services(record: RecordLike) -> list[Finding]:
    """The services the papers stopped before measuring (pirex.core.tuning.PAPER_SERVICES)."""
    svc = MachineRecord.of(record).services
    if not svc:
        return [Finding("ok", "services", "running services unknown: not checked")]
    if svc.get("running"):
        return [
            Finding(
                "warn",
                "services",
                f"{', '.join(svc['running'])} running: the papers stopped them",
                "sudo pirex doctor --fix (stops them; `pirex doctor --undo` starts them again)",
            )
        ]
    return [Finding("ok", "services", f"none of {', '.join(svc.get('checked') or [])} running")]


def check(
    record: RecordLike,
    *,
    min_free_disk_bytes: int = 0,
    min_free_mem_bytes: int = 0,
    io_heavy: bool = False,
) -> list[Finding]:
    """All preflight checks over one record, in a fixed order; one or more findings per check."""
    return [
        *check_governor(record),
        *check_swap(record),
        *check_throttling(record),
        *check_temperature(record),
        *check_storage(record, io_heavy),
        *check_free_disk(record, min_free_disk_bytes),
        *check_free_memory(record, min_free_mem_bytes),
        *check_load(record),
        *check_network(record),
        *check_services(record),
    ]


def compare(before: RecordLike, after: RecordLike) -> list[Finding]:
    """What changed during a run that makes its numbers suspect: throttling bits that appeared, a
    temperature rise, swap that filled, a governor that changed. Warnings only: the data is kept."""
    out: list[Finding] = []
    before, after = MachineRecord.of(before), MachineRecord.of(after)
    tb, ta = before.throttled, after.throttled
    if ta:
        seen_before = {k for k, v in (tb or {}).get("since_boot", {}).items() if v}
        appeared = [k for k, v in ta["since_boot"].items() if v and k not in seen_before]
        now = [k for k, v in ta["now"].items() if v]
        if appeared:
            out.append(
                Finding(
                    "warn",
                    "throttling",
                    f"{', '.join(_THROTTLE_NAMES[k] for k in appeared)} occurred during the run "
                    f"({tb['hex'] if tb else 'unknown'} -> {ta['hex']}): results are suspect",
                    _POWER_FIX if "under_voltage" in appeared else _COOL_FIX,
                )
            )
        if now:
            out.append(
                Finding(
                    "warn",
                    "throttling",
                    f"{', '.join(_THROTTLE_NAMES[k] for k in now)} at the end of the run ({ta['hex']})",
                    _POWER_FIX if "under_voltage" in now else _COOL_FIX,
                )
            )
        if not appeared and not now:
            out.append(Finding("ok", "throttling", f"no throttling during the run ({ta['hex']})"))
    t0, _ = _temperature(before)
    t1, source = _temperature(after)
    if t0 is not None and t1 is not None:
        rise = t1 - t0
        if rise >= TEMP_RISE_WARN_C or t1 > TEMP_WARN_C:
            out.append(
                Finding(
                    "warn",
                    "temperature",
                    f"temperature rose from {t0:.1f} C to {t1:.1f} C ({source}) during the run",
                    _COOL_FIX,
                )
            )
        else:
            out.append(Finding("ok", "temperature", f"{t0:.1f} C -> {t1:.1f} C ({source})"))
    s0, s1 = before.memory.get("swap_used_bytes"), after.memory.get("swap_used_bytes")
    if s0 is not None and s1 is not None and s1 > s0:
        out.append(Finding("warn", "swap", f"swap use grew by {_gib(s1 - s0)} during the run", "sudo swapoff -a"))
    g0, g1 = before.governors, after.governors
    if g0 and g1 and g0 != g1:
        out.append(Finding("warn", "governor", f"governor changed during the run: {', '.join(g0)} -> {', '.join(g1)}"))
    return out
