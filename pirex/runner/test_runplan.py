"""The run as data: plan_run from real experiments and this machine's facts made by hand, and the runner executing
a plan into a bundle and resuming it, all without Docker."""

import dataclasses
import json

import pytest

from pirex.core import experiment
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.images import platforms as plat
from pirex.runner import runplan
from pirex.runner.run import Options

HERE = plat.parse("linux/amd64")
SMALL_MOOBENCH = {"repetitions": 3, "calls": 10, "recursion_depth": 2, "sleep": 0, "configurations": "baseline"}
A72 = {"cpu": {"cpu_parts": ["0xd08"], "model": "Cortex-A72"}}  # a Pi 4's machine record, as far as PMU goes
CASES = {
    "max-clock": runplan.CaseFacts("this machine has no cpufreq"),
    "min-clock": runplan.CaseFacts("this machine has no cpufreq"),
    "no-swap": runplan.CaseFacts(None, ("same as its base here: no swap area was active on this machine",), True),
    "base": runplan.CaseFacts(None, ("the ondemand governor was not set (no cpufreq)",)),
}


def facts(**kw) -> runplan.HostFacts:
    base = runplan.HostFacts(
        platform=HERE,
        host_platform=HERE,
        native_unavailable=None,
        online_cpus=frozenset({0, 1}),
        machine={},
        images={"jmh": {"reference": "jmh@sha256:1", "platform": "linux/amd64"}},
        jvm={"java.vm.name": "OpenJDK 64-Bit Server VM"},
        free_ports={"sink_port": 40001},
        arch="x86_64",
    )
    return dataclasses.replace(base, **kw)


def planned(experiment_id="jmh", host=None, **options) -> runplan.RunPlan:
    opts = Options(experiment_id, **{"seed": 7, **options})
    return runplan.plan_run(experiment.load(experiment_id), opts, host or facts())


def test_variants_and_their_aa_copy_each_run_once_per_repetition():
    p = planned(variants="native,docker,native-aa")
    assert p.variants == ("native", "docker", "native-aa") and p.skipped == {}
    assert len(p.steps) == 3 * p.parameters["repetitions"]
    assert sorted(s["variant"] for s in p.steps[:3]) == ["docker", "native", "native-aa"]
    assert p.steps == planned(variants="native,docker,native-aa").steps  # the seed decides the order
    assert p.runners["native-aa"].is_native and p.run_info["variants"]["docker"]["runs"] == "docker run"
    assert p.parameters["sink_port"] == 40001 and p.requested["sink_port"] == 0  # the free port is the runner's
    assert p.run_info["seed"] == 7 and p.run_info["order"] == "interleaved" and p.run_info["matrix"] is None


def test_native_skipped_with_the_reason_where_it_cannot_run():
    p = planned(variants="native,docker,native-aa", host=facts(native_unavailable="the native variant needs root"))
    assert p.variants == ("docker",)
    assert p.skipped == {"native": "the native variant needs root", "native-aa": "the native variant needs root"}
    emulated = planned(host=facts(platform=plat.parse("linux/arm64")))
    assert emulated.variants == ("docker",) and "this machine's platform only" in emulated.skipped["native"]
    with pytest.raises(PirexError, match="no variant left to run: native: the native variant needs root"):
        planned(variants="native", host=facts(native_unavailable="the native variant needs root"))


def test_a_depth_set_once_is_in_every_steps_parameters_and_its_command():
    exp = experiment.load("jmh")
    p = planned(variants="native,docker", overrides={"depth": 3})
    assert p.parameters["depth"] == 3 == p.requested["depth"]
    assert {s["params"]["depth"] for s in p.steps} == {3}
    for s in p.steps:
        values = runplan.step_values(exp, s["params"], p.runners[s["variant"]], s["repetition"], "172.17.0.1")
        argv = experiment.render(exp.command, values)
        sink = "127.0.0.1" if s["variant"] == "native" else "172.17.0.1"  # where this variant reaches the sink
        assert "depth=3" in argv and f"host={sink}" in argv
        assert "port=40001" in argv and argv[-2] == "/results/jmh.json"


def test_set_values_are_checked_and_a_remote_service_needs_its_port():
    with pytest.raises(PirexError, match="depth"):
        planned(overrides={"depth": 0})
    with pytest.raises(PirexError, match="give its port too"):
        planned(overrides={"sink_host": "laptop"})
    assert planned(overrides={"sink_host": "laptop", "sink_port": 9}).parameters["sink_port"] == 9


