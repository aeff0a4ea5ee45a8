"""OCI platforms as pirex names them, and how they map to Debian architectures and kernels."""

from __future__ import annotations

import platform as _platform
from dataclasses import dataclass

from pirex.core.errors import PirexError


@dataclass(frozen=True, order=True)
class Platform:
    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)

    @classmethod
    def of_image(cls, inspect: dict) -> Platform:
        """The platform `docker image inspect` reports for an image in the engine."""
        return cls(inspect["Os"], inspect["Architecture"], inspect.get("Variant") or "")

    @property
    def dpkg_arch(self) -> str:
        """Debian's name: linux/arm/v7 is armhf."""
        return _DPKG[(self.architecture, self.variant)]

    @property
    def java_os_arch(self) -> str:
        """What a JVM reports as os.arch on this platform."""
        return {"amd64": "amd64", "arm64": "aarch64", "arm": "arm"}[self.architecture]

    @property
    def uname_machine(self) -> str:
        return {"amd64": "x86_64", "arm64": "aarch64", "arm": "armv7l"}[self.architecture]

    @property
    def slug(self) -> str:
        """File-name friendly: linux-arm-v7."""
        return str(self).replace("/", "-")


# The platforms of the collection: a Pi 2/3 on 32-bit Raspberry Pi OS, a Pi 3/4/5 on 64-bit,
# laptops and servers.
_DPKG = {("amd64", ""): "amd64", ("arm64", ""): "arm64", ("arm", "v7"): "armhf"}
SUPPORTED = tuple(Platform("linux", a, v) for (a, v) in _DPKG)
_ALIASES = {"linux/arm64/v8": "linux/arm64", "linux/arm": "linux/arm/v7", "linux/x86_64": "linux/amd64"}


def parse(text: str) -> Platform:
    """Parse one platform, e.g. linux/arm/v7; a clear error names what is supported."""
    name = _ALIASES.get(text.strip(), text.strip())
    for p in SUPPORTED:
        if str(p) == name:
            return p
    raise PirexError(
        f"unsupported platform {text!r}: pirex builds {', '.join(map(str, SUPPORTED))} "
        "(set PLATFORMS to a comma-separated subset)"
    )


def parse_list(text: str) -> list[Platform]:
    """Parse PLATFORMS (comma-separated, 'all' for every supported one, 'host' for this machine)."""
    text = text.strip()
    if text in ("", "all"):
        return list(SUPPORTED)
    out: list[Platform] = []
    for item in text.split(","):
        p = host() if item.strip() == "host" else parse(item)
        if p not in out:
            out.append(p)
    return out


def from_uname(machine: str) -> Platform:
    m = machine.lower()
    if m in ("x86_64", "amd64"):
        return parse("linux/amd64")
    if m in ("aarch64", "arm64", "armv8l"):
        return parse("linux/arm64")
    if m.startswith("armv7") or m.startswith("armv6"):
        return parse("linux/arm/v7")
    raise PirexError(f"this machine ({machine}) is none of the platforms pirex builds for")


def host() -> Platform:
    """The platform of this machine's userland (a 64-bit kernel may run a 32-bit Raspberry Pi OS)."""
    if _platform.architecture()[0] == "32bit" and _platform.machine() == "aarch64":
        return parse("linux/arm/v7")
    return from_uname(_platform.machine())
