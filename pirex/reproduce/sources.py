"""Where a reproduction's bundles come from beyond this machine's own runs: bundles given by hand (--bundles: bundles,
fleet runs, or folders of them, from several machines), the devices of an Ansible inventory (--inventory: each need
run on every device through `pirex fleet`), and storage devices (--storage: a mount the work directory goes on)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pirex import fleet
from pirex.core import experiment, fleetrun
from pirex.core.bundle import MANIFEST, Bundle, Verifier
from pirex.core.errors import PirexError
from pirex.reproduce import plan
from pirex.reproduce.state import ReproductionState

# a rerun of an artifact's scratch folder under the results folder (artifact/rerun.py): the artifact unpacked, its
# bundles (another machine's) among them; never results of this machine
SCRATCH = ".artifact-"


def given_bundles(paths: Sequence[Path]) -> list[Path]:
    """Every bundle under the given paths: a bundle, a fleet run (its verified hosts' bundles), or a folder holding
    either (results/moobench): in the order given, each once. A path with none is an error naming it."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise PirexError(f"--bundles {p}: no such file or directory")
        if (p / fleetrun.MANIFEST).is_file():
            found = fleetrun.bundles(p)
        elif (p / MANIFEST).is_file():
            found = [p]
        else:
            found = sorted(
                m.parent
                for m in p.rglob(MANIFEST)
                if ".fleet" not in m.parts and not any(d.startswith(SCRATCH) for d in m.relative_to(p).parts)
            )
        if not found:
            raise PirexError(
                f"--bundles {p}: no bundle there (a bundle has {MANIFEST}; a fleet run {fleetrun.MANIFEST})"
            )
        for b in found:
            if b.resolve() not in {x.resolve() for x in out}:
                out.append(b)
    return out


def intact(paths: Sequence[Path], verifier: Verifier, left_out: dict[str, str], digests: bool = True) -> list[Path]:
    """The bundles among `paths` that pass verification (bundle.Verifier: sizes, and sha256 digests unless this
    reproduction wrote the bundle itself); each that fails goes into `left_out` (its path -> why, naming the file
    and `pirex verify`), which the report lists under "Bundles left out", and nothing is read from it.

    Left out rather than refused: a reproduction judges many claims on many bundles, often of several devices, so
    one damaged bundle costs only the verdicts that needed it (a bundle of this machine's results/ that fails is
    run again, unless --reuse-only or --bundles), the report names it, and `pirex reproduce` then exits with
    status 1 (cli/reproduce.py), so that a script notices too."""
    out = []
    for p in map(Path, paths):
        if why := verifier.reason(p, digests):
            left_out[str(p)] = why
        else:
            out.append(p)
    return out


def check(opts, given: list[Path]) -> dict[str, dict]:
    """The sources given are usable, before anything runs: the inventory's hosts (none without --inventory)."""
    if given and (opts.inventory or opts.storages):
        raise PirexError("--bundles judges bundles there are: leave out --inventory and --storage (they run)")
    if opts.inventory and opts.storages:
        raise PirexError("--storage runs on this machine's mounts: give it without --inventory")
    if (opts.images_archive or opts.serial) and not opts.inventory:
        raise PirexError("--images-archive and --serial are for the hosts of --inventory: give it too")
    for s in opts.storages:
        if not s.is_dir():
            raise PirexError(f"--storage {s}: not a directory (give the mount point of each storage device)")
        if not os.access(s, os.W_OK):
            raise PirexError(f"--storage {s}: not writable here: the work directory goes there")
    resolved = [s.resolve() for s in opts.storages]
    if len(set(resolved)) != len(resolved):
        raise PirexError("--storage: the same directory twice: give two storage devices")
    if len(resolved) == 1:  # the claims across storages compare two: one would run and judge nothing
        raise PirexError(f"--storage {opts.storages[0]}: one storage device; give two (--storage A --storage B)")
    return fleet.inventory_hosts(opts.inventory) if opts.inventory else {}


def answering(need: plan.Need, given: list[Path]) -> list[Path]:
    """The given bundles that answer a need: complete, of its experiment and view, with some variant (case) it
    compares (a claim whose variants they lack says so); the storage claims' need: those run with a work
    directory (--storage) elsewhere than the default."""
    out = []
    for b in given:
        try:
            bundle = Bundle.open(b)
            info = bundle.run_info()
        except PirexError:
            continue
        if bundle.status != "complete" or bundle.experiment != need.experiment or info.matrix != need.view:
            continue
        if info.deployment:  # `pirex compose` or `pirex swarm`: one run of a deployment, not a planned run's steps
            continue
        if plan.design_of(bundle) != need.design:  # a duet's steps ran at once on half of the CPUs
            continue
        if need.design == plan.DUET and set(bundle.variants) != set(need.variants):
            continue  # a duet bundle is of one pair: the ratio's, or the A/A's
        if not set(need.cases if need.view else need.variants) & set(bundle.variants):
            continue
        if info.work_dir != need.storage:  # a storage's run answers only its storage's need, never pooled
            continue
        out.append(b)
    return out


def storages_of(given: list[Path]) -> list[Path]:
    """The storage devices the given bundles ran their work directory on (--storage), in the order first seen."""
    out: list[Path] = []
    for b in given:
        try:
            w = Bundle.open(b).run_info().work_dir
        except PirexError:
            continue
        if w is not None and w not in out:
            out.append(w)
    return out


def _sets(need: plan.Need) -> tuple[str, ...]:
    """The need's parameters as `--set NAME=VALUE` for the hosts (repetitions at least the level's)."""
    values = {"repetitions": plan.repetitions(experiment.load(need.experiment), need.profile), **need.overrides}
    return tuple(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items())


def on_fleet(need: plan.Need, opts, state: ReproductionState, echo: Callable[[str], None]) -> list[Path]:
    """Run a need on every device of the inventory (a fleet run; the one an earlier attempt started, resumed): the
    verified hosts' bundles. A host that fails is named in the state (hosts_failed) and the report; the others
    are judged. Every host failing is a PirexError (the need failed)."""
    if need.view:
        raise PirexError(f"{need.key}: a view (matrix) does not run on a fleet yet: run it on each device")
    req = fleet.Request(
        need.experiment,
        opts.inventory,
        need.profile,
        ",".join(need.variants),
        _sets(need),
        opts.tag,
        serial=opts.serial,
        results_dir=opts.results_dir,
        images_archive=opts.images_archive,
        design=need.design,
    )
    earlier = state.fleets.get(need.key)
    outcome = fleet.run(req, echo, resume=Path(earlier) if earlier else None)
    state.fleets[need.key] = str(outcome.dir)
    state.hosts_failed[need.key] = {h: s.get("why") or s["state"] for h, s in outcome.failed.items()}
    if not outcome.bundles:
        raise PirexError(f"no device of {opts.inventory} ran it: {fleet.failure_line(outcome)}")
    return outcome.bundles


def notes(opts, given: list[Path], state: ReproductionState) -> list[str]:
    """What the report says about where its bundles came from."""
    out = []
    if given:
        paths = ", ".join(map(str, opts.bundles))
        out.append(f"Judged on {len(given)} given bundle(s) (--bundles), nothing run: {paths}")
    if opts.inventory:
        runs = ", ".join(state.fleets.values())
        out.append(f"Run on every device of {opts.inventory} (--inventory; fleet runs: {runs})")
        for key, hosts in state.hosts_failed.items():
            for h, why in hosts.items():
                out.append(f"{key}: device {h} failed or was unreachable; its claims are judged without it: {why}")
    if opts.storages:
        mounts = ", ".join(map(str, opts.storages))
        out.append(f"The claims across storage devices ran their work directory on {mounts}")
    return out
