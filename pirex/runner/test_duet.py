"""The duet design without Docker: the CPU halves and their swapping, the schedule with real short-lived processes
(simultaneous starts, both sides stopped and reaped when one fails or the runner is killed), the bundle's record of
a duet and the resume of a half-done repetition, the plan's refusals, and the runner end to end with run_step
standing in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pirex.core import cpuset, experiment, proc
from pirex.core.bundle import Bundle, verify
from pirex.core.errors import PirexError
from pirex.runner import duet, host, runplan
from pirex.runner.run import Options
from pirex.runner.test_runplan import facts

TOOL = {"version": "0", "commit": None}


# --- the CPUs --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpus", "siblings", "a", "b", "unused", "shared"),
    [
        ({0, 1}, {}, "0", "1", (), False),  # a 2-vCPU VM, one thread per core
        ({0, 1}, {0: {0, 1}, 1: {0, 1}}, "0", "1", (), True),  # two threads of one core: they share it
        ({0, 1, 2, 3}, {}, "0-1", "2-3", (), False),  # a Pi 4
        ({0, 1, 2, 3}, {0: {0, 2}, 2: {0, 2}, 1: {1, 3}, 3: {1, 3}}, "0,2", "1,3", (), False),  # SMT as Intel numbers
        ({0, 1, 2}, {}, "0", "1", (2,), False),  # odd: one CPU left out, both sides see one
        ({1, 3, 5, 7}, {}, "1,3", "5,7", (), False),  # a process allowed only some CPUs
    ],
)
def test_halves_are_equal_disjoint_and_keep_cores_whole(cpus, siblings, a, b, unused, shared):
    h = duet.halves(cpus, {c: frozenset(s) for c, s in siblings.items()})
    assert (h.a, h.b, h.unused, h.shared_cores) == (a, b, unused, shared)
    assert len(cpuset.parse_cpus(h.a)) == len(cpuset.parse_cpus(h.b)) and not cpuset.parse_cpus(
        h.a
    ) & cpuset.parse_cpus(h.b)


def test_one_cpu_is_refused_with_the_reason():
    with pytest.raises(PirexError, match="only CPU 3: it needs at least two"):
        duet.halves({3})


def test_cpu_lists_read_back_as_the_sets_they_name():
    for cpus in ({0}, {0, 1, 2, 5}, {1, 3, 4, 5, 9}, set(range(64))):
        assert cpuset.parse_cpus(cpuset.cpu_list(cpus)) == cpus
    assert cpuset.cpu_list({0, 1, 2, 5}) == "0-2,5"


def test_the_halves_are_swapped_every_repetition():
    plan = duet.steps(("native", "docker"), 5, duet.Halves("0-1", "2-3"))
    assert [(s["variant"], s["repetition"]) for s in plan] == [(v, r) for r in range(5) for v in ("native", "docker")]
    for r in range(5):
        native, docker = plan[2 * r]["cpus"], plan[2 * r + 1]["cpus"]
        assert {native, docker} == {"0-1", "2-3"}
        assert native == ("0-1" if r % 2 == 0 else "2-3")  # swapped from one repetition to the next
    on_a = sum(1 for s in plan if s["variant"] == "native" and s["cpus"] == "0-1")
    assert on_a == 3  # 5 repetitions: 3 on one half, 2 on the other
    with pytest.raises(PirexError, match="two variants at once, not 3"):
        duet.steps(("native", "docker", "native-aa"), 5, duet.Halves("0", "1"))


# --- the schedule, with real processes -------------------------------------------------------------------------------


def _rendezvous(me: Path, other: Path) -> bool:
    """Say I am here, then wait for the other side: only sides that run at the same time both see each other."""
    me.write_text(str(os.getpid()))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if other.exists():
            return True
        time.sleep(0.02)
    return False


def test_both_sides_run_at_the_same_time_in_children_of_their_own(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    out = duet.run_together({"a": lambda: _rendezvous(a, b), "b": lambda: _rendezvous(b, a)})
    assert out["a"].value is True and out["b"].value is True  # one after the other, the first would wait in vain
    assert out["a"].error is None and out["a"].start <= out["b"].end and out["b"].start <= out["a"].end
    pids = {int(a.read_text()), int(b.read_text())}
    assert os.getpid() not in pids and len(pids) == 2  # forked sides
    assert not _children(), "every side is reaped"


def _children() -> list[int]:
    """This process's child processes (zombies included)."""
    out = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        out += [int(p) for p in (task / "children").read_text().split()]
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _sleeper(pid_file: Path) -> int:
    """A workload that would run for ten minutes: sleep in its own process group, as proc.run starts steps."""
    r = proc.run(
        ["sh", "-c", f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file} && exec sleep 600"], timeout=900
    )
    return r.returncode


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_when_one_side_fails_the_other_is_stopped_and_both_are_reaped(tmp_path):
    sleeper = tmp_path / "sleep.pid"

    def fails_once_the_other_runs() -> int:
        _wait_for(sleeper)
        return 1

    out = duet.run_together(
        {"native": fails_once_the_other_runs, "docker": lambda: _sleeper(sleeper)}, failed=lambda code: code != 0
    )
    assert out["native"].value == 1 and out["docker"].interrupted
    assert not _alive(int(sleeper.read_text())), "the other side's workload is stopped with it"
    assert not _children()


