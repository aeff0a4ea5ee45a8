"""`pirex reproduce --storage A --storage B`: a claim across storage devices runs its work directory on each
mount (here a RAM drive and this machine's disk), natively, the machine record of each run names the storage
device under its work directory, and the claim is judged with the direction of the effect: B5 (synced file
writes, ICPE'18 Table 1) on the RAM drive against the disk. Cut-down counts; kick-the-tires' five repetitions."""

from __future__ import annotations

import json
import sys

import pytest

from pirex.core import proc
from pirex.core.bundle import Bundle

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

CLAIMS = """
paper: lab
title: Storage devices
claims:
  - id: b5-storage
    where: section 1, B5 with its file on each storage device
    says: synced file writes depend on the storage device
    scope: one machine with two storage devices of different speed
    experiment: jmh
    variants: [native]
    across: storages
    ratio: {metric: B5, numerator: native, denominator: native}
    rule: different
    margin: 0.05
    needs: [storages:2]
"""


@pytest.fixture
def ram_drive(tmp_path):
    d = tmp_path / "ram"
    d.mkdir()
    proc.run(["mount", "-t", "tmpfs", "-o", "size=1g", "pirex-test-ram", str(d)], timeout=30)
    yield d
    proc.run(["umount", "-l", str(d)], timeout=60, check=False)


def test_a_storage_claim_runs_on_each_mount_and_says_which_way(built, tmp_path, ram_drive):
    disk = tmp_path / "disk"
    disk.mkdir()
    (tmp_path / "claims.yaml").write_text(CLAIMS)
    results = tmp_path / "results"
    sets = ["benchmarks=FileWriteBenchmark", "warmup_iterations=1", "iterations=2"]
    r = proc.run(
        [sys.executable, "-m", "pirex", "reproduce", str(tmp_path / "claims.yaml"), "--results-dir", str(results)]
        + ["--tag", TEST_TAG, "--storage", str(ram_drive), "--storage", str(disk)]
        + [a for s in sets for a in ("--set", f"jmh.{s}")],
        timeout=1500,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    [state_file] = results.glob("reproduce/*/state.json")
    state = json.loads(state_file.read_text())
    runs = {key: [Bundle.open(b) for b in paths] for key, paths in state["bundles"].items()}
    assert sorted(runs) == [f"jmh@quick on {disk}", f"jmh@quick on {ram_drive}"]
    for key, (b,) in runs.items():  # each run's work directory, and its record, on its own storage device
        mount = ram_drive if key.endswith(str(ram_drive)) else disk
        assert b.run_info().work_dir == mount
        storage = b.machine_before().storage
        assert storage["work_dir"] == str(mount) and (storage["fstype"] == "tmpfs") == (mount == ram_drive)
        assert not list(mount.glob(".pirex-*-work")), "the work directory is removed after the run"
    verdict = state["verdicts"]["lab:b5-storage"]
    assert verdict in ("holds", "differs", "inconclusive")  # judged: which one is this machine's measurement
    report = next(results.glob("reproduce/*/REPORT.md")).read_text()
    [line] = [ln for ln in report.splitlines() if ln.startswith("| lab:b5-storage")]
    assert f"RAM drive (tmpfs) at {ram_drive} over " in line and f"at {disk}" in line, line
    if verdict == "holds":
        assert "higher by" in line or "lower by" in line, line  # the direction, in words
