"""pirex run moobench, end to end: baseline and Kieker (dump and binary file writer) natively
and in Docker, OpenTelemetry in Docker, an emulated arm64 smoke run, and the fluctuation
matrix with its skipped cases and stand-in recorded. Counts are cut down (--set). And, without
Docker: the image's stand-alone default is experiment.yaml's quick profile."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import pytest

from pirex.core import experiment
from pirex.core.bundle import Bundle, verify
from pirex.core.paths import REPO
from pirex.runner import run as runner

from .conftest import TEST_TAG

docker = pytest.mark.docker

SMALL = {"repetitions": 2, "calls": 2000, "sleep": 0}


def raw_rows(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f, delimiter=";") if r]
    return [r for r in rows if r[0].isdigit()]  # data rows: thread;duration_ns;used_heap;gc_count_delta


@docker
def test_kieker_native_and_docker(built, tmp_path):
    configs = "baseline,kieker-dump,kieker-binary"
    path = runner.run(
        runner.Options(
            "moobench",
            "quick",
            "native,docker",
            "interleaved",
            5,
            tmp_path,
            TEST_TAG,
            {**SMALL, "configurations": configs},
        )
    )
    assert verify(path) == []
    b = Bundle.open(path)
    assert b.manifest["status"] == "complete" and sorted(b.manifest["variants"]) == ["docker", "native"]
    for step in b.manifest["plan"]:
        d = b.step_dir(step["variant"], step["repetition"])
        for config in configs.split(","):
            rows = raw_rows(d / f"raw-{config}.csv")
            assert len(rows) == 2000, f"{step}: {config}: one row per top-level call"
            assert all(len(r) == 4 and int(r[1]) > 0 for r in rows)
    run = json.loads((path / "run.json").read_text())
    assert "Server VM" in run["jvm"]["java.vm.name"]


@docker
def test_opentelemetry_in_docker(built, tmp_path):
    params = {**SMALL, "repetitions": 1, "configurations": "baseline,opentelemetry"}
    path = runner.run(runner.Options("moobench", "quick", "docker", "sequential", 1, tmp_path, TEST_TAG, params))
    b = Bundle.open(path)
    d = b.step_dir("docker", 0)
    assert len(raw_rows(d / "raw-opentelemetry.csv")) == 2000
    assert "opentelemetry" in (d / "stdout.txt").read_text().lower()


@docker
def test_arm64_emulated_smoke(built, tmp_path):
    opts = runner.Options(
        "moobench",
        "quick",
        "docker",
        "sequential",
        1,
        tmp_path,
        TEST_TAG,
        {**SMALL, "repetitions": 1, "calls": 500, "configurations": "baseline,kieker-dump"},
        platform="linux/arm64",
    )
    b = Bundle.open(runner.run(opts))
    assert b.manifest["images"]["moobench"]["platform"] == "linux/arm64"
    assert len(raw_rows(b.step_dir("docker", 0) / "raw-kieker-dump.csv")) == 500


@docker
def test_fluctuation_matrix_records_its_cases(built, tmp_path):
    opts = runner.Options(
        "moobench",
        "quick",
        None,
        "sequential",
        1,
        tmp_path,
        TEST_TAG,
        {"repetitions": 1, "calls": 1000, "sleep": 0},
        matrix="fluctuation",
    )
    path = runner.run(opts)
    b = Bundle.open(path)
    run = json.loads((path / "run.json").read_text())
    assert run["matrix"]["name"] == "fluctuation" and run["matrix"]["runs_as"] == "native"
    # SPASS-meter is bring-your-own: Kieker stands in, the SPASS-only case is skipped with the reason
    assert "Kieker with its text file writer" in run["matrix"]["fallback"]["reason"]
    assert "SPASS-meter is not in the image" in run["skipped_variants"]["time-only"]
    ran = set(b.manifest["variants"])
    assert {"base", "parallel-gc", "ram-drive", "one-core", "depth-1", "no-swap"} <= ran
    for clock in ("max-clock", "min-clock"):  # no cpufreq in a VM: skipped with the reason, not run as base
        assert clock in ran or "cpufreq" in run["skipped_variants"][clock]
    assert run["variants"]["one-core"]["taskset"] == "0"
    # the base pins the Pi 3 JVM's serial collector; parallel-gc changes only that; settle is on the command line
    assert run["variants"]["base"]["parameters"] == {"jvm_options": "-XX:+UseSerialGC"}
    assert run["variants"]["depth-1"]["parameters"] == {"jvm_options": "-XX:+UseSerialGC", "recursion_depth": 1}
    assert run["variants"]["parallel-gc"]["parameters"] == {"jvm_options": "-XX:+UseParallelGC"}
    assert b.manifest["parameters"]["settle"] == "no"
    for case, flag in (("base", "-XX:+UseSerialGC"), ("parallel-gc", "-XX:+UseParallelGC")):
        argv = json.loads((b.step_dir(case, 0) / "step.json").read_text())["argv"]
        assert argv[argv.index("--jvm-options") + 1] == flag and argv[argv.index("--settle") + 1] == "no"
        assert f" {flag} " in (b.step_dir(case, 0) / "stdout.txt").read_text()  # what the JVM was started with
    # the base's ondemand governor: set where cpufreq exists, else every case says it was not
    if not list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        assert "ondemand governor was not set" in " ".join(run["matrix"]["notes"]["base"])
    assert "tmpfs" in run["variants"]["ram-drive"]["workdir"]
    for case in ran:
        d = b.step_dir(case, 0)
        assert len(raw_rows(d / "raw-baseline.csv")) == 1000 and len(raw_rows(d / "raw-kieker-text.csv")) == 1000
        # the stand-in wrote its records (to the RAM drive in ram-drive), its pool bounded as the fallback says
        assert "Kieker wrote" in (d / "stdout.txt").read_text() and "maxLogFiles=4" in (d / "stdout.txt").read_text()
    argv = json.loads((b.step_dir("depth-1", 0) / "step.json").read_text())["argv"]
    assert argv[argv.index("--recursion-depth") + 1] == "1" and argv[argv.index("--kieker-log-files") + 1] == "4"


def test_the_images_stand_alone_default_is_the_quick_profile():
    """`docker run IMAGE` runs the quick profile's loops (images/moobench/pirex-moobench's standalone) with
    the numbers of profiles/quick.env, rendered from experiment.yaml (pirex/images/test_settings.py checks the
    file is current). Every option it gives must be what the runner would render."""
    body = (REPO / "images" / "moobench" / "pirex-moobench").read_text().split("standalone() {", 1)[1]
    names = dict(re.findall(r"(q_\w+)=\$([A-Z_]+)\b", body))  # q_calls -> CALLS, the profile file's name
    lines = (REPO / "images" / "moobench" / "profiles" / "quick.env").read_text().splitlines()
    profile = {k: (shlex.split(v) or [""])[0] for k, _, v in (ln.partition("=") for ln in lines if ln[:1] != "#")}
    standalone = {opt: profile[names[q]] for opt, q in re.findall(r'(--[\w-]+) "\$(q_\w+)"', body)}
    exp = experiment.load("moobench")
    quick = exp.resolve("quick")
    argv = experiment.render(exp.command, {**quick, "output": "/results", "workdir": "/work"})
    rendered = dict(zip(argv[2::2], argv[3::2], strict=True))  # after "pirex-moobench run"
    assert int(profile[names["q_loops"]]) == quick["repetitions"]
    assert standalone == {k: v for k, v in rendered.items() if k not in ("--output", "--workdir")}
    assert rendered["--jvm-options"] == ""  # the image's default: no JVM options


def test_the_image_knows_exactly_the_declared_configurations():
    """pirex-moobench's KNOWN (how to run each) and experiment.yaml's choices (what may be asked) name the same."""
    script = (REPO / "images" / "moobench" / "pirex-moobench").read_text()
    known = re.search(r'^KNOWN="([^"]*)"$', script, re.M).group(1).split()
    assert known == list(experiment.load("moobench").declared["configurations"].choices)
