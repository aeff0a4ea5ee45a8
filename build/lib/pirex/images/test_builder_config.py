"""The buildkitd configuration pirex writes (pirex/images/builder.py): its garbage collector keeps the build cache.

BuildKit 0.18 parses every size of its config with go-units, so a bare number is a count of BYTES: the former
`gckeepstorage = 20000` (meant as MB) made the collector prune the cache to 20 kB after each build, and every
`make build` after a commit re-ran most steps (issue 40)."""

import re
import tomllib

import pytest

from pirex.images import builder

SIZE_KEYS = ("gckeepstorage", "reservedSpace", "maxUsedSpace", "minFreeSpace", "keepBytes")
UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}  # go-units RAMInBytes


def go_units_bytes(value) -> int:
    """What BuildKit makes of a size (github.com/docker/go-units RAMInBytes): numbers without a unit are bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?B?)", str(value).strip(), re.I)
    if not m:
        raise ValueError(value)
    unit = m[2].upper()
    return int(float(m[1]) * UNITS[unit if unit.endswith("B") or not unit else unit + "B"])


def oci() -> dict:
    return tomllib.loads(builder.CONFIG.format(registry="localhost:5000"))["worker"]["oci"]


def test_go_units_reading():
    assert go_units_bytes(20000) == 20000  # the old setting: 20 kB
    assert go_units_bytes("10GB") == 10 * 1024**3
    assert go_units_bytes("512m") == 512 * 1024**2


def test_the_collector_keeps_gigabytes_of_cache():
    cfg = oci()
    assert cfg["gc"] is True
    sizes = {k: cfg[k] for k in SIZE_KEYS if k in cfg}
    assert sizes, "no cache size set: BuildKit would pick its own from the disk"
    for key, value in sizes.items():
        assert isinstance(value, str) and re.search(r"[KMGT]B$", value), f"{key} = {value!r}: give the unit"
    assert go_units_bytes(cfg["reservedSpace"]) >= 10 * 1024**3
    assert go_units_bytes(cfg["maxUsedSpace"]) >= go_units_bytes(cfg["reservedSpace"])


@pytest.mark.parametrize("key", SIZE_KEYS)
def test_no_size_is_a_bare_number(key):
    assert not re.search(rf"^\s*{key}\s*=\s*\d+\s*$", builder.CONFIG, re.M), key
