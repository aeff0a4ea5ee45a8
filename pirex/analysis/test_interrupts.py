"""ICPE'18 Figure 3 from the interrupt counters the runner records around each step."""

import json

from pirex.analysis import interrupts
from pirex.bundle import Bundle, write_step_info


def _counters(timer: int, eth: int) -> dict:
    return {
        "cpus": 2,
        "lines": {
            "11": {"counts": [timer, timer], "description": "GICv2 30 Level arch_timer"},
            "56": {"counts": [eth, 0], "description": "BCM2835 DWC OTG Controller"},
        },
    }


def test_interrupts_per_second_per_source_and_the_figure(tmp_path):
    b = Bundle.create(
        tmp_path,
        "jmh",
        "quick",
        {},
        ["native", "docker"],
        [(v, r) for v in ("native", "docker") for r in (0, 1)],
        {},
        {"version": "t", "commit": "c"},
    )
    for v, eth in (("native", 100), ("docker", 300)):
        with b.step(v, 0) as d:
            (d / "interrupts.json").write_text(json.dumps({"before": _counters(0, 0), "after": _counters(500, eth)}))
            write_step_info(d, ["java"], 0, 10.0)
        with b.step(v, 1) as d:  # /proc/interrupts unreadable then: no record, no value
            (d / "interrupts.json").write_text(json.dumps({"before": None, "after": None}))
            write_step_info(d, ["java"], 0, 10.0)
    b.finish()
    data = interrupts.per_step([b.path])
    assert data["native"]["11 arch_timer"] == [100.0]  # 2 CPUs x 500 in 10 s
    assert data["docker"]["56 Controller"] == [30.0]
    files = interrupts.figure([b.path], tmp_path / "fig")
    assert [f.name for f in files] == ["interrupts.png", "interrupts.svg"] and all(f.stat().st_size for f in files)
    assert interrupts.figure([], tmp_path / "none") == []