def test_a_side_that_raises_says_why_and_stops_the_other(tmp_path):
    sleeper = tmp_path / "sleep.pid"

    def raises() -> None:
        _wait_for(sleeper)
        raise PirexError("the image is gone")

    out = duet.run_together({"a": raises, "b": lambda: _sleeper(sleeper)})
    assert (out["a"].error, out["a"].message) == ("PirexError", "the image is gone") and out["b"].interrupted
    assert not _alive(int(sleeper.read_text())) and not _children()


RUNNER = """
import signal, sys
from pathlib import Path
from pirex.core import proc
from pirex.runner import duet
def terminate(signum, frame):  # as the CLI's handler does
    raise SystemExit(128 + signum)
signal.signal(signal.SIGTERM, terminate)
d = Path(sys.argv[1])
def side(name):
    (d / f"{name}.side").write_text(str(__import__("os").getpid()))
    script = f"echo $$ > {d}/{name}.tmp && mv {d}/{name}.tmp {d}/{name}.pid && exec sleep 600"
    proc.run(["sh", "-c", script], timeout=900)
duet.run_together({"native": lambda: side("native"), "docker": lambda: side("docker")})
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_takes_both_sides_and_their_workloads_with_it(tmp_path, sig):
    """SIGTERM unwinds the runner, which stops both sides; SIGKILL leaves it no say, and the sides stop themselves
    (PR_SET_PDEATHSIG)."""
    runner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(RUNNER), str(tmp_path)], start_new_session=True)
    try:
        for name in ("native", "docker"):
            _wait_for(tmp_path / f"{name}.pid")
        pids = [int((tmp_path / f"{n}.{kind}").read_text()) for n in ("native", "docker") for kind in ("pid", "side")]
        assert all(_alive(p) for p in pids)
        runner.send_signal(sig)
        assert runner.wait(timeout=120) == (143 if sig == signal.SIGTERM else -signal.SIGKILL)
        deadline = time.monotonic() + 60
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)], "no side and no workload outlives the run"
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace of its own needs root")
def test_a_side_of_its_own_mounts_sees_its_own_tmp_and_no_one_else_does(tmp_path):
    shared, mine = tmp_path / "root-tmp", tmp_path / "side-tmp"
    shared.mkdir()

    def write() -> list[str]:
        (shared / "jmh.lock").write_text("side")  # the path both sides would use
        return sorted(p.name for p in shared.iterdir())

    out = duet.run_together({"a": write}, prepare={"a": lambda: duet.own_mounts({mine: shared})})
    assert out["a"].value == ["jmh.lock"]
    assert (mine / "jmh.lock").read_text() == "side" and not (shared / "jmh.lock").exists()
    assert str(shared) not in Path("/proc/self/mountinfo").read_text()  # the side's mount went with it


# --- the bundle's record of a duet -----------------------------------------------------------------------------------


def _duet_bundle(tmp_path: Path, reps: int = 2) -> Bundle:
    plan = duet.steps(("native", "docker"), reps, duet.Halves("0", "1"))
    return Bundle.create(tmp_path, "jmh", "quick", {}, ["native", "docker"], plan, {}, TOOL, design="duet")


def _together(b: Bundle, rep: int, fail: bool = False) -> None:
    keys = [("native", rep), ("docker", rep)]
    with b.steps_together(keys) as dirs:
        for (v, r), d in dirs.items():
            (d / "out.txt").write_text(f"{v} {r}")
            b.record(v, r, cpus=str(r % 2 if v == "native" else 1 - r % 2), start=100.0 + r, end=110.5 + r)
        if fail:
            raise PirexError("the docker side exited 1")


def test_a_duet_repetition_is_recorded_together_with_its_cpus_and_times(tmp_path):
    b = _duet_bundle(tmp_path)
    _together(b, 0)
    with pytest.raises(PirexError):
        _together(b, 1, fail=True)
    assert not (b.path / "native" / "1").exists() and not list(b.path.glob("*/*.tmp-*"))
    m = json.loads((b.path / "manifest.json").read_text())
    assert m["design"] == "duet" and [s["cpus"] for s in m["plan"]] == ["0", "1", "1", "0"]
    assert [(s["variant"], s["repetition"], s["cpus"], s["start"], s["end"]) for s in m["completed"]] == [
        ("native", 0, "0", 100.0, 110.5),
        ("docker", 0, "1", 100.0, 110.5),
    ]
    steps = Bundle.open(b.path).steps()
    assert [(s.variant, s.cpus, s.start, s.end) for s in steps] == [
        ("native", "0", 100.0, 110.5),
        ("docker", "1", 100.0, 110.5),
    ]
    assert Bundle.open(b.path).design == "duet"
    with pytest.raises(PirexError, match="not among cpus, start, end"):
        b.record("native", 1, seconds=3)
    b.close()


def test_resuming_a_half_done_duet_repetition_redoes_both_of_its_steps(tmp_path):
    b = _duet_bundle(tmp_path, reps=3)
    _together(b, 0)
    _together(b, 1)
    b.finish("partial")
    # one side of repetition 1 recorded, the other not (a manifest written by a writer that recorded steps apart)
    f = b.path / "manifest.json"
    m = json.loads(f.read_text())
    m["completed"] = [s for s in m["completed"] if (s["variant"], s["repetition"]) != ("docker", 1)]
    m["files"] = {k: v for k, v in m["files"].items() if not k.startswith("docker/1/")}
    f.write_text(json.dumps(m))
    r = Bundle.resume(b.path)
    assert [(s["variant"], s["repetition"]) for s in r.remaining_steps()] == [
        ("native", 1),
        ("docker", 1),
        ("native", 2),
        ("docker", 2),
    ]
    assert not (b.path / "native" / "1").exists() and not (b.path / "docker" / "1").exists()
    assert {s["repetition"] for s in r.completed} == {0}
    assert not [k for k in r.files if k.startswith(("native/1/", "docker/1/"))]
    _together(r, 1)
    _together(r, 2)
    assert r.finish() == "complete" and verify(b.path) == []


def test_an_interleaved_bundle_keeps_a_step_whose_partner_is_still_to_do(tmp_path):
    b = Bundle.create(tmp_path, "jmh", "quick", {}, ["native", "docker"], [("native", 0), ("docker", 0)], {}, TOOL)
    with b.step("native", 0) as d:
        (d / "out.txt").write_text("x")
    b.finish("partial")
    assert [s["variant"] for s in Bundle.resume(b.path).remaining_steps()] == ["docker"]
    assert "design" not in json.loads((b.path / "manifest.json").read_text())  # none given: none recorded


@pytest.mark.parametrize(
    ("plan", "design", "problem"),
    [
        ([{"variant": "native", "repetition": 0, "cpus": "zero"}], None, "cpus must be a CPU list"),
        ([("native", 0)], "simultaneous", "design 'simultaneous': expected one of interleaved, sequential, duet"),
    ],
)
def test_a_malformed_duet_record_is_refused(tmp_path, plan, design, problem):
    with pytest.raises(PirexError, match=problem):
        Bundle.create(tmp_path, "jmh", "quick", {}, ["native"], plan, {}, TOOL, design=design)


# --- the experiment's declaration and the plan -----------------------------------------------------------------------


def test_experiments_that_need_every_cpu_declare_it():
    assert experiment.load("jmh").duet.fits and experiment.load("moobench").duet.fits
    assert "three processes" in experiment.load("jpa-rest").duet.why
    assert "one process per core" in experiment.load("fork").duet.why


@pytest.mark.parametrize(
    ("duet_doc", "problem"),
    [
        ({"fits": False}, "duet.why: expected a sentence"),
        ({"fits": "no", "why": "x"}, "duet: expected a mapping {fits: false"),
        ("it needs every CPU", "duet: expected a mapping"),
        ({"fits": False, "why": "x", "cores": 4}, "duet: expected a mapping"),
    ],
)
def test_a_malformed_declaration_names_the_key(tmp_path, duet_doc, problem):
    import yaml

    doc = yaml.safe_load(experiment.path_of("jmh").read_text())
    doc["duet"] = duet_doc
    f = tmp_path / "experiment.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(PirexError, match=problem) as e:
        experiment.load(f)
    assert str(f) in str(e.value)


def planned(experiment_id="jmh", host_facts=None, later=None, **options) -> runplan.RunPlan:
    opts = Options(experiment_id, **{"seed": 7, "design": "duet", **options})
    return runplan.plan_run(experiment.load(experiment_id), opts, host_facts or facts(), later=later)


def test_a_duet_plan_pins_each_step_to_its_half_and_says_so():
    p = planned(variants="native,docker", overrides={"repetitions": 4})
    assert [(s["variant"], s["repetition"], s["cpus"]) for s in p.steps] == [
        ("native", 0, "0"),
        ("docker", 0, "1"),
        ("native", 1, "1"),
        ("docker", 1, "0"),
        ("native", 2, "0"),
        ("docker", 2, "1"),
        ("native", 3, "1"),
        ("docker", 3, "0"),
    ]
    assert p.design == "duet" and p.run_info["design"] == "duet"
    assert p.run_info["duet"] == {
        "halves": ["0", "1"],
        "swapped": "every repetition",
        "unused_cpus": [],
        "shared_cores": False,
    }
    assert all(v.cpus is None for v in p.runners.values())  # the step's CPUs, not the variant's
    wide = planned(variants="docker,docker-aa", cpus="0-3", host_facts=facts(online_cpus=frozenset(range(6))))
    assert [s["cpus"] for s in wide.steps[:2]] == ["0-1", "2-3"]  # --cpus: its halves
    assert (
        planned(design="interleaved").run_info["design"] == "interleaved"
        and "duet" not in planned(design="interleaved").run_info
    )


@pytest.mark.parametrize(
    ("experiment_id", "options", "problem"),
    [
        ("jpa-rest", {}, "jpa-rest does not suit --design duet: a step runs three processes"),
        ("fork", {}, "fork does not suit --design duet: its concurrent modes run one process per core"),
        ("jmh", {"variants": "native,docker,native-aa"}, "two variants at once, not 3"),
        ("jmh", {"variants": "docker"}, "two variants at once, not 1"),
        ("moobench", {"matrix": "fluctuation"}, "not with --matrix"),
        ("jmh", {"design": "both"}, "--design 'both': expected one of interleaved, duet"),
    ],
)
def test_what_the_duet_cannot_mean_is_refused_before_anything_runs(experiment_id, options, problem):
    with pytest.raises(PirexError, match=problem):
        runplan.check(experiment.load(experiment_id), Options(experiment_id, **{"design": "duet", **options}))


def test_the_machine_must_offer_two_cpus_and_both_variants():
    with pytest.raises(PirexError, match="this machine lets pirex use only CPU 0: it needs at least two"):
        planned(host_facts=facts(online_cpus=frozenset({0})))
    with pytest.raises(PirexError, match="--cpus 1 names only CPU 1: it needs at least two"):
        planned(cpus="1")
    with pytest.raises(PirexError, match="only docker can run here \\(native: the native variant needs root\\)"):
        planned(host_facts=facts(native_unavailable="the native variant needs root"))


# --- the runner, end to end, with run_step standing in -------------------------------------------------------------


SMALL_MOOBENCH = {"repetitions": 3, "calls": 10, "recursion_depth": 2, "sleep": 0, "configurations": "baseline"}


def test_the_runner_runs_a_duet_and_redoes_a_failed_repetition_whole_on_resume(tmp_path, monkeypatch):
    """Both sides of each repetition in forked children, each with its repetition's CPUs; repetition 1's docker-aa
    side fails the first time, so neither side of it counts and the resumed run does both again."""
    from pirex.core import machine
    from pirex.runner import lock, run, variants

    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path / "locks")
    monkeypatch.setattr(
        run, "image_for", lambda name, tag, platform: {"reference": f"{name}@sha256:1", "platform": str(platform)}
    )
    monkeypatch.setattr(run, "jvm_of", lambda image: None)
    monkeypatch.setattr(run, "bridge_gateway", lambda: "172.17.0.1")
    monkeypatch.setattr(machine, "record", lambda *a, **kw: {"schema": "pirex-machine/1"})
    monkeypatch.setattr(host, "online_cpus", lambda: {0, 1})
    monkeypatch.setattr(duet, "siblings", lambda: {})
    log = tmp_path / "ran"
    log.mkdir()

    def step(variant, image_ref, argv, out, workdir, timeout, name, platform=None):  # runs in a side's child
        rep = name.rsplit("-", 1)[1]  # pirex-<run id>-<variant>-<repetition>
        (log / f"{variant.name}-{rep}-{os.getpid()}").write_text(variant.cpus)
        (out / "here").write_text("")  # then wait for the other side: only simultaneous sides both go on at once
        partner = out.parent.parent / ("docker-aa" if variant.name == "docker" else "docker") / out.name / "here"
        deadline = time.monotonic() + 60
        while not partner.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        failing = variant.name == "docker-aa" and rep == "1" and not (log / "failed-once").exists()
        if failing:
            (log / "failed-once").write_text("")
        for f in ("stdout.txt", "stderr.txt", "raw-baseline.csv"):
            (out / f).write_text("1;2;3;4\n")
        return variants.StepRun(argv, 1 if failing else 0, 1.5)

    monkeypatch.setattr(variants, "run_step", step)
    opts = Options(
        "moobench", variants="docker,docker-aa", results_dir=tmp_path, overrides=SMALL_MOOBENCH, design="duet"
    )
    with pytest.raises(PirexError, match="docker-aa repetition 1 \\(duet, on CPUs 0\\) exited 1") as e:
        run.run(opts)
    assert "pirex ran: " in str(e.value)  # the argv, for a usage error (issue 54)
    (path,) = (tmp_path / "moobench").iterdir()
    b = Bundle.open(path)
    assert b.status == "failed" and [(s.variant, s.repetition) for s in b.steps()] == [("docker", 0), ("docker-aa", 0)]
    run.resume(path)
    b = Bundle.open(path)
    assert b.status == "complete" and verify(path) == [] and b.design == "duet"
    runs = [p for p in log.iterdir() if p.name != "failed-once"]
    ran = [p.name.rsplit("-", 1)[0] for p in runs]
    assert ran.count("docker-aa-1") == 2 and set(ran) == {f"{v}-{r}" for v in ("docker", "docker-aa") for r in range(3)}
    assert str(os.getpid()) not in {p.name.rsplit("-", 1)[1] for p in runs}  # every side ran in a child of its own
    assert [(s.variant, s.repetition) for s in b.steps()][2:4] == [("docker", 1), ("docker-aa", 1)]  # redone whole
    for s in b.steps():
        assert s.cpus == ("0" if (s.repetition % 2 == 0) == (s.variant == "docker") else "1")
        assert s.start <= s.end and json.loads((s.dir / "step.json").read_text())["returncode"] == 0
        ran_with = {p.read_text() for p in runs if p.name.startswith(f"{s.variant}-{s.repetition}-")}
        assert ran_with == {s.cpus}  # the side ran on the CPUs its record names
    pairs = {r: [s for s in b.steps() if s.repetition == r] for r in range(3)}
    assert all(len(v) == 2 and v[0].start <= v[1].end and v[1].start <= v[0].end for v in pairs.values())
    assert b.run_info().duet["halves"] == ["0", "1"]


# --- the halves in the model and over a plan of several bundles -----------------------------------------------------


def _on_first_half(plan: list[dict], variant: str, split: duet.Halves) -> tuple[int, int]:
    """How many repetitions the variant ran on each half."""
    mine = [s["cpus"] for s in plan if s["variant"] == variant]
    return mine.count(split.a), mine.count(split.b)


def test_a_second_stage_continues_the_alternation_so_the_plan_stays_balanced():
    """A pilot of 5 runs native on a, b, a, b, a; restarting at a, its second stage of 7 would leave native 7 times
    on a and 5 on b. Continuing (first=5), it starts on b: 6 and 6."""
    split = duet.Halves("0-1", "2-3")
    pilot = duet.steps(("native", "docker"), 5, split)
    restarted = duet.steps(("native", "docker"), 7, split)
    continued = duet.steps(("native", "docker"), 7, split, first=5)
    assert _on_first_half(pilot + restarted, "native", split) == (7, 5)
    assert _on_first_half(pilot + continued, "native", split) == (6, 6)
    assert _on_first_half(pilot + continued, "docker", split) == (6, 6)
    assert [s["cpus"] for s in continued[:4]] == ["2-3", "0-1", "0-1", "2-3"]
    assert [s["repetition"] for s in continued[::2]] == list(range(7))  # its own repetitions, from 0
    with pytest.raises(PirexError, match="cannot start at repetition -1"):
        duet.steps(("native", "docker"), 2, split, first=-1)


def test_a_plan_of_a_later_bundle_starts_where_the_pilot_left_and_records_it():
    p = planned(variants="native,docker", overrides={"repetitions": 3}, later=runplan.Continuation("pilot@5", 5))
    assert [s["cpus"] for s in p.steps] == ["1", "0", "0", "1", "1", "0"]
    assert p.run_info["duet"]["alternation_from"] == 5
    assert "alternation_from" not in planned(variants="native,docker").run_info["duet"]


def test_each_steps_half_is_read_from_its_cpus():
    assert cpuset.half_of("0-1", ["0-1", "2-3"]) == 1 and cpuset.half_of("2,3", ["0-1", "2-3"]) == -1
    with pytest.raises(PirexError, match="ran on CPUs 1-2, neither of its halves \\(0-1 and 2-3\\)"):
        cpuset.half_of("1-2", ["0-1", "2-3"])


def test_a_duet_bundles_steps_say_their_half(tmp_path):
    b = _duet_bundle(tmp_path, reps=3)
    for r in range(3):
        _together(b, r)
    b.finish()
    halves = cpuset.step_halves(Bundle.open(b.path))  # no run.json here: the lower CPU's half first
    assert halves == {
        ("native", 0): 1,
        ("docker", 0): -1,
        ("native", 1): -1,
        ("docker", 1): 1,
        ("native", 2): 1,
        ("docker", 2): -1,
    }
    inter = Bundle.create(tmp_path / "i", "jmh", "quick", {}, ["native"], [("native", 0)], {}, TOOL)
    assert cpuset.step_halves(inter) == {}


def _jmh_duet(root: Path, reps: int, first: int = 0, half: float = 1.02, seed: int = 1) -> Path:
    """A jmh duet bundle as the runner writes it (run.json's halves, each step's CPUs): docker/native 1, either
    variant 2 % faster on the first CPU half than on the second, 0.2 % noise."""
    import numpy as np

    from pirex.core import machine

    split = duet.Halves("0", "1")
    plan = duet.steps(("native", "docker"), reps, split, first)
    params = {**experiment.load("jmh").resolve("quick"), "repetitions": reps}
    b = Bundle.create(root, "jmh", "quick", params, ["native", "docker"], plan, {}, TOOL, design="duet")
    b.write_run_info({"design": "duet", "duet": split.describe(first)})
    record = machine.record(root, docker=False)
    b.write_machine(before=record, after=record)
    rng = np.random.default_rng(seed)
    for r in range(reps):
        with b.steps_together([("native", r), ("docker", r)]) as dirs:
            for (v, _), d in dirs.items():
                cpus = next(s["cpus"] for s in plan if (s["variant"], s["repetition"]) == (v, r))
                side = half ** (0.5 if cpus == split.a else -0.5)
                value = 1e7 * side * float(np.exp(rng.normal(0, 0.002)))
                doc = [
                    {
                        "benchmark": "io.github.pirexbench.jmh.X.b1_default",
                        "primaryMetric": {"rawData": [[value, value]], "scoreUnit": "ops/s"},
                    }
                ]
                (d / "jmh.json").write_text(json.dumps(doc))
                (d / "step.json").write_text(json.dumps({"seconds": 20.0}))
                b.record(v, r, cpus=cpus, start=100.0 + r, end=120.0 + r)
    b.finish()
    return b.path


def test_jmh_run_values_carry_the_half_and_the_ratio_table_shows_its_effect(tmp_path):
    from pirex.analysis import jmh

    path = _jmh_duet(tmp_path, 6)
    values = jmh.run_values([path])
    assert {(v.variant, v.repetition, v.half) for v in values if v.metric == "B1"} == {
        (v, r, (1 if r % 2 == 0 else -1) * (1 if v == "native" else -1)) for v in ("native", "docker") for r in range(6)
    }
    (ratios,) = [t.table for t in jmh.tables([path]) if t.name.startswith("ratios")]
    assert ratios.columns[-1] == "CPU half" and "half as a factor" in ratios.notes[-1]
    (row,) = [r for r in ratios.rows if r[0] == "B1"]
    record = next(r for r in ratios.records if r["benchmark"] == "B1")
    assert record["method"] == "duet-half-t" and abs(record["ratio"] - 1) < 0.005  # the half taken out
    assert record["half_low"] < 1.02 < record["half_high"]  # docker/native when docker had the first half
    assert row[-1].startswith("1.02")


def test_a_duet_pilots_second_stage_is_planned_from_the_model_and_continues_the_alternation(tmp_path):
    """--precision on a duet: Stein's n from the model's residual sd (the half's 2 % left out of it), even, and the
    second bundle starts on the half the pilot would have used next: 5 + 3 repetitions, 4 on each half."""

    from pirex.reproduce import two_stage as precision

    runs: list[Options] = []
    laters: list[runplan.Continuation | None] = []

    def run(opts: Options, later: runplan.Continuation | None = None) -> Path:
        runs.append(opts)
        laters.append(later)
        reps = (opts.overrides or {}).get("repetitions", 5)
        return _jmh_duet(tmp_path / f"r{len(runs)}", reps, later.duet_first if later else 0, seed=len(runs))

    opts = Options("jmh", "quick", "native,docker", results_dir=tmp_path)
    opts.design = "duet"
    lines: list[str] = []
    bundles = precision.two_stage(opts, precision.Target(0.003), run, lines.append)
    plan = precision.plan(experiment.load("jmh"), bundles[0], precision.Target(0.003))
    assert plan.n % 2 == 0 and plan.n < 20, lines  # unmodelled, the 2 % half would ask for hundreds
    assert laters[1].duet_first == 5 and runs[1].overrides["repetitions"] == plan.n - 5
    native = [s.cpus for b in bundles for s in Bundle.open(b).steps() if s.variant == "native"]
    assert native.count("0") == native.count("1") == plan.n // 2
