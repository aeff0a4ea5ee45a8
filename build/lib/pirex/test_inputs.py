"""No input a user can give ends in a traceback: generated experiment files, .env files and damaged
bundles (truncated, wrong types, missing keys, binary garbage) fed to the loaders, to `pirex verify`
and to `pirex table` give a PirexError, or one line `pirex: error: ...` and a non-zero exit, and leave
the bundle as it was. Property-based (hypothesis), derandomized so that every run tries the same."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pirex.cli.main import main
from pirex.core import experiment
from pirex.core.bundle import Bundle, verify
from pirex.core.errors import PirexError
from pirex.runner import compose

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
JMH_RESULT = {
    "benchmark": "io.github.pirexbench.jmh.RecursionBenchmark.b1_default",
    "mode": "thrpt",
    "primaryMetric": {"score": 10.0, "scoreUnit": "ops/s", "rawData": [[9.0, 11.0]]},
}


# --- experiment files ------------------------------------------------------------------------------------------------


def _paths(doc, prefix=()):
    """Every path to a value inside a nested doc."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


JMH_DOC = yaml.safe_load(experiment.path_of("jmh").read_text())
JMH_PATHS = [p for p in _paths(JMH_DOC) if p]


@st.composite
def experiment_docs(draw):
    """The jmh experiment with one to three values replaced by anything or removed."""
    doc = json.loads(json.dumps(JMH_DOC))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(JMH_PATHS))
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            if draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(JSONISH)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the way there
    return doc


@SETTINGS
@given(doc=experiment_docs())
def test_a_damaged_experiment_file_is_a_pirex_error(doc, tmp_path):
    try:
        experiment.parse(doc, tmp_path / "experiment.yaml")
    except PirexError as e:
        assert str(e).strip(), "the message names the problem"


@SETTINGS
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_as_an_experiment_file_are_a_pirex_error(data, tmp_path):
    f = tmp_path / "x" / "experiment.yaml"
    f.parent.mkdir(exist_ok=True)
    f.write_bytes(data)
    with contextlib.suppress(PirexError):
        experiment.load(f)


@SETTINGS
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_as_an_env_file_are_settings_or_a_pirex_error(data, tmp_path):
    f = tmp_path / "run.env"
    f.write_bytes(data)
    with contextlib.suppress(PirexError):
        assert isinstance(compose.read_env_file(f), dict)


# --- damaged bundles -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory) -> Path:
    """A small complete jmh bundle, as the runner writes it."""
    root = tmp_path_factory.mktemp("results")
    b = Bundle.create(
        root,
        "jmh",
        "quick",
        {**experiment.load("jmh").resolve("quick"), "repetitions": 2},
        ["native", "docker"],
        [("native", 0), ("docker", 0)],
        {"jmh": {"reference": "r", "digest": "sha256:0"}},
        {"version": "test", "commit": "0"},
    )
    (b.path / "run.json").write_text(json.dumps({"order": "sequential", "seed": 1, "skipped_variants": {}}))
    b.write_machine(before={"schema": "pirex-machine/1"}, after={"schema": "pirex-machine/1"})
    for v in ("native", "docker"):
        with b.step(v, 0) as out:
            (out / "jmh.json").write_text(json.dumps([JMH_RESULT], indent=2) + "\n")
            (out / "stdout.txt").write_text("ok\n")
    assert b.finish() == "complete"
    assert verify(b.path) == []
    return b.path


DAMAGEABLE = ("manifest.json", "machine.json", "native/0/jmh.json", "docker/0/jmh.json")
# What each manifest key must be (bundle.py's format); a value of another type is damage.
MANIFEST_TYPES = {
    "schema_version": int,
    "run_id": str,
    "experiment": str,
    "profile": str,
    "parameters": dict,
    "variants": list,
    "tool": dict,
    "started": str,
    "ended": (str, type(None)),
    "resumed": list,
    "status": str,
    "plan": list,
    "completed": list,
    "files": dict,
}
JMH_TYPES = {"benchmark": str, "primaryMetric": dict}


