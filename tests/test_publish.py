"""make push / make pull against a real registry that requires credentials (Debian's
docker-registry, distribution 2.8, with an htpasswd file), started by the test on loopback."""

from __future__ import annotations

import shutil
import socket

import pytest

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.images import localregistry, publish, regclient, registryfile
from pirex.images.platforms import SUPPORTED

pytestmark = pytest.mark.docker

USER, PASSWORD = "pirex", "s3cret-for-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def auth_registry(built, tmp_path_factory):
    """host:port of a registry requiring a login; a throwaway DOCKER_CONFIG holds the login."""
    d = tmp_path_factory.mktemp("auth-registry")
    htpasswd = d / "htpasswd"
    htpasswd.write_text(proc.run(["htpasswd", "-Bbn", USER, PASSWORD], timeout=30).stdout)
    addr = f"127.0.0.1:{free_port()}"
    with pytest.MonkeyPatch.context() as mp, localregistry.registry_daemon(d, addr, htpasswd):
        mp.setenv("DOCKER_CONFIG", str(d / "docker-config"))
        yield addr


@pytest.fixture
def registry_copy(tmp_path):
    copy = tmp_path / "registry.yaml"
    shutil.copy(REPO / "registry.yaml", copy)
    return copy


def login(addr: str) -> None:
    proc.run(["docker", "login", addr, "-u", USER, "--password-stdin"], input=PASSWORD, timeout=60)


def test_push_then_pull_by_digest(built, auth_registry, registry_copy):
    before = registry_copy.read_bytes()
    with pytest.raises(PirexError, match=r"requires credentials.*docker login"):
        publish.push(f"{auth_registry}/lab", built.tag, list(built.digests), registry_copy)
    assert registry_copy.read_bytes() == before, "a refused push must leave registry.yaml untouched"

    login(auth_registry)
    entries = publish.push(f"{auth_registry}/lab", built.tag, list(built.digests), registry_copy)
    reloaded = registryfile.load(registry_copy)
    assert reloaded == entries
    local = regclient.Registry(localregistry.HOST)
    for name in built.digests:
        e = reloaded[name]
        assert e.repository == f"{auth_registry}/lab/{name}" and e.tag == built.tag
        assert e.digest and registryfile.DIGEST.match(e.digest)
        assert sorted(e.platforms) == sorted(map(str, built.platforms_for(name)))
        assert e.extra["context"] == f"images/{name}"  # fields beyond the four are kept
        # the published manifest list is the one the registry serves for the tag
        _, served = publish.remote_raw(f"{e.repository}:{e.tag}")
        assert served == e.digest

    # Pull by digest, every platform of every image: the same image IDs as built.
    for platform in SUPPORTED:
        names = [n for n in built.digests if platform in built.platforms_for(n)]
        ids = publish.pull(registry_copy, platform, names)
        assert sorted(ids) == sorted(names)
        for name, image_id in ids.items():
            _, images = local.platform_images(f"{publish.LOCAL_NAMESPACE}/{name}", built.tag)
            assert image_id == images[platform].config_digest, (name, platform)


def test_pull_refuses_unpublished_and_unknown_images(tmp_path):
    f = tmp_path / "registry.yaml"
    f.write_text("images:\n  base: {repository: ghcr.io/lab/base, tag: v1, platforms: [linux/amd64], digest: null}\n")
    with pytest.raises(PirexError, match="no digest for base: nothing published yet"):
        publish.pull(f, SUPPORTED[0])
    with pytest.raises(PirexError, match="lists no image named nosuch"):
        publish.pull(f, SUPPORTED[0], ["nosuch"])


def test_push_names_a_missing_build(infra, registry_copy):
    with pytest.raises(PirexError, match="not in the local registry: run `make build"):
        publish.push("127.0.0.1:1/lab", "no-such-tag", ["base"], registry_copy)
