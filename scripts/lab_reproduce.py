#!/usr/bin/env python3
"""`pirex reproduce PAPER --inventory` on the fleet lab (tests/fleet_lab.py: three hosts as network namespaces on
this machine, each with its own sshd and Docker daemon, the images loaded from an archive): the claims across
devices judged over three "identical devices", and, with --throttle HOST, with one of them cut to a share of a
CPU (a cgroup quota on its sshd, which its sessions inherit: a Pi throttled by heat). The hosts share this
machine's CPUs: their agreement says how alike three runs at once on one machine are, not three Pis.

    .venv/bin/python scripts/lab_reproduce.py ssp17 [--tag TAG] [--throttle pi-c] [--share 0.2] [-- ARGS...]

ARGS go to `pirex reproduce` (e.g. --set moobench.calls=100000). Prints pirex's summary and the report's path.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pirex.core import experiment, proc  # noqa: E402
from pirex.core.paths import git_version  # noqa: E402
from pirex.reproduce import claims  # noqa: E402
from tests import fleet_lab  # noqa: E402


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paper", help="a paper of analysis/ (ssp17, icpe18, fork24) or a claims.yaml")
    p.add_argument("--tag", default=None, help="the images' tag (default: git describe)")
    p.add_argument("--throttle", default=None, choices=fleet_lab.NAMES, help="cut this host's CPU")
    p.add_argument("--share", type=float, default=0.2, help="the throttled host's share of one CPU")
    p.add_argument("--results-dir", type=Path, default=REPO / "results")
    return p


def split(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This script's arguments, and those after `--`, for pirex reproduce."""
    more = argv[argv.index("--") + 1 :] if "--" in argv else []
    return parser().parse_args(argv[: argv.index("--")] if "--" in argv else argv), more


def reproduce(
    lab: fleet_lab.Lab,
    archive: Path,
    a: argparse.Namespace,
    tag: str,
    more: list[str],
    capture: bool = False,
    timeout: float = 4 * 3600,
) -> proc.Result:
    """`pirex reproduce` of a.paper on the lab's hosts, a.throttle (if any) cut to a.share of a CPU meanwhile."""
    throttle = fleet_lab.throttled(lab.sshds[a.throttle], a.share) if a.throttle else contextlib.nullcontext()
    with throttle:
        return proc.run(
            [sys.executable, "-m", "pirex", "reproduce", str(a.paper), "--inventory", str(lab.inventory)]
            + ["--images-archive", str(archive), "--tag", tag, "--results-dir", str(a.results_dir)]
            + more,
            timeout=timeout,
            check=False,
            capture=capture,
        )


def main() -> int:
    a, more = split(sys.argv[1:])
    tag = a.tag or git_version()[0]
    paper = claims.load(a.paper)
    names = sorted({experiment.load(c.experiment).image for c in paper.claims if c.experiment})
    with tempfile.TemporaryDirectory(prefix="pirex-lab-") as tmp:
        archive = fleet_lab.export_images(Path(tmp) / "images.tar", tag, tuple(names))
        (Path(tmp) / "lab").mkdir()
        with fleet_lab.lab(Path(tmp) / "lab") as lab:
            return reproduce(lab, archive, a, tag, more).returncode


if __name__ == "__main__":
    sys.exit(main())
