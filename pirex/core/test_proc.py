import os
import signal
import subprocess
import sys
import time

import pytest

from pirex.core import proc
from pirex.core.errors import PirexError


@pytest.mark.parametrize("stamp_lines", [False, True])
def test_timeout_kills_the_whole_process_group(tmp_path, stamp_lines):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(PirexError, match="did not finish within 1 s"):
        proc.run(["sh", "-c", f"echo up; sleep 60 & echo $! > {pidfile}; wait"], timeout=1, stamp_lines=stamp_lines)
    child = int(pidfile.read_text())
    for _ in range(50):  # the group was killed and reaped; allow the kernel a moment
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the background child of a timed-out command survived")


def test_stamped_lines_are_stamped_as_they_arrive():
    """Each stdout line's moment is when it arrived, not when the command ended: the 1.5 s sleep lies between two
    lines, and even a reader thread that started late keeps half of it. The output is what communicate() gives, a
    last line without a newline included."""
    script = "echo one; echo warn >&2; sleep 1.5; printf 'two\\nthree'; exit 3"
    plain = proc.run(["sh", "-c", script], timeout=30, check=False)
    before = time.time()
    r = proc.run(["sh", "-c", script], timeout=30, check=False, stamp_lines=True)
    assert (r.stdout, r.stderr, r.returncode) == (plain.stdout, plain.stderr, 3) == ("one\ntwo\nthree", "warn\n", 3)
    assert plain.stdout_times is None and len(r.stdout_times) == 3
    first, second, third = r.stdout_times
    assert before <= first and second - first >= 0.75 and third >= second


def test_stamped_output_that_is_not_utf8_is_kept_escaped_and_read_to_the_end():
    """A benchmark's stray byte neither loses its output nor kills it with SIGPIPE (the reader keeps reading)."""
    r = proc.run(["sh", "-c", "printf 'ok\\n\\377\\n'; printf '\\376' >&2; seq 100000"], timeout=60, stamp_lines=True)
    lines = r.stdout.split("\n")
    assert r.returncode == 0 and lines[:3] == ["ok", "\\xff", "1"] and lines[-2] == "100000"
    assert len(r.stdout_times) == 100002 and r.stderr == "\\xfe"


def test_failure_message_and_gist():
    with pytest.raises(proc.CommandFailed) as e:
        proc.run(
            [
                "sh",
                "-c",
                "echo progress; echo 'E: Failed to fetch x  Mirror sync in progress?' >&2; "
                "echo 'E: mmdebstrap failed to run' >&2; exit 25",
            ],
            timeout=10,
            what="mmdebstrap",
        )
    assert "mmdebstrap failed (exit 25)" in str(e.value)
    assert proc.gist(e.value) == "E: Failed to fetch x  Mirror sync in progress?"


def test_retry_retries_then_gives_up():
    calls = []

    def flaky():
        calls.append(1)
        return proc.run(["sh", "-c", "exit 1" if len(calls) < 3 else "echo ok"], timeout=10)

    assert proc.retry(flaky, attempts=3, what="flaky", delay=0).stdout.strip() == "ok"
    calls.clear()
    with pytest.raises(proc.CommandFailed):
        proc.retry(lambda: proc.run(["false"], timeout=10), attempts=2, what="false", delay=0)


def test_retry_stops_on_errors_not_worth_retrying():
    calls = []

    def fails():
        calls.append(1)
        raise PirexError("needs a login")

    with pytest.raises(PirexError):
        proc.retry(fails, attempts=3, what="x", delay=0, retry_if=lambda e: isinstance(e, proc.CommandFailed))
    assert len(calls) == 1


def _started(script: str) -> subprocess.Popen:
    """A shell script leading its own process group, as pirex starts its background processes."""
    return subprocess.Popen(["sh", "-c", script], start_new_session=True, stdin=subprocess.DEVNULL)


def _members_up(p: subprocess.Popen, n: int) -> list[int]:
    return proc.wait_until(lambda: m if len(m := proc.group_members(p.pid)) >= n else None, 10, 0.05)


