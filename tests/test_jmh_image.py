"""The jmh image on its own, as a user without the pirex tool runs it: the quick profile of
B1-B6 natively on amd64 writes JMH's JSON to a mounted /results; an arm64 container (QEMU)
runs B1 to show the jar works there (emulated numbers are not timings)."""

from __future__ import annotations

import json

import pytest

from pirex.core import experiment, proc
from pirex.images import publish, settings
from pirex.images.platforms import host, parse

pytestmark = pytest.mark.docker

BENCHMARKS = {
    "io.github.pirexbench.jmh.RecursionBenchmark.b1_default",
    "io.github.pirexbench.jmh.RecursionBenchmark.b2_inline",
    "io.github.pirexbench.jmh.RecursionBenchmark.b3_dontInline",
    "io.github.pirexbench.jmh.RecursionBenchmark.b4_exclude",
    "io.github.pirexbench.jmh.FileWriteBenchmark.b5_fileWrite",
    "io.github.pirexbench.jmh.TcpSendBenchmark.b6_tcpSend",
}


def run_jmh(built, platform, results, *cmd):
    ref = publish.pull_local("jmh", built.tag, platform)
    results.chmod(0o777)  # the image's user (1000) writes there
    proc.run(
        ["docker", "run", "--rm", "--platform", str(platform), "-v", f"{results}:/results", ref, *cmd],
        timeout=900,
        what=f"jmh on {platform}",
    )
    return json.loads((results / "jmh.json").read_text())


def test_quick_profile_runs_every_benchmark(built, tmp_path):
    doc = run_jmh(built, host(), tmp_path)
    quick = experiment.load("jmh").resolve("quick")
    assert {r["benchmark"] for r in doc} == BENCHMARKS
    for r in doc:
        assert r["jmhVersion"] == settings.tool_versions()["JMH"]
        assert r["mode"] == "thrpt" and r["primaryMetric"]["scoreUnit"] == "ops/s"
        if ".RecursionBenchmark." in r["benchmark"]:
            assert r["params"]["depth"] == str(quick["depth"])
        forks = r["primaryMetric"]["rawData"]
        assert len(forks) == quick["repetitions"] * quick["forks"]
        assert all(len(iterations) == quick["iterations"] for iterations in forks)
        assert all(v > 0 for iterations in forks for v in iterations)


def test_b1_runs_on_emulated_arm64(built, tmp_path):
    doc = run_jmh(
        built,
        parse("linux/arm64"),
        tmp_path,
        "java",
        "-jar",
        "/opt/pirex/jmh.jar",
        "-f",
        "1",
        "-wi",
        "1",
        "-i",
        "1",
        "-w",
        "100ms",
        "-r",
        "100ms",
        "-rf",
        "json",
        "-rff",
        "/results/jmh.json",
        "RecursionBenchmark.b1_default",
    )
    assert [r["benchmark"] for r in doc] == ["io.github.pirexbench.jmh.RecursionBenchmark.b1_default"]
    assert doc[0]["vmName"] and "Server VM" in doc[0]["vmName"]
