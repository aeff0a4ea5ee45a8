"""ICPE'18 Experiment 3 (the JPA REST service, section 4.3): Table 3 from the load driver's raw requests, the part of
each response time spent outside the service, and the comparison with the published table
(analysis/icpe18/table3.csv).

Data: images/locust writes one `requests.csv` per run (one row per request: operation, seq, user, start_ns,
response_time_us, locust_response_time_us, status, ok, service_time_ns, error) and `summary.json` beside it. Runs
come from

- a pirex bundle: `<bundle>/<variant>/<repetition>/requests.csv`; the variant names the configuration
  ("web-native_db-native", "web-docker_db-docker", ...), device and storage come from machine.json "before" (the
  machine pirex ran on: with the roles split over several hosts, that is the driver's);
- plain directories of a `docker compose` run: {label: directory or [directories]}; a directory holds requests.csv,
  or one subdirectory per repetition that does. The caller names the configuration (and may name the device).

Rules, per run and operation:

- warm-up: the requests with seq <= warm-up are dropped (seq numbers the requests in the order they were issued).
  The default warm-up is half of the operation's count, as in the paper (200,000 per operation, the first 100,000
  discarded) and in the driver's summary.json; the count is the highest seq of the operation in the file, or
  summary.json's requests_per_operation when that is larger (a run that stopped early).
- failed requests (ok = 0) are left out of every statistic and counted: failed after warm-up (and their share of
  the requests after warm-up), failed during warm-up, and their kinds ("HTTP 503", "ConnectionRefusedError").
- outside the service: response_time_us - service_time_ns / 1000 (the X-Service-Time-Ns header) of every successful
  request after warm-up that carries one: network, HTTP and the driver's own client code.

Statistics per (setup, device, storage, configuration, operation), in microseconds, over every run pooled; the setup
(customers, requests per operation or the soak's duration, the operations' mix: a step's resolved parameters) is never
pooled, each has its tables:

- as the paper computed them: mean, σ (n - 1) and the 99 % t interval over every request (n = 100,000 per line in
  the paper: its intervals are mean -/+ t(0.995, n - 1) σ / sqrt(n), see test_jpa). It says how well the mean of
  these very requests is known, not how well a rerun would agree: requests of one run queue behind each other.
- beside it: the 99 % t interval over the runs' means (independent runs), when there are at least 2 runs.

The paper's six configurations (section 4.3) are three placements of web server and database on two Raspberry Pi 3
(D2, D3) with two USB disks (H1, H2), each with both roles native or both in Docker. A configuration of ours maps to
one of them through `paper`: by default a label whose roles are all native maps to (1) and all Docker to (2) (the
placement of the paper's reference lines 1, 7 and 13); roles mixed ("web-docker_db-native") or unnamed map to none.
Map other placements explicitly ({"pi3-swapped-disks-native": 5, ...}). Whether our ratios hold the paper's is judged
by the claims (analysis/icpe18/claims.yaml, `pirex compare jpa-rest`), not here.

The service's memory over each run (web-memory.csv, the "memory" table) is read in jpa_memory.py.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pirex.analysis import stats
from pirex.analysis import tables as T
from pirex.analysis.bundles import open_bundle, per_setup
from pirex.analysis.interface import NamedTable, RunValue
from pirex.analysis.jpa_memory import memory_table, memory_trends
from pirex.analysis.tables import Table
from pirex.analysis.tidy import device_of, storage_of
from pirex.core.bundle import Step, read_json, read_machine
from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord

LEVEL = 0.99  # ICPE'18 Table 3: 99 % CI
REQUESTS = "requests.csv"
SUMMARY = "summary.json"
COLUMNS = ("operation", "seq", "response_time_us", "ok", "service_time_ns", "error")  # the ones read here

# Table 3's row order and names
OPERATIONS = {"read": "Read customer", "create-random": "Create random customer", "change-name": "Change customer name"}
BASELINE_OPERATION = "create-random"  # "intended to serve as a baseline" (section 4.3): no database access
# The paper's configurations (section 4.3): web device + disk, database device + disk, variant
PAPER_CONFIGS = {
    1: ("D2", "H1", "D3", "H2", "native"),
    2: ("D2", "H1", "D3", "H2", "docker"),
    3: ("D3", "H1", "D2", "H2", "native"),
    4: ("D3", "H1", "D2", "H2", "docker"),
    5: ("D2", "H2", "D3", "H1", "native"),
    6: ("D2", "H2", "D3", "H1", "docker"),
}


# --- reading -------------------------------------------------------------------------------------------------------


@dataclass
class OperationRun:
    """One operation of one run."""

    operation: str
    count: int  # requests issued: the highest seq, or requests_per_operation when larger
    warmup: int
    rows: int  # rows in the file (every answered request, warm-up included)
    steady: np.ndarray  # response_time_us of the successful requests after warm-up
    failed: int  # failed after warm-up
    warmup_failed: int
    outside: np.ndarray  # response_time_us - service_time_ns / 1000, successful requests after warm-up with one
    service: np.ndarray  # service_time_ns / 1000 of the same requests
    error_kinds: Counter = field(default_factory=Counter)  # failures after warm-up by kind
    in_flight: int = 0  # sent but unanswered when a --soak run's clock stopped: not failures, not timed

    @property
    def requests(self) -> int:
        """Answered requests after warm-up, failed ones included."""
        return int(self.steady.size) + self.failed

    @property
    def missing(self) -> int:
        """Issued but never answered (no row): a run that stopped early."""
        return self.count - self.rows


@dataclass
class Run:
    """One requests.csv."""

    source: Path
    run: str  # bundle run id, or the directory
    device: str
    storage: str
    configuration: str
    repetition: int
    operations: dict[str, OperationRun]
    summary: dict  # summary.json, {} without one
    setup: str = ""  # setup_of(the step), or what a run folder's summary.json says

    @property
    def complete(self) -> bool | None:
        return self.summary.get("complete")

    @property
    def driver_us_per_request(self) -> float | None:
        return (self.summary.get("driver_cpu") or {}).get("us_per_request")


IN_FLIGHT = "in-flight"  # the driver's error kind for a request its --run-time cut off (images/locust)


def error_kind(error: str) -> str:
    """The kind of a failure: "HTTP 503: {...}" -> "HTTP 503"; "ConnectionRefusedError: [Errno 111] ..." ->
    "ConnectionRefusedError"."""
    kind = (error or "").split(":", 1)[0].strip()
    return kind or "unknown"


def _warmup_of(warmup: int | Mapping[str, int] | None, operation: str, count: int) -> int:
    if warmup is None:
        return count // 2
    if isinstance(warmup, Mapping):
        return int(warmup[operation]) if operation in warmup else count // 2
    return int(warmup)


def read_run(
    path: Path,
    warmup: int | Mapping[str, int] | None = None,
    *,
    configuration: str = "",
    device: str = "",
    storage: str = "",
    run: str = "",
    repetition: int = 0,
    timed: bool = False,
) -> Run:
    """One run: `path` is requests.csv or its directory. warm-up: None (half of each operation's count), a number
    for every operation, or {operation: number} (operations not named get half). timed: the run was meant to stop
    by the clock (--soak), so the count is what was sent, not the (unbounded) count planned."""
    path = Path(path)
    f = path / REQUESTS if path.is_dir() else path
    if not f.is_file():
        raise PirexError(f"{f} is missing: expected the load driver's requests.csv (images/locust)")
    summary_file = f.parent / SUMMARY
    summary = read_json(summary_file, dict) if summary_file.is_file() else {}
    per_op_planned = summary.get("requests_per_operation") or 0
    raw: dict[str, list[tuple]] = {}
    with open(f, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise PirexError(f"{f}: no column {', '.join(missing)}: not a requests.csv of images/locust")
        for line, r in enumerate(reader, start=2):
            try:
                item = (
                    int(r["seq"]),
                    float(r["response_time_us"]),
                    r["ok"].strip() == "1",
                    float(r["service_time_ns"]) if r["service_time_ns"] not in ("", None) else math.nan,
                    r["error"] or "",
                )
            except (TypeError, ValueError) as e:
                raise PirexError(f"{f}:{line}: cannot read the row ({e}): the file is damaged") from None
            raw.setdefault(r["operation"], []).append(item)
    ops = {}
    for op, items in raw.items():
        seq = np.array([i[0] for i in items], dtype=np.int64)
        if np.unique(seq).size != seq.size:
            raise PirexError(f"{f}: {op} has a seq more than once: each request has its own seq; the file is damaged")
        rt = np.array([i[1] for i in items])
        # in flight when a --soak run's clock stopped: neither answered nor failed, counted apart
        flying = np.array([error_kind(i[4]) == IN_FLIGHT for i in items], dtype=bool)
        ok = np.array([i[2] for i in items], dtype=bool) | flying
        svc = np.array([i[3] for i in items]) / 1000
        count = int(seq.max()) if timed else max(int(seq.max()), int(per_op_planned))
        w = _warmup_of(warmup, op, count)
        steady = seq > w
        good = steady & ok & ~flying
        with_service = good & ~np.isnan(svc)
        kinds = Counter(error_kind(i[4]) for i, s, o in zip(items, steady, ok, strict=True) if s and not o)
        ops[op] = OperationRun(
            op,
            count,
            w,
            len(items),
            rt[good],
            int((steady & ~ok).sum()),
            int((~steady & ~ok).sum()),
            rt[with_service] - svc[with_service],
            svc[with_service],
            kinds,
            int(flying.sum()),
        )
    return Run(f, run or str(f.parent), device, storage, configuration, repetition, ops, summary)


def _step_requests(step: Path) -> Path | None:
    if (step / REQUESTS).is_file():
        return step / REQUESTS
    found = sorted(step.glob(f"*/{REQUESTS}"))
    return found[0] if len(found) == 1 else None


def setup_of(step: Step, soak: dict) -> str:
    """What a step's response times depend on besides the machine and the configuration: the table's rows, the
    requests per operation (or the soak's duration, `soak`: run.json's) and the operations' mix (PirexError naming
    the bundle when one was not recorded)."""
    p = step.param
    count = f"a soak of {soak['duration']}" if soak else f"{p('requests_per_operation'):,} requests per operation"
    return f"{p('customers'):,} customers, {count}, {p('mix')} operations"


def runs_from_bundle(bundle_path: Path, warmup: int | Mapping[str, int] | None = None) -> list[Run]:
    """Every completed step of a bundle with a requests.csv; configuration = the placement its roles' records name
    (a `pirex swarm` bundle), else the variant."""
    b = open_bundle(bundle_path)
    label = placement(b.path)
    machine = b.machine_before()
    device, storage = device_of(machine), storage_of(machine)
    soak = b.run_info().soak
    out = []
    for step in b.steps():
        f = _step_requests(step.dir)
        if f is not None:
            run = read_run(
                f,
                warmup,
                configuration=label or step.variant,
                device=device,
                storage=storage,
                run=b.run_id,
                repetition=step.repetition,
                timed=bool(soak),
            )
            run.setup = setup_of(step, soak)
            out.append(run)
    if not out:
        raise PirexError(f"{bundle_path}: no completed step has a {REQUESTS}: not a bundle of the JPA experiment")
    return out


def _run_dirs(d: Path) -> list[Path]:
    if (d / REQUESTS).is_file():
        return [d]
    subs = sorted((p for p in d.iterdir() if p.is_dir() and (p / REQUESTS).is_file()), key=lambda p: p.name)
    if not subs:
        raise PirexError(f"{d}: no {REQUESTS} in it or in a subdirectory: give the driver's output directory")
    return subs


FOLDER_SETUP = "a run folder (no manifest: its customers and request counts are not recorded)"


def runs_from_dirs(
    dirs: Mapping[str, Path | Sequence[Path]],
    warmup: int | Mapping[str, int] | None = None,
    device: str = "",
    storage: str = "",
) -> list[Run]:
    """Runs of a docker compose deployment: {configuration label: directory or [directories]}. A directory holds
    requests.csv, or one subdirectory per repetition that does (in name order)."""
    out = []
    for label, ds in dirs.items():
        ds = [ds] if isinstance(ds, str | Path) else list(ds)
        paths = [p for d in ds for p in _run_dirs(Path(d))]
        for rep, p in enumerate(paths):
            run = read_run(p, warmup, configuration=label, device=device, storage=storage, repetition=rep)
            run.setup = FOLDER_SETUP
            out.append(run)
    return out


def placement(run_dir: Path) -> str | None:
    """The configuration of a split run from its hosts' records (`pirex compose jpa-rest --role ...` writes
    machine-<role>.json into the run folder, `pirex swarm` into its bundle): which machine and disk ran the web
    service and the database, and how; None without them.
    Configurations that swap the Pis or the disks (the paper's 3-6) come out as different labels."""
    records, how = {}, {}
    for role in ("web", "db"):
        f = Path(run_dir) / f"machine-{role}.json"
        if not f.exists():
            return None
        records[role] = read_machine(f)
        how[role] = _how_role_ran(Path(run_dir), role)

    def host(m: MachineRecord) -> str:
        name = m.hostname or "?"
        return f"{name} ({device_of(m).replace(f' ({name})', '')}, {storage_of(m)})"

    ran = how["web"] if how["web"] == how["db"] else f"web {how['web']}, db {how['db']}"
    return f"web {host(records['web'])}, db {host(records['db'])}, {ran}"


_NETWORKS = {"host": "host network", "overlay": "overlay network"}  # a role's network as the placement names it


def _how_role_ran(run_dir: Path, role: str) -> str:
    """native, or docker with its network, as the role's machine record says (machine-<role>.json: its variant
    and network); a record from before it said so: the newer of the role's records (native-<role>.json written
    by `--native`, compose-<role>.json by docker compose) when a folder saw both."""
    said = read_json(run_dir / f"machine-{role}.json", dict)
    if said.get("variant") == "native":
        return "native"
    if said.get("variant") == "docker":
        return f"docker ({_NETWORKS.get(said.get('network'), 'bridge')})"
    found = [f for f in (run_dir / f"native-{role}.json", run_dir / f"compose-{role}.json") if f.exists()]
    if not found:
        return "docker (bridge)"
    newest = max(found, key=lambda f: f.stat().st_mtime)
    if newest.name.startswith("native-"):
        return "native"
    env = read_json(newest, dict).get("environment") or {}
    return f"docker ({_NETWORKS.get(env.get('NETWORK_MODE'), 'bridge')})"


# --- statistics ----------------------------------------------------------------------------------------------------

Key = tuple[str, str, str, str, str]  # setup, device, storage, configuration, operation


@dataclass
class Result:
    setup: str
    device: str
    storage: str
    configuration: str
    operation: str
    summary: stats.Summary  # every successful request after warm-up, all runs pooled
    run_means: list[float]  # per run
    requests: int  # answered after warm-up, failed included
    failed: int  # after warm-up, left out of the statistics
    warmup_failed: int
    missing: int  # issued but never answered
    error_kinds: Counter
    outside: stats.Summary  # response time - service time
    service: stats.Summary
    outside_run_means: list[float]
    driver_us_per_request: list[float]  # per run (summary.json), for every operation of the run
    warmup: list[int]  # per run
    incomplete_runs: int
    in_flight: int = 0  # sent but unanswered when a --soak run's clock stopped: counted apart, not failed

    @property
    def key(self) -> Key:
        return (self.setup, self.device, self.storage, self.configuration, self.operation)

    @property
    def runs(self) -> int:
        return len(self.run_means)

    @property
    def failed_share(self) -> float:
        return self.failed / self.requests if self.requests else math.nan

    def ci(self, level: float = LEVEL) -> tuple[float, float]:
        """The paper's interval: t interval over every request."""
        return self.summary.ci(level)

    def run_interval(self, level: float = LEVEL) -> stats.Interval:
        """The interval over the runs' means (positive: stats.mean_interval); none below MIN_RUNS runs."""
        return stats.mean_interval(self.run_means, level, positive=True)

    def run_ci(self, level: float = LEVEL) -> tuple[float, float]:
        return self.run_interval(level).bounds

    def outside_run_ci(self, level: float = LEVEL) -> tuple[float, float]:
        return stats.mean_interval(self.outside_run_means, level, positive=False).bounds


def analyse(runs: Iterable[Run]) -> list[Result]:
    """One Result per (setup, device, storage, configuration, operation), every run of it pooled."""
    groups: dict[Key, list[tuple[Run, OperationRun]]] = {}
    for run in runs:
        for op, o in run.operations.items():
            groups.setdefault((run.setup, run.device, run.storage, run.configuration, op), []).append((run, o))
    out = []
    for key, items in groups.items():
        ors = [o for _, o in items]
        steady = np.concatenate([o.steady for o in ors])
        outside = np.concatenate([o.outside for o in ors])
        service = np.concatenate([o.service for o in ors])
        kinds: Counter = Counter()
        for o in ors:
            kinds.update(o.error_kinds)
        out.append(
            Result(
                *key,
                stats.summary(steady),
                [float(o.steady.mean()) for o in ors if o.steady.size],
                sum(o.requests for o in ors),
                sum(o.failed for o in ors),
                sum(o.warmup_failed for o in ors),
                sum(max(o.missing, 0) for o in ors),
                kinds,
                stats.summary(outside),
                stats.summary(service),
                [float(o.outside.mean()) for o in ors if o.outside.size],
                [r.driver_us_per_request for r, _ in items if r.driver_us_per_request is not None],
                [o.warmup for o in ors],
                sum(1 for r, _ in items if r.complete is False),
                sum(o.in_flight for o in ors),
            )
        )
    return sorted(out, key=_order)


def deployment(label: str) -> str | None:
    """The deployment a label names: "native" or "docker" when every role of the label runs so
    ("web-native_db-native", "docker"), "mixed" when web server and database differ, None when it names neither."""
    s = label.lower()
    roles = dict(re.findall(r"(web|db)[-_:=]?(native|docker)", s))
    if roles:
        values = set(roles.values())
        return values.pop() if len(values) == 1 else "mixed"
    found = set(re.findall(r"native|docker", s))
    return found.pop() if len(found) == 1 else None


def paper_config(label: str, paper: Mapping[str, int] | None = None) -> int | None:
    """The paper's configuration (1)-(6) a label stands for: `paper` first, else all native (1), all Docker (2)."""
    if paper is not None and label in paper:
        if paper[label] not in PAPER_CONFIGS:
            raise PirexError(f"{label}: the paper has configurations 1-6, not {paper[label]!r}")
        return paper[label]
    return {"native": 1, "docker": 2}.get(deployment(label) or "")


def _op_order(op: str) -> tuple[int, str]:
    names = list(OPERATIONS)
    return (names.index(op) if op in names else len(names), op)


def _config_order(label: str) -> tuple[int, str]:
    d = deployment(label)
    return ({"native": 0, "docker": 1, "mixed": 2}.get(d or "", 3), label)


def _order(r: Result) -> tuple:
    return (r.setup, _op_order(r.operation), r.device, r.storage, _config_order(r.configuration))


# --- tables --------------------------------------------------------------------------------------------------------


SEP = " ; "  # between an interval's bounds, as Table 3 prints them


def config_text(r: Result) -> str:
    return ", ".join(p for p in (r.device, r.storage, r.configuration) if p)


def _paper_line(r: Result, paper: Mapping[str, int] | None) -> int | None:
    k = paper_config(r.configuration, paper)
    if k is None or r.operation not in OPERATIONS:
        return None
    return list(OPERATIONS).index(r.operation) * len(PAPER_CONFIGS) + k


def _failed_text(r: Result) -> str:
    return f"{r.failed:,} ({100 * r.failed_share:.2f} %)" if r.requests else "0"


def _record(r: Result, level: float, paper: Mapping[str, int] | None) -> dict:
    (lo, hi), (rlo, rhi) = r.ci(level), r.run_ci(level)
    pct = round(100 * level)
    return {
        "operation": r.operation,
        "device": r.device,
        "storage": r.storage,
        "configuration": r.configuration,
        "paper_line": _paper_line(r, paper),
        "n": r.summary.n,
        "runs": r.runs,
        "mean_us": r.summary.mean,
        f"ci{pct}_low": lo,
        f"ci{pct}_high": hi,
        "sd_us": r.summary.sd,
        f"runs_ci{pct}_low": rlo,
        f"runs_ci{pct}_high": rhi,
        "median_us": r.summary.median,
        "min_us": r.summary.min,
        "max_us": r.summary.max,
        "requests": r.requests,
        "failed": r.failed,
        "failed_share": r.failed_share,
        "warmup_failed": r.warmup_failed,
        "missing": r.missing,
        "warmup": ";".join(str(w) for w in r.warmup),
    }


def _notes(results: Sequence[Result], level: float) -> list[str]:
    pct = f"{100 * level:g} %"
    notes = [
        f"{pct} CI: t interval over every request after warm-up, as the paper computed it (n requests); "
        f"{pct} CI (runs): over the runs' means (independent runs), the one to judge differences by; none "
        f"below {stats.MIN_RUNS} runs."
    ]
    if flying := sum(r.in_flight for r in results):
        notes.append(f"In flight when the soak's clock stopped: {flying:,} requests, neither failures nor timed.")
    warmups = sorted({w for r in results for w in r.warmup})
    notes.append(
        f"Warm-up: the first {', '.join(f'{w:,}' for w in warmups)} requests of each operation and run "
        "(seq in issue order) are left out."
    )
    for r in results:
        where = f"{OPERATIONS.get(r.operation, r.operation)}, {config_text(r)}"
        if r.failed:
            kinds = ", ".join(f"{k} x{n:,}" for k, n in r.error_kinds.most_common(3))
            notes.append(
                f"{where}: {r.failed:,} of {r.requests:,} requests failed after warm-up ({kinds}), "
                f"{r.warmup_failed:,} during warm-up; left out of the statistics."
            )
        elif r.warmup_failed:
            notes.append(f"{where}: {r.warmup_failed:,} requests failed during warm-up, none after it.")
        if r.missing:
            notes.append(f"{where}: {r.missing:,} requests issued but never answered.")
    incomplete = {config_text(r): r.incomplete_runs for r in results if r.incomplete_runs}
    for cfg, n in sorted(incomplete.items()):
        notes.append(f"{cfg}: {n} run(s) stopped before every request was answered (summary.json complete: false).")
    return notes


def table3(
    results: Sequence[Result], level: float = LEVEL, paper: Mapping[str, int] | None = None, digits: int = 1
) -> Table:
    """ICPE'18 Table 3: rows operation x configuration: mean, 99 % CI, σ in µs, as the paper; then n, runs, the 99 % CI
    over runs, failed requests and the paper's line the row corresponds to."""
    pct = f"{100 * level:g} %"
    columns = [
        "Line #",
        "Operation",
        "Configuration",
        "Mean Response Time (µs)",
        f"{pct} CI Resp. Time (µs)",
        "σ (µs)",
        "n",
        "Runs",
        f"{pct} CI over runs (µs)",
        "Failed",
        "ICPE'18",
    ]
    rows, records = [], []
    for i, r in enumerate(sorted(results, key=_order), start=1):
        line = _paper_line(r, paper)
        rows.append(
            [
                str(i),
                OPERATIONS.get(r.operation, r.operation),
                config_text(r),
                T.number(r.summary.mean, digits),
                T.bounds(r.ci(level), digits, SEP),
                T.number(r.summary.sd, digits),
                f"{r.summary.n:,}",
                str(r.runs),
                T.bounds(r.run_ci(level), digits, SEP)
                if r.run_interval(level).has_interval
                else r.run_interval(level).reason,
                _failed_text(r),
                "" if line is None else f"line {line}",
            ]
        )
        records.append(_record(r, level, paper))
    return Table(
        "Results of the RESTful service experiment, response times in µs (ICPE'18 Table 3 layout)",
        columns,
        rows,
        records,
        _notes(results, level),
        label_columns=3,
    )


def overhead_table(results: Sequence[Result], level: float = LEVEL, digits: int = 1) -> Table:
    """Per configuration and operation: the response time, the service's own time (X-Service-Time-Ns) and the rest
    (network, HTTP, the driver's client code), means over the successful requests after warm-up that carry a
    service time; the driver's CPU time per request from summary.json."""
    pct = f"{100 * level:g} %"
    columns = [
        "Operation",
        "Configuration",
        "n (with service time)",
        "Response time (µs)",
        "Service time (µs)",
        "Outside the service (µs)",
        f"{pct} CI",
        "σ",
        f"{pct} CI over runs",
        "Driver CPU (µs/request)",
    ]
    rows, records = [], []
    for r in sorted(results, key=_order):
        o = r.outside
        lo, hi = o.ci(level)
        rlo, rhi = r.outside_run_ci(level)
        cpu = float(np.mean(r.driver_us_per_request)) if r.driver_us_per_request else math.nan
        response = r.service.mean + o.mean if o.n else math.nan  # of the same requests
        rows.append(
            [
                OPERATIONS.get(r.operation, r.operation),
                config_text(r),
                f"{o.n:,} of {r.summary.n:,}",
                T.number(response, digits),
                T.number(r.service.mean, digits),
                T.number(o.mean, digits),
                T.bounds((lo, hi), digits, SEP),
                T.number(o.sd, digits),
                T.bounds((rlo, rhi), digits, SEP),
                T.number(cpu, digits),
            ]
        )
        records.append(
            {
                "operation": r.operation,
                "device": r.device,
                "storage": r.storage,
                "configuration": r.configuration,
                "n_service": o.n,
                "n": r.summary.n,
                "response_us": response,
                "service_us": r.service.mean,
                "outside_us": o.mean,
                "outside_ci_low": lo,
                "outside_ci_high": hi,
                "outside_sd_us": o.sd,
                "outside_runs_ci_low": rlo,
                "outside_runs_ci_high": rhi,
                "driver_cpu_us_per_request": cpu,
            }
        )
    notes = [
        "Outside the service = response_time_us - service_time_ns / 1000 per request: network, HTTP and the "
        "driver's client code; the driver's CPU time (summary.json) is for all operations of a run "
        "together."
    ]
    return Table("Time outside the service, µs per request", columns, rows, records, notes, label_columns=2)


# --- the analysis interface (pirex/analysis/interface.py) --------------------------------------

VIEWS: dict[str, str] = {}


def run_dirs(root: Path) -> list[Path]:
    """What `pirex table jpa-rest` finds under results/jpa-rest: bundles (of `pirex run`, `pirex compose`,
    `pirex swarm`) and run folders (a requests.csv, no manifest: a split run's, whose hosts write it one command
    each, and a plain `docker compose up`'s)."""
    return [f.parent for pattern in ("*/manifest.json", "*/requests.csv") for f in root.glob(pattern)]


def _runs(paths: Sequence[Path]) -> list[Run]:
    runs = []
    for p in paths:
        if (p / "manifest.json").exists():
            runs += runs_from_bundle(p)
            continue
        record = next((p / f for f in ("machine.json", "machine-driver.json") if (p / f).exists()), None)
        before = read_machine(record) if record else None
        runs += runs_from_dirs(
            {placement(p) or "docker": p},
            device=device_of(before) if before else "",
            storage=storage_of(before) if before else "",
        )
    return runs


def tables(bundles: Sequence[Path], view: str | None = None) -> list[NamedTable]:
    """Table 3 and the time outside the service, one of each per setup; the memory over each run."""
    by_setup: dict[str, list[Result]] = {}
    for r in analyse(_runs(bundles)):
        by_setup.setdefault(r.setup, []).append(r)
    out = per_setup("table3", by_setup, table3) + per_setup("overhead", by_setup, overhead_table)
    trends = [t for p in bundles if (p / "manifest.json").exists() for t in memory_trends(p)]
    if trends:
        out.append(NamedTable("memory", memory_table(trends)))
    return out


def figures(bundles: Sequence[Path], out: Path, view: str | None = None) -> list[Path]:
    return []


def run_values(bundles: Sequence[Path], view: str | None = None) -> list[RunValue]:
    """One value per step (repetition) and operation: the mean response time after warm-up (µs)."""
    out = []
    for r in _runs(bundles):
        for op, o in r.operations.items():
            if o.steady.size:
                out.append(
                    RunValue(
                        "jpa-rest",
                        r.run,
                        r.device,
                        r.configuration,
                        r.repetition,
                        op,
                        float(o.steady.mean()),
                        "µs",
                        setup=r.setup,
                    )
                )
    return out