def test_terminate_group_ends_every_member_and_reaps_the_leader():
    p = _started("sleep 60 & sleep 60 & wait")
    members = _members_up(p, 3)
    assert proc.group_alive(p.pid) and p.pid in members
    assert proc.terminate_group(p, grace=10)
    assert p.returncode == -signal.SIGTERM and proc.group_members(p.pid) == [] and not proc.group_alive(p.pid)
    assert proc.terminate_group(p, grace=10) and proc.terminate_group(p.pid)  # gone already: nothing sent, no error


def _ready(code: str) -> subprocess.Popen:
    """A Python process leading its own group that prints "ready" once its signal handlers are set: no test
    signals it before that, however slow the machine (a shell's trap gives no such moment to wait for)."""
    p = subprocess.Popen(
        [sys.executable, "-c", f"import signal, sys, time\n{code}\nprint('ready', flush=True)\ntime.sleep(60)"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline() == "ready\n"
    return p


def test_terminate_group_kills_what_ignores_sigterm_after_the_grace():
    """A group whose member ignores SIGTERM is still there after the grace, and SIGKILL ends it."""
    p = _ready("signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    t = time.monotonic()
    assert proc.terminate_group(p, grace=2, kill_grace=10)
    assert time.monotonic() - t >= 2  # it waited the whole grace: a lower bound, which no load can break
    assert p.returncode == -signal.SIGKILL and proc.group_members(p.pid) == []


def test_terminate_group_can_ask_first_with_sigint_and_takes_a_bare_pgid():
    # the process exits 3 on SIGINT and would die with -15 on SIGTERM: its code shows which signal came first
    p = _ready("signal.signal(signal.SIGINT, lambda *_: sys.exit(3))")
    assert proc.terminate_group(p, grace=60, first=signal.SIGINT)
    assert p.returncode == 3
    q = _started("sleep 60")
    _members_up(q, 1)
    assert proc.terminate_group(q.pid, grace=10) and proc.group_members(q.pid) == []  # reaped through waitpid


def test_wait_until_returns_the_value_or_the_last_one_or_raises():
    p = _started("sleep 0.3; exit 7")
    assert proc.wait_until(p.poll, 10, 0.05) == 7  # the predicate's own value
    calls = []
    t = time.monotonic()
    assert proc.wait_until(lambda: calls.append(1), 0.3, 0.1) is None  # false to the end: its last value
    # at once, every 0.1 s, once more at the deadline: at least twice however late the sleeps wake, never more often
    assert time.monotonic() - t >= 0.3 and 2 <= len(calls) <= 6
    before = len(calls)
    assert proc.wait_until(lambda: calls.append(1), 0, 1) is None and len(calls) == before + 1  # once, no sleep
    with pytest.raises(PirexError, match="^the thing did not come up within 0 s$"):
        proc.wait_until(lambda: False, 0, 0.1, "the thing did not come up within 0 s")

    def exited():
        raise PirexError("it exited")

    with pytest.raises(PirexError, match="it exited"):
        proc.wait_until(exited, 10, 0.1)


def test_a_signal_while_the_process_starts_ends_its_group_and_is_raised_once_it_exists(monkeypatch):
    """SIGTERM arriving inside Popen (after the fork: the duet stopping a side as its step starts) used to raise
    there, before anyone held the new group, which then ran on; start() holds it until the process exists."""
    made = []

    class PopenThenSigterm(subprocess.Popen):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            made.append(self)
            os.kill(os.getpid(), signal.SIGTERM)  # delivered now: the handler would run on the next bytecode

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        monkeypatch.setattr(subprocess, "Popen", PopenThenSigterm)
        with pytest.raises(SystemExit) as e:
            proc.start(["sleep", "60"], stdin=subprocess.DEVNULL)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert e.value.code == 128 + signal.SIGTERM and signal.getsignal(signal.SIGTERM) is previous
    assert made[0].returncode == -signal.SIGTERM and not proc.group_alive(made[0].pid)  # ended and reaped


def test_start_leads_a_group_of_its_own_and_leaves_the_handlers_as_they_were():
    before = {s: signal.getsignal(s) for s in proc.INTERRUPTS}
    p = proc.start(["sleep", "60"], stdin=subprocess.DEVNULL)
    assert os.getpgid(p.pid) == p.pid and {s: signal.getsignal(s) for s in proc.INTERRUPTS} == before
    assert proc.terminate_group(p, grace=10)


def test_a_signal_while_a_start_fails_is_not_lost(monkeypatch):
    """A stop that arrives while Popen fails (no such program) is raised, not swallowed with the error: a caller
    that catches OSError would otherwise go on as if nobody had asked it to stop."""

    class FailsAfterTheSignal(subprocess.Popen):
        def __init__(self, *args, **kw):
            os.kill(os.getpid(), signal.SIGTERM)
            raise FileNotFoundError("no-such-program")

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        monkeypatch.setattr(subprocess, "Popen", FailsAfterTheSignal)
        with pytest.raises(SystemExit):
            proc.start(["no-such-program"])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert signal.getsignal(signal.SIGTERM) is previous


def test_groups_stop_ends_what_runs_in_other_threads_and_refuses_what_comes_after():
    """proc.Groups: a command another thread runs is ended by stop() (its group gone, run() returns its signal),
    and every run() after stop() is refused before anything starts (a retry or a fallback source cannot start a
    new mmdebstrap once the rootfs makers are stopping)."""
    import threading

    groups, results, pgids = proc.Groups(), [], []
    worker = threading.Thread(target=lambda: results.append(groups.run(["sleep", "60"], timeout=120, check=False)))
    worker.start()
    proc.wait_until(lambda: groups._running, timeout=30, interval=0.05, what="the sleep never started")
    pgids.extend(groups._running)
    groups.stop(grace=10)
    worker.join(30)
    assert not worker.is_alive() and results[0].returncode == -signal.SIGTERM, results
    assert not proc.group_alive(pgids[0])
    with pytest.raises(PirexError, match="not started, the commands are being stopped"):
        groups.run(["true"], timeout=10)


def test_ending_a_group_another_thread_waits_on_leaves_its_exit_status_to_that_wait():
    """Groups.stop ends groups whose Popen another thread waits on: reaping the leader here made that wait find no
    child, and Python's subprocess then reports exit status 0: a killed command read as a success (it failed CI once
    under load, as test_groups_stop_ends_what_runs_in_other_threads_and_refuses_what_comes_after). reap=False leaves
    the status to the Popen's own wait."""
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert proc.terminate_group(p.pid, grace=10, reap=False)
    assert p.wait(timeout=30) == -signal.SIGTERM
    reaped = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert proc.terminate_group(reaped.pid, grace=10)  # reaps it: what Groups must not do
    assert reaped.wait(timeout=30) == 0  # the status was taken: Popen finds no child and says 0


def test_a_process_that_ends_while_its_threads_are_listed_has_none(tmp_path):
    """The walk over /proc met a process in the middle of exiting: its task folder went between reading its stat and
    listing task/ (pathlib's glob raised FileNotFoundError, and a resume failed to remove what a killed run left)."""
    (tmp_path / "7" / "task" / "7").mkdir(parents=True)
    (tmp_path / "7" / "task" / "7" / "stat").write_text("7 (java) S 1 7 7 0")
    (tmp_path / "8").mkdir()  # its task folder already gone
    assert proc.threads(7, tmp_path) == [tmp_path / "7" / "task" / "7"] and proc.a_thread_runs(7, tmp_path)
    assert proc.threads(8, tmp_path) == [] and not proc.a_thread_runs(8, tmp_path)
    assert proc.threads(9, tmp_path) == [] and not proc.a_thread_runs(9, tmp_path)
    (tmp_path / "7" / "task" / "7" / "stat").write_text("7 (java) Z 1 7 7 0")
    assert not proc.a_thread_runs(7, tmp_path)
