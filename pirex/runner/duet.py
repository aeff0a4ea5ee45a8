"""The duet design (Bulej, Horky, Tuma, Farquet, Prokopec: "Duet Benchmarking: Improving Measurement Accuracy in the
Cloud", ICPE 2020): the two variants of a repetition run at the same moment, each on its own half of the CPUs, so that
both meet the same phases of a shared machine, and a repetition's ratio pairs two simultaneous runs. The halves are
swapped every repetition, so that a CPU's own bias (an interrupt it serves, a noisier hyperthread) cancels over pairs
of repetitions.

  halves(cpus, siblings)     two equal disjoint CPU sets: whole cores each where the cores allow
  steps(variants, n, halves, first)
                             the plan: per repetition both variants, each with its CPU list, swapped every repetition;
                             a later bundle of one plan (a precision run's second stage) continues the alternation
  (core/cpuset.py reads back which half each step of a bundle ran on: half_of, step_halves)
  run_together(jobs)         every job in a forked child, released at once; waits for all; when one fails or the run
                             is interrupted, the others are stopped (SIGTERM: their workloads and containers go on
                             their own exit paths) and every child is reaped

Each side runs as a forked child of the runner (multiprocessing's fork context), not a thread: a child can be
stopped (SIGTERM unwinds it like Ctrl-C, through proc.run's and run_step's cleanup), dies with the runner
(PR_SET_PDEATHSIG), and can have its own mount namespace. Two native sides of one image (an A/A duet) share one
exported root: each gets its own mount namespace with its own /tmp and /work, so that their mounts (/results) and
files (JMH's /tmp/jmh.lock, B5's files) stay apart; a native side against a docker side runs exactly as in the
interleaved design."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing.context
import multiprocessing.process
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from pirex.core import cpuset, proc
from pirex.core.errors import PirexError

log = logging.getLogger(__name__)

CPU = Path("/sys/devices/system/cpu")
STOP_GRACE = 180  # seconds a stopped side has to unwind (docker rm -f, unmounts) before SIGKILL
CLONE_NEWNS = 0x00020000  # unshare(2): a mount namespace of its own
PR_SET_PDEATHSIG = 1  # prctl(2): a signal when the parent dies
GO = b"g"
FORK = multiprocessing.context.ForkContext()  # a side is a forked child (get_context of fork, named by its class)


# --- the CPUs --------------------------------------------------------------------------------------------------------


def siblings(cpu_root: Path = CPU) -> dict[int, frozenset[int]]:
    """CPU -> the hardware threads of its core (topology/thread_siblings_list); {} where the kernel does not say."""

    out = {}
    for f in cpu_root.glob("cpu[0-9]*/topology/thread_siblings_list"):
        try:
            out[int(f.parent.parent.name[3:])] = frozenset(cpuset.parse_cpus(f.read_text().strip()))
        except (OSError, ValueError):
            continue
    return out


@dataclass(frozen=True)
class Halves:
    """The two CPU sets of a duet, and what the split had to give up."""

    a: str  # CPU lists
    b: str
    unused: tuple[int, ...] = ()  # a CPU left out to keep the halves equal (an odd count)
    shared_cores: bool = False  # hardware threads of one core on both sides (a 2-vCPU VM of one core)

    def describe(self, first: int = 0) -> dict:
        """run.json's duet record; first: where this bundle's repetition 0 stands in its plan's alternation (a
        second stage's, recorded only when not 0)."""
        return {
            "halves": [self.a, self.b],
            "swapped": "every repetition",
            "unused_cpus": list(self.unused),
            "shared_cores": self.shared_cores,
            **({"alternation_from": first} if first else {}),
        }


def halves(cpus: Iterable[int], sibling_map: Mapping[int, frozenset[int]] | None = None, whose: str = "") -> Halves:
    """Two equal, disjoint halves of `cpus`: whole cores on each side where the cores (hardware-thread siblings)
    split evenly, else by CPU number (lower half, upper half). Both sides get as many CPUs, so both JVMs see the
    same count (availableProcessors follows taskset and --cpuset-cpus). whose: where the CPUs come from, for the
    refusal (default: the CPUs this process may use)."""
    allowed = sorted(set(cpus))
    if len(allowed) < 2:
        raise PirexError(
            f"--design duet runs each variant on CPUs of its own, and {whose or 'this machine lets pirex use'} "
            f"only CPU {cpuset.cpu_list(allowed) or 'none'}: it needs at least two (run the interleaved design instead)"
        )
    sibling_map = sibling_map or {}
    cores = sorted({frozenset(sibling_map.get(c, {c})) & set(allowed) for c in allowed}, key=lambda g: (min(g), len(g)))
    if len(cores) >= 2 and len({len(g) for g in cores}) == 1:
        k = len(cores) // 2
        a = sorted(c for g in cores[:k] for c in g)
        b = sorted(c for g in cores[k : 2 * k] for c in g)
    else:
        n = len(allowed) // 2
        a, b = allowed[:n], allowed[n : 2 * n]
    shared = any(sibling_map.get(c, {c}) & set(b) for c in a)
    return Halves(
        cpuset.cpu_list(a), cpuset.cpu_list(b), tuple(c for c in allowed if c not in a and c not in b), shared
    )


