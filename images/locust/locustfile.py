"""Load driver of ICPE'18 Experiment 3 (the JPA REST service), for Locust.

A closed workload, as in the paper: a fixed number of users (16, "a pool of 16 threads") send
requests back to back, without think time, until each of the three operations has been invoked a
fixed total number of times (paper: 200,000 each; the first 100,000 of each are warm-up):

  create-random  POST /customers/random       a random customer, without the database
  read           GET  /customers/{id}          a customer by number, id uniform in 1..customers
  change-name    PUT  /customers/{id}/name     new first and last name, id uniform in 1..customers

--mix sequential (the default) runs the operations one after the other in --operations order,
with a barrier between them: every request of one operation has completed before the next
operation starts. This is our reading of the paper: its "create random customer" took 11 ms with
16 threads on a Pi 3, which is the queue of a CPU-bound web server, not the 1-2 ms it would take
between slow database operations. --mix interleaved cycles through the operations instead.

Every request is written to <output>/requests.csv, one row each (Locust's own statistics are
aggregates: percentiles from rounded buckets, no per-request values), in the order the requests
completed:

  operation            create-random | read | change-name
  seq                  1..N per operation, in the order the requests were issued; analysis drops
                       seq <= warm-up (the paper: the first half)
  user                 0..users-1, the user (connection) that sent it
  start_ns             wall clock at the start, ns since the epoch (time.time_ns())
  response_time_us     time.perf_counter_ns() around the client call, in microseconds with ns
                       resolution: sending, waiting, reading the whole body, and Locust's client
                       code around it (URL and header building, the response wrapper)
  locust_response_time_us  Locust's own response_time for the same request (perf_counter after
                       the headers are built until the body is read): a few microseconds less.
                       Neither includes Locust's statistics bookkeeping (the request event fires
                       after both clocks stopped).
  status               HTTP status, 0 when no response came (connection refused, timeout)
  ok                   1 for a 2xx response, else 0
  service_time_ns      the service's own handling time (response header X-Service-Time-Ns), empty
                       without it; response_time - service_time is network + HTTP + driver
  error                why the request failed, empty when ok; "in-flight: ..." (ok 0) for a request
                       still waiting for its response when --run-time ran out: not a failure, but not
                       a response time either (summary.json counts them as in_flight, apart)

<output>/summary.json has the parameters, versions, counts, failures, means (all requests and
after warm-up), the request rate and the driver's own CPU time. The run stops by itself when
every request has been answered. The exit code is 0 even when requests failed (they are recorded:
the database-restart test expects them), unless --fail-on-error; 3 when the run ended before all
requests were answered (e.g. --run-time), 2 on an error in this file.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import random
import resource
import sys
import time
from collections import deque

import gevent
import locust
from gevent.event import Event
from locust import FastHttpUser, constant, events, task

SERVICE_TIME_HEADER = "X-Service-Time-Ns"
OPERATIONS = ("create-random", "read", "change-name")
CSV_COLUMNS = (
    "operation",
    "seq",
    "user",
    "start_ns",
    "response_time_us",
    "locust_response_time_us",
    "status",
    "ok",
    "service_time_ns",
    "error",
)
FIRST_NAMES = ("Anna", "Ben", "Clara", "David", "Emma", "Felix", "Greta", "Hannah", "Ida", "Jonas")
LAST_NAMES = ("Bauer", "Becker", "Fischer", "Hoffmann", "Koch", "Meyer", "Richter", "Weber")
# A request cut short because the run's time ran out (--run-time): its own kind, never a failure.
IN_FLIGHT = "in-flight: the run's time ran out before the response came"


@events.init_command_line_parser.add_listener
def _arguments(parser):
    group = parser.add_argument_group("pirex (ICPE'18 Experiment 3)")
    # no defaults: pirex-locust passes the profile's numbers (experiments/jpa-rest/experiment.yaml)
    group.add_argument("--requests-per-operation", type=int, default=None, help="invocations of each operation")
    group.add_argument(
        "--warmup-per-operation",
        type=int,
        default=-1,
        help="the first invocations of each operation that summary.json leaves out (default: half)",
    )
    group.add_argument("--customers", type=int, default=None, help="ids are drawn uniformly from 1..customers")
    group.add_argument("--operations", default=",".join(OPERATIONS), help="comma-separated, in this order")
    group.add_argument("--mix", choices=("sequential", "interleaved"), default="sequential", help="see the top")
    group.add_argument("--seed", type=int, default=1, help="seeds the ids and names of each user")
    group.add_argument("--output", default=".", help="folder for requests.csv and summary.json")
    group.add_argument(
        "--fail-on-error",
        action="store_true",
        default=False,
        help="exit 1 when any request failed (default: 0, failures are recorded)",
    )


class Plan:
    """Hands out (operation, seq) to the users until every operation has its total.

    gevent runs the users in one thread and switches only when a greenlet blocks, so the
    counters need no lock.
    """

    def __init__(self, operations, per_operation, mix):
        self.operations = list(operations)
        self.per_operation = per_operation
        self.mix = mix
        self.issued = dict.fromkeys(self.operations, 0)
        self.completed = dict.fromkeys(self.operations, 0)
        self.phase = 0
        self.phase_done = [Event() for _ in self.operations]
        self.turn = 0
        self.total = per_operation * len(self.operations)
        self.all_completed = 0
        self.finished = Event()

    def next(self):
        """The next request as (operation, seq), or None when all are issued."""
        if self.mix == "interleaved":
            for _ in self.operations:
                op = self.operations[self.turn % len(self.operations)]
                self.turn += 1
                if self.issued[op] < self.per_operation:
                    self.issued[op] += 1
                    return op, self.issued[op]
            return None
        while self.phase < len(self.operations):
            op = self.operations[self.phase]
            if self.issued[op] < self.per_operation:
                self.issued[op] += 1
                return op, self.issued[op]
            # Barrier: wait until every request of this operation has been answered.
            self.phase_done[self.phase].wait()
            if self.phase < len(self.operations) and self.operations[self.phase] == op:
                self.phase += 1
        return None

    def complete(self, op):
        self.completed[op] += 1
        self.all_completed += 1
        if self.completed[op] == self.per_operation:
            self.phase_done[self.operations.index(op)].set()
        if self.all_completed == self.total:
            self.finished.set()


class Recorder:
    """requests.csv (every request) and summary.json (what the run was)."""

    def __init__(self, environment, options, operations):
        self.environment = environment
        self.options = options
        self.operations = operations
        os.makedirs(options.output, exist_ok=True)
        self.path = os.path.join(options.output, "requests.csv")
        self.file = open(self.path, "w", newline="", buffering=1 << 20)  # noqa: SIM115
        self.writer = csv.writer(self.file, lineterminator="\n")
        self.writer.writerow(CSV_COLUMNS)
        self.count = dict.fromkeys(operations, 0)
        self.failures = dict.fromkeys(operations, 0)
        self.in_flight = dict.fromkeys(operations, 0)
        self.sum_us = dict.fromkeys(operations, 0.0)
        self.steady_count = dict.fromkeys(operations, 0)
        self.steady_sum_us = dict.fromkeys(operations, 0.0)
        self.service_sum_ns = dict.fromkeys(operations, 0)
        self.service_count = dict.fromkeys(operations, 0)
        self.errors = deque(maxlen=5)
        self.warmup = (
            options.warmup_per_operation if options.warmup_per_operation >= 0 else options.requests_per_operation // 2
        )
        self.started_wall = time.time()
        self.started_perf = time.perf_counter()
        self.started_cpu = resource.getrusage(resource.RUSAGE_SELF)
        self.closed = False

    def record(self, op, seq, user, start_ns, elapsed_ns, locust_ms, status, ok, service, error):
        response_us = elapsed_ns / 1000
        self.writer.writerow(
            (
                op,
                seq,
                user,
                start_ns,
                f"{response_us:.3f}",
                "" if locust_ms is None else f"{locust_ms * 1000:.3f}",
                status,
                1 if ok else 0,
                "" if service is None else service,
                error,
            )
        )
        if error == IN_FLIGHT:  # the row is written (its kind in error), but counted apart: no failure, no time
            self.in_flight[op] += 1
            return
        self.count[op] += 1
        self.sum_us[op] += response_us
        if seq > self.warmup:
            self.steady_count[op] += 1
            self.steady_sum_us[op] += response_us
        if service is not None:
            self.service_sum_ns[op] += service
            self.service_count[op] += 1
        if not ok:
            self.failures[op] += 1
            self.errors.append(f"{op} #{seq}: {error}")

    def close(self, plan):
        if self.closed:
            return self.summary
        self.closed = True
        self.file.close()
        wall = time.perf_counter() - self.started_perf
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        user_s = cpu.ru_utime - self.started_cpu.ru_utime
        sys_s = cpu.ru_stime - self.started_cpu.ru_stime
        total = sum(self.count.values())

        def mean(s, n):
            return round(s / n, 3) if n else None

        o = self.options
        self.summary = {
            "format": "pirex-locust-summary/1",
            "complete": plan.all_completed == plan.total,
            "host": self.environment.host,
            "users": o.num_users,
            "requests_per_operation": o.requests_per_operation,
            "warmup_per_operation": self.warmup,
            "customers": o.customers,
            "operations": self.operations,
            "mix": o.mix,
            "seed": o.seed,
            "started": self.started_wall,
            "seconds": round(wall, 3),
            "requests": total,
            "requests_per_s": round(total / wall, 1) if wall > 0 else None,
            "failures": sum(self.failures.values()),
            "in_flight": sum(self.in_flight.values()),
            "driver_cpu": {
                "user_s": round(user_s, 3),
                "system_s": round(sys_s, 3),
                "utilisation": round((user_s + sys_s) / wall, 3) if wall > 0 else None,
                "us_per_request": round((user_s + sys_s) * 1e6 / total, 1) if total else None,
            },
            "per_operation": {
                op: {
                    "requests": self.count[op],
                    "failures": self.failures[op],
                    "in_flight": self.in_flight[op],
                    "mean_response_time_us": mean(self.sum_us[op], self.count[op]),
                    "steady_requests": self.steady_count[op],
                    "steady_mean_response_time_us": mean(self.steady_sum_us[op], self.steady_count[op]),
                    "mean_service_time_us": mean(self.service_sum_ns[op] / 1000, self.service_count[op]),
                }
                for op in self.operations
            },
            "last_errors": list(self.errors),
            "versions": {
                "locust": locust.__version__,
                "gevent": gevent.__version__,
                "python": platform.python_version(),
                "machine": platform.machine(),
            },
        }
        with open(os.path.join(o.output, "summary.json"), "w") as f:
            json.dump(self.summary, f, indent=2)
            f.write("\n")
        return self.summary


STATE = {}


def _operations(o):
    return [op.strip() for op in o.operations.split(",") if op.strip()]


@events.init.add_listener
def _check(environment, **_kwargs):
    o = environment.parsed_options
    if o is None:  # Locust used as a library
        return
    unknown = [op for op in _operations(o) if op not in OPERATIONS]
    if unknown or not _operations(o):
        sys.exit(f"pirex-locust: unknown operations {unknown}; choose from {list(OPERATIONS)}")
    if o.requests_per_operation is None or o.customers is None:
        sys.exit(
            "pirex-locust: --requests-per-operation and --customers are required (pirex-locust gives the profile's)"
        )
    if o.requests_per_operation < 1 or o.customers < 1:
        sys.exit("pirex-locust: --requests-per-operation and --customers must be at least 1")


@events.test_start.add_listener
def _start(environment, **_kwargs):
    o = environment.parsed_options
    operations = _operations(o)
    STATE["plan"] = Plan(operations, o.requests_per_operation, o.mix)
    STATE["recorder"] = Recorder(environment, o, operations)
    STATE["users"] = 0
    gevent.spawn(_quit_when_finished, environment, STATE["plan"])


def _quit_when_finished(environment, plan):
    plan.finished.wait()
    environment.runner.quit()


@events.test_stop.add_listener
def _stop(environment, **_kwargs):
    if "recorder" in STATE:
        s = STATE["recorder"].close(STATE["plan"])
        print(_report(s), file=sys.stderr, flush=True)


@events.quitting.add_listener
def _exit_code(environment, **_kwargs):
    runner = environment.runner
    if STATE.get("driver_errors") or (runner is not None and runner.exceptions):
        environment.process_exit_code = 2
        return
    if "recorder" not in STATE:
        return
    s = STATE["recorder"].close(STATE["plan"])
    if not s["complete"]:
        environment.process_exit_code = 3
    elif s["failures"] and environment.parsed_options.fail_on_error:
        environment.process_exit_code = 1
    else:
        environment.process_exit_code = 0


def _report(s):
    lines = [
        f"pirex-locust: {s['requests']} requests in {s['seconds']} s "
        f"({s['requests_per_s']} requests/s), {s['failures']} failed, {s['in_flight']} in flight at the end, "
        f"driver CPU {s['driver_cpu']['utilisation']} ({s['driver_cpu']['us_per_request']} us/request)"
        + ("" if s["complete"] else ", INCOMPLETE")
    ]
    for op, p in s["per_operation"].items():
        lines.append(
            f"pirex-locust: {op}: mean {p['mean_response_time_us']} us, after warm-up "
            f"{p['steady_mean_response_time_us']} us, service {p['mean_service_time_us']} us, "
            f"{p['failures']} failed"
        )
    lines += [f"pirex-locust: {e}" for e in s["last_errors"]]
    return "\n".join(lines)


def _error_text(response, status, exception):
    """One line: the status and the start of the error body (the service's reason), or the
    exception when no response came."""
    if status >= 300:
        text = f"HTTP {status}"
        try:
            body = response.text
        except Exception:  # an undecodable body is no reason to lose the row
            body = None
        if body:
            text += f": {body[:200]}"
    elif exception is not None:
        text = f"{type(exception).__name__}: {exception}"
    else:
        text = f"HTTP {status}"
    return " ".join(text.split())


class CustomerUser(FastHttpUser):
    """One of the driver's users: one keep-alive connection, requests back to back."""

    wait_time = constant(0)

    def on_start(self):
        self.index = STATE["users"]
        STATE["users"] += 1
        o = self.environment.parsed_options
        self.random = random.Random(f"{o.seed}/{self.index}")
        self.customers = o.customers

    def _request(self, op):
        if op == "create-random":
            return "POST", "/customers/random", None
        customer = self.random.randint(1, self.customers)
        if op == "read":
            return "GET", f"/customers/{customer}", None
        name = {
            "firstName": self.random.choice(FIRST_NAMES),
            "lastName": self.random.choice(LAST_NAMES),
        }
        return "PUT", f"/customers/{customer}/name", name

    @task
    def invoke(self):
        plan = STATE["plan"]
        item = plan.next()
        if item is None:
            # Nothing left to send: wait for the end (the run quits when every request has been
            # answered). Stopping the user here instead makes Locust log errors at the quit.
            plan.finished.wait()
            return
        op, seq = item
        # Whatever happens, the request is recorded and counted: a request that is never
        # completed would keep the run from ending.
        start_ns, elapsed, locust_ms, status, ok, service = time.time_ns(), 0, None, 0, False, None
        error = "driver: stopped before the response came"
        try:
            method, path, body = self._request(op)
            start_ns = time.time_ns()
            t0 = time.perf_counter_ns()
            with self.client.request(method, path, name=op, json=body, catch_response=True) as r:
                elapsed = time.perf_counter_ns() - t0
                locust_ms = r.request_meta.get("response_time")
                exception = r.request_meta.get("exception")
                status = getattr(r, "status_code", 0) or 0
                ok = exception is None and 200 <= status < 300
                headers = getattr(r, "headers", None)
                header = headers.get(SERVICE_TIME_HEADER) if headers else None
                service = int(header) if header and header.isdigit() else None
                error = "" if ok else _error_text(r, status, exception)
                if ok:
                    r.success()
                else:
                    r.failure(error)
        except gevent.GreenletExit:  # the user stopped with the request in flight (--run-time ran out)
            error = IN_FLIGHT
            raise
        except Exception as e:  # a bug here, not a failed request: recorded, and exit code 2
            ok, error = False, f"driver: {type(e).__name__}: {e}"
            STATE["driver_errors"] = STATE.get("driver_errors", 0) + 1
            raise
        finally:
            STATE["recorder"].record(op, seq, self.index, start_ns, elapsed, locust_ms, status, ok, service, error)
            plan.complete(op)
