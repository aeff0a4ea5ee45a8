"""The test suite's time as a checked budget (issue 40): `make test` loads this plugin (`-p tests.timebudget`).

At the end of the run it prints the time per test module (setup + call + teardown of its tests, slowest first) and
the session's wall time, and fails the run when that wall time passes the ceiling: PIREX_TEST_CEILING_MIN minutes
(default 75, for the 2-vCPU machine of `.ci/run`, whose hard limit is 90 minutes with the host set-up included: on a
cold machine the set-up before the suite (Docker's packages, buildkitd built from its Go module, the virtualenv) takes
up to about 10 minutes, and the suite's own minutes vary by several between runs of the same commit; see
docs/development.md). A suite past 75 minutes fails before CI's 90 would throw the run away unexplained; growth is then
seen while there is still room.

`make test` runs two sessions, the unit tests in parallel (pytest-xdist) and then the Docker tests one at a time: it
sets PIREX_TEST_STARTED (seconds since the epoch) once, and each session's wall time counts from then, so that the
second checks the ceiling against the whole suite. Under xdist the plugin runs in the controller only (it receives
every worker's reports).

The check changes only the exit status, after every test has run: the report still lists every outcome (and -ra's
short summary), and a run that also has failing tests keeps their exit status."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import dataclass, field

import pytest

# `-p tests.timebudget` imports this before pytest reads the conftest files (which import most of pirex): the
# session's clock starts here, so that their import is counted too, unless make test started it earlier.
IMPORTED = time.time()
CEILING_ENV = "PIREX_TEST_CEILING_MIN"
STARTED_ENV = "PIREX_TEST_STARTED"
DEFAULT_CEILING_MIN = 75.0
# `.ci/run`'s hard limit, host set-up included: a ceiling above it could pass a suite that CI has already killed
CI_LIMIT_MIN = 90.0


def module_of(nodeid: str) -> str:
    """The test module of a test id (`pirex/test_cli.py::test_x[1]` -> `pirex/test_cli.py`)."""
    return nodeid.split("::", 1)[0]


def ceiling_minutes(environ: dict[str, str] | os._Environ = os.environ) -> float:
    """The ceiling in minutes from PIREX_TEST_CEILING_MIN (default 75); a bad value is an error, not ignored."""
    text = environ.get(CEILING_ENV, "").strip()
    if not text:
        return DEFAULT_CEILING_MIN
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"{CEILING_ENV}={text!r}: a number of minutes, e.g. 75") from None
    if not 0 < value <= CI_LIMIT_MIN:
        raise pytest.UsageError(
            f"{CEILING_ENV}={text!r}: more than 0 minutes and at most CI's limit of {CI_LIMIT_MIN:g} minutes"
        )
    return value


def started(environ: dict[str, str] | os._Environ = os.environ, imported: float | None = None) -> float:
    """When the suite started (seconds since the epoch): PIREX_TEST_STARTED when make test set it, else when this
    module was imported; a bad value is an error, not ignored."""
    text = environ.get(STARTED_ENV, "").strip()
    if not text:
        return IMPORTED if imported is None else imported
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"{STARTED_ENV}={text!r}: seconds since the epoch (date +%s)") from None
    if not 0 < value <= time.time():
        raise pytest.UsageError(f"{STARTED_ENV}={text!r}: a time since the epoch, not in the future")
    return value


@dataclass
class Budget:
    """Seconds per test module, summed from the reports of every phase (setup, call, teardown)."""

    ceiling_min: float = DEFAULT_CEILING_MIN
    workers: int = 1  # tests that ran at once (pytest-xdist's workers): their sum spreads over that many
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tests: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, report) -> None:
        """A pytest report (TestReport: nodeid, when, duration)."""
        module = module_of(report.nodeid)
        self.seconds[module] += report.duration
        self.tests[module].add(report.nodeid)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def rows(self) -> list[tuple[str, float, int]]:
        """(module, seconds, tests), slowest first (ties by name, so the order is stable)."""
        return sorted(
            ((m, s, len(self.tests[m])) for m, s in self.seconds.items()),
            key=lambda r: (-r[1], r[0]),
        )

    def least_wall(self, wall_seconds: float) -> float:
        """The session's wall time, or the tests' sum over the workers if that is larger (it never is, but a fake
        clock must not hide the tests' own time)."""
        return max(wall_seconds, self.total / self.workers)

    def over(self, wall_seconds: float) -> bool:
        """Whether the session's time passes the ceiling."""
        return self.least_wall(wall_seconds) > self.ceiling_min * 60

    def lines(self, wall_seconds: float) -> list[str]:
        rows = self.rows()
        width = max((len(m) for m, _, _ in rows), default=10)
        out = [f"{'module':<{width}}  {'seconds':>9}  {'share':>6}  tests"]
        total = self.total
        for module, seconds, n in rows:
            share = seconds / total if total else 0.0
            out.append(f"{module:<{width}}  {seconds:9.1f}  {share:6.1%}  {n}")
        out.append(f"{'sum of the modules':<{width}}  {total:9.1f}")
        out.append(
            f"suite wall time {wall_seconds:.1f} s = {wall_seconds / 60:.1f} min (from {STARTED_ENV} or this "
            f"session's start; conftest imports and collection included); ceiling {self.ceiling_min:g} min "
            f"({CEILING_ENV})"
        )
        if self.over(wall_seconds):
            out.append(
                f"TIME BUDGET EXCEEDED: {self.least_wall(wall_seconds) / 60:.1f} min > {self.ceiling_min:g} min: "
                "the run fails; make a slow test cheaper (the modules above, slowest first) or raise the "
                "ceiling with a reason in docs/development.md"
            )
        return out


class Plugin:
    def __init__(self, budget: Budget, start: float, clock=time.time):
        self.budget = budget
        self.clock = clock
        self.start = start
        self.wall = 0.0

    def pytest_runtest_logreport(self, report) -> None:
        self.budget.add(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        self.wall = self.clock() - self.start
        # Only a run that would otherwise pass turns into a failure: failing tests keep their status (1), an
        # interrupted or broken run its own.
        if self.budget.over(self.wall) and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        terminalreporter.write_sep("=", "time per test module (setup + call + teardown)")
        for line in self.budget.lines(self.wall):
            terminalreporter.write_line(line, red=line.startswith("TIME BUDGET"), bold=line.startswith("TIME BUDGET"))


def pytest_configure(config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller gets its reports and keeps the budget
        return
    workers = config.getoption("numprocesses", None) or 1  # -n N (xdist), when it is installed and given
    if not isinstance(workers, int):  # -n auto or logical
        workers = os.cpu_count() or 1
    budget = Budget(ceiling_minutes(), workers=max(1, workers))
    config.pluginmanager.register(Plugin(budget, started()), "pirex-timebudget")
