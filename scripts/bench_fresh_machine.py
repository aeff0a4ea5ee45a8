"""The README's two steps on a fresh Debian 12 machine, timed: `git clone` of this checkout's committed HEAD,
then `make run` as root, which sets the machine up (Docker engine, QEMU, registry, buildx, compose,
buildkitd: scripts/host-setup.sh) and runs the quick profile of every experiment.

The machine is tests/fresh_machine.py's: a new Debian bookworm tree in its own network, mount and PID
namespaces, with no Docker engine and no pirex caches; its dockerd (own data root and socket) is stopped
at the end and everything else it started ends with its PID namespace. Needs root; 15 minutes or more.

    make bench-fresh-machine [ARGS="--keep-log DIR"]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pirex.core import paths  # noqa: E402
from tests import fresh_machine  # noqa: E402

SCRIPT = r"""
cd /root && git clone -q /srv/pirex.git pirex && cd pirex || exit 1
start=$(date +%s)
make run > /root/make-run.log 2>&1
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
    args = ap.parse_args()
    if why := fresh_machine.have_tools():
        print(f"bench-fresh-machine: {why}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    fresh_machine.rootfs()
    print(f"fresh Debian 12 rootfs: {time.monotonic() - t0:.0f} s (cached for later runs; not part of make run)")
    with fresh_machine.Machine.create(paths.REPO) as m, fresh_machine.network() as ns:
        t1 = time.monotonic()
        r = m.run(SCRIPT, timeout=args.timeout, netns=ns)
        wall = time.monotonic() - t1
        args.keep_log.mkdir(parents=True, exist_ok=True)
        log = m.root / "root/make-run.log"
        if log.exists():
            shutil.copy(log, args.keep_log / "make-run.log")
    print(r.stdout.strip())
    print(
        f"git clone + make run on the fresh machine: {wall:.0f} s wall, exit {r.returncode}; "
        f"log: {args.keep_log / 'make-run.log'}"
    )
    if r.returncode != 0:
        print(r.stderr[-3000:], file=sys.stderr)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
