"""The command line as a user meets it: exit codes and messages (no Docker needed)."""

import json
import subprocess
import sys

from pirex.core.paths import REPO


def pirex(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pirex", *args], capture_output=True, text=True, timeout=120, cwd=REPO)


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


def _tree(d):
    return {str(p.relative_to(d)): p.read_bytes() if p.is_file() else None for p in sorted(d.rglob("*"))}


def test_set_values_are_refused_before_anything_runs(tmp_path):
    """Each bad --set names the parameter and what is allowed, and nothing is written: a new results
    directory is not created, an existing one is left byte for byte as it was."""
    import os

    env = {**os.environ, "PIREX_LOCK_DIR": str(tmp_path / "locks"), "PIREX_CACHE": str(tmp_path / "cache")}
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "note.txt").write_text("left alone\n")
    before = _tree(kept)
    cases = [
        ("jmh", "repetitions=0", ["repetitions", ">= 1"]),
        ("jmh", "repetitions=-3", ["repetitions", ">= 1"]),
        ("jmh", "repetitions=abc", ["repetitions", "whole number"]),
        ("jmh", "frobnicate=1", ["frobnicate", "unknown parameter", "repetitions"]),
        ("fork", "sizes=0", ["sizes", "list of ints", "from 1 to 65536"]),
    ]
    for exp, pair, words in cases:
        for results in (tmp_path / "new", kept):
            argv = [sys.executable, "-m", "pirex", "run", exp, "--set", pair, "--results-dir", str(results)]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
            assert r.returncode != 0, (exp, pair, r.stdout)
            assert r.stderr.startswith("pirex: error: --set "), r.stderr
            assert all(w in r.stderr for w in words), (words, r.stderr)
            assert "Traceback" not in r.stderr
        assert not (tmp_path / "new").exists(), (exp, pair)
        assert _tree(kept) == before, (exp, pair)
        assert not (tmp_path / "locks").exists() or not any((tmp_path / "locks").iterdir()), (exp, pair)


def test_calibrate_refuses_bad_input_before_anything_runs(tmp_path):
    """An unknown experiment, a bad --set, too few repetitions, a bundle with no A/A copy: one line, exit 1, and
    nothing written under --results-dir."""
    from pirex.core.bundle import Bundle

    out = tmp_path / "results"
    for args, says in (
        (["nosuch"], "no experiment 'nosuch'"),
        (["jmh", "--set", "forks=0"], "forks"),
        (["jmh", "--repetitions", "6"], "at least 10 repetitions"),
        (["fork", "--design", "duet"], "does not suit a duet"),
    ):
        r = pirex("calibrate", *args, "--results-dir", str(out))
        assert r.returncode == 1 and r.stderr.startswith("pirex: error: ") and says in r.stderr, (args, r.stderr)
    b = Bundle.create(tmp_path / "b", "jmh", "quick", {}, ["native", "docker"], [], {}, {"version": "t", "commit": "0"})
    b.finish()
    r = pirex("calibrate", "jmh", "--bundles", str(b.path), "--results-dir", str(out))
    assert r.returncode == 1 and "has no A/A copy" in r.stderr, r.stderr
    assert not out.exists()
