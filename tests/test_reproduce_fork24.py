"""pirex reproduce end to end on this machine's engine: the thesis's claims at kick-the-tires
(fork, the cheapest paper: its quick profile natively), then a second reproduction that reuses
the bundle instead of running again."""

from __future__ import annotations

import json

import pytest

from pirex.core import machine
from pirex.core.bundle import verify
from pirex.reproduce import claims, plan, reproduction
from pirex.reproduce.verdict import NOT_RUN

from .conftest import TEST_TAG

pytestmark = pytest.mark.docker


def test_fork24_kick_the_tires_then_reused(built, tmp_path):
    lines: list[str] = []
    opts = reproduction.Options(["fork24"], "kick-the-tires", results_dir=tmp_path, tag=TEST_TAG)
    out = reproduction.reproduce(opts, reproduction.run_with_runner, echo=lines.append)
    plan_text, summary = lines[0], lines[-1]
    assert "fork@quick" in plan_text and "5 steps" in plan_text
    bundles = sorted((tmp_path / "fork").glob("*/manifest.json"))
    assert len(bundles) == 1 and verify(bundles[0].parent) == []
    manifest = json.loads(bundles[0].read_text())
    assert manifest["parameters"]["repetitions"] == 5  # kick-the-tires: enough repetitions for an interval
    assert all(s["params"]["sizes"] == manifest["parameters"]["sizes"] for s in manifest["plan"])
    verdicts = json.loads((out / "state.json").read_text())["verdicts"]
    assert set(verdicts) == {f"fork24:{c.id}" for c in claims.load("fork24").claims}  # a verdict or a reason each
    assert verdicts["fork24:cost-grows-with-memory"] != NOT_RUN, summary
    # a Pi's claim and a server's (one of at least 8 hardware threads, as the thesis's): judged only where this
    # machine is of that kind, and on a 2-vCPU VM neither is
    by_id = {c.id: c for c in claims.load("fork24").claims}
    missing = plan.missing(machine.record(tmp_path, docker=False), {})
    for k in ("migration-costs-more", "migration-server-consistent"):
        assert (verdicts[f"fork24:{k}"] == NOT_RUN) == bool(plan.blocked(by_id[k], missing)), summary
    assert NOT_RUN in (verdicts["fork24:migration-costs-more"], verdicts["fork24:migration-server-consistent"])
    assert verdicts["fork24:pi-vs-server"] == NOT_RUN  # one machine: says what it would need
    assert (out / "REPORT.md").is_file() and "data:image/png;base64," in (out / "report.html").read_text()
    assert len(summary.splitlines()) <= 25 and "report:" in summary

    lines.clear()
    again = reproduction.reproduce(
        reproduction.Options(["fork24"], results_dir=tmp_path, tag=TEST_TAG),
        reproduction.run_with_runner,
        echo=lines.append,
    )
    assert again != out and len(list((tmp_path / "fork").glob("*/manifest.json"))) == 1  # reused, not rerun
    assert "done: 1 bundle(s) of this commit and machine" in lines[0]