def steps(variants: tuple[str, ...], repetitions: int, split: Halves, first: int = 0) -> list[dict]:
    """Per repetition both variants, each with its CPU list; the first variant on half a in even repetitions and on
    half b in odd ones (and the second the other way round), so that each variant spends as many repetitions on
    each half, give or take one. first: the repetitions of the same plan already run in earlier bundles (a
    pilot's, for a second stage): the alternation goes on from there instead of starting again on half a, so that
    the halves stay balanced over the whole plan (a pilot of 5 runs a, b, a, b, a; its second stage b, a, ...):
    with as many repetitions on each half the half's effect cancels from the plain mean, and the duet's model
    (pirex/analysis/stats.py duet_ratio) estimates the ratio with the smallest standard error."""
    if first < 0:
        raise PirexError(f"a duet's alternation cannot start at repetition {first}: expected 0 or more")
    if len(variants) != 2:
        raise PirexError(
            f"--design duet runs two variants at once, not {len(variants)} ({', '.join(variants)}): give two, e.g. "
            "--variants native,docker, or native,native-aa for the design's A/A noise floor"
        )
    out = []
    for r in range(repetitions):
        one, other = (split.a, split.b) if (first + r) % 2 == 0 else (split.b, split.a)
        out += [
            {"variant": variants[0], "repetition": r, "cpus": one},
            {"variant": variants[1], "repetition": r, "cpus": other},
        ]
    return out


# --- the schedule ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one side's job returned (value), or how it ended (error: the exception's type and message), with the
    moments its job started and ended (seconds since the epoch, as the child saw them)."""

    value: Any = None
    error: str | None = None
    message: str = ""
    start: float | None = None
    end: float | None = None

    @property
    def interrupted(self) -> bool:
        return self.error in ("KeyboardInterrupt", "SystemExit", "Stopped")


def run_together(
    jobs: Mapping[str, Callable[[], Any]],
    failed: Callable[[Any], bool] = lambda value: False,
    grace: float = STOP_GRACE,
    prepare: Mapping[str, Callable[[], None]] | None = None,
) -> dict[str, Outcome]:
    """Run every job at once, each in a forked child, released together once all are forked; wait for all. When a
    job raises or its value is `failed`, the other children are stopped at once (SIGTERM, SIGKILL after `grace`
    seconds): a repetition's steps count together or not at all. An interruption of the runner (Ctrl-C, SIGTERM
    through the CLI's handler) stops them the same way and is raised again once every child is reaped.
    `prepare[name]` runs in that child before the release (e.g. its own mount namespace).

    The children are multiprocessing's, of the fork context (the jobs are closures: nothing is pickled on the way
    in); each has a pipe its release comes on and one its Outcome goes back on."""
    prepare = prepare or {}
    sides: dict[str, _Side] = {}
    outcomes: dict[str, Outcome] = {}
    try:
        for name, job in jobs.items():
            go_r, go_w = FORK.Pipe(duplex=False)
            out_r, out_w = FORK.Pipe(duplex=False)
            theirs = [go_w, out_r, *(c for side in sides.values() for c in (side.go, side.out))]  # the runner's ends
            child = FORK.Process(target=_child, args=(job, prepare.get(name), go_r, out_w, theirs), name=f"duet {name}")
            try:
                child.start()
            except BaseException:
                go_w.close()
                out_r.close()
                raise
            finally:
                go_r.close()  # the child's ends: EOF comes once the child has gone
                out_w.close()
            sides[name] = _Side(child, go_w, out_r)
        for side in sides.values():  # every side starts now
            with contextlib.suppress(OSError):  # a side whose preparation failed has gone already
                side.go.send_bytes(GO)
        _collect(sides, outcomes, failed)
    finally:
        for side in sides.values():
            side.go.close()  # a child not yet released reads EOF and ends without running its job
        _stop(sides, outcomes, grace)
    return outcomes


@dataclass(frozen=True)
class _Side:
    process: multiprocessing.process.BaseProcess
    go: Connection  # the release: GO, or EOF when the runner goes first
    out: Connection  # the Outcome, once the job has ended


def _collect(sides: dict[str, _Side], outcomes: dict[str, Outcome], failed: Callable[[Any], bool]) -> None:
    """Each child's outcome as it ends; the first failure stops the others."""
    waiting = {side.out: name for name, side in sides.items()}
    while waiting:
        for conn in wait(list(waiting)):
            name = waiting.pop(conn)
            o = _receive(conn)
            sides[name].process.join()  # reaped before it counts as ended: _stop reaps one interrupted here
            outcomes[name] = o
            if o.error or failed(o.value):
                log.info("duet: %s %s; stopping the other side", name, f"raised {o.error}" if o.error else "failed")
                for other, side in sides.items():
                    if other not in outcomes:
                        side.process.terminate()


