"""pirex run fork, end to end: the thesis's modes natively and in Docker with the declared
privileges, and an emulated arm64 run in which hardware counters are honestly unsupported."""

from __future__ import annotations

import csv
import json
import os

import pytest

from pirex.core import pmu
from pirex.core.bundle import Bundle, verify
from pirex.runner import run as runner

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SMALL = {"repetitions": 1, "fork_repetitions": 3, "sizes": "1,8"}


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_counters(d):
    """Each counter is either supported (a value in every row) or unsupported with a reason and empty cells."""
    rows, counters = read(d / "fork.csv"), read(d / "counters.csv")
    assert rows and counters
    for c in counters:
        cells = [r[c["counter"]] for r in rows]
        if c["supported"] == "true":
            assert all(v != "" for v in cells), c
        else:
            assert c["reason"] and all(v == "" for v in cells), c
    return {c["counter"]: c for c in counters}


def test_native_and_docker_with_privileges(built, tmp_path):
    path = runner.run(runner.Options("fork", "quick", "native,docker", "interleaved", 3, tmp_path, TEST_TAG, SMALL))
    assert verify(path) == []
    b = Bundle.open(path)
    run = json.loads((path / "run.json").read_text())
    assert run["variants"]["docker"]["privileges"]["docker_args"] == [
        "--user",
        "0",
        "--cap-add",
        "SYS_ADMIN",
        "--security-opt",
        "systempaths=unconfined",
    ]
    assert "perf_event_open" in run["variants"]["native"]["privileges"]["why"]
    for variant in ("native", "docker"):
        d = b.step_dir(variant, 0)
        single = d / "single"
        counters = check_counters(single)
        # root with SYS_ADMIN: the software counters count the kernel, where fork does its work
        assert counters["task-clock"]["supported"] == "true" and counters["task-clock"]["kernel_included"] == "true"
        rows = read(single / "fork.csv")
        assert sorted({int(r["size_mb"]) for r in rows}) == [1, 8]
        assert len(rows) == 2 * 3 and all(int(r["wall_ns"]) > 0 for r in rows)
        for mode in ("single-migrate", "concurrent", "concurrent-migrate"):
            assert (d / mode / "fork.csv").exists() or (d / mode / "mode-skipped.txt").exists()
        # the thesis's first four cores, or every usable one on a smaller machine, said so
        argv = json.loads((d / "step.json").read_text())["argv"]
        assert argv[argv.index("--cores") + 1] == "0,1,2,3"
        usable = len(os.sched_getaffinity(0))
        processes = {r["key"]: r["value"] for r in read(d / "concurrent" / "meta.csv")}["processes"]
        assert processes == str(min(usable, 4)) and (d / "concurrent" / "cores-note.txt").exists() == (usable < 4)
    # raw_events: auto resolved from the machine record before the run; the manifest keeps what ran
    machine = json.loads((path / "machine.json").read_text())["before"]
    assert b.manifest["parameters"]["raw_events"] == pmu.choose(machine).spec


def test_arm64_emulated_counts_no_hardware_events(built, tmp_path):
    opts = runner.Options(
        "fork",
        "quick",
        "docker",
        "sequential",
        1,
        tmp_path,
        TEST_TAG,
        {**SMALL, "modes": "single"},
        platform="linux/arm64",
    )
    b = Bundle.open(runner.run(opts))
    counters = check_counters(b.step_dir("docker", 0) / "single")
    assert counters["cycles"]["supported"] == "false" and counters["instructions"]["supported"] == "false"