@pytest.mark.parametrize(
    ("experiment_id", "options", "problem"),
    [
        ("jmh", {"order": "random"}, "--order 'random'"),
        ("jmh", {"cases": ("base",)}, "give --matrix too"),
        ("moobench", {"matrix": "nope"}, "no matrix 'nope'"),
        ("moobench", {"matrix": "fluctuation", "variants": "docker-host-network"}, "--variants native or docker"),
        ("moobench", {"matrix": "fluctuation", "cases": ("base", "warp")}, "--cases warp"),
        ("jmh", {"trace": True}, "declares no tracing"),
        ("jmh", {"soak": "10m"}, "declares no soak"),
    ],
)
def test_bad_options_are_refused_before_anything_is_asked_of_the_machine(experiment_id, options, problem):
    with pytest.raises(PirexError, match=problem):
        runplan.check(experiment.load(experiment_id), Options(experiment_id, **options))


def test_matrix_cases_skipped_with_reasons_and_same_as_base_flagged():
    host = facts(images={"moobench": {}}, cases=CASES, fallback=True)
    p = planned("moobench", host, matrix="fluctuation")
    m = p.run_info["matrix"]
    assert m["name"] == "fluctuation" and m["runs_as"] == "native"
    assert "time-only" not in p.variants and "SPASS-meter is not in the image" in p.skipped["time-only"]
    assert p.skipped["max-clock"] == p.skipped["min-clock"] == "this machine has no cpufreq"
    assert (
        m["cases"]
        == list(p.variants)
        == ["base", "parallel-gc", "ram-drive", "one-core", "two-cores"]
        + [
            "no-swap",
            "depth-1",
        ]
    )
    assert m["same_as_base"] == ["no-swap"] and set(m["notes"]) == {"base", "no-swap"}
    assert "Kieker with its text file writer" in m["fallback"]["reason"]
    params = {s["variant"]: s["params"] for s in p.steps}
    assert p.parameters["configurations"] == "baseline,kieker-text"  # the fallback's stand-in
    assert p.parameters["kieker_log_files"] == 4  # its pool bounded, so that the RAM drive holds it
    assert params["depth-1"]["recursion_depth"] == 1 and params["base"]["recursion_depth"] == 10
    assert params["parallel-gc"]["jvm_options"] == "-XX:+UseParallelGC"
    assert params["base"]["jvm_options"] == "-XX:+UseSerialGC" and p.run_info["variants"]["one-core"]["taskset"] == "0"
    # --set still wins over the fallback's parameters; a case's own set wins over --set
    mine = planned(
        "moobench", host, matrix="fluctuation", overrides={"configurations": "baseline", "jvm_options": "-X"}
    )
    assert {s["params"]["configurations"] for s in mine.steps} == {"baseline"}
    assert {s["params"]["jvm_options"] for s in mine.steps} == {"-XX:+UseSerialGC", "-XX:+UseParallelGC"}


def test_only_the_cases_asked_for_run_on_the_variant_asked_for():
    host = facts(images={"moobench": {}}, cases=CASES)
    p = planned("moobench", host, matrix="fluctuation", variants="docker", cases=("base", "depth-1", "max-clock"))
    assert p.variants == ("base", "depth-1") and set(p.skipped) == {"max-clock"}
    assert p.run_info["matrix"]["runs_as"] == "docker" and "fallback" not in p.run_info["matrix"]
    assert p.run_info["variants"]["depth-1"]["runs"] == "docker run"
    with pytest.raises(PirexError, match="no case of the matrix can run here: max-clock: this machine has no cpufreq"):
        planned("moobench", host, matrix="fluctuation", cases=("max-clock",))


def test_fork_resolves_its_raw_events_and_traces_with_a_marker():
    host = facts(images={"fork": {}}, machine=A72, arch="aarch64")
    p = planned("fork", host, trace=True)
    assert p.trace == {
        "enabled": True,
        "tracer": "function_graph",
        "functions": ["__arm64_sys_clone"],
        "output": "trace.txt",
    }
    for s in p.steps:
        assert s["params"]["raw_events"] == "LLC-loads=0x50,LLC-load-misses=0x52"
        assert s["params"]["trace_marker"] == "/sys/kernel/tracing/trace_marker"
    assert p.requested["raw_events"] == "auto" and p.runners["docker"].granted  # root and SYS_ADMIN, recorded
    off = planned("fork", dataclasses.replace(host, trace_unavailable="no tracefs"), trace=True)
    assert off.trace == {"enabled": False, "reason": "no tracefs"} and off.parameters["trace_marker"] == "none"
    assert planned("fork", facts(images={"fork": {}})).parameters["raw_events"] == "none"  # no Arm core known


