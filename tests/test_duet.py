"""pirex run --design duet, end to end on this machine: JMH's B1 natively and in Docker at the same moment on the two
CPU halves; its A/A duet (two native sides of one exported image); and a duet stopped by SIGTERM, which leaves no
container or process behind and resumes. Counts are cut down (--set) to keep CI short (about a minute in all)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pirex.analysis import jmh
from pirex.core import paths, proc
from pirex.core.bundle import Bundle, verify
from pirex.runner import host, leftovers
from pirex.runner import run as runner

from .conftest import TEST_TAG

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(len(host.online_cpus()) < 2, reason="a duet needs two CPUs"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the native variant needs root"),
]

B1 = {"repetitions": 2, "warmup_iterations": 1, "iterations": 2, "benchmarks": "RecursionBenchmark.b1_default"}


def duet_run(tmp_path, variants: str, **overrides) -> Bundle:
    opts = runner.Options("jmh", "quick", variants, seed=3, results_dir=tmp_path, tag=TEST_TAG, design="duet")
    opts.overrides = {**B1, **overrides}
    return Bundle.open(runner.run(opts))


def test_native_and_docker_at_once_on_swapped_halves(built, tmp_path):
    b = duet_run(tmp_path, "native,docker")
    assert b.status == "complete" and verify(b.path) == [] and b.design == "duet"
    halves = b.run_info().duet["halves"]
    steps = {(s.variant, s.repetition): s for s in b.steps()}
    for rep in (0, 1):
        native, docker = steps[("native", rep)], steps[("docker", rep)]
        assert {native.cpus, docker.cpus} == set(halves) and native.cpus == halves[rep % 2]  # swapped
        assert native.start <= docker.end and docker.start <= native.end  # at the same time
        argv_native, argv_docker = native.info()["argv"], docker.info()["argv"]
        assert argv_native[:3] == ["taskset", "-c", native.cpus]
        assert argv_docker[argv_docker.index("--cpuset-cpus") + 1] == docker.cpus
    rows = jmh.read_rows(b.path)
    assert {(r.variant, r.repetition) for r in rows} == set(steps)  # the analysis pairs them by repetition


def test_an_aa_duet_gives_each_native_side_its_own_mounts_and_tmp(built, tmp_path):
    b = duet_run(tmp_path, "native,native-aa")
    assert b.status == "complete" and verify(b.path) == []
    for s in b.steps():  # both JVMs ran to the end: neither met the other's /tmp/jmh.lock
        assert json.loads((s.dir / "jmh.json").read_text())[0]["primaryMetric"]["rawData"]
    assert not [m for m in leftovers.find(b.run_id) if m.kind == "mount"]


def test_a_duet_stopped_by_sigterm_leaves_nothing_and_resumes(built, tmp_path):
    cmd = [sys.executable, "-m", "pirex", "run", "jmh", "--design", "duet", "--variants", "native,docker"]
    cmd += ["--results-dir", str(tmp_path), "--tag", TEST_TAG, "--seed", "5"]
    for k, v in {**B1, "iterations": 20}.items():
        cmd += ["--set", f"{k}={v}"]
    p = subprocess.Popen(cmd, cwd=paths.REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # until both sides of repetition 0 run: a native step and its container
        while not (list(tmp_path.glob("jmh/*/native/0.tmp-*")) and _running("-docker-0")):
            assert p.poll() is None and time.monotonic() < deadline, "the duet did not start"
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=300) != 0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    (path,) = (tmp_path / "jmh").iterdir()
    b = Bundle.open(path)
    assert b.status == "partial" and len(b.remaining_steps()) == 4
    labelled = proc.run(["docker", "ps", "-aq", "--filter", f"label=pirex.run={b.run_id}"], timeout=60).stdout
    assert labelled.strip() == "" and leftovers.find(b.run_id) == []
    runner.resume(path)
    b = Bundle.open(path)
    assert b.status == "complete" and verify(path) == [] and [s.repetition for s in b.steps()] == [0, 0, 1, 1]


def _running(suffix: str) -> bool:
    names = proc.run(["docker", "ps", "--format", "{{.Names}}"], timeout=60).stdout.split()
    return any(n.startswith("pirex-") and n.endswith(suffix) for n in names)
