"""`pirex images export` then `pirex images import` on a second machine: a Docker engine and a local
registry of its own in a network namespace (no route to this machine's registry). The import gives
the same image IDs as the build, and a run there records them; a truncated archive or one whose
digests are not registry.yaml's is refused with a one-line error."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pirex.core import paths, proc
from pirex.core.errors import PirexError
from pirex.images import localregistry, regclient
from pirex.images import platforms as plat

from . import netns
from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

NS = "pirex-lab"
IMAGE = "jmh"  # the run below needs it alone (its sink runs from the same image)


@contextlib.contextmanager
def lab_machine(tmp: Path):
    """A network namespace with loopback only and its own dockerd (with its own default bridge: a
    namespace has its own iptables), as a lab machine that reaches no registry."""
    missing = [t for t in ("ip", "nsenter", "dockerd", "docker-registry") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        pytest.fail(f"the lab-machine test needs root and {', '.join(missing) or 'nothing else'}")
    run = Path("/run/pirex-lab")
    netns._remove_run_dir(run)  # a killed earlier run
    proc.run(["ip", "netns", "del", NS], timeout=30, check=False)
    proc.run(["ip", "netns", "add", NS], timeout=30)
    daemon = None
    try:
        proc.run(["ip", "-n", NS, "link", "set", "lo", "up"], timeout=30)
        run.mkdir(parents=True)
        sock = run / "docker.sock"
        env = {"DOCKER_HOST": f"unix://{sock}", "PIREX_CACHE": str(tmp / "lab-cache")}

        def start():
            with open(run / "dockerd.log", "a") as log:
                started = subprocess.Popen(
                    [
                        "nsenter",
                        f"--net=/run/netns/{NS}",
                        "dockerd",
                        "--data-root",
                        str(tmp / "lab-docker"),
                        "--exec-root",
                        str(run / "exec"),
                        "--pidfile",
                        str(run / "dockerd.pid"),
                        "-H",
                        f"unix://{sock}",
                        "--bip",
                        "10.78.0.1/24",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            deadline = time.monotonic() + 120
            while proc.run(["docker", "info"], timeout=30, check=False, env=env).returncode != 0:
                if time.monotonic() > deadline or started.poll() is not None:
                    raise PirexError(f"the lab's dockerd did not answer: {run}/dockerd.log")
                time.sleep(1)
            return started

        def restart():  # the daemon stopped as a service manager stops it, then started again
            nonlocal daemon
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=60)
            daemon = start()

        daemon = start()
        yield {**env, "restart": restart}
    finally:
        if daemon:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)
                daemon.wait(timeout=30)
        netns._remove_run_dir(run)
        proc.run(["ip", "netns", "del", NS], timeout=30, check=False)
        proc.run(["rm", "-rf", str(tmp / "lab-docker")], timeout=300, check=False)


def pirex_on_lab(env: dict, *args: str, timeout: float = 900) -> proc.Result:
    env = {k: v for k, v in env.items() if isinstance(v, str)}
    return proc.run(
        ["nsenter", f"--net=/run/netns/{NS}", sys.executable, "-m", "pirex", *args],
        timeout=timeout,
        check=False,
        env=env,
    )


@pytest.fixture(scope="module")
def exported(built, tmp_path_factory):
    """jmh exported for this machine's platform and arm64, with a registry.yaml naming the exported digest."""
    d = tmp_path_factory.mktemp("archive")
    file = d / "pirex-images.tar"
    r = proc.run(
        [
            sys.executable,
            "-m",
            "pirex",
            "images",
            "export",
            "--platforms",
            f"{plat.host()},linux/arm64",
            "--tag",
            TEST_TAG,
            str(file),
            IMAGE,
        ],
        timeout=900,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "MiB" in r.stdout
    with localregistry.local_registry():
        digest, images = regclient.Registry(localregistry.HOST).platform_images(f"pirex/{IMAGE}", TEST_TAG)
    regfile = d / "registry.yaml"
    doc = yaml.safe_load((paths.REPO / "registry.yaml").read_text())
    doc["images"][IMAGE]["digest"] = digest
    regfile.write_text(yaml.safe_dump(doc))
    return file, regfile, images


def test_import_on_a_second_engine_gives_the_same_image_ids_and_a_run_records_them(exported, tmp_path):
    file, regfile, images = exported
    host = plat.host()
    with lab_machine(tmp_path) as lab:
        r = pirex_on_lab(lab, "images", "import", "--registry-file", str(regfile), str(file))
        assert r.returncode == 0, r.stderr
        assert images[host].config_digest in r.stdout
        results = tmp_path / "results"
        r = pirex_on_lab(
            lab,
            "run",
            IMAGE,
            "--variants",
            "docker",
            "--tag",
            TEST_TAG,
            "--results-dir",
            str(results),
            "--set",
            "repetitions=1",
            "--set",
            "warmup_iterations=1",
            "--set",
            "iterations=1",
            "--set",
            "benchmarks=RecursionBenchmark.b1",
            "--force",
            timeout=1800,
        )
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        [manifest] = results.glob(f"{IMAGE}/*/manifest.json")
        recorded = json.loads(manifest.read_text())["images"][IMAGE]
        assert recorded["image_id"] == images[host].config_digest  # the build's image ID, on the lab's engine
        assert recorded["digest"] == images[host].manifest_digest
        lab_id = proc.run(
            ["docker", "image", "inspect", "-f", "{{.Id}}", recorded["reference"]],
            timeout=60,
            env={k: v for k, v in lab.items() if isinstance(v, str)},
        )
        assert lab_id.stdout.strip() == images[host].config_digest


def test_a_truncated_archive_is_a_clear_error(exported, tmp_path):
    file, regfile, _ = exported
    cut = tmp_path / "cut.tar"
    with open(file, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read(file.stat().st_size // 2))
    r = proc.run(
        [sys.executable, "-m", "pirex", "images", "import", "--registry-file", str(regfile), str(cut)],
        timeout=300,
        check=False,
        env={"PIREX_CACHE": str(tmp_path / "cache")},
    )
    assert r.returncode == 1
    [line] = r.stderr.strip().splitlines()
    assert line.startswith(f"pirex: error: {cut} is truncated or damaged") and "copy it again" in line


def test_an_archive_that_is_not_the_published_image_is_refused(exported, tmp_path):
    file, regfile, _ = exported
    other = tmp_path / "registry.yaml"
    doc = yaml.safe_load(regfile.read_text())
    doc["images"][IMAGE]["digest"] = "sha256:" + "0" * 64
    other.write_text(yaml.safe_dump(doc))
    from pirex.images import archive

    with pytest.raises(PirexError, match=r"names sha256:0+: not the published image, refused"):
        archive.import_(file, plat.host(), other)


def test_an_archive_without_this_platform_says_how_to_export_it(exported):
    file, regfile, _ = exported
    from pirex.images import archive

    with localregistry.local_registry(), pytest.raises(PirexError, match=r"not for this machine \(linux/arm/v7\)"):
        archive.import_(file, plat.parse("linux/arm/v7"), regfile)


def test_export_of_an_unbuilt_tag_says_to_build(infra, tmp_path):
    from pirex.images import archive

    with localregistry.local_registry(), pytest.raises(PirexError, match="make build TAG=never-built"):
        archive.export(tmp_path / "x.tar", [IMAGE], "never-built", [plat.host()], None)
    assert not (tmp_path / "x.tar").exists() and not (tmp_path / "x.tar.part").exists()


def test_dockerd_restarted_mid_run_gives_a_clear_message_and_a_resumable_bundle(exported, tmp_path):
    """The engine restarted while a run is under way (an upgrade, a crash): the step it cut off
    fails in one line naming the cause, and `pirex run --resume` finishes the bundle once it is back."""
    file, regfile, _ = exported
    with lab_machine(tmp_path) as lab:
        assert pirex_on_lab(lab, "images", "import", "--registry-file", str(regfile), str(file)).returncode == 0
        results = tmp_path / "results"
        args = [
            "run",
            IMAGE,
            "--variants",
            "docker",
            "--tag",
            TEST_TAG,
            "--results-dir",
            str(results),
            "--force",
            "--order",
            "sequential",
            "--set",
            "repetitions=3",
            "--set",
            "warmup_iterations=1",
            "--set",
            "iterations=3",
            "--set",
            "time=1s",
            "--set",
            "benchmarks=RecursionBenchmark.b1",
        ]
        env = {k: v for k, v in lab.items() if isinstance(v, str)}
        run = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{NS}", sys.executable, "-m", "pirex", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        try:
            deadline = time.monotonic() + 600
            while not list(results.glob(f"{IMAGE}/*/docker/0/jmh.json")) and run.poll() is None:
                assert time.monotonic() < deadline, "the first step never completed"
                time.sleep(0.5)
            lab["restart"]()  # during the second step
            _, err = run.communicate(timeout=900)
        finally:
            if run.poll() is None:
                run.kill()
        [manifest] = results.glob(f"{IMAGE}/*/manifest.json")
        bundle = manifest.parent
        if run.returncode != 0:  # the cut-off step failed: one line, and the way on
            errors = [ln for ln in err.splitlines() if ln.startswith("pirex: error:")]
            assert len(errors) == 1 and "Traceback" not in err, err[-3000:]
            r = pirex_on_lab(lab, "run", "--resume", str(bundle), timeout=900)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert json.loads(manifest.read_text())["status"] == "complete"
        assert pirex_on_lab(lab, "verify", str(bundle)).returncode == 0
        left = proc.run(["docker", "ps", "-aq", "--filter", "label=pirex.run"], timeout=60, env=env).stdout.split()
        assert left == [], "no container of the run is left"
