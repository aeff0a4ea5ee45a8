"""tests/prebuild.py, the images built ahead by make test: it builds nothing where the Docker session could not run,
and it stops on Ctrl-C even when started in the background by a shell that ignores SIGINT there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from pirex.core import paths

from . import prebuild


def test_without_an_engine_it_says_so_and_succeeds(monkeypatch, capsys):
    monkeypatch.setattr(prebuild, "docker_problem", lambda: "no docker client on PATH")
    assert prebuild.prebuild() == 0
    assert "prebuild: nothing built ahead: no docker client on PATH" in capsys.readouterr().out


def test_sigint_ends_it_though_the_shell_ignored_it():
    # a shell without job control starts `&` commands with SIGINT ignored, as make's recipe shell does; the
    # prebuild is held at its first step (docker_problem) by a stand-in docker that sleeps
    code = (
        "import signal, sys, time\n"
        "from tests import prebuild\n"
        "prebuild.docker_problem = lambda: (print('started', flush=True), time.sleep(60))[1]\n"
        "sys.exit(prebuild.main())\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=paths.REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert p.stdout.readline().strip() == "started"  # printed after main() set its handlers
        os.kill(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode != 0 and "KeyboardInterrupt" in err


def test_autogroups_are_off_while_building_and_put_back_on_every_exit(tmp_path):
    switch = tmp_path / "sched_autogroup_enabled"
    switch.write_text("1\n")
    with prebuild.nice_reaches_sessions(switch) as how:
        assert switch.read_text() == "0\n" and "off while building" in how
    assert switch.read_text() == "1\n"
    try:
        with prebuild.nice_reaches_sessions(switch):
            raise KeyboardInterrupt  # SIGINT, SIGTERM and SIGHUP unwind so (prebuild.main)
    except KeyboardInterrupt:
        pass
    assert switch.read_text() == "1\n"
    switch.write_text("0\n")
    with prebuild.nice_reaches_sessions(switch) as how:
        assert how == "autogroups already off"
    assert switch.read_text() == "0\n"
    with prebuild.nice_reaches_sessions(tmp_path / "none") as how:
        assert how == "no autogroups on this kernel"
