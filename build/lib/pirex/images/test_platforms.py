import pytest

from pirex.core.errors import PirexError
from pirex.images import platforms as plat


def test_parse_and_names():
    p = plat.parse("linux/arm/v7")
    assert (p.os, p.architecture, p.variant) == ("linux", "arm", "v7")
    assert (str(p), p.dpkg_arch, p.java_os_arch, p.uname_machine, p.slug) == (
        "linux/arm/v7",
        "armhf",
        "arm",
        "armv7l",
        "linux-arm-v7",
    )
    assert plat.parse("linux/arm64/v8") == plat.parse("linux/arm64")
    assert plat.parse(" linux/amd64 ").dpkg_arch == "amd64"


def test_parse_list():
    assert plat.parse_list("all") == list(plat.SUPPORTED)
    assert plat.parse_list("linux/arm64,linux/arm64,linux/amd64") == [
        plat.parse("linux/arm64"),
        plat.parse("linux/amd64"),
    ]
    assert plat.parse_list("host") == [plat.host()]


@pytest.mark.parametrize("bad", ["linux/arm/v6", "windows/amd64", "arm64", "linux/riscv64"])
def test_unsupported_platform_names_the_supported_ones(bad):
    with pytest.raises(PirexError, match=r"unsupported platform .*linux/amd64, linux/arm64, linux/arm/v7"):
        plat.parse(bad)


@pytest.mark.parametrize(
    ("machine", "expected"),
    [("x86_64", "linux/amd64"), ("aarch64", "linux/arm64"), ("armv7l", "linux/arm/v7"), ("armv6l", "linux/arm/v7")],
)
def test_from_uname(machine, expected):
    assert str(plat.from_uname(machine)) == expected


def test_from_uname_unknown():
    with pytest.raises(PirexError, match="s390x"):
        plat.from_uname("s390x")
