"""pirex/core/schema.py and the schemas of pirex/core/schemas: every file pirex ships passes its schema, and a
problem is named where its words are (the readers' own tests check the whole messages)."""

import copy

import jsonschema
import pytest
import yaml

from pirex.core import experiment, schema
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS, REPO
from pirex.core.test_bundle import make, manifest, run_all


@pytest.mark.parametrize("name", schema.NAMES)
def test_each_schema_is_valid_draft_7_and_published(name):
    assert schema.load(name)["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert f"<!-- schema: {name} -->" in (REPO / "docs" / "schemas.md").read_text()


def test_every_shipped_file_and_a_written_manifest_pass_their_schema(tmp_path):
    files = {
        "experiment": sorted((REPO / "experiments").glob("*/experiment.yaml")),
        "claims": sorted(PAPERS.glob("*/claims.yaml")),
    }
    assert all(files.values()), files
    for name, paths in files.items():
        for f in paths:
            assert schema.first_problem(name, yaml.safe_load(f.read_text())) is None, f
    b = make(tmp_path)
    assert schema.first_problem("manifest", manifest(b)) is None  # running
    assert schema.first_problem("manifest", manifest(run_all(b))) is None  # complete


JMH = yaml.safe_load((REPO / "experiments" / "jmh" / "experiment.yaml").read_text())


def broken(change):
    doc = copy.deepcopy(JMH)
    change(doc)
    return schema.first_problem("experiment", doc)


def test_a_problem_is_named_at_its_nearest_words():
    p = broken(lambda d: d["command"].append(["nested"]))  # an item is wrong: the list is named, whole
    assert (p.key(), p.expected) == ("command", "a non-empty list of strings")
    assert p.found == JMH["command"] + [["nested"]]
    p = broken(lambda d: d["profiles"].update(quick=3))
    assert (p.key(), p.expected, p.found) == ("profiles.quick", "a mapping of parameter to value", 3)


def test_missing_keys_are_said_as_the_schema_asks():
    p = broken(lambda d: d.pop("title"))  # default: the key, missing, with its words
    assert (p.key(), p.missing, p.expected) == ("title", "title", "a one-line title")
    p = broken(lambda d: d["profiles"].pop("paper"))  # the object's x-missing words
    assert (p.key(), p.expected) == ("profiles.paper", "every experiment has quick and paper")
    p = broken(lambda d: d["outputs"][0].pop("path"))  # x-missing: self: the object that lacks it
    assert (p.key(), p.missing, p.expected) == ("outputs[0]", "", "a mapping with path and format")
    p = broken(lambda d: d["outputs"][0].pop("format"))  # x-default: the default the reader would refuse
    assert (p.key(), p.found) == ("outputs[0].format", None)


def test_unknown_keys_and_key_names():
    p = broken(lambda d: d.update(colour=1, color=2))
    assert (p.at, p.unknown) == ((), ("color", "colour"))
    p = broken(lambda d: d.update(parameters={"Depth": {"type": "int", "default": 1}}))  # propertyNames: the key
    assert (p.key(), p.found) == ("parameters.Depth", "Depth")
    assert p.expected.startswith("a lowercase name, not one the runner supplies")


def test_claims_words_take_facts_and_name_clashing_keys():
    doc = yaml.safe_load((PAPERS / "icpe18" / "claims.yaml").read_text())
    doc["claims"][0]["experiment"] = 7
    p = schema.first_problem("claims", doc, {"experiments": "fork, jmh"})
    assert (p.key(), p.expected) == ("claims[0].experiment", "one of fork, jmh")
    agree = next(i for i, c in enumerate(doc["claims"]) if "metrics" in c)
    doc = yaml.safe_load((PAPERS / "icpe18" / "claims.yaml").read_text())
    doc["claims"][agree]["ratio"] = {}
    p = schema.first_problem("claims", doc)
    assert p.at == ("claims", agree) and p.found == sorted(doc["claims"][agree])  # x-found: keys
    del doc["claims"][agree]["ratio"], doc["claims"][agree]["across"]
    p = schema.first_problem("claims", doc)  # dependencies: metrics needs across
    assert (p.key(), p.expected) == (f"claims[{agree}].metrics", "a claim with across: devices or storages")


@pytest.mark.parametrize("value", [1.0, True, "1"])
def test_an_integer_is_what_python_reads_as_one(value, tmp_path):
    """Draft 7 would take 1.0 as an integer; a step's repetition names a folder, so only 1 is."""
    doc = manifest(make(tmp_path))
    doc["completed"] = [{"variant": doc["variants"][0], "repetition": value}]
    p = schema.first_problem("manifest", doc)
    assert p is not None and p.key() == "completed"  # x-report-depth 1: the top-level key


def test_the_validator_is_one_jsonschema_3_2_to_4_x_read_alike():
    assert jsonschema.Draft7Validator.META_SCHEMA["$schema"].startswith("http://json-schema.org/draft-07")
    with pytest.raises(jsonschema.SchemaError):
        schema.Validator.check_schema({"type": "no-such-type"})


JPA = yaml.safe_load((REPO / "experiments" / "jpa-rest" / "experiment.yaml").read_text())
FORK = yaml.safe_load((REPO / "experiments" / "fork" / "experiment.yaml").read_text())


@pytest.mark.parametrize(
    ("base", "change", "message"),
    [
        (FORK, lambda d: d["parameters"]["raw_events"].update(resolve=[]), "raw_events.resolve: expected one of"),
        (JMH, lambda d: d["parameters"]["depth"].update({1: 2}), r"parameters.depth\[1\]: expected keys among"),
        (JMH, lambda d: d["durations"].update({None: 3}), "durations.None: expected machine, score, first"),
        (JPA, lambda d: d["deployment"]["setup"].update(needs=[{}]), "deployment.setup.needs: expected roles among"),
        (JPA, lambda d: d["deployment"]["swarm"]["stages"][0].update(service=[]), r"stages\[0\].service: expected a"),
        (JPA, lambda d: d["deployment"]["compose"].update(hosts="x"), "compose.hosts: expected paths of compose"),
    ],
)
def test_a_value_of_the_wrong_kind_where_a_name_is_looked_up_is_named(base, change, message):
    """Found by fuzzing the experiment files: each of these was a TypeError or AttributeError before the schemas."""
    doc = copy.deepcopy(base)
    change(doc)
    with pytest.raises(PirexError, match=message):
        experiment.parse(doc, experiment.path_of(doc["id"]))
