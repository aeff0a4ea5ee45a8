"""pirex itself on both Raspberry Pi architectures: an arm64 and a 32-bit (armhf) Debian bookworm
rootfs under QEMU user emulation (tests/emulated_pi.py), each with a Pi 3's identity. Inside: make's
install step (on armhf the Debian-package path: no wheel, no compiler), `pirex doctor`, `pirex
machine` giving a Pi record, one tiny `pirex run jmh --variants docker` of that architecture's image
through the host's engine, and `pirex table` of its bundle with the virtualenv's numpy/scipy/matplotlib.

Emulation shows function, not timing (ENVIRONMENT.md: about 7 times slower); the counts are tiny.
The two Pis are prepared side by side (each is one emulated process at a time): 12.3 minutes on a
2-vCPU VM with the rootfs trees made fresh, less once they are cached. Part of `make test`;
`make test-emulated-pi` runs it alone."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from pirex.core import proc

from . import emulated_pi
from .conftest import TEST_TAG

pytestmark = [pytest.mark.docker, pytest.mark.emulated_pi]

ARCHES = {  # dpkg architecture (emulated_pi.DPKG_ARCHES): (uname -m, the image platform, the stack make installs)
    "arm64": ("aarch64", "linux/arm64", "wheels"),
    "armhf": ("armv7l", "linux/arm/v7", "debian"),
}
assert tuple(ARCHES) == emulated_pi.DPKG_ARCHES, "the rootfs trees made ahead (conftest.built) are these Pis'"
TINY = [
    "--set",
    "repetitions=1",
    "--set",
    "warmup_iterations=1",
    "--set",
    "iterations=1",
    "--set",
    "warmup_time=100ms",
    "--set",
    "time=100ms",
    "--set",
    "benchmarks=RecursionBenchmark.b1",
]


@dataclass
class Prepared:
    """One emulated Pi after make's install step and a tiny jmh run, done for both Pis at once."""

    arch: str
    pi: emulated_pi.Pi
    src: Path
    install: proc.Result
    run: proc.Result | None  # None: the install step failed


def _prepare(arch: str, scratch: Path) -> Prepared:
    p = emulated_pi.Pi.create(arch, scratch, TEST_TAG)  # makes the cached rootfs when missing
    src = p.copy_checkout()
    install = p.run("make", "-C", str(src), ".venv/.installed", timeout=3600, check=False)
    if install.returncode:
        return Prepared(arch, p, src, install, None)
    run = p.run(
        f"{src}/.venv/bin/pirex",
        "run",
        "jmh",
        "--variants",
        "docker",
        "--tag",
        TEST_TAG,
        "--results-dir",
        str(p.work / "results"),
        "--force",
        *TINY,
        timeout=3600,
        check=False,
    )
    return Prepared(arch, p, src, install, run)


@pytest.fixture(scope="module")
def prepared(built, tmp_path_factory) -> dict[str, Prepared]:
    """Both Pis side by side: each is one emulated process at a time, so two take the time of one
    on a machine with two cores (the test's time is mostly the install step under QEMU)."""
    why = emulated_pi.have_tools()
    if why:
        pytest.fail(f"the emulated Pi cannot run here: {why}")
    scratch = {arch: tmp_path_factory.mktemp(f"pi-{arch}") for arch in ARCHES}
    pool = ThreadPoolExecutor(len(ARCHES))
    try:
        futures = {arch: pool.submit(_prepare, arch, scratch[arch]) for arch in ARCHES}
        return {arch: f.result() for arch, f in futures.items()}
    except BaseException:  # a failure or an interruption (SIGTERM arrives here): stop the other Pi too
        emulated_pi.stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module", params=sorted(ARCHES))
def pi(request, prepared) -> Prepared:
    return prepared[request.param]


def test_make_installs_pirex_without_compiling(pi):
    arch, p, src, r = pi.arch, pi.pi, pi.src, pi.install
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    versions = p.run(
        f"{src}/.venv/bin/python",
        "-c",
        "import numpy, scipy, matplotlib, yaml; "
        "print(numpy.__file__, numpy.__version__, scipy.__version__, matplotlib.__version__)",
        timeout=600,
    ).stdout.split()
    if ARCHES[arch][2] == "debian":
        assert "virtualenv on Debian's numpy 1.24" in r.stderr
        assert versions[0].startswith("/usr/lib/python3/dist-packages/")
        assert [v.rsplit(".", 1)[0] for v in versions[1:]] == ["1.24", "1.10", "3.6"]
    else:
        assert versions[1:] == ["2.3.5", "1.16.3", "3.11.2"]  # constraints.txt's pins, from wheels


def test_machine_record_and_doctor_say_raspberry_pi(pi):
    arch, p, src = pi.arch, pi.pi, pi.src
    pirex = f"{src}/.venv/bin/pirex"
    rec = json.loads(p.run(pirex, "machine", "--no-docker", timeout=600).stdout)
    assert rec["architecture"]["uname_machine"] == ARCHES[arch][0]
    assert rec["architecture"]["userland"] == arch
    assert rec["pi"]["model"] == emulated_pi.MODEL  # from the device tree
    assert rec["pi"]["revision"]["type"] == "3B" and rec["pi"]["revision"]["memory"] == "1GB"
    assert rec["pi"]["serial_hmac_sha256"]
    assert rec["vcgencmd"]["throttled"]["hex"] == "0x0" and rec["vcgencmd"]["temp_c"] == 47.8
    assert rec["cpu"]["core"] == "Cortex-A53"
    doctor = p.run(pirex, "doctor", timeout=600, check=False)
    assert doctor.returncode in (0, 1), doctor.stderr
    assert "no throttling or under-voltage (0x0)" in doctor.stdout
    assert "47.8 C (vcgencmd measure_temp)" in doctor.stdout


def test_a_tiny_jmh_run_in_docker_and_its_table(pi):
    arch, p, src, r = pi.arch, pi.pi, pi.src, pi.run
    pirex = f"{src}/.venv/bin/pirex"
    results = p.work / "results"
    assert r is not None, "make's install step failed (test_make_installs_pirex_without_compiling says why)"
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [manifest] = results.glob("jmh/*/manifest.json")
    m = json.loads(manifest.read_text())
    assert m["status"] == "complete"
    assert m["images"]["jmh"]["platform"] == ARCHES[arch][1]
    machine = json.loads((manifest.parent / "machine.json").read_text())
    assert machine["before"]["pi"]["model"] == emulated_pi.MODEL
    table = p.run(pirex, "table", "jmh", "--results-dir", str(results), timeout=900, check=False)
    assert table.returncode == 0, table.stderr[-3000:]
    assert "| B1 " in table.stdout and "docker" in table.stdout
    assert (results / "tables" / "jmh" / "table1.csv").exists()