def test_a_plans_run_info_and_steps_read_back_the_same_from_its_bundle(tmp_path):
    exp = experiment.load("moobench")
    p = planned("moobench", facts(images={"moobench": {}}, cases=CASES, fallback=True), matrix="fluctuation")
    tool = {"version": "0", "commit": None}
    b = Bundle.create(tmp_path, p.experiment, p.profile, p.parameters, list(p.variants), p.steps, p.images, tool)
    b.write_run_info(p.run_info)
    info = Bundle.open(b.path).run_info()
    assert info.doc == {"schema_version": 1, **json.loads(json.dumps(p.run_info))}
    assert info.matrix == "fluctuation" and info.runs_as == "native" and info.same_as_base == {"no-swap"}
    assert info.notes == p.run_info["matrix"]["notes"] and info.cpus is None and info.trace == {}
    assert [s["params"] for s in Bundle.open(b.path).remaining_steps()] == [s["params"] for s in p.steps]
    # what the runner rebuilds from the bundle on resume is what was planned
    again = runplan.variants_of(exp, Bundle.open(b.path).variants, info.matrix, info.runs_as, info.cpus)
    assert {n: v.describe() for n, v in again.items()} == p.run_info["variants"]
    b.close()


def test_preflight_findings_are_part_of_the_plan():
    short = planned(host=facts(machine={"storage": {"free_bytes": 100 << 20}}))  # jmh needs 500 MB
    assert short.preflight_failed and short.run_info["preflight"] == [f.to_dict() for f in short.preflight]
    assert "free-disk" in {f.check for f in short.preflight if f.level == "fail"}
    assert not planned(host=facts(machine={"storage": {"free_bytes": 1 << 40}})).preflight_failed


def test_the_seed_is_the_runners_to_draw():
    with pytest.raises(ValueError, match="needs the seed"):
        runplan.plan_run(experiment.load("jmh"), Options("jmh"), facts())
    sequential = planned(variants="native,docker", order="sequential")
    assert [(s["variant"], s["repetition"]) for s in sequential.steps][:2] == [("native", 0), ("native", 1)]


def test_the_runner_runs_the_plan_into_a_bundle_and_resumes_it_with_the_planned_parameters(tmp_path, monkeypatch):
    """The whole runner without Docker: the images, the JVM probe, the bridge and the steps stand in."""
    from pirex.core import machine
    from pirex.core.bundle import verify
    from pirex.runner import lock, run, variants

    monkeypatch.setattr(lock, "LOCK_DIR", tmp_path / "locks")
    monkeypatch.setattr(
        run, "image_for", lambda name, tag, platform: {"reference": f"{name}@sha256:1", "platform": str(platform)}
    )
    monkeypatch.setattr(run, "jvm_of", lambda image: {"java.vm.name": "OpenJDK 64-Bit Server VM"})
    monkeypatch.setattr(run, "bridge_gateway", lambda: "172.17.0.1")
    monkeypatch.setattr(machine, "record", lambda *a, **kw: {"schema": "pirex-machine/1"})
    ran = []

    def step(variant, image_ref, argv, out, workdir, timeout, name, platform=None):
        ran.append(argv)
        if len(ran) == 2:
            raise KeyboardInterrupt
        for f in ("stdout.txt", "stderr.txt", "raw-baseline.csv"):
            (out / f).write_text("1;2;3;4\n")
        return variants.StepRun(argv, 0, 1.5)

    monkeypatch.setattr(variants, "run_step", step)
    opts = Options("moobench", variants="docker", order="sequential", results_dir=tmp_path, overrides=SMALL_MOOBENCH)
    with pytest.raises(KeyboardInterrupt):
        run.run(opts)
    (path,) = (tmp_path / "moobench").iterdir()
    assert Bundle.open(path).status == "partial" and len(Bundle.open(path).remaining_steps()) == 2
    run.resume(path)
    b = Bundle.open(path)
    assert b.status == "complete" and verify(path) == [] and len(ran) == 4
    assert b.run_info().doc["schema_version"] == 1 and b.run_info().jvm["java.vm.name"].endswith("Server VM")
    for s in b.steps():
        assert s.info()["schema_version"] == 1 and s.seconds == 1.5
        argv = s.info()["argv"]
        assert argv[argv.index("--recursion-depth") + 1] == "2" == str(s.param("recursion_depth"))
        assert argv[argv.index("--calls") + 1] == "10"


def test_a_step_is_read_from_its_manifest_record_and_a_duet_runs_its_repetitions_steps_together():
    records = [
        {"variant": "native", "repetition": 0, "cpus": "0"},
        {"variant": "docker", "repetition": 0, "cpus": "1"},
        {"variant": "docker", "repetition": 1, "cpus": "0", "params": {"n": 2}},
        {"variant": "native", "repetition": 1, "cpus": "1"},
    ]
    steps = [runplan.Step.of(r) for r in records]
    assert steps[2] == runplan.Step("docker", 1, {"n": 2}, "0") and steps[2].key == ("docker", 1)
    assert str(steps[0]) == "native repetition 0" and steps[0].params is None
    assert runplan.groups(steps, together=True) == [steps[:2], steps[2:]]
    assert runplan.groups(steps, together=False) == [[s] for s in steps]
