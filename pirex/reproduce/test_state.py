import json
from pathlib import Path

import pytest

from pirex.core.errors import PirexError
from pirex.reproduce.plan import INTERLEAVED
from pirex.reproduce.state import STATE, Budget, ReproductionState, Running

# a state.json as the version before ReproductionState wrote it (reproduction.py's dict, its keys in that order):
# a budgeted reproduction killed in a round's extension, resumed once, judged
EARLIER = {
    "papers": ["icpe18"],
    "level": "kick-the-tires",
    "sets": {"jmh": {"forks": 2}},
    "aa": False,
    "experiments": ["jmh"],
    "inventory": None,
    "given": [],
    "storages": ["/mnt/sd"],
    "design": "duet",
    "confidence": 0.95,
    "artifact": "/lab/icpe18-artifact.tar",
    "artifact_images": {"jmh": "sha256:" + "a" * 64},
    "fleets": {},
    "hosts_failed": {},
    "commit": "0123456789abcdef0123456789abcdef01234567",
    "failed": {"moobench@quick": "over the budget (about 30 min, 2 min of it left)"},
    "score": 8810138.0,
    "estimates": {"jmh@quick": 120.5, "moobench@quick": None},
    "bundles": {"jmh@quick": ["results/jmh/20260101T000000Z-abcdef", "results/jmh/20260101T000500Z-fedcba"]},
    "ran": {"jmh@quick": 118.2},
    "attempts": [{"started": 1767225600.0, "ended": 1767225700.5}, {"started": 1767229200.0, "ended": 1767229300.0}],
    "partial": {"jmh@quick": 12.0},
    "running": {"key": "jmh@quick", "started": 1767229250.0, "extends": "icpe18-x@5"},
    "budget": {"given": [1800.0, 600.0], "spent": 240.3, "rounds": 2, "design": {"alpha": 0.05, "claims": {}}},
    "extended": {"jmh@quick": 60.1},
    "verdicts": {"icpe18:t1-b1-docker": "holds"},
    "reasons": {"icpe18:t1-b1-docker": "the ratio's interval lies inside the band"},
    "left_out": {},
}


def _text(doc: dict) -> str:
    return json.dumps(doc, indent=2) + "\n"  # how reproduction.py wrote it


def test_a_state_the_previous_version_wrote_reads_typed_and_writes_back_the_same(tmp_path):
    (tmp_path / STATE).write_text(_text(EARLIER))
    state = ReproductionState.read(tmp_path)
    assert state.level == "kick-the-tires" and state.design == "duet" and state.aa is False
    assert state.storages == [Path("/mnt/sd")] and state.artifact == Path("/lab/icpe18-artifact.tar")
    assert state.inventory is None and state.given == []
    assert state.bundles["jmh@quick"][0] == Path("results/jmh/20260101T000000Z-abcdef")
    assert state.running == Running("jmh@quick", 1767229250.0, "icpe18-x@5")
    assert state.budget == Budget([1800.0, 600.0], 240.3, 2, {"alpha": 0.05, "claims": {}})
    assert state.time_taken() == pytest.approx(100.5 + 100.0)
    state.write(tmp_path)
    assert (tmp_path / STATE).read_text() == _text(EARLIER)  # keys, values, order: a resume of it finds it as it was
    assert not list(tmp_path.glob(f".{STATE}*"))  # the temporary file renamed into place


