"""forkbench (images/fork), built with the host's C compiler through its own Makefile and run here:
argument validation, the CSV layout, honest unsupported counters, skipped sizes, and an
unprivileged run. Behaviour only; no timing assertions."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pirex.core.paths import REPO

SRC = REPO / "images" / "fork"
NOBODY = 65534
ONLINE = os.sysconf("SC_NPROCESSORS_ONLN")
HEADER = ["mode", "migration", "size_mb", "repetition", "process", "cpu_before", "cpu_after", "wall_ns"]
COUNTERS = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-misses",
    "L1-dcache-loads",
    "L1-dcache-load-misses",
    "LLC-loads",
    "LLC-load-misses",
]


@pytest.fixture(scope="module")
def forkbench(tmp_path_factory) -> Path:
    if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))):
        problem = "no C compiler or make on PATH (apt-get install gcc make; make host-setup does)"
        if os.environ.get("PIREX_REQUIRE_DOCKER") == "1":  # CI: every check runs, none passes as skipped
            pytest.fail(problem)
        pytest.skip(problem)
    build = tmp_path_factory.mktemp("forkbench")
    shutil.copy(SRC / "Makefile", build / "Makefile")
    shutil.copytree(SRC / "src", build / "src")
    cc = shutil.which("cc") or shutil.which("gcc")
    r = subprocess.run(["make", "-C", str(build), f"CC={cc}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return build / "forkbench"


def run(binary: Path, *args: str, out: Path | None = None, user: list[str] | None = None):
    cmd = [*(user or []), str(binary), *args]
    if out is not None:
        cmd += ["--output", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def meta(d: Path) -> dict[str, str]:
    return {r["key"]: r["value"] for r in read(d / "meta.csv")}


def check_counters(d: Path, added: tuple[str, ...] = ()) -> dict[str, dict]:
    """Each counter is supported (a number in every row) or unsupported (a reason, empty cells; never 0)."""
    rows, counters = read(d / "fork.csv"), read(d / "counters.csv")
    assert [c["counter"] for c in counters] == COUNTERS + list(added)
    for c in counters:
        cells = [r[c["counter"]] for r in rows]
        if c["supported"] == "true":
            assert c["kernel_included"] in ("true", "false"), c
            assert all(v.isdigit() for v in cells), c
        else:
            assert c["supported"] == "false" and c["reason"] and c["kernel_included"] == "", c
            assert all(v == "" for v in cells), c
    return {c["counter"]: c for c in counters}


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--mode", "parallel"], "unknown mode 'parallel'"),
        (["--sizes", "1,abc"], "'abc' is not a size in MB"),
        (["--sizes", "0"], "'0' is not a size in MB"),
        (["--sizes", "-8"], "'-8' is not a size in MB"),
        (["--sizes", "8,,16"], "not a comma-separated list"),
        (["--repetitions", "0"], "--repetitions: '0'"),
        (["--repetitions", "-3"], "--repetitions: '-3'"),
        (["--repetitions", "x"], "--repetitions: 'x'"),
        (["--cores", str(ONLINE)], f"core {ONLINE} is beyond this machine's {ONLINE} online cores"),
        (["--mode", "concurrent", "--cores", f"0,{ONLINE + 3}"], f"core {ONLINE + 3} is beyond"),
        (["--cores", "0:1"], "START:TARGET needs --migrate"),
        (["--events", "cycles,bogus"], "unknown counter 'bogus'"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["--raw-events", "LLC-load-misses=52"], "'52' is not an event number"),
        (["--raw-events", "LLC-load-misses=0x10000"], "'0x10000' is not an event number"),
        (["--raw-events", "=0x52"], "'=0x52' is not NAME=0xCODE"),
        (["--raw-events", "a,b=0x1"], "'a' is not NAME=0xCODE"),
        (["--raw-events", "x=0x1,"], "not a comma-separated list of NAME=0xCODE"),
    ],
)
def test_invalid_arguments_exit_2_with_a_message(forkbench, tmp_path, args, message):
    r = run(forkbench, *args, out=tmp_path / "out")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not (tmp_path / "out" / "fork.csv").exists()


def test_migration_needs_enough_cores(forkbench, tmp_path):
    r = run(forkbench, "--mode", "concurrent", "--migrate", "--sizes", "1", "--repetitions", "1", out=tmp_path)
    if ONLINE >= 4:
        assert r.returncode == 0, r.stderr
        assert meta(tmp_path)["cores"] == "0:1 2:3"
    else:
        assert r.returncode == 2 and "needs 4 online cores" in r.stderr


def test_help(forkbench):
    r = run(forkbench, "--help")
    assert r.returncode == 0 and "--sizes" in r.stdout and "LLC-load-misses" in r.stdout


# --- outputs --------------------------------------------------------------------------------


def test_single_layout_and_counters(forkbench, tmp_path):
    r = run(forkbench, "--sizes", "1,8", "--repetitions", "3", out=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "fork.csv") as f:
        assert next(csv.reader(f)) == HEADER + COUNTERS
    rows = read(tmp_path / "fork.csv")
    assert len(rows) == 2 * 3 * 1
    assert [(r["size_mb"], r["repetition"]) for r in rows] == [(s, str(i)) for s in ("1", "8") for i in range(3)]
    assert all(r["mode"] == "single" and r["migration"] == "false" and r["process"] == "0" for r in rows)
    assert all(r["cpu_before"] == "0" and int(r["wall_ns"]) > 0 for r in rows)
    check_counters(tmp_path)
    assert read(tmp_path / "skipped.csv") == []
    m = meta(tmp_path)
    assert m["mode"] == "single" and m["cores"] == "0" and m["processes"] == "1"
    assert int(m["page_size"]) >= 4096 and m["perf_event_paranoid"].lstrip("-").isdigit()
    assert m["drop_caches"] == "permitted" or m["drop_caches"].startswith("not permitted: ")
    assert not list(tmp_path.glob("*.part*"))  # the per-process files are merged and removed


def test_counters_choice_and_no_drop_caches(forkbench, tmp_path):
    r = run(
        forkbench,
        "--sizes",
        "1",
        "--repetitions",
        "2",
        "--events",
        "task-clock,cycles",
        "--no-drop-caches",
        out=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    counters = check_counters(tmp_path)
    assert counters["page-faults"]["supported"] == "false" and "not selected" in counters["page-faults"]["reason"]
    assert meta(tmp_path)["drop_caches"].startswith("disabled")


def test_raw_events_replace_a_generic_counter_or_add_one(forkbench, tmp_path):
    """PERF_TYPE_RAW: counted where this CPU's PMU opens the code, else unsupported with the reason; never 0."""
    r = run(
        forkbench,
        "--sizes",
        "1",
        "--repetitions",
        "2",
        "--raw-events",
        "LLC-load-misses=0x52,L2D_CACHE=0x16",
        out=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    counters = check_counters(tmp_path, added=("L2D_CACHE",))
    assert counters["LLC-load-misses"]["event"] == "raw 0x52" and counters["L2D_CACHE"]["event"] == "raw 0x16"
    assert counters["LLC-loads"]["event"] == ""  # still the generic one
    assert meta(tmp_path)["raw_events"] == "LLC-load-misses=0x52,L2D_CACHE=0x16"
    r = run(
        forkbench,
        "--sizes",
        "1",
        "--repetitions",
        "1",
        "--raw-events",
        "LLC-load-misses=0x52",
        "--events",
        "task-clock",
        out=tmp_path / "sel",
    )
    assert "not selected" in check_counters(tmp_path / "sel")["LLC-load-misses"]["reason"]


def test_raw_common_event_the_pmu_does_not_list_is_unsupported(forkbench, tmp_path):
    """An Arm PMU lists the common events (below 0x40) it implements; one it lacks is not opened."""
    events = tmp_path / "sysfs" / "armv8_cortex_a53" / "events"
    events.mkdir(parents=True)
    (events / "l2d_cache").write_text("event=0x0016\n")
    (events / "cpu_cycles").write_text("event=0x0011\n")
    r = run(
        forkbench,
        "--sizes",
        "1",
        "--repetitions",
        "1",
        "--pmu-sysfs",
        str(tmp_path / "sysfs"),
        "--raw-events",
        "LLC-loads=0x16,LLC-load-misses=0x17,L2D_CACHE_RD=0x50",
        out=tmp_path / "o",
    )
    assert r.returncode == 0, r.stderr
    counters = check_counters(tmp_path / "o", added=("L2D_CACHE_RD",))
    lacking = counters["LLC-load-misses"]
    assert lacking["supported"] == "false" and "armv8_cortex_a53 does not implement event 0x17" in lacking["reason"]
    for listed in ("LLC-loads", "L2D_CACHE_RD"):  # listed, or not checkable (0x50): perf_event_open decides
        assert "does not implement" not in counters[listed]["reason"]


def test_concurrent_rows_per_process(forkbench, tmp_path):
    # two processes on core 0: the merge and the barrier work on a one-core machine too
    r = run(forkbench, "--mode", "concurrent", "--cores", "0,0", "--sizes", "1,2", "--repetitions", "2", out=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read(tmp_path / "fork.csv")
    assert len(rows) == 2 * 2 * 2
    assert [(r["size_mb"], r["repetition"], r["process"]) for r in rows] == [
        (s, str(i), str(p)) for s in ("1", "2") for i in range(2) for p in range(2)
    ]
    check_counters(tmp_path)


def test_concurrent_default_one_process_per_online_core(forkbench, tmp_path):
    r = run(forkbench, "--mode", "concurrent", "--sizes", "1", "--repetitions", "2", out=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read(tmp_path / "fork.csv")
    assert len(rows) == 1 * 2 * ONLINE
    assert sorted({int(r["cpu_before"]) for r in rows}) == list(range(ONLINE))
    assert meta(tmp_path)["processes"] == str(ONLINE)


@pytest.mark.skipif(ONLINE < 2, reason="migration needs two online cores")
def test_single_migration_moves_to_core_1(forkbench, tmp_path):
    r = run(forkbench, "--migrate", "--sizes", "1", "--repetitions", "2", out=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = read(tmp_path / "fork.csv")
    assert all(r["migration"] == "true" and r["cpu_before"] == "1" for r in rows)
    assert meta(tmp_path)["cores"] == "0:1"


def test_sizes_beyond_memory_are_skipped_with_a_reason(forkbench, tmp_path):
    r = run(forkbench, "--sizes", "1,10000000", "--repetitions", "2", out=tmp_path)
    assert r.returncode == 0, r.stderr
    (skipped,) = read(tmp_path / "skipped.csv")
    assert skipped["size_mb"] == "10000000" and "available memory" in skipped["reason"]
    assert {r["size_mb"] for r in read(tmp_path / "fork.csv")} == {"1"}


def test_trace_markers_around_each_fork(forkbench, tmp_path):
    marker = tmp_path / "trace_marker"  # stands in for tracefs's file, which must exist already
    marker.touch()
    r = run(forkbench, "--sizes", "1", "--repetitions", "2", "--trace-marker", str(marker), out=tmp_path / "o")
    assert r.returncode == 0, r.stderr
    lines = marker.read_text().splitlines()
    assert [ln.split()[0] for ln in lines] == ["pirex-fork-start", "pirex-fork-end"] * 2
    assert "size_mb=1 repetition=1" in lines[-1]


def test_unprivileged_run_records_what_it_could_not_do(forkbench):
    """As root: the same binary as uid 65534 (setpriv); otherwise as this user."""
    root = os.geteuid() == 0
    if root and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv (util-linux) to drop privileges")
    work = Path(tempfile.mkdtemp(prefix="forkbench-"))
    try:
        os.chmod(work, 0o777)  # reachable and writable for uid 65534 (pytest's tmp_path is private to root)
        binary = work / "forkbench"
        shutil.copy(forkbench, binary)
        os.chmod(binary, 0o755)
        user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if root else None
        r = run(binary, "--sizes", "1", "--repetitions", "2", out=work / "out", user=user)
        assert r.returncode == 0, r.stderr
        out = work / "out"
        m = meta(out)
        assert m["uid"] == str(NOBODY if root else os.geteuid())
        assert m["drop_caches"].startswith("not permitted: ")
        counters = check_counters(out)
        if int(m["perf_event_paranoid"]) >= 2:
            # unprivileged, perf_event_paranoid >= 2: user space only, or nothing at all
            assert all(c["kernel_included"] == "false" for c in counters.values() if c["supported"] == "true")
            assert m["kernel_included"] in ("false", "")
        assert len(read(out / "fork.csv")) == 2
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- pirex-fork: the concurrent mode's cores ---------------------------------------------------

ENTRY = SRC / "pirex-fork"


def plan(*args: str) -> dict[str, str]:
    """pirex-fork --dry-run: each mode's forkbench command line (or why it is skipped)."""
    r = subprocess.run(
        ["sh", str(ENTRY), "run", "--dry-run", "--sizes", "1", "--output", "/o", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return dict(ln.split(": ", 1) for ln in r.stdout.splitlines())


def cores_of(command: str) -> list[str]:
    words = command.split()
    return words[words.index("--cores") + 1].split(",")


def test_concurrent_runs_the_first_four_cores_of_a_bigger_machine():
    """Thesis 4.2.3.1.2: the server's first four cores, not one process per core (16 here)."""
    modes = plan("--assume-cpus", "16")
    assert cores_of(modes["concurrent"]) == ["0", "1", "2", "3"]  # forkbench runs one process per entry
    assert "--cores" not in modes["concurrent-migrate"] and "--migrate" in modes["concurrent-migrate"]
    assert cores_of(plan("--assume-cpus", "16", "--cores", "4,5")["concurrent"]) == ["4", "5"]
    assert len(cores_of(plan("--assume-cpus", "16", "--cores", "all")["concurrent"])) == 16
    # a machine with fewer: all of them; the migration modes say what they lack
    modes = plan("--assume-cpus", "2")
    assert cores_of(modes["concurrent"]) == ["0", "1"] and modes["concurrent-migrate"] == "skipped, needs 4 CPUs"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--raw-events", "auto"], "--raw-events auto is decided by `pirex run`"),
        (["--cores", "0,19", "--assume-cpus", "16", "--dry-run"], "core(s) 19 not usable here"),
        (["--cores", "0,,1"], "'0,,1' is not a comma-separated list"),
        (["--assume-cpus", "4"], "--assume-cpus plans only"),
    ],
)
def test_pirex_fork_rejects_bad_cores(args, message):
    r = subprocess.run(["sh", str(ENTRY), "run", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr


def test_fewer_cores_than_asked_run_all_of_them_and_say_so(forkbench, tmp_path):
    """The real forkbench through pirex-fork on this machine: the default asks for four cores."""
    env = {**os.environ, "PATH": f"{forkbench.parent}:{os.environ['PATH']}"}
    r = subprocess.run(
        [
            "sh",
            str(ENTRY),
            "run",
            "--modes",
            "concurrent",
            "--sizes",
            "1",
            "--repetitions",
            "1",
            "--no-drop-caches",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    usable = len(os.sched_getaffinity(0))
    assert meta(tmp_path / "concurrent")["processes"] == str(min(usable, 4))
    note = tmp_path / "concurrent" / "cores-note.txt"
    assert note.exists() == (usable < 4)
    if usable < 4:
        assert f"this machine lets us use {usable}" in note.read_text()
