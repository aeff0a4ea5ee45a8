"""pirex run, end to end on this machine: the jmh experiment natively and in Docker, into a
verifiable bundle; interrupted and resumed. Counts are cut down (--set) to keep CI short."""

from __future__ import annotations

import json

import pytest

from pirex.analysis import jmh
from pirex.core.bundle import Bundle, verify
from pirex.runner import run as runner
from pirex.runner import variants

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SMALL = {"repetitions": 2, "warmup_iterations": 1, "iterations": 2}
SIX = {"b1_default", "b2_inline", "b3_dontInline", "b4_exclude", "b5_fileWrite", "b6_tcpSend"}


def benchmarks(step_dir):
    return {r["benchmark"].rsplit(".", 1)[1] for r in json.loads((step_dir / "jmh.json").read_text())}


def test_native_and_docker_into_a_verifiable_bundle(built, tmp_path):
    path = runner.run(runner.Options("jmh", "quick", "native,docker", "interleaved", 7, tmp_path, TEST_TAG, SMALL))
    assert verify(path) == []
    b = Bundle.open(path)
    m = b.manifest
    assert m["status"] == "complete" and m["profile"] == "quick" and m["parameters"]["repetitions"] == 2
    assert sorted(m["variants"]) == ["docker", "native"]
    assert [s["repetition"] for s in m["plan"]] == [0, 0, 1, 1]  # interleaved: each repetition runs both
    image = m["images"]["jmh"]
    assert image["digest"].startswith("sha256:") and image["platform"]
    for step in m["plan"]:
        assert benchmarks(b.step_dir(step["variant"], step["repetition"])) == SIX
    machine = json.loads((path / "machine.json").read_text())
    assert machine["before"]["schema"] == machine["after"]["schema"] == "pirex-machine/1"
    run = json.loads((path / "run.json").read_text())
    assert run["seed"] == 7 and run["order"] == "interleaved" and run["skipped_variants"] == {}
    assert "Server VM" in run["jvm"]["java.vm.name"] and run["jvm"]["java.runtime.version"].startswith("17")
    lines = jmh.table1(jmh.read_rows(path))  # Table 1: 6 benchmarks x 2 variants
    assert sorted((ln.benchmark, ln.variant) for ln in lines) == sorted(
        (f"B{i}", v) for i in range(1, 7) for v in ("docker", "native")
    )
    assert all(ln.summary.n == 2 * 2 and ln.summary.mean > 0 for ln in lines)  # 2 repetitions x 2 iterations


def test_interrupted_run_is_partial_and_resumes(built, tmp_path, monkeypatch):
    real = variants.run_step
    calls = []

    def interrupted_second_step(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(variants, "run_step", interrupted_second_step)
    opts = runner.Options(
        "jmh",
        "quick",
        "docker",
        "sequential",
        1,
        tmp_path,
        TEST_TAG,
        {**SMALL, "benchmarks": "RecursionBenchmark.b1_default"},
    )
    with pytest.raises(KeyboardInterrupt):
        runner.run(opts)
    (path,) = (tmp_path / "jmh").iterdir()
    b = Bundle.open(path)
    assert b.status == "partial" and len(b.remaining_steps()) == 1
    assert not list(path.glob("docker/*.tmp-*")), "no half-written step may remain"

    monkeypatch.setattr(variants, "run_step", real)
    runner.resume(path)
    b = Bundle.open(path)
    assert b.status == "complete" and not b.remaining_steps()
    assert verify(path) == []
    assert b.manifest["resumed"]


def test_docker_variant_on_emulated_arm64(built, tmp_path):
    """A smoke run: the arm64 image under QEMU through the same runner (numbers are not timings)."""
    opts = runner.Options(
        "jmh",
        "quick",
        "native,docker",
        "sequential",
        3,
        tmp_path,
        TEST_TAG,
        {**SMALL, "repetitions": 1, "benchmarks": "RecursionBenchmark.b1_default"},
        platform="linux/arm64",
    )
    path = runner.run(opts)
    b = Bundle.open(path)
    assert b.status == "complete" and b.manifest["variants"] == ["docker"]
    assert b.manifest["images"]["jmh"]["platform"] == "linux/arm64"
    assert (
        "native runs this machine's platform only"
        in json.loads((path / "run.json").read_text())["skipped_variants"]["native"]
    )
    result = json.loads((b.step_dir("docker", 0) / "jmh.json").read_text())
    assert [r["benchmark"].rsplit(".", 1)[1] for r in result] == ["b1_default"]