def test_a_round_trip_keeps_every_value(tmp_path):
    state = ReproductionState(
        papers=["claims/mine/claims.yaml"],
        level="full",
        inventory=Path("lab/inventory.ini"),
        given=[Path("results/moobench")],
        running=Running("fork@quick", 10.5),
        bundles={"fork@quick": [Path("results/fork/a")]},
        attempts=[{"started": 1.0, "ended": 2.5}],
        verdicts={"fork24:c": "differs"},
        left_out={"results/fork/b": "changed"},
        calibrations=[Path("lab/calibration/jmh/20261202T031253Z-23695a")],
    )
    state.write(tmp_path)
    again = ReproductionState.read(tmp_path)
    assert again == state
    doc = state.to_json()
    assert (tmp_path / STATE).read_text() == json.dumps(doc, indent=2) + "\n"  # what is on disk
    assert doc["running"] == {"key": "fork@quick", "started": 10.5}  # no "extends" for a need's own run
    assert doc["inventory"] == "lab/inventory.ini" and doc["bundles"] == {"fork@quick": ["results/fork/a"]}
    assert "budget" not in doc and "extended" not in doc and "reasons" not in doc  # not set: not written
    assert list(doc)[-3:] == ["verdicts", "left_out", "calibrations"]  # --calibration's, which a resume judges with


def test_an_older_state_missing_keys_reads_with_the_defaults_a_reproduction_took(tmp_path):
    (tmp_path / STATE).write_text(json.dumps({"papers": ["icpe18"], "level": "kick-the-tires", "bundles": {}}))
    state = ReproductionState.read(tmp_path)
    assert (state.papers, state.level) == (["icpe18"], "kick-the-tires")
    assert state.sets == {} and state.experiments == [] and state.given == [] and state.storages == []
    assert state.design == INTERLEAVED and state.confidence is None and state.aa is None
    assert state.inventory is None and state.artifact is None and state.artifact_images is None
    assert state.fleets == {} and state.hosts_failed == {} and state.estimates == {} and state.ran == {}
    assert state.score is None and state.running is None and state.budget is None and state.extended is None
    assert state.attempts == [] and state.partial == {} and state.time_taken() is None  # from before attempts
    assert state.verdicts is None and state.reasons is None and state.left_out is None  # not judged yet
    assert ReproductionState() == ReproductionState.from_json({})  # a fresh reproduction: every default


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "no such file"),
        ('{"papers": ["icpe18"], "level": ', "not JSON"),
        (b"\xff\xfe\x00", "cannot be read"),
        ("[1, 2]", "not a JSON object"),
        ('{"papers": "icpe18"}', "'papers' is str"),
        ('{"bundles": {"jmh@quick": "results/jmh/x"}}', "'bundles' holds"),
        ('{"running": {"started": 1.0}}', "'running' names no run"),
        ('{"confidence": true}', "'confidence' is bool"),
        ('{"papers": ["icpe18"], "later": 1, "and": 2}', "keys pirex never writes: 'later', 'and'"),
    ],
    ids=["missing", "truncated", "not-text", "a-list", "wrong-type", "bundles", "running", "bool", "unknown-keys"],
)
def test_a_missing_or_broken_state_is_one_line_naming_the_file_and_what_to_do(tmp_path, content, why):
    if isinstance(content, bytes):
        (tmp_path / STATE).write_bytes(content)
    elif content is not None:
        (tmp_path / STATE).write_text(content)
    with pytest.raises(PirexError, match=why) as e:
        ReproductionState.read(tmp_path)
    text = str(e.value)
    assert "\n" not in text and text.startswith(str(tmp_path / STATE)) and "pirex reproduce" in text, text


def test_a_resume_judges_with_the_calibrations_its_first_attempt_was_given(tmp_path):
    from pirex.reproduce import reproduction

    given = [tmp_path / "calibration" / "jmh" / "20261202T031253Z-23695a"]
    state = ReproductionState(papers=["icpe18"], level="kick-the-tires", calibrations=given)
    opts = reproduction.Options([], resume=tmp_path)
    reproduction._resume_options(opts, tmp_path, state)
    assert opts.calibrations == given  # not this machine's newest, which may have changed since
    mine = [tmp_path / "brought"]
    opts = reproduction.Options([], resume=tmp_path, calibrations=mine)
    reproduction._resume_options(opts, tmp_path, state)
    assert opts.calibrations == mine  # one given to the resume wins