def _wrong(kind):
    return JSONISH.filter(lambda v: not isinstance(v, kind) or (isinstance(v, bool) and kind is int))


@st.composite
def damages(draw):
    """(file, how, key, value): how one file of the bundle is damaged; every one breaks what table 1 reads."""
    f = draw(st.sampled_from(DAMAGEABLE))
    how = draw(st.sampled_from(("truncate", "garbage", "wrong-type", "missing-key")))
    if how == "truncate":
        return f, how, draw(st.floats(0, 0.98)), None
    if how == "garbage":
        return f, how, draw(st.binary(min_size=1, max_size=64)), None
    if f == "manifest.json":
        key = draw(st.sampled_from(sorted(MANIFEST_TYPES)))
        return f, how, key, draw(_wrong(MANIFEST_TYPES[key]))
    if f == "machine.json":
        return f, how, "before", draw(_wrong(dict))
    key = draw(st.sampled_from(("", *JMH_TYPES, "rawData")))  # "": the whole file of another type
    kind = {"": list, "rawData": list}.get(key) or JMH_TYPES[key]
    how = "wrong-type" if key == "" else how  # (an empty list of results is a table's business, not damage)
    return f, how, key, draw(_wrong(kind).filter(lambda v: v != {} and v != ""))


def _damage(bundle: Path, damage) -> None:
    name, how, arg, value = damage
    f = bundle / name
    data = f.read_bytes()
    if how == "truncate":
        f.write_bytes(data[: min(int(len(data) * arg), len(data) - 3)])  # "]\n" or "}\n" cut: never valid
        return
    if how == "garbage":
        f.write_bytes(arg + b"\xff\x00" + data[len(arg) :])
        return
    doc = json.loads(data)
    target = doc[0] if isinstance(doc, list) else doc
    if arg == "rawData":
        target = target["primaryMetric"]
    if arg == "":
        doc = value
    elif how == "missing-key":
        target.pop(arg)
    else:
        target[arg] = value
    f.write_text(json.dumps(doc))


def _digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in path.rglob("*") if p.is_file()
    }


def _pirex(*args: str) -> tuple[int, str, str]:
    """`pirex ARGS` in this process, through the console script's main(): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["pirex", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


@SETTINGS
@given(damage=damages())
def test_a_damaged_bundle_is_refused_in_one_line_and_left_as_it_was(damage, good_bundle, tmp_path):
    bundle = tmp_path / "jmh" / good_bundle.name
    shutil.rmtree(bundle.parent, ignore_errors=True)
    shutil.copytree(good_bundle, bundle)
    _damage(bundle, damage)
    before = _digest(bundle)

    try:
        Bundle.open(bundle)
    except PirexError:
        pass
    assert isinstance(verify(bundle), list)

    code, _, err = _pirex("table", "jmh", str(bundle), "--results-dir", str(tmp_path), "--out", str(tmp_path / "t"))
    if code != 0:
        lines = err.strip().splitlines()
        assert lines and lines[-1].startswith("pirex: error: ") and "Traceback" not in err, err
        assert len([ln for ln in lines if ln.startswith("pirex: error:")]) == 1
    assert code != 0, f"{damage} was accepted"
    assert _digest(bundle) == before, "the bundle must be left untouched"


def test_a_file_as_results_dir_is_one_line(tmp_path):
    code, _, err = _pirex("run", "jmh", "--results-dir", "/etc/hostname")
    assert code != 0 and err.strip() == (
        "pirex: error: --results-dir /etc/hostname is a file, not a directory: name a directory (default: results/)"
    )


def test_a_truncated_jmh_json_names_the_file_and_verify(good_bundle, tmp_path):
    bundle = tmp_path / "jmh" / good_bundle.name
    shutil.copytree(good_bundle, bundle)
    f = bundle / "docker" / "0" / "jmh.json"
    f.write_bytes(f.read_bytes()[:40])
    code, _, err = _pirex("table", "jmh", str(bundle), "--out", str(tmp_path / "t"))
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert str(f) in err and f"pirex verify {bundle}" in err
