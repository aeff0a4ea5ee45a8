"""The calibration bundle (reproduce/calibrate.py) without Docker: written from a Result, verified, read back,
found per device, refused when damaged; what a reproduction's report says of it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pirex.analysis import calibration as cal
from pirex.analysis.interface import RunValue
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.reproduce import calibrate

TOOL = {"version": "test", "commit": "0" * 40}


def _source(tmp_path):
    """An A/A bundle as the runner leaves one (no steps needed here: the analysis is given)."""
    b = Bundle.create(tmp_path / "runs", "jmh", "quick", {"repetitions": 40}, ["native", "native-aa"], [], {}, TOOL)
    b.write_machine(before={"hostname": "pi", "cpu_model": "Cortex-A72"})
    b.finish()
    return b.path


def _result(kind: str = "normal") -> calibrate.Result:
    rng = np.random.default_rng(1)
    a = np.exp(rng.normal(0, 0.01, 60))
    b = np.exp(rng.normal(0, 0.01, 60))
    if kind == "ar1":
        e = rng.normal(0, 0.01, 60)
        for t in range(1, 60):
            e[t] += 0.9 * e[t - 1]
        b = a * np.exp(e)
    s = cal.Series("B1", a, b)
    cells = tuple(("interleaved", c) for c in cal.cells(s, sizes=(5, 10)))
    modes = tuple(calibrate.mode_rows("interleaved", s))
    return calibrate.Result("jmh", "pi", cells, modes, (), ({"run_id": "x"},), {"interleaved": 60})


def test_written_verified_read_and_found_for_its_device(tmp_path):
    out = calibrate.write(_result(), tmp_path, [_source(tmp_path)], TOOL)
    c = calibrate.read(out)
    assert c.experiment == "jmh" and c.device == "pi"
    assert calibrate.newest(tmp_path, "jmh", "pi") == c
    assert calibrate.newest(tmp_path, "jmh", "another") is None
    assert "| interleaved | B1 | t-log | 5 |" in (out / calibrate.TABLE).read_text()
    cover, at = c.coverage("t-log", 7, "interleaved")
    assert at == 5 and 0.9 < cover <= 1.0
    assert c.coverage("t-log", 3, "interleaved")[1] == 5  # below the smallest size: the smallest
    assert c.coverage("duet-half-t", 5, "interleaved") is None


def test_a_damaged_or_foreign_calibration_is_refused(tmp_path):
    out = calibrate.write(_result(), tmp_path, [_source(tmp_path)], TOOL)
    with pytest.raises(PirexError, match="not a calibration bundle"):
        calibrate.read(tmp_path / "runs" / "jmh")
    doc = json.loads((out / calibrate.FILE).read_text())
    doc["cells"][0]["coverage"] = 0.5
    (out / calibrate.FILE).write_text(json.dumps(doc))
    with pytest.raises(PirexError, match="fails verification"):
        calibrate.read(out)
    assert calibrate.newest(tmp_path, "jmh", "pi") is None  # a damaged one answers nothing
    with pytest.raises(PirexError, match="fails verification"):
        calibrate.Calibrations(tmp_path, [out])  # given by hand: refused before anything runs


def test_dependent_noise_undercovers_and_the_reason_names_the_calibration(tmp_path):
    out = calibrate.write(_result("ar1"), tmp_path, [_source(tmp_path)], TOOL)
    c = calibrate.read(out)
    why = c.undercovers("t-log", 10, "interleaved", "B1")
    assert why and "below 93 %" in why and out.name in why
    # a metric the calibration has not: the method's worst over those it has
    assert c.undercovers("t-log", 10, "interleaved", "B7") == why


def test_the_reports_line_names_the_calibrations_used_or_says_there_is_none(tmp_path):
    calibrate.write(_result(), tmp_path, [_source(tmp_path)], TOOL)
    found = calibrate.Calibrations(tmp_path)
    assert found.note().startswith("Calibration: none of this machine")
    value = RunValue("jmh", "b", "pi", "native", 0, "B1", 1.0, "ops/s")
    assert found.of("jmh", [value]) is not None and found.of("moobench", [value]) is None
    assert found.note().startswith("Calibration: jmh ") and "on pi" in found.note()


def test_a_calibration_needs_enough_repetitions():
    with pytest.raises(PirexError, match="at least 10 repetitions"):
        calibrate.aa_runs(calibrate.Request("jmh", repetitions=6), None, None, print)
    with pytest.raises(PirexError, match="does not suit a duet"):
        calibrate.aa_runs(calibrate.Request("fork", designs=("duet",)), None, None, print)


def test_a_duets_half_effect_is_no_second_mode_of_its_sides():
    """In a duet each side alternates the CPU halves: a 3 % half against 0.5 % noise makes each side's values two
    clusters by design, which the second-mode check must not take for a JIT's second mode."""
    rng = np.random.default_rng(4)
    h = np.array([1.0, -1.0] * 20)
    base = np.exp(-0.03 * h + rng.normal(0, 0.005, 40))  # the variant on the other half
    copy = np.exp(0.03 * h + rng.normal(0, 0.005, 40))
    s = cal.Series("B1", base, copy, h)
    assert not any(c.failed for _, c in cal.modes(s)), [c.text() for _, c in cal.modes(s)]
    plain = cal.Series("B1", base, copy)  # the same values read as if interleaved: two modes each
    assert all(c.failed for _, c in cal.modes(plain))
