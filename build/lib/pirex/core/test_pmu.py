"""Raw PMU event codes per CPU, chosen from machine records built from the PI-FACTS fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pirex.core import board, experiment, pmu
from pirex.core.errors import PirexError

DATA = Path(__file__).parent / "testdata" / "machine"


def record(cpuinfo: str) -> dict:
    """The machine record's cpu section, as machine.record() builds it from /proc/cpuinfo."""
    info = board.parse_cpuinfo(cpuinfo)
    return {"cpu": {"model": info["model"], "core": info["core"], "cpu_parts": info["cpu_parts"]}}


PI3 = record((DATA / "pi3-raspbian32.cpuinfo").read_text())
PI4 = record((DATA / "pi4-arm64.cpuinfo").read_text())
PI5 = record((DATA / "pi4-arm64.cpuinfo").read_text().replace("0xd08", "0xd0b"))  # a Pi 5's cores are A76
FORK = experiment.load("fork")  # its raw_events declares the resolver
X86 = record((DATA / "x86-server.cpuinfo").read_text())


@pytest.mark.parametrize(
    "rec, core, spec",
    [
        (PI3, "Cortex-A53", "LLC-loads=0x16,LLC-load-misses=0x17"),
        (PI4, "Cortex-A72", "LLC-loads=0x50,LLC-load-misses=0x52"),  # the thesis's Pi 4 codes
        (PI5, "Cortex-A76", "LLC-loads=0x36,LLC-load-misses=0x37"),
    ],
)
def test_codes_per_pi_cpu(rec, core, spec):
    choice = pmu.choose(rec)
    assert choice.core.name == core == rec["cpu"]["core"] and choice.reason == ""
    assert choice.spec == spec
    assert pmu.resolve({"raw_events": "auto", "sizes": "1"}, rec, FORK) == {"raw_events": spec, "sizes": "1"}


@pytest.mark.parametrize(
    "rec, reason",
    [
        (X86, "no raw PMU events for Intel(R) Xeon(R)"),
        ({"cpu": {"cpu_parts": ["0xd05"], "core": "ARM part 0xd05"}}, "no raw PMU events known for CPU part 0xd05"),
        ({"cpu": {"cpu_parts": ["0xd03", "0xd08"]}}, "the cores differ (0xd03, 0xd08)"),
        ({}, "no raw PMU events for this CPU"),
    ],
)
def test_refused_cleanly_elsewhere(rec, reason):
    choice = pmu.choose(rec)
    assert choice.core is None and reason in choice.reason and choice.spec == "none"
    assert pmu.resolve({"raw_events": "auto"}, rec, FORK) == {"raw_events": "none"}


def test_explicit_values_are_checked_and_kept():
    assert pmu.resolve({"raw_events": "none"}, PI4, FORK) == {"raw_events": "none"}
    assert pmu.resolve({"raw_events": "LLC-load-misses=0x17"}, PI4, FORK) == {"raw_events": "LLC-load-misses=0x17"}
    assert pmu.resolve({"sizes": "1"}, PI4, FORK) == {"sizes": "1"}  # parameters without it
    for bad in ("LLC-load-misses=82", "=0x52", "LLC-load-misses=0x52,", "a=0x12345"):
        with pytest.raises(PirexError, match="expected auto, none or NAME=0xCODE"):
            pmu.resolve({"raw_events": bad}, PI4, FORK)


def test_describe_names_the_arm_events():
    (line,) = pmu.describe("LLC-load-misses=0x52", PI4)
    assert line.startswith("LLC-load-misses = raw event 0x52 (L2D_CACHE_REFILL_RD") and "1 MB shared L2" in line
    assert pmu.describe("LLC-load-misses=0x52", X86) == ["LLC-load-misses = raw event 0x52"]
    assert pmu.describe("none", PI4) == []


def test_only_the_parameters_that_declare_the_resolver_are_resolved(tmp_path):
    doc = yaml.safe_load(experiment.path_of("fork").read_text())
    assert experiment.load("fork").resolved_by(pmu.RESOLVER) == (pmu.PARAMETER,)
    doc["parameters"]["counters"] = {**doc["parameters"].pop("raw_events"), "default": "none"}
    doc["command"] = [a.replace("{raw_events}", "{counters}") for a in doc["command"]]
    (tmp_path / "experiment.yaml").write_text(yaml.safe_dump(doc))
    renamed = experiment.load(tmp_path / "experiment.yaml")
    params = {"counters": "auto", "raw_events": "auto"}
    assert pmu.resolve(params, PI4, renamed) == {
        "counters": "LLC-loads=0x50,LLC-load-misses=0x52",
        "raw_events": "auto",
    }
    assert pmu.resolve(params, PI4, experiment.load("jmh")) == params, "an experiment that declares none"
