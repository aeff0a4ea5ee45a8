import pytest

from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.images import registryfile

GOOD = """\
images:
  base:
    repository: ghcr.io/lab/base
    tag: v1
    platforms: [linux/amd64, linux/arm/v7]
    digest: sha256:%s
    description: kept as it is
""" % ("a" * 64)


def test_the_committed_file_is_valid():
    entries = registryfile.load(REPO / "registry.yaml")
    assert {"base", "jvm"} <= set(entries)


def test_roundtrip_keeps_extra_fields(tmp_path):
    f = tmp_path / "registry.yaml"
    f.write_text(GOOD)
    entries = registryfile.load(f)
    assert entries["base"].extra == {"description": "kept as it is"}
    assert entries["base"].ref == "ghcr.io/lab/base@sha256:" + "a" * 64
    registryfile.save(f, entries)
    assert registryfile.load(f) == entries
    assert f.read_text().startswith("# The published pirex images")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("images: []\n", "images: expected a mapping"),
        ("nothing: 1\n", "images: expected a mapping"),
        (GOOD.replace("digest: sha256:", "digest: md5:"), "images.base.digest: expected null or sha256"),
        (GOOD.replace("linux/arm/v7", "linux/mips"), "images.base.platforms: unsupported platform 'linux/mips'"),
        (GOOD.replace("ghcr.io/lab/base", "ghcr.io/lab/base:v1"), "images.base.repository: expected a repository"),
        (GOOD.replace("tag: v1", "tag: ''"), "images.base.tag: expected a non-empty string"),
        (GOOD.replace("[linux/amd64, linux/arm/v7]", "[]"), "images.base.platforms: expected a non-empty list"),
        ("images: {base: [\n", "not valid YAML"),
    ],
)
def test_problems_are_named(tmp_path, text, message):
    f = tmp_path / "registry.yaml"
    f.write_text(text)
    with pytest.raises(PirexError, match=message.replace("[", r"\[").replace("(", r"\(")) as e:
        registryfile.load(f)
    assert str(f) in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(PirexError, match="does not exist"):
        registryfile.load(tmp_path / "registry.yaml")


def test_failed_save_leaves_the_file(tmp_path, monkeypatch):
    f = tmp_path / "registry.yaml"
    f.write_text(GOOD)
    entries = registryfile.load(f)

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(registryfile.os, "replace", boom)
    with pytest.raises(RuntimeError):
        registryfile.save(f, entries)
    assert f.read_text() == GOOD
    assert [p.name for p in tmp_path.iterdir()] == ["registry.yaml"]


def test_platform_aliases_are_stored_canonically(tmp_path):
    f = tmp_path / "registry.yaml"
    f.write_text(GOOD.replace("[linux/amd64, linux/arm/v7]", "[linux/arm64/v8, linux/arm]"))
    assert registryfile.load(f)["base"].platforms == ["linux/arm64", "linux/arm/v7"]


def test_save_keeps_the_file_readable(tmp_path):
    f = tmp_path / "registry.yaml"
    f.write_text(GOOD)
    f.chmod(0o644)
    registryfile.save(f, registryfile.load(f))
    assert f.stat().st_mode & 0o777 == 0o644
