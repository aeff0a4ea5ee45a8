"""Declared parameters: profiles, matrix cases and --set are checked against a type and a range
before anything runs, and every mistake names the parameter, the value and what is allowed."""

import pytest

from pirex.core import experiment
from pirex.core import params as P
from pirex.core.errors import PirexError
from pirex.core.test_experiment import broken


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("repetitions=-3", r"--set repetitions='-3': expected a whole number >= 1"),
        ("repetitions=0", r"--set repetitions='0': expected a whole number >= 1"),
        ("repetitions=many", r"--set repetitions='many': expected a whole number >= 1"),
        ("forks=1.5", r"--set forks='1.5': expected a whole number >= 1"),
        ("frobnicate=1", r"--set frobnicate: unknown parameter \(parameters: benchmarks, depth, forks"),
        ("time=fast", r"--set time='fast': expected a duration like 200ms"),
        ("sink_port=70000", r"--set sink_port='70000': expected a whole number from 0 to 65535"),
        ("repetitions", r"expected NAME=VALUE"),
    ],
)
def test_bad_set_values_are_refused_with_what_is_allowed(pair, message):
    with pytest.raises(PirexError, match=message):
        experiment.load("jmh").overrides([pair])


def test_set_values_take_the_declared_type():
    exp = experiment.load("jmh")
    assert exp.overrides(["repetitions=5", "time=2s", "benchmarks=Recursion.*"]) == {
        "repetitions": 5,
        "time": "2s",
        "benchmarks": "Recursion.*",
    }
    fork = experiment.load("fork")
    assert fork.overrides(["sizes=1,8"]) == {"sizes": "1,8"}
    with pytest.raises(PirexError, match=r"sizes='1,0': expected a comma-separated list of ints from 1 to 65536"):
        fork.overrides(["sizes=1,0"])
    with pytest.raises(PirexError, match=r"modes='single,twice': expected a .*list of names among single"):
        fork.overrides(["modes=single,twice"])
    assert experiment.load("jpa-rest").overrides(["mix=interleaved"]) == {"mix": "interleaved"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["profiles"]["quick"].update(forks=0), r"profiles.quick: forks=0: expected a whole number >= 1"),
        (lambda d: d["profiles"]["paper"].update(iterations="20"), r"profiles.paper: iterations='20': expected"),
        (lambda d: d["profiles"]["quick"].update(color=1), r"profiles.quick: unknown parameter 'color'"),
        (lambda d: d["profiles"]["quick"].pop("forks"), r"profiles.quick: no value for forks"),
        (lambda d: d["parameters"].update(depth=10), r"parameters.depth: expected a declaration like"),
        (lambda d: d["parameters"]["depth"].update(type="number"), r"parameters.depth.type: expected one of int"),
        (lambda d: d["parameters"]["depth"].update(default=0), r"parameters.depth.default: expected a whole number"),
        (lambda d: d["parameters"]["depth"].update(colour="red"), r"parameters.depth: unknown key colour"),
        (lambda d: d["parameters"].update(output={"type": "string"}), r"parameters.output: expected a lowercase"),
        (lambda d: d["services"]["sink"].update(port="nope"), r"services.sink.port: expected a declared int"),
    ],
)
def test_declaration_and_profile_mistakes_name_file_and_key(tmp_path, change, message):
    f = broken(tmp_path, change)
    with pytest.raises(PirexError, match=message) as e:
        experiment.load(f)
    assert str(f) in str(e.value)


def test_each_type_checks_its_range():
    p = P.declare("x", {"type": "float", "min": 0, "max": 1}, "x")
    assert p.parse("0.5") == 0.5
    for bad in ("2", "-0.1", "nan", "inf", "half"):
        with pytest.raises(PirexError):
            p.parse(bad)
    b = P.declare("b", {"type": "bool", "default": False}, "b")
    assert b.parse("true") is True and b.parse("0") is False
    with pytest.raises(PirexError, match="expected true or false"):
        b.parse("maybe")
    s = P.declare("s", {"type": "string", "pattern": "[a-z]+"}, "s")
    assert s.parse("abc") == "abc"
    with pytest.raises(PirexError, match=r"expected text matching \[a-z\]\+"):
        s.parse("ABC")
    with pytest.raises(PirexError, match="pattern: not a regular expression"):
        P.declare("s", {"type": "string", "pattern": "("}, "s")


def test_every_parameter_of_the_committed_experiments_is_declared_with_a_type():
    for exp_id in experiment.available():
        exp = experiment.load(exp_id)
        for profile in exp.profiles:
            values = exp.resolve(profile)
            assert set(values) == set(exp.declared), (exp_id, profile)
            for name, value in values.items():
                exp.declared[name].check(value)
