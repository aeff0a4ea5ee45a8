"""The README's two steps on a fresh Debian 12 machine, timed: `git clone` of this checkout's committed HEAD,
then `make run` as root, which sets the machine up (Docker engine, QEMU, registry, buildx, compose,
buildkitd: scripts/host-setup.sh) and runs the quick profile of every experiment.

The machine is tests/fresh_machine.py's: a new Debian bookworm tree in its own network, mount and PID
namespaces, with no Docker engine and no pirex caches; its dockerd (own data root and socket) is stopped
at the end and everything else it started ends with its PID namespace. Needs root; 15 minutes or more.

It then sets each run's estimate, made before anything ran on that machine (the first plan's, state.json),
beside what the run took: the estimates are right on a fresh machine when the first run's image exports
for the native variant are in them. `--make-args BUDGET=` runs the pilot alone (no rounds, which extend
runs beyond their estimate).

    make bench-fresh-machine [ARGS="--keep-log DIR --make-args 'BUDGET='"]
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pirex.core import paths  # noqa: E402
from pirex.reproduce.state import ReproductionState  # noqa: E402
from tests import fresh_machine  # noqa: E402

SCRIPT = r"""
cd /root && git clone -q /srv/pirex.git pirex && cd pirex || exit 1
start=$(date +%s)
make run {make_args} > /root/make-run.log 2>&1
status=$?
echo "make run: exit $status after $(( $(date +%s) - start )) s"
# the dockerd the set-up started (its pid file), stopped as a service manager stops it
if [ -f /run/pirex-dockerd.pid ]; then
    pid=$(cat /run/pirex-dockerd.pid)
    kill "$pid" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
fi
exit $status
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--keep-log",
        type=Path,
        default=Path("results/bench-fresh-machine"),
        help="where make run's log is copied (default: %(default)s)",
    )
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--make-args", default="", help="after `make run`, e.g. 'BUDGET=' (the pilot alone)")
    args = ap.parse_args()
    if why := fresh_machine.have_tools():
        print(f"bench-fresh-machine: {why}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    fresh_machine.rootfs()
    print(f"fresh Debian 12 rootfs: {time.monotonic() - t0:.0f} s (cached for later runs; not part of make run)")
    with fresh_machine.Machine.create(paths.REPO) as m, fresh_machine.network() as ns:
        t1 = time.monotonic()
        script = SCRIPT.replace("{make_args}", shlex.join(shlex.split(args.make_args)))
        r = m.run(script, timeout=args.timeout, netns=ns)
        wall = time.monotonic() - t1
        args.keep_log.mkdir(parents=True, exist_ok=True)
        log = m.root / "root/make-run.log"
        if log.exists():
            shutil.copy(log, args.keep_log / "make-run.log")
        folders = sorted((m.root / "root/pirex/results/reproduce").glob("*/state.json"))
        if folders:
            for name in ("state.json", "REPORT.md"):
                if (folders[-1].parent / name).exists():
                    shutil.copy(folders[-1].parent / name, args.keep_log / name)
            estimates_against_took(ReproductionState.read(folders[-1].parent))
    print(r.stdout.strip())
    print(
        f"git clone + make run on the fresh machine: {wall:.0f} s wall, exit {r.returncode}; "
        f"log: {args.keep_log / 'make-run.log'}"
    )
    if r.returncode != 0:
        print(r.stderr[-3000:], file=sys.stderr)
    return r.returncode


def estimates_against_took(state: ReproductionState) -> None:
    """Each run's first estimate beside its time, and the totals (a run without an estimate counts in neither)."""
    print("| run | estimated s | took s | took / estimated |")
    print("|---|---:|---:|---:|")
    est = took = 0.0
    for key, secs in state.ran.items():
        e = state.estimates.get(key)
        print(f"| {key} | {e:.0f} | {secs:.0f} | {secs / e:.2f} |" if e else f"| {key} | - | {secs:.0f} | - |")
        if e:
            est, took = est + e, took + secs
    if est:
        print(f"| all with an estimate | {est:.0f} | {took:.0f} | {took / est:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
