"""The bundle of a deployment's run (`pirex compose`, `pirex swarm`), as every run of pirex writes one: one step,
`<kind>/0/`, that is the driver's RESULTS_DIR and ends holding its outputs (jpa-rest: requests.csv, summary.json)
and the roles' samples; the run's own records beside it at the bundle's top, named as in a run folder
(machine-<role>.json, compose-<role>.json, the logs). run.json's `deployment` names the command that wrote it, and
reproduce never takes the bundle for a `pirex run` of the experiment (reproduce/plan.py, sources.py).

A run that fails keeps its bundle, marked failed (partial when interrupted), with its logs; the step's folder goes
(Bundle.step), as a failed step's does in every run. A deployment's run is one step and is not resumed
(runner/run.py: resume says so)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pirex import __version__
from pirex.core import experiment
from pirex.core.bundle import FAILED, Bundle
from pirex.core.paths import git_version

KINDS = ("compose", "swarm")  # the variant, and the command: `pirex compose`, `pirex swarm`


@contextlib.contextmanager
def writing(
    results_dir: Path,
    exp: experiment.Experiment,
    profile: str,
    sets: tuple[str, ...],
    kind: str,
    images: dict,
) -> Iterator[Bundle]:
    """A new bundle results_dir/<experiment>/<run-id>/ for a deployment's run, finished on every exit path:
    complete when the block's step completed, partial when Ctrl-C or SIGTERM stopped it (as any run), failed when
    the block raised."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: expected one of {KINDS}")
    parameters = exp.requested(profile, overrides=exp.overrides(list(sets)))
    tool = {"version": __version__, "commit": git_version()[1]}
    bundle = Bundle.create(Path(results_dir).absolute(), exp.id, profile, parameters, [kind], [(kind, 0)], images, tool)
    try:
        bundle.write_run_info({"deployment": kind})
        yield bundle
    except (KeyboardInterrupt, SystemExit):
        bundle.mark_interrupted()
        raise
    except BaseException:
        bundle.finish(FAILED)
        raise
    bundle.finish()


@contextlib.contextmanager
def driver_step(bundle: Bundle) -> Iterator[Path]:
    """The one step: the folder the driver writes into (as the image's user: open to all), kept when the block
    ends without an exception."""
    [kind] = bundle.variants
    with bundle.step(kind, 0) as step:
        step.chmod(0o777)
        yield step
