#!/usr/bin/env python3
"""Benchmark of the jpa-rest load driver: is Locust the bottleneck at the paper's 16 users?

Starts PostgreSQL (loaded with --customers rows), the jpa-rest service with its port published on
127.0.0.1, then for each endpoint drives it, one after the other, with

  (a) pirex's driver: the locust image (Locust, locustfile.py), --users 16, on the host network,
      --requests-per-operation N of that one operation; its summary.json gives the request rate,
      its own CPU time and the service's time per request (X-Service-Time-Ns);
  (b) wrk (C, epoll; Debian's package) with 16 connections on 2 threads for the time (a) took,
      GET/POST as the driver sends them (a Lua script draws the customer ids).

and prints requests/s of both, the driver's CPU (utilisation of one core, µs per request) and
wrk's, and the time each spends outside the service. A driver that is not saturated leaves the
rate to the service: both rates come out close. On one machine the driver's CPU is taken from
the service (2 vCPU here): the paper's driver ran on a laptop of its own.

    .venv/bin/python scripts/bench_driver.py [--tag TAG] [--requests 20000] [--customers 10000] [--min-seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pirex.core import proc  # noqa: E402
from pirex.core.errors import PirexError  # noqa: E402
from pirex.core.paths import git_version  # noqa: E402
from pirex.images import localregistry, publish  # noqa: E402
from pirex.images import platforms as plat  # noqa: E402
from pirex.runner import deployment  # noqa: E402

PREFIX = "pirex-bench-driver"
USERS = 16
ENDPOINTS = {  # operation -> (method, path template); {id} drawn uniformly from 1..customers
    "create-random": ("POST", "/customers/random"),
    "read": ("GET", "/customers/{id}"),
    "change-name": ("PUT", "/customers/{id}/name"),  # with a JSON body of new names, as the locustfile sends
}
WRK_LUA = """
math.randomseed(1)
local customers = {customers}
local names = {{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald"}}
local headers = {{["Content-Type"] = "application/json"}}
request = function()
  local path = string.gsub("{path}", "{{id}}", tostring(math.random(1, customers)))
  if "{method}" == "PUT" then
    local body = string.format('{{"firstName":"%s","lastName":"%s"}}', names[math.random(#names)],
                               names[math.random(#names)])
    return wrk.format("PUT", path, headers, body)
  end
  return wrk.format("{method}", path)
end
"""


def wrk_run(url: str, method: str, path: str, customers: int, seconds: int, workdir: Path) -> dict:
    script = workdir / f"wrk-{method.lower()}.lua"
    script.write_text(WRK_LUA.format(customers=customers, path=path, method=method))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = proc.run(
        ["wrk", "-t", "2", "-c", str(USERS), "-d", f"{seconds}s", "--latency", "-s", script, url], timeout=seconds + 120
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", r.stdout).group(1))
    total = int(re.search(r"(\d+) requests in", r.stdout).group(1))
    m = re.search(r"Latency\s+([\d.]+)(us|ms|s)\b", r.stdout)
    mean_us = float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    return {
        "requests_per_s": rate,
        "requests": total,
        "mean_us": mean_us,
        "cpu_s": cpu,
        "cpu_us_per_request": cpu / total * 1e6,
        "cpu_utilisation": cpu / seconds,
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def locust_run(image: str, url: str, operation: str, requests: int, customers: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o777)
    proc.run(
        [
            "docker",
            "run",
            "--rm",
            "--name",
            f"{PREFIX}-driver",
            "--network",
            "host",
            "-v",
            f"{out}:/results",
            image,
            "pirex-locust",
            "--host",
            url,
            "--users",
            str(USERS),
            "--requests-per-operation",
            str(requests),
            "--customers",
            str(customers),
            "--operations",
            operation,
            "--output",
            "/results",
        ],
        timeout=3600,
    )
    s = json.loads((out / "summary.json").read_text())
    p = s["per_operation"][operation]
    return {
        "requests_per_s": s["requests_per_s"],
        "requests": s["requests"],
        "seconds": s["seconds"],
        "mean_us": p["mean_response_time_us"],
        "service_us": p["mean_service_time_us"],
        "cpu_utilisation": s["driver_cpu"]["utilisation"],
        "cpu_us_per_request": s["driver_cpu"]["us_per_request"],
        "failures": s["failures"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", default=None, help="image tag (default: git describe of the checkout)")
    ap.add_argument("--requests", type=int, default=20000, help="requests per endpoint for the driver")
    ap.add_argument("--customers", type=int, default=10000)
    ap.add_argument("--min-seconds", type=int, default=10, help="wrk's shortest run, however quick Locust's was")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("bench_driver: needs wrk (apt-get install wrk; `make bench-driver` does)")
    tag = args.tag or git_version()[0]
    with localregistry.local_registry():
        refs = {n: publish.pull_local(n, tag, plat.host()) for n in ("postgres", "jpa-rest", "locust")}
    net, db, web, loader = f"{PREFIX}-net", f"{PREFIX}-db", f"{PREFIX}-web", f"{PREFIX}-loader"
    port = deployment.free_port()
    url = f"http://127.0.0.1:{port}"
    cred = ["-e", "POSTGRES_PASSWORD=pirex", "-e", "POSTGRES_USER=pirex", "-e", "POSTGRES_DB=pirex"]
    db_env = ["-e", "DB_URL=jdbc:postgresql://db:5432/pirex", "-e", "DB_USER=pirex", "-e", "DB_PASSWORD=pirex"]
    cleanup = [["docker", "rm", "-f", f"{PREFIX}-driver", loader, web, db], ["docker", "network", "rm", net]]
    for c in cleanup:
        proc.run(c, timeout=120, check=False)
    work = Path(tempfile.mkdtemp(prefix="pirex-bench-driver-"))
    try:
        proc.run(["docker", "network", "create", net], timeout=60)
        proc.run(
            ["docker", "run", "-d", "--name", db, "--network", net, "--network-alias", "db", *cred, refs["postgres"]],
            timeout=120,
        )
        proc.run(
            [
                "docker",
                "run",
                "--rm",
                "--name",
                loader,
                "--network",
                net,
                *db_env,
                refs["jpa-rest"],
                "pirex-load-customers",
                "--rows",
                str(args.customers),
            ],
            timeout=3600,
        )
        proc.run(
            [
                "docker",
                "run",
                "-d",
                "--name",
                web,
                "--network",
                net,
                "-p",
                f"127.0.0.1:{port}:8080",
                *db_env,
                refs["jpa-rest"],
            ],
            timeout=120,
        )
        if (last := deployment.wait_healthy(url + "/actuator/health", 300)) is not None:
            raise PirexError(f"the service did not come up: {last}")
        results = {}
        for op, (method, path) in ENDPOINTS.items():
            loc = locust_run(refs["locust"], url, op, args.requests, args.customers, work / op)
            seconds = max(args.min_seconds, round(loc["seconds"]))
            results[op] = {"locust": loc, "wrk": wrk_run(url, method, path, args.customers, seconds, work)}
        print_results(results, args)
        return 0
    finally:
        for c in cleanup:
            proc.run(c, timeout=120, check=False)
        shutil.rmtree(work, ignore_errors=True)


def print_results(results: dict, args) -> None:
    cpus = os.cpu_count()
    print(
        f"\n{USERS} users/connections, {args.requests:,} requests per endpoint for Locust, wrk for as long; "
        f"{cpus} CPUs shared by driver, service and database\n"
    )
    print(
        "| Endpoint | Driver | Requests/s | Mean response (µs) | Service (µs) | Outside the service (µs) "
        "| Driver CPU (% of one core) | Driver CPU (µs/request) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for op, r in results.items():
        loc, w = r["locust"], r["wrk"]
        print(
            f"| {op} | Locust | {loc['requests_per_s']:,.0f} | {loc['mean_us']:,.0f} | {loc['service_us']:,.0f} | "
            f"{loc['mean_us'] - loc['service_us']:,.0f} | {100 * loc['cpu_utilisation']:.0f} | "
            f"{loc['cpu_us_per_request']:,.0f} |"
        )
        print(
            f"| {op} | wrk | {w['requests_per_s']:,.0f} | {w['mean_us']:,.0f} | | | "
            f"{100 * w['cpu_utilisation']:.0f} | {w['cpu_us_per_request']:,.0f} |"
        )
    print()
    for op, r in results.items():
        loc, w = r["locust"], r["wrk"]
        print(
            f"{op}: Locust reaches {loc['requests_per_s'] / w['requests_per_s']:.2f} of wrk's rate; "
            f"Locust's CPU {100 * loc['cpu_utilisation']:.0f} % of one core "
            f"({'saturated' if loc['cpu_utilisation'] > 0.9 else 'not saturated'}); failures {loc['failures']}, "
            f"wrk non-2xx {w['non_2xx']}"
        )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PirexError as e:
        sys.exit(f"bench_driver: {e}")
