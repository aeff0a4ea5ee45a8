"""What a role of a deployment samples while each step runs, by kind: experiment.yaml names the
kinds (deployment.roles.<role>.samples), and each kind here writes <role>-<file>.csv into the
step's folder. A new kind is one class with `file`, a constructor (pid, url, path) and the
context-manager protocol, added to KINDS.

  spring-actuator-memory  a Spring Boot service (jpa-rest): the RSS of its process tree and the
                          JVM heap from actuator's metrics endpoint, every 5 s (a soak run shows
                          them flat or growing; ICPE'18 Experiment 3)
"""

from __future__ import annotations

import csv
import json
import threading
import time
import urllib.request
from pathlib import Path

from pirex.core import proc

SAMPLE_S = 5  # every this many seconds


def tree_rss_bytes(pid: int, procfs: Path = Path("/proc")) -> int | None:
    """Resident memory of a process and all its descendants (a container's init and the JVM)."""
    pids, i, total = [pid], 0, 0
    while i < len(pids):
        for task in proc.threads(pids[i], procfs):
            try:
                pids += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
        i += 1
    found = False
    for p in pids:
        try:
            for line in (procfs / str(p) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    found = True
        except OSError:
            continue  # gone meanwhile
    return total if found else None


def spring_actuator_heap(url: str) -> tuple[float | None, float | None]:
    """Heap used and committed, bytes, from Spring Boot actuator's metrics endpoint."""
    out = []
    for metric in ("jvm.memory.used", "jvm.memory.committed"):
        try:
            with urllib.request.urlopen(f"{url}/actuator/metrics/{metric}?tag=area:heap", timeout=5) as r:
                out.append(float(json.loads(r.read())["measurements"][0]["value"]))
        except (OSError, ValueError, KeyError, IndexError):
            out.append(None)
    return out[0], out[1]


class SpringActuatorMemory:
    """The service's RSS (process tree; none when it runs on another machine, pid None) and JVM heap
    every `every` seconds, in a thread of its own, until the context ends."""

    file = "memory"
    columns = ("t_s", "rss_bytes", "heap_used_bytes", "heap_committed_bytes")

    def __init__(self, pid: int | None, url: str, path: Path, every: float = SAMPLE_S):
        self.pid, self.url, self.path, self.every = pid, url, path, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pirex-memory-sampler")

    def __enter__(self) -> SpringActuatorMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        start = time.monotonic()
        with open(self.path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            while True:
                rss = tree_rss_bytes(self.pid) if self.pid else None
                used, committed = spring_actuator_heap(self.url)
                w.writerow([round(time.monotonic() - start, 1), rss, used, committed])
                f.flush()
                if self._stop.wait(self.every):
                    return


KINDS = {"spring-actuator-memory": SpringActuatorMemory}  # one per experiment.SAMPLER_KINDS (test_deployment.py)


def sampler(kind: str, role: str, pid: int | None, url: str, out: Path):
    """The sampler of a kind for a role, writing <out>/<role>-<file>.csv; enter it to start."""
    cls = KINDS[kind]
    return cls(pid, url, out / f"{role}-{cls.file}.csv")
