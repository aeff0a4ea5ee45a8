"""The native variant's safety around mounts (needs root for the mount; skipped otherwise)."""

import os
import subprocess

import pytest

from pirex.runner import native


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_remove_never_walks_into_a_mount(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    root = tmp_path / "export"
    (root / "dev").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(outside), str(root / "dev")], check=True)
    try:
        assert native._mounts_under(root) == [str((root / "dev").resolve())]
        native._remove(root)
    finally:
        subprocess.run(["umount", "-l", str(root / "dev")], check=False)
    assert not root.exists()
    assert (outside / "precious").read_text() == "keep me"


def test_command_applies_user_env_and_workdir(tmp_path):
    cmd = native.command(tmp_path, {"User": "1000:1000", "Env": ["PATH=/usr/bin"], "WorkingDir": "/work"}, ["id"], {})
    assert cmd[:3] == ["chroot", "--userspec=1000:1000", str(tmp_path)]
    assert "PATH=/usr/bin" in cmd and cmd[-2:] == ["/work", "id"]


def test_command_runs_the_workload_user_of_an_image_that_starts_as_root(tmp_path):
    image = {"User": "0:1000", "Env": ["PIREX_USER=1000:1000"]}  # images/base: the entrypoint drops to PIREX_USER
    assert native.command(tmp_path, image, ["id"], {})[1] == "--userspec=1000:1000"
    assert native.command(tmp_path, {**image, "User": "0:0"}, ["id"], {})[1] == "--userspec=0:0"  # a root variant


def test_privileged_and_case_variants_describe_what_they_change():
    from pirex.core.experiment import Privileges
    from pirex.core.experiment_matrix import Case
    from pirex.runner import variants

    priv = Privileges(root=True, capabilities=("SYS_ADMIN",), why="drop caches")
    docker = variants.by_name("docker").with_privileges(priv)
    assert docker.user == "0:0" and docker.describe()["privileges"]["why"] == "drop caches"
    assert docker.extra_docker_args()[:4] == ["--user", "0", "--cap-add", "SYS_ADMIN"]
    case = variants.by_name("docker").for_case(Case("one-core", 9, "one core", "ram", {"depth": 1}, "0", 100))
    assert case.name == "one-core" and not case.is_native
    assert case.extra_docker_args() == ["--cpuset-cpus", "0", "--tmpfs", "/work:rw,exec,size=100m,mode=1777"]
    native = variants.by_name("native").for_case(Case("one-core", 9, "one core", None, {}, "0"))
    assert native.is_native and native.describe()["taskset"] == "0"


def test_exports_are_per_host_and_a_host_prunes_only_its_own(tmp_path, monkeypatch):
    """Hosts sharing one disk (the fleet tests' namespaces) each keep their own export of an image."""
    me, other = "4026531840-vm", "4026532999-vm"
    monkeypatch.setattr(native, "KEEP_EXPORTS", 2)
    exports = {}  # the other host's two stay, whatever this host's limit; the export from before hosts counted goes
    for i, name in enumerate(["old", f"a@{me}", f"b@{me}", f"c@{me}", f"a@{other}", f"b@{other}"]):  # oldest first
        (tmp_path / name).mkdir()
        (tmp_path / name / ".complete").write_text("x")
        os.utime(tmp_path / name / ".complete", (i, i))
        exports[name] = tmp_path / name
    native._prune(tmp_path, keep=exports[f"c@{me}"])
    assert {p.name for p in tmp_path.iterdir()} == {f"a@{other}", f"b@{other}", f"b@{me}", f"c@{me}"}
