"""The native variant's safety around mounts (needs root for the mount; skipped otherwise)."""

import json
import os
import subprocess

import pytest

from pirex.core.errors import PirexError
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
        native.remove_tree(root)
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


def _export(directory, name: str, image: str, used_at: int, mb: int = 100, users=()):
    """A finished export as rootfs leaves it: .complete (its mtime the last use), its info with its size, and a
    mark per checkout that ran it."""
    root = directory / name
    root.mkdir()
    (root / ".complete").write_text("x")
    os.utime(root / ".complete", (used_at, used_at))
    (root / native.EXPORT_INFO).write_text(json.dumps({"image": image, "seconds": 1, "bytes": mb * 2**20}))
    for checkout, at in users:
        native._mark_used(root, checkout)
        for mark in (root / native.USERS).iterdir():
            os.utime(mark, (at, at))
    return root


def test_exports_are_per_host_and_a_host_prunes_only_its_own(tmp_path, monkeypatch):
    """Hosts sharing one disk (the fleet tests' namespaces) each keep their own export of an image."""
    me, other = "4026531840-vm", "4026532999-vm"
    monkeypatch.setenv(native.CACHE_MB, "250")  # room for two 100 MB exports of a host
    exports = {}  # the other host's stay, whatever this host's bound; the export from before hosts counted goes
    for i, name in enumerate(["old", f"a@{me}", f"b@{me}", f"c@{me}", f"a@{other}", f"b@{other}"]):  # oldest first
        exports[name] = _export(tmp_path, name, name[0], i)
    native._prune(tmp_path, keep=exports[f"c@{me}"])
    assert {p.name for p in tmp_path.iterdir()} == {f"a@{other}", f"b@{other}", f"b@{me}", f"c@{me}"}


def test_a_checkouts_current_exports_stay_whatever_another_checkout_runs(tmp_path, monkeypatch):
    """Issue 54: the runs of one clone evicted the fork, postgres and jpa-rest exports of another. Now only the
    size bound removes, least recently used first, and never a live checkout's newest export of an image."""
    host = "4026531840-vm"
    mine, theirs, gone = tmp_path / "mine", tmp_path / "theirs", tmp_path / "deleted-clone"
    mine.mkdir()
    theirs.mkdir()
    cache = tmp_path / "native"
    cache.mkdir()
    monkeypatch.setenv(native.CACHE_MB, "200")  # four 100 MB exports: two must go
    theirs_fork = _export(cache, f"f1@{host}", "fork", 1, users=[(theirs, 1)])  # the oldest: theirs, current
    old_jmh = _export(cache, f"j1@{host}", "jmh", 2, users=[(mine, 2)])  # my previous build of jmh
    dead = _export(cache, f"p1@{host}", "postgres", 3, users=[(gone, 3)])  # a clone since removed
    new_jmh = _export(cache, f"j2@{host}", "jmh", 4, users=[(mine, 4)])  # my new build of jmh: just exported
    native._prune(cache, keep=new_jmh)
    left = {p.name for p in cache.iterdir()}
    assert theirs_fork.name in left and new_jmh.name in left  # theirs is older than mine, and stays
    assert old_jmh.name not in left and dead.name not in left  # replaced by my new build; no live checkout's
    monkeypatch.setenv(native.CACHE_MB, "0")  # even at no room, a checkout's current exports stay
    native._prune(cache, keep=new_jmh)
    assert {p.name for p in cache.iterdir()} == {theirs_fork.name, new_jmh.name}


def test_an_exports_size_is_measured_once_and_a_bad_bound_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "e"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_bytes(b"x" * 10000)
    (root / native.EXPORT_INFO).write_text(json.dumps({"image": "jmh", "seconds": 1}))
    size = native._size(root)
    assert size >= 10000 and json.loads((root / native.EXPORT_INFO).read_text())["bytes"] == size
    monkeypatch.setenv(native.CACHE_MB, "lots")
    with pytest.raises(PirexError, match="PIREX_NATIVE_CACHE_MB='lots': a whole number of megabytes"):
        native._cache_bytes()
