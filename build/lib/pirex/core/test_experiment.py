"""The experiment loader: the committed experiments load, and every kind of mistake is named
by file, key and what was expected."""

import copy

import pytest
import yaml

from pirex.core import experiment
from pirex.core.errors import PirexError

JMH = yaml.safe_load(experiment.path_of("jmh").read_text())


def test_every_committed_experiment_loads():
    assert "jmh" in experiment.available()
    for exp_id in experiment.available():
        exp = experiment.load(exp_id)
        for profile in exp.profiles:
            # every name the runner may supply, so a name neither it nor the profile defines fails
            names = (*experiment.RUNTIME_NAMES, *(exp.deployment.urls() if exp.deployment else ()))
            runtime = {name: f"<{name}>" for name in names}
            experiment.render(exp.command, {**exp.resolve(profile), **runtime})


def test_jmh_profiles_match_the_paper():
    paper = experiment.load("jmh").resolve("paper")
    # ICPE'18: 10 fresh JVMs, 20 warm-up and 20 measurement iterations of 1 s, depth 10
    assert paper["repetitions"] * paper["forks"] == 10
    assert (paper["warmup_iterations"], paper["iterations"], paper["warmup_time"], paper["time"]) == (
        20,
        20,
        "1s",
        "1s",
    )
    assert paper["depth"] == 10


def test_variant_choice():
    exp = experiment.load("jmh")
    assert exp.pick_variants(None) == ("native", "docker")
    assert exp.pick_variants("docker,native,docker") == ("docker", "native")
    with pytest.raises(PirexError, match="no variant podman; this experiment offers native, docker"):
        exp.pick_variants("podman")


def broken(tmp_path, change):
    doc = copy.deepcopy(JMH)
    change(doc)
    f = tmp_path / "experiment.yaml"
    f.write_text(yaml.safe_dump(doc))
    return f


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("image"), "image: missing"),
        (lambda d: d.update(schema=2), "schema: expected 1"),
        (lambda d: d.update(color="red"), "unknown key color"),
        (lambda d: d.update(command="java -jar x"), "command: expected the command, as a list"),
        (lambda d: d["profiles"]["quick"].update(repetitions=0), "quick: repetitions=0: expected a whole number >= 1"),
        (lambda d: d["profiles"].pop("paper"), "profiles.paper: missing"),
        (lambda d: d.update(variants=["native", "vm"]), "variants: expected names among native, docker"),
        (lambda d: d.update(default_variants=["docker-host-network", "podman"]), "default_variants: expected"),
        (lambda d: d["command"].append("{dpeth}"), "command names dpeth, which neither parameters nor profiles"),
        (lambda d: d["outputs"][0].update(format="xml"), r"outputs\[0\].format: expected one of jmh-json"),
        (lambda d: d["needs"].update(memory_mb="lots"), "needs.memory_mb: expected a whole number of MB"),
        (lambda d: d["services"]["sink"].pop("ready_line"), "services.sink.ready_line: missing"),
        (lambda d: d["parameters"]["depth"].update(resolve="magic"), "parameters.depth.resolve: expected one of pmu-"),
        (lambda d: d["parameters"]["depth"].update(resolve="pmu-raw-events"), "parameters.depth.type: expected string"),
    ],
)
def test_problems_name_file_key_and_expectation(tmp_path, change, message):
    f = broken(tmp_path, change)
    with pytest.raises(PirexError, match=message) as e:
        experiment.load(f)
    assert str(f) in str(e.value)


def test_unknown_experiment_lists_the_known_ones():
    with pytest.raises(PirexError, match=r"no experiment 'jhm'.*experiments: .*jmh"):
        experiment.load("jhm")


def test_invalid_yaml(tmp_path):
    f = tmp_path / "experiment.yaml"
    f.write_text("id: [jmh\n")
    with pytest.raises(PirexError, match="not valid YAML"):
        experiment.load(f)


