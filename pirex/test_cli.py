"""The command line as a user meets it: exit codes and messages (no Docker needed)."""

import json
import subprocess
import sys

from pirex.paths import REPO


def pirex(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pirex", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)  # fmt: skip


def test_machine_prints_the_record():
    r = pirex("machine", "--no-docker")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["schema"] == "pirex-machine/1" and rec["storage"]["work_dir"] == str(REPO)


def test_doctor_reports_every_check():
    r = pirex("doctor")
    assert r.returncode in (0, 1), r.stderr
    for check in ("governor", "swap", "throttling", "temperature", "storage", "free-disk", "free-memory", "load"):
        assert check in r.stdout


def test_doctor_fails_when_the_disk_is_too_small():
    r = pirex("doctor", "--min-free-disk-mb", str(1 << 40))
    assert r.returncode == 1 and "FAIL" in r.stdout


def test_bad_input_is_a_clear_error(tmp_path):
    bad = tmp_path / "registry.yaml"
    bad.write_text("images: []\n")
    r = pirex("images", "pull", "--registry-file", str(bad))
    assert r.returncode == 1
    assert r.stderr.startswith("pirex: error: ") and "images: expected a mapping" in r.stderr
    r = pirex("images", "build", "--platforms", "linux/s390x")
    assert r.returncode == 1 and "unsupported platform 'linux/s390x'" in r.stderr


def test_run_trace_without_ids_names_no_unrelated_experiment():
    r = pirex("run", "--matrix", "no-such-matrix")
    assert r.returncode == 1 and "no experiment declares the matrix 'no-such-matrix'" in r.stderr
