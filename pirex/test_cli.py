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


def test_fork_trace_tables_from_a_step_trace(tmp_path, capsys):
    """A step's trace holds every mode one after the other, split at pirex-fork's mode markers; Table 6.1 is at
    stack depth 7, as the thesis's."""
    from pirex import cli
    from pirex.analysis import ftrace
    from pirex.bundle import Bundle

    data = REPO / "pirex" / "analysis" / "testdata" / "ftrace"
    mark = " 2215.400000 |   1)  sh-1  |               |  /* pirex-mode {} */\n"
    single, concurrent = (data / "x86_64-single.txt").read_text(), (data / "x86_64-concurrent.txt").read_text()
    b = Bundle.create(tmp_path, "fork", "quick", {}, ["docker"], [("docker", 0), ("docker", 1)], {},
                      {"version": "t", "commit": "c"})  # fmt: skip
    machine = {"hostname": "h", "cpu": {"model": "Xeon"}}
    b.write_machine(before=machine, after=machine)
    with b.step("docker", 0) as d:
        (d / "trace.txt").write_text(mark.format("single") + single + mark.format("concurrent") + concurrent)
    unfinished = b.path / "docker" / "1"  # a step the manifest does not list as completed
    unfinished.mkdir(parents=True)
    (unfinished / "trace.txt").write_text(mark.format("single") + single)
    cli._trace_tables([b.path], tmp_path / "out")
    shown = capsys.readouterr().out
    assert "Table 6.1 (no migration): concurrent minus single" in shown and "| vm_normal_page |" in shown
    assert "| kernel_clone |" not in shown  # depth 1 is not the thesis's table
    for mode in ("single", "concurrent"):
        csv_ = (tmp_path / "out" / f"ftrace-Xeon--h--docker-{mode}.csv").read_text()
        assert csv_.startswith("function,duration_us,parent,depth")
        for size in (1, 8):  # one flame graph per size
            assert "<svg" in (tmp_path / "out" / f"flamegraph-Xeon--h--docker-{mode}-{size}MB.svg").read_text()
    single_rows = (tmp_path / "out" / "ftrace-Xeon--h--docker-single.csv").read_text().count("\n")
    assert single_rows == 1 + len(ftrace.parse(single.splitlines())), "the unfinished step is left out"


def test_run_trace_without_ids_names_no_unrelated_experiment():
    r = pirex("run", "--matrix", "no-such-matrix")
    assert r.returncode == 1 and "no experiment declares the matrix 'no-such-matrix'" in r.stderr
