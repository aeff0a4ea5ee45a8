"""The Docker session's images, built ahead: `make test` runs this beside the unit session (issue 40).

`python -m tests.prebuild` makes exactly what the session's `built` fixture makes (conftest.build_images: the same
images, platforms, tag and revision, into the same BuildKit cache and local registry under the cache folder), and the
emulated Pis' rootfs trees. The Docker session that follows then finds every layer cached and builds in seconds.

On a fresh machine the build is 10-12 minutes and waits on the network (Debian's mirror, Maven) for part of them;
the unit session runs beside it. The Makefile starts this at the lowest CPU and I/O priority, which buildkitd, QEMU
and mmdebstrap inherit as its children: the unit session then runs at its own speed and the build takes what it
leaves (at equal priority on a cold 2-vCPU VM the unit session took 14.6 min instead of 2.5, issue 55). The machine is
CPU-bound throughout, so the overlap hides only the minutes the build waits on the network (797 s for both against
166 + 636 s one after the other, docs/development.md). Nothing depends on this having worked: it only warms caches.
Whatever it fails on, the Docker session builds again and its test reports the failure; the Makefile shows this
log's end.

SIGINT (even when the shell that started it ignores it), SIGTERM and SIGHUP unwind like Ctrl-C, so buildkitd, the
registry and an mmdebstrap under QEMU are stopped on every exit path (as in a pytest session:
conftest.pytest_configure)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pirex.core.errors import PirexError
from pirex.images import builder, localregistry

from . import emulated_pi
from .conftest import build_images, docker_problem, interrupt

AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


@contextlib.contextmanager
def nice_reaches_sessions(switch: Path = AUTOGROUP) -> Iterator[str]:
    """For the length of the build, the kernel's autogroups off (as root, where they are on), so that this process's
    nice reaches what it starts: buildkitd, mmdebstrap and QEMU each start a session of their own, and with
    autogroups the scheduler shares the CPU between sessions whatever their nice (measured on a cold 2-vCPU VM: the
    unit session beside a nice 19 build took 12.3 min instead of about 4). Restored on every exit path this process
    has (SIGINT, SIGTERM and SIGHUP unwind as Ctrl-C); a kill -9 leaves them off, which only makes nice work as on
    a kernel without them (`echo 1 > /proc/sys/kernel/sched_autogroup_enabled` puts them back). Yields what it did,
    for the log."""
    try:
        before = switch.read_text().strip()
    except OSError:
        yield "no autogroups on this kernel"
        return
    if before == "0":
        yield "autogroups already off"
        return
    try:
        switch.write_text("0\n")
    except OSError as e:
        yield f"autogroups left on ({e.strerror}): the build's nice does not reach its sessions"
        return
    try:
        yield "autogroups off while building (the build's nice then reaches its sessions)"
    finally:
        with contextlib.suppress(OSError):
            switch.write_text(before + "\n")


def prebuild() -> int:
    problem = docker_problem()
    if problem:
        print(f"prebuild: nothing built ahead: {problem}", flush=True)
        return 0
    with nice_reaches_sessions() as how:
        print(f"prebuild: at nice {os.nice(0)}; {how}", flush=True)
        return _build()


def _build() -> int:
    started = time.monotonic()
    pi_trees = not emulated_pi.have_tools()
    try:
        if pi_trees:  # beside the image build, as in the session (conftest.built)
            emulated_pi.rootfs_soon(list(emulated_pi.DPKG_ARCHES))
        with localregistry.local_registry() as host, builder.builder() as name:
            build_images(host, name)
        print(f"prebuild: images built in {time.monotonic() - started:.0f} s", flush=True)
        if pi_trees:
            for arch in emulated_pi.DPKG_ARCHES:
                emulated_pi.rootfs(arch)
            print(f"prebuild: the emulated Pis' rootfs trees ready at {time.monotonic() - started:.0f} s", flush=True)
    except PirexError as e:
        print(f"prebuild: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        emulated_pi.stop_making()
    return 0


def main() -> int:
    # make starts this in the background, where a shell without job control ignores SIGINT: Ctrl-C on make test
    # must still stop it (and the daemons it started), so SIGINT is taken back here as well
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    return prebuild()


if __name__ == "__main__":
    sys.exit(main())