def _matrix_doc(cases):
    doc = copy.deepcopy(JMH)
    doc["matrices"] = {"m": {"runs_as": "native", "cases": cases}}
    return doc


def test_matrix_cases_build_on_their_base():
    exp = experiment.parse(
        _matrix_doc(
            [
                {"name": "base"},
                {"name": "ram", "base": "base", "ram_workdir_mb": 100},
                {"name": "one-core", "base": "ram", "cpus": 0, "set": {"depth": 1}},
                {"name": "two", "base": "ram", "cpus": "0-1"},
            ]
        ),
        experiment.path_of("jmh"),
    )
    m = exp.matrices["m"]
    assert [c.name for c in m.chain("one-core")] == ["base", "ram", "one-core"]
    one = m.resolved("one-core")
    assert (one.cpus, one.ram_workdir_mb, one.set) == ("0", 100, {"depth": 1})
    assert m.resolved("two").set == {}  # a sibling's change does not leak


@pytest.mark.parametrize(
    "cases, message",
    [
        ([{"name": "a", "base": "b"}, {"name": "b"}], r"cases\[0\].base: expected an earlier case's name"),
        (
            [{"name": "a", "set": {"nonsense": 1}}],
            r"cases\[0\].set: unknown parameter 'nonsense' \(parameters: benchmarks, depth",
        ),
        ([{"name": "a", "governor": "turbo"}], r"cases\[0\].governor: expected one of performance"),
        ([{"name": "docker"}], r"cases\[0\].name: expected a name not used by another case or variant"),
        ([{"name": "a", "cpus": "zero"}], r"cases\[0\].cpus: expected a CPU list"),
        ([{"name": "a", "cpus": "0-1-2"}], r"cases\[0\].cpus: expected a CPU list"),  # parse_cpus cannot read it
        ([{"name": "a", "colour": "red"}], r"cases\[0\]: expected keys among"),
    ],
)
def test_matrix_mistakes_are_named(cases, message):
    with pytest.raises(PirexError, match=message):
        experiment.parse(_matrix_doc(cases), experiment.path_of("jmh"))


def test_privileges_become_docker_arguments_and_need_a_reason():
    exp = experiment.load("fork")
    assert exp.privileges.docker_args() == [
        "--user",
        "0",
        "--cap-add",
        "SYS_ADMIN",
        "--security-opt",
        "systempaths=unconfined",
    ]
    doc = copy.deepcopy(JMH)
    doc["needs"]["privileges"] = {"root": True}
    with pytest.raises(PirexError, match="needs.privileges.why: expected a sentence"):
        experiment.parse(doc, experiment.path_of("jmh"))
    doc["needs"]["privileges"] = {"capabilities": ["sys admin"], "why": "x"}
    with pytest.raises(PirexError, match="capabilities: expected a list of capability names"):
        experiment.parse(doc, experiment.path_of("jmh"))


JPA = yaml.safe_load(experiment.path_of("jpa-rest").read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(place={"cache": "pirex.role=cache"}), r"swarm.place.cache: expected a role of the deploy"),
        (lambda s: s.update(place={"db": "db"}), r"swarm.place.db: expected a node label KEY=VALUE"),
        (lambda s: s["stages"][1].update(service="loadr"), r"swarm.stages\[1\].service: expected a service of comp"),
        (lambda s: s["stages"][0].update(until="healthy"), r"swarm.stages\[0\].until: expected one of running, comp"),
        (lambda s: s.update(stages=[]), r"swarm.stages: expected at least one stage"),
        (lambda s: s.update(stack="compose/none.yml"), r"swarm.stack: expected a stack file in this checkout"),
        (lambda s: s.update(nodes=3), r"deployment.swarm: expected a mapping with stack, place, stages"),
    ],
)
def test_swarm_mistakes_are_named(tmp_path, change, message):
    doc = copy.deepcopy(JPA)
    change(doc["deployment"]["swarm"])
    f = tmp_path / "experiment.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(PirexError, match=message):
        experiment.load(f)