def _stop(sides: dict[str, _Side], outcomes: dict[str, Outcome], grace: float) -> None:
    """Every child still running stopped and reaped (the runner interrupted, or a fault in the schedule)."""
    running = {name: side.process for name, side in sides.items() if name not in outcomes}
    for child in running.values():
        child.terminate()
    deadline = time.monotonic() + grace
    for name, child in running.items():
        child.join(max(deadline - time.monotonic(), 0))
        if child.exitcode is None:
            log.warning("duet: %s (pid %d) did not stop within %.0f s: killed", name, child.pid, grace)
            child.kill()
            child.join()
    for side in sides.values():
        side.out.close()
        with contextlib.suppress(ValueError):  # still running: only an interruption of this very wait leaves one
            side.process.close()


def _receive(conn: Connection) -> Outcome:
    try:
        return conn.recv()
    except Exception:  # a child killed before it could say (SIGKILL): nothing to unpickle
        return Outcome(error="Stopped", message="the side ended without a result (killed)")


def _child(
    job: Callable[[], Any],
    prepare: Callable[[], None] | None,
    go: Connection,
    out: Connection,
    theirs: Sequence[Connection],
) -> None:
    """A side: wait for the release, run the job, send its outcome, exit (os._exit: nothing of the parent's
    atexit, pytest's or click's runs here, nor multiprocessing's own ending). `theirs`: the runner's ends of the
    pipes, copied by the fork and closed here, so that the release's pipe ends (EOF) when the runner closes it."""
    for c in theirs:
        c.close()
    try:
        _stop_once()
        _die_with_parent()
        if prepare:
            prepare()
        try:
            released = go.recv_bytes() == GO
        except EOFError:  # the runner went before the release
            released = False
        if not released:
            os._exit(3)
        go.close()
        start = time.time()
        try:
            value = job()
            outcome = Outcome(value=value, start=start, end=time.time())
        except BaseException as e:
            outcome = Outcome(error=type(e).__name__, message=str(e), start=start, end=time.time())
        out.send(outcome)  # pickled whole before a byte is written: a value that cannot be pickled fails here
    except BaseException as e:  # the preparation, or a value that cannot be pickled
        with contextlib.suppress(BaseException):
            out.send(Outcome(error=type(e).__name__, message=str(e)))
    finally:
        os._exit(0)


def _stop_once() -> None:
    """The first SIGTERM or SIGINT unwinds the side (SystemExit, KeyboardInterrupt); later ones are ignored, so
    that its cleanup (docker rm -f, unmounting) is not cut short by a second signal."""

    def handler(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    """SIGTERM to this side when the runner dies (even by SIGKILL), so that no workload outlives it."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        raise SystemExit(143)


def own_mounts(binds: Mapping[Path, Path]) -> None:
    """In a side (prepare of run_together): a mount namespace of its own, whose mounts no other process sees and
    which go with it, and host directories bound over paths (e.g. a private /tmp over the exported root's)."""
    if _libc().unshare(CLONE_NEWNS) != 0:
        raise PirexError(f"cannot give the duet's side a mount namespace of its own: {os.strerror(ctypes.get_errno())}")
    proc.run(["mount", "--make-rprivate", "/"], timeout=30)
    for src, dest in binds.items():
        Path(src).mkdir(parents=True, exist_ok=True)
        Path(src).chmod(0o1777)
        proc.run(["mount", "--bind", src, dest], timeout=30)
