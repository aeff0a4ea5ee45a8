"""`make run` on a machine whose registry.yaml names digests: the images are pulled by digest and
verified instead of built (a local registry requiring a login stands in for ghcr.io, as in
test_publish.py); a digest the registry does not know is refused; an unreachable registry falls
back to building, saying so."""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from pirex.core import proc
from pirex.core.errors import PirexError
from pirex.images import localregistry, publish, regclient, sources
from pirex.images import platforms as plat

from .conftest import TEST_TAG
from .test_publish import PASSWORD, USER, free_port, login

pytestmark = pytest.mark.docker

IMAGE = "fork"  # small: the point is where it comes from
UNBUILT = "published-only"  # a tag this machine never built: only the published image can serve it


@pytest.fixture(scope="module")
def published(built, tmp_path_factory):
    """fork pushed to a registry requiring a login; registry.yaml naming its digest."""
    d = tmp_path_factory.mktemp("published")
    htpasswd = d / "htpasswd"
    htpasswd.write_text(proc.run(["htpasswd", "-Bbn", USER, PASSWORD], timeout=30).stdout)
    addr = f"127.0.0.1:{free_port()}"
    with pytest.MonkeyPatch.context() as mp, localregistry.registry_daemon(d, addr, htpasswd):
        mp.setenv("DOCKER_CONFIG", str(d / "docker-config"))
        login(addr)
        regfile = d / "registry.yaml"
        regfile.write_text(yaml.safe_dump({"images": {}}))
        with localregistry.local_registry():
            entries = publish.push(f"{addr}/lab", built.tag, [IMAGE], regfile)
            _, images = regclient.Registry(localregistry.HOST).platform_images(f"pirex/{IMAGE}", built.tag)
        yield regfile, entries[IMAGE], images[plat.host()]


def forget(ref: str) -> None:
    proc.run(["docker", "image", "rm", "-f", ref], timeout=120, check=False)


def with_digest(regfile, tmp_path, **changes):
    doc = yaml.safe_load(regfile.read_text())
    doc["images"][IMAGE].update(changes)
    out = tmp_path / "registry.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def test_published_images_are_pulled_by_digest_and_verified_not_built(published, capsys):
    regfile, entry, built_image = published
    forget(entry.ref)
    with localregistry.local_registry():
        assert sources.ensure([IMAGE], UNBUILT, plat.host(), regfile) == []  # nothing left to build
        assert (
            f"{IMAGE}: {entry.ref} ({plat.host()}) -> {built_image.config_digest} verified" in capsys.readouterr().out
        )
        assert not regclient.Registry(localregistry.HOST).exists(f"pirex/{IMAGE}", UNBUILT)  # no build happened
        src = sources.resolve(IMAGE, UNBUILT, plat.host(), regfile)
        assert sources.ensure([IMAGE], UNBUILT, plat.host(), regfile) == []  # a second run finds it here
        assert "is here already" in capsys.readouterr().out
    assert src.reference == entry.ref
    assert src.origin == {
        "kind": "pulled",
        "repository": entry.repository,
        "tag": entry.tag,
        "index_digest": entry.digest,
    }
    info = json.loads(proc.run(["docker", "image", "inspect", src.reference], timeout=60).stdout)[0]
    assert info["Id"] == built_image.config_digest  # the very image that was built and published


def test_a_tampered_digest_is_refused_not_built(published, tmp_path):
    regfile, entry, _ = published
    tampered = "sha256:" + ("0" if entry.digest[-1] != "0" else "1") * 64
    bad = with_digest(regfile, tmp_path, digest=tampered)
    with localregistry.local_registry(), pytest.raises(PirexError, match="wrong or was tampered with; refused"):
        sources.ensure([IMAGE], UNBUILT, plat.host(), bad)


def test_an_unreachable_registry_falls_back_to_building_and_says_so(published, tmp_path):
    regfile, _, _ = published
    gone = with_digest(regfile, tmp_path, repository=f"127.0.0.1:{free_port()}/lab/{IMAGE}")
    env = {"PIREX_REGISTRY_FILE": str(gone)}
    tag = f"{TEST_TAG}-fallback"  # its own tag: a host-only build must not replace the session's three platforms
    r = proc.run(
        [
            sys.executable,
            "-m",
            "pirex",
            "images",
            "ensure",
            "--offline",
            os.environ.get("OFFLINE", "auto"),
            "--tag",
            tag,
            IMAGE,
        ],
        timeout=3600,
        check=False,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "cannot be reached" in r.stderr and f"building {IMAGE} here instead" in r.stderr
    assert f"{IMAGE}: {publish.local_ref(IMAGE, tag)}@" in r.stdout  # built, as `images build` reports
    with localregistry.local_registry():
        src = sources.resolve(IMAGE, tag, plat.host(), gone)
    assert src.origin == {"kind": "built", "tag": tag}
