"""Property tests: whatever a claims file or a --set value holds, loading it gives a PirexError
with a one-line message or a valid result, never another exception (issue: no traceback for any
input)."""

import copy

import yaml
from hypothesis import given
from hypothesis import strategies as st

from pirex.core import experiment
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS
from pirex.reproduce import claims
from pirex.test_inputs import JSONISH, SETTINGS

ICPE18 = yaml.safe_load((PAPERS / "icpe18" / "claims.yaml").read_text())
KEYS = sorted(claims.KEYS)


@st.composite
def damaged_claims(draw):
    doc = copy.deepcopy(ICPE18)
    i = draw(st.integers(0, len(doc["claims"]) - 1))
    how = draw(st.sampled_from(("replace", "drop", "nest")))
    key = draw(st.sampled_from(KEYS))
    if how == "drop":
        doc["claims"][i].pop(key, None)
    elif how == "replace":
        doc["claims"][i][key] = draw(JSONISH)
    else:
        ratio = doc["claims"][i].get("ratio") or {}
        ratio[draw(st.sampled_from(("metric", "numerator", "denominator")))] = draw(JSONISH)
        doc["claims"][i]["ratio"] = ratio
    return doc


@SETTINGS
@given(doc=damaged_claims())
def test_a_damaged_claims_file_is_one_pirex_error_or_loads(doc, tmp_path):
    f = tmp_path / "claims.yaml"
    for name in ("table1.csv", "table2.csv", "table3.csv", "table5.csv"):
        (tmp_path / name).write_text((PAPERS / "icpe18" / name).read_text())
    f.write_text(yaml.safe_dump(doc))
    try:
        claims.load(f)
    except PirexError as e:
        assert "\n" not in str(e) and str(f) in str(e)


@SETTINGS
@given(raw=st.binary(max_size=200))
def test_a_claims_file_of_any_bytes_is_one_pirex_error_or_loads(raw, tmp_path):
    f = tmp_path / "claims.yaml"
    f.write_bytes(raw)
    try:
        claims.load(f)
    except PirexError as e:
        assert "\n" not in str(e)


@SETTINGS
@given(
    name=st.sampled_from(["repetitions", "forks", "time", "benchmarks", "sink_port", "nope", ""]),
    value=st.text(max_size=12),
)
def test_any_set_value_is_typed_or_one_pirex_error(name, value):
    exp = experiment.load("jmh")
    try:
        out = exp.overrides([f"{name}={value}"])
    except PirexError as e:
        assert "\n" not in str(e)
    else:
        exp.declared[name].check(out[name])
