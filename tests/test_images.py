"""The built images, per platform: what their configs say, and that containers of them run
(arm platforms under QEMU: this shows function, not timing)."""

from __future__ import annotations

import json

import pytest

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import bake, localregistry, publish, regclient
from pirex.images.platforms import SUPPORTED, Platform
from pirex.runner import variants

pytestmark = pytest.mark.docker


def images() -> list:
    """The images of docker-bake.hcl's group: a new image is tested without a word here. Without
    docker buildx, one placeholder, which the Docker fixtures skip (or fail in CI)."""
    try:
        return [t.name for t in bake.catalog()]
    except PirexError:
        return [pytest.param("?", id="no-docker-buildx")]


IMAGES = images()
OCI_LABELS = ("source", "revision", "version", "licenses", "description")


def docker_run(ref: str, platform: Platform, *cmd: str, args: tuple[str, ...] = ()) -> proc.Result:
    return proc.run(
        ["docker", "run", "--rm", "--platform", str(platform), *args, ref, *cmd],
        timeout=300,
        what=f"docker run {ref} {' '.join(cmd)}",
    )


@pytest.fixture(scope="module")
def registry(built) -> regclient.Registry:
    return regclient.Registry(localregistry.HOST)


@pytest.mark.parametrize("name", IMAGES)
def test_manifest_list_has_every_platform_with_matching_config(built, registry, name):
    repo = f"{publish.LOCAL_NAMESPACE}/{name}"
    index, _, digest = registry.manifest(repo, built.tag)
    assert digest == built.digests[name]
    listed = {
        Platform(m["platform"]["os"], m["platform"]["architecture"], m["platform"].get("variant", ""))
        for m in index["manifests"]
        if m["platform"]["os"] != "unknown"
    }
    _, images = registry.platform_images(repo, built.tag)
    # platform_images reads os/architecture/variant from each image's own config
    assert set(images) == listed == set(built.platforms_for(name))
    attestations = [m for m in index["manifests"] if m["platform"]["os"] == "unknown"]
    assert attestations, "provenance attestations missing from the manifest list"


@pytest.mark.parametrize("name", IMAGES)
def test_oci_labels_and_non_root_user(built, registry, name):
    repo = f"{publish.LOCAL_NAMESPACE}/{name}"
    _, images = registry.platform_images(repo, built.tag)
    for img in images.values():
        cfg = registry.config(repo, img.config_digest)["config"]
        labels = cfg["Labels"]
        for key in OCI_LABELS:
            assert labels.get(f"org.opencontainers.image.{key}"), f"{name}: label {key} missing"
        assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
        # the workload never runs as root: the image's user is pirex, or uid 0 in the pirex group (no --user
        # given), whose entrypoint makes /results writable and then drops to pirex or the folder's owner
        user, entry = cfg["User"], cfg["Entrypoint"]
        assert user == "1000:1000" or (user == "0:1000" and entry[:3] == ["tini", "--", "pirex-entrypoint"]), (
            name,
            user,
            entry,
        )
        assert entry[:2] == ["tini", "--"]


@pytest.mark.parametrize("platform", SUPPORTED, ids=str)
def test_base_runs_as_non_root_under_tini(built, platform):
    ref = publish.pull_local("base", built.tag, platform)
    out = docker_run(ref, platform, "sh", "-c", "id -u; id -g; uname -m; cat /proc/1/comm; test -w /results && echo ok")
    uid, gid, machine, pid1, results = out.stdout.split()
    assert (uid, gid) == ("1000", "1000")
    assert machine == platform.uname_machine
    assert pid1 == "tini"
    assert results == "ok"
    # a RAM drive as the runner mounts it for a fluctuation case in Docker (Docker makes it root's 0755 whatever
    # its mode=): the entrypoint hands it to the workload, who writes there
    ram = variants.Variant("docker", ram_workdir_mb=8).extra_docker_args()
    out = docker_run(ref, platform, "sh", "-c", "touch /work/x && stat -c %u /work", args=tuple(ram))
    assert out.stdout.split() == ["1000"]


@pytest.mark.parametrize("platform", SUPPORTED, ids=str)
def test_jvm_runs_a_jit_vm_of_the_right_arch(built, platform):
    ref = publish.pull_local("jvm", built.tag, platform)
    out = docker_run(ref, platform, "java", "-XshowSettings:properties", "-version")
    text = out.stderr
    props = dict((k.strip(), v.strip()) for k, _, v in (ln.partition("=") for ln in text.splitlines() if " = " in ln))
    assert "Server VM" in text, text  # a JIT VM, also on arm/v7 (not the Zero interpreter)
    assert props["os.arch"] == platform.java_os_arch
    assert props["java.specification.version"] == "17"
    info = json.loads(proc.run(["docker", "image", "inspect", ref], timeout=60).stdout)[0]
    assert Platform.of_image(info) == platform
    uid = docker_run(ref, platform, "id", "-u").stdout.strip()
    assert uid != "0"


def test_offline_bases_are_recorded(built):
    """Offline builds name the bootstrap roles they started from, in the image's own labels."""
    if not built.bases:
        pytest.skip("built from the public bases")
    reg = regclient.Registry(localregistry.HOST)
    _, images = reg.platform_images(f"{publish.LOCAL_NAMESPACE}/jvm", built.tag)
    for img in images.values():
        labels = reg.config(f"{publish.LOCAL_NAMESPACE}/jvm", img.config_digest)["config"]["Labels"]
        assert labels["org.opencontainers.image.base.name"] == built.bases["JDK_IMAGE"]
