#!/usr/bin/env python3
"""Fleet wall time for three hosts: all at once against one after another (`pirex fleet run` and
`pirex fleet run --serial`), on the test's fleet (tests/fleet_lab.py: network namespaces on this
machine, each with its own sshd and Docker daemon, jmh loaded from an archive).

A first, untimed run prepares the hosts (checkout, make runner, images loaded), as a lab's first
fleet run does once; then ROUNDS rounds of a parallel and a serial run, alternating, each of jmh's
quick profile in Docker. Per run it prints the fleet's wall time (fleet.json's attempt: the whole
playbook, preparation checks, fetching and verifying included) and the longest and summed step
times of the hosts' bundles, and the mean wall time per mode.

The three hosts here share this machine's CPUs (2 on the project's machines): running them at
once cannot be three times faster here, as it would be on three devices; the ratio says how much
of the fleet's time is the runs and how much the playbook around them.

    .venv/bin/python scripts/bench_fleet.py [--tag TAG] [--rounds 2] [--set NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pirex.core import fleetrun, proc  # noqa: E402
from pirex.core.bundle import Bundle  # noqa: E402
from pirex.core.paths import git_version  # noqa: E402
from tests import fleet_lab  # noqa: E402


def fleet_run(inventory: Path, results: Path, tag: str, archive: Path, sets: list[str], serial: bool) -> dict:
    args = [
        sys.executable,
        "-m",
        "pirex",
        "fleet",
        "run",
        "jmh",
        "--inventory",
        str(inventory),
        "--results-dir",
        str(results),
        "--tag",
        tag,
        "--images-archive",
        str(archive),
        "--variants",
        "docker",
    ]
    args += [a for s in sets for a in ("--set", s)] + (["--serial"] if serial else [])
    r = proc.run(args, timeout=7200, check=False)
    [f] = sorted(results.glob(f"jmh/fleet-*/{fleetrun.MANIFEST}"), key=lambda p: p.stat().st_mtime)[-1:]
    doc = fleetrun.read_manifest(f.parent)
    if r.returncode != 0:
        raise SystemExit(f"the fleet run failed: {r.stderr.strip().splitlines()[-1:]} ({f.parent / 'ansible.log'})")
    steps = {host: sum(s.seconds for s in Bundle.open(f.parent / host).steps()) for host in doc["hosts"]}
    return {"wall": doc["attempts"][-1]["wall_seconds"], "steps": steps, "dir": f.parent, "stdout": r.stdout}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tag", default=None, help="image tag (default: git describe of the checkout)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE")
    return ap


def bench(
    lab: fleet_lab.Lab, archive: Path, tag: str, rounds: int, sets: list[str], tmp: Path, prepare: bool
) -> tuple[str, list[dict]]:
    """ROUNDS rounds of a parallel and a serial fleet run on the lab (first an untimed one that prepares the hosts,
    unless prepare is False), printing each run's wall time: the table with the mean wall time per mode, and each
    run's fleet_run() with its "mode"."""
    if prepare:
        print("preparing the hosts (untimed first run) ...", flush=True)
        fleet_run(lab.inventory, tmp / "warm", tag, archive, ["repetitions=1"], serial=False)
    walls: dict[str, list[float]] = {"parallel": [], "serial": []}
    rows, runs = [], []
    for i in range(rounds):
        for mode in ("parallel", "serial") if i % 2 == 0 else ("serial", "parallel"):
            got = fleet_run(lab.inventory, tmp / f"{mode}-{i}", tag, archive, sets, mode == "serial")
            walls[mode].append(got["wall"])
            runs.append({**got, "mode": mode})
            rows.append((mode, i + 1, got["wall"], max(got["steps"].values()), sum(got["steps"].values())))
            print(f"  round {i + 1} {mode:8}: {got['wall']:.1f} s", flush=True)
    lines = [
        "",
        "| mode | round | fleet wall (s) | longest host's steps (s) | all hosts' steps (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {mode} | {i} | {wall:.1f} | {longest:.1f} | {total:.1f} |" for mode, i, wall, longest, total in rows]
    par, ser = statistics.mean(walls["parallel"]), statistics.mean(walls["serial"])
    lines.append(
        f"\nmean fleet wall time, three hosts: all at once {par:.1f} s, one after another {ser:.1f} s "
        f"(serial / parallel = {ser / par:.2f}; {rounds} rounds each, jmh quick, docker, tag {tag})"
    )
    return "\n".join(lines), runs


def main() -> None:
    a = parser().parse_args()
    tag = a.tag or git_version()[0]
    with tempfile.TemporaryDirectory(prefix="pirex-bench-fleet-") as tmp:
        tmp = Path(tmp)
        archive = fleet_lab.export_images(tmp / "images.tar", tag)
        with fleet_lab.lab(tmp) as lab:
            report, _ = bench(lab, archive, tag, a.rounds, a.sets, tmp, prepare=True)
        left = fleet_lab.leftovers()
    print(report)
    if left:
        raise SystemExit(f"left behind: {left}")


if __name__ == "__main__":
    main()
