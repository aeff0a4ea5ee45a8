"""bench-resolution's noisy neighbour (--noisy-neighbour ON,OFF[,WORKERS]): a CPU hog beside the runs, busy and
idle in phases on the wall clock, in its own process group, stopped on every exit path of the benchmark and
ending of itself when the benchmark is gone (even by SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from pirex.core import proc

HOG = """
import os, sys, time
on, off, workers, parent, start = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(
    sys.argv[5]
)
for _ in range(workers - 1):  # one busy process per worker, all in this process group
    if os.fork() == 0:
        break
def parent_alive():
    try:
        os.kill(parent, 0)
        return True
    except ProcessLookupError:
        return False
while parent_alive():  # the benchmark gone (even by SIGKILL), the hog goes too, within a tenth of a second
    phase = (time.time() - start) % (on + off)
    if phase < on:  # busy until the phase ends
        end = time.monotonic() + min(on - phase, 0.1)
        while time.monotonic() < end:
            pass
    else:
        time.sleep(min(on + off - phase, 0.1))
"""


def phases(text: str) -> tuple[float, float, int]:
    """--noisy-neighbour ON,OFF[,WORKERS]: seconds busy, seconds idle, busy processes (default: one per CPU)."""
    parts = [x.strip() for x in text.split(",")]
    try:
        on, off = float(parts[0]), float(parts[1])
        workers = int(parts[2]) if len(parts) > 2 else os.cpu_count() or 1
    except (ValueError, IndexError):
        raise SystemExit(f"bench-resolution: --noisy-neighbour {text!r}: expected ON,OFF[,WORKERS], e.g. 5,5") from None
    if len(parts) > 3 or on <= 0 or off < 0 or workers < 1:
        raise SystemExit(f"bench-resolution: --noisy-neighbour {text!r}: ON > 0 s, OFF >= 0 s, WORKERS >= 1")
    return on, off, workers


class NoisyNeighbour:
    """A CPU hog that is busy `on` seconds and idle `off` seconds in turn (phases on the wall clock, so that all its
    workers switch together), started and stopped by the benchmark itself: its own process group, stopped on
    every exit path (the with block's end, an exception, Ctrl-C; SIGTERM to the benchmark is turned into SystemExit
    while it runs, and the hog's workers end of themselves when the benchmark is gone)."""

    def __init__(self, on: float, off: float, workers: int):
        self.on, self.off, self.workers = on, off, workers
        self.proc: subprocess.Popen | None = None
        self._sigterm = None

    def text(self) -> str:
        plural = "es" if self.workers > 1 else ""
        return f"a CPU hog of {self.workers} process{plural}, {self.on:g} s busy, {self.off:g} s idle"

    def __enter__(self) -> NoisyNeighbour:
        self._sigterm = signal.signal(signal.SIGTERM, _terminate)
        args = [str(x) for x in (self.on, self.off, self.workers, os.getpid(), time.time())]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOG, *args], start_new_session=True, stdin=subprocess.DEVNULL
        )
        print(f"bench-resolution: noisy neighbour: {self.text()} (process group {self.proc.pid})", flush=True)
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM to the whole group, SIGKILL after 5 s; the leader reaped; the SIGTERM handler restored."""
        try:
            if self.proc is not None:
                proc.terminate_group(self.proc, 5, kill_grace=30)
        finally:
            if self._sigterm is not None:
                signal.signal(signal.SIGTERM, self._sigterm)
                self._sigterm = None


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def neighbour(args) -> contextlib.AbstractContextManager:
    """The noisy neighbour --noisy-neighbour asks for, or nothing."""
    return NoisyNeighbour(*phases(args.noisy_neighbour)) if args.noisy_neighbour else contextlib.nullcontext()
