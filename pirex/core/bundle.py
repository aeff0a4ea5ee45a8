"""Result bundles: one directory per run, written atomically, never overwritten, resumable, verifiable.

What a bundle's files hold (its layout, manifest.json, run.json, step.json, stdout.times) is in bundle_format.py;
this module alone parses them (bundle_files.py reads a file so that a problem names it).

Atomicity: the bundle directory is prepared under a temporary name and renamed into place (the rename fails if the
name exists, so nothing is overwritten). A step is written into `<variant>/<repetition>.tmp-<pid>/` and renamed to
`<variant>/<repetition>/` only when it succeeded; it counts as completed once the manifest says so. Every manifest and
machine.json write goes to a temporary file that is fsynced and then os.replace()d. A crash therefore leaves either a
step directory that no manifest mentions (resume removes it and runs the step again) or none at all. Steps that run
at the same time (Bundle.steps_together: a duet's repetition) are recorded as completed together in one manifest
write; resuming a duet bundle also redoes every step of a repetition of which only some are recorded.

While a Bundle is writable (after create or resume, until finish or close) it holds an flock on the bundle directory,
so two pirex processes never write one bundle at the same time.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pirex.core import flock
from pirex.core.bundle_digests import files_of, hashed
from pirex.core.bundle_digests import sha256 as sha256  # compose, swarm and bootstrap hash files through it
from pirex.core.bundle_files import damaged, read_json, read_text, reading, write_json
from pirex.core.bundle_files import read_csv as read_csv  # the analysis reads its CSV files through pirex.core.bundle
from pirex.core.bundle_format import (
    COMPLETE,
    CPU_LIST,
    DESIGNS,
    DUET,
    FAILED,
    FAILED_STEPS,
    MACHINE,
    MANIFEST,
    NAME,
    PARTIAL,
    RECORDED,
    RUN_INFO,
    RUN_SCHEMA_VERSION,
    RUNNING,
    SCHEMA_VERSION,
    STDOUT,
    STDOUT_TIMES,
    STEP_INFO,
    STEP_SCHEMA_VERSION,
    TMP_MARK,
    check_manifest,
    short,
)
from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord
from pirex.core.run_info import RunInfo

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


ISO = "%Y-%m-%dT%H:%M:%SZ"  # the manifest's times: UTC to the second


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime(ISO)


def from_iso(text: str) -> datetime:
    """The inverse of iso(); ValueError (or TypeError) on anything else."""
    return datetime.strptime(text, ISO).replace(tzinfo=UTC)


def new_run_id(now: datetime) -> str:
    """`20261122T061500Z-3fa9c1`: the UTC time, so ids sort by start, and 6 random hex digits, so two runs started in
    the same second get different ids."""
    if now.tzinfo is None:
        raise ValueError("new_run_id needs an aware datetime (datetime.now(UTC)), not local time")
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _check_name(what: str, name: object) -> str:
    if not isinstance(name, str) or not NAME.match(name) or TMP_MARK in name:
        raise PirexError(f"{what} {name!r} cannot name a directory: use letters, digits, '.', '_' and '-'")
    return name


def _normalise_plan(plan: Iterable, variants: list[str]) -> list[dict]:
    out, seen = [], set()
    for i, s in enumerate(plan):
        if isinstance(s, tuple | list) and len(s) == 2:
            s = {"variant": s[0], "repetition": s[1]}
        if not isinstance(s, dict) or set(s) - {"variant", "repetition", "params", "cpus"}:
            raise PirexError(f"plan step {i}: expected {{variant, repetition, params?, cpus?}}, found {s!r}")
        v, r = s.get("variant"), s.get("repetition")
        if v not in variants:
            raise PirexError(f"plan step {i}: variant {v!r} is not one of the run's variants {variants}")
        if not isinstance(r, int) or isinstance(r, bool) or r < 0:
            raise PirexError(f"plan step {i}: repetition must be an integer >= 0, found {r!r}")
        if (v, r) in seen:
            raise PirexError(f"plan step {i}: {v} repetition {r} is planned twice")
        seen.add((v, r))
        step = {"variant": v, "repetition": r}
        if s.get("params"):
            step["params"] = s["params"]
        if s.get("cpus") is not None:
            if not isinstance(s["cpus"], str) or not CPU_LIST.match(s["cpus"]):
                raise PirexError(f"plan step {i}: cpus must be a CPU list such as 0 or 2-3, found {s['cpus']!r}")
            step["cpus"] = s["cpus"]
        out.append(step)
    return out


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for d, _, files in os.walk(root):
        for f in files:
            fd = os.open(os.path.join(d, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(d))


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _dump(path: Path, doc: dict) -> str:
    try:
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    except (TypeError, ValueError) as e:
        raise PirexError(
            f"{path}: cannot be written as JSON ({e}): pass plain strings, numbers, lists and dicts"
        ) from None


def _read_manifest(path: Path) -> dict:
    """The manifest of the bundle at `path`, checked for what every reader relies on; PirexError otherwise."""
    f = path / MANIFEST
    if not path.is_dir():
        raise PirexError(f"{path} is not a result bundle directory (results/<experiment>/<run-id>)")
    if not f.is_file():
        raise PirexError(f"{f} is missing: {path} is not a result bundle, or its creation was cut short")
    try:
        doc = json.loads(f.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise PirexError(f"{f} is not valid JSON ({short(e)}): the bundle is damaged; restore a copy") from None
    except OSError as e:
        raise PirexError(f"{f}: cannot be read ({e.strerror})") from None
    return check_manifest(f, doc)


def read_machine(path: Path) -> MachineRecord:
    """The record taken before the run from a machine record file ({"before": {...}, ...}) of a run folder that
    is no bundle: `pirex compose`'s machine.json, a split role's machine-<role>.json (machine-db.json,
    machine-driver.json). A bundle's own: Bundle.machine_before()."""
    doc = read_json(path, dict)
    if not isinstance(doc.get("before"), dict):
        raise damaged(path, "has no machine record under 'before'")
    return MachineRecord.of(doc["before"])


def _check_schema(f: Path, doc: dict, version: int) -> None:
    """run.json and step.json: absent (bundles written before the field) reads as version 1, the same layout;
    any other number is refused."""
    v = doc.get("schema_version", 1)
    if v != version or isinstance(v, bool):
        raise PirexError(
            f"{f}: schema_version {v!r} is not {version}, the one this pirex reads: use the pirex version that wrote it"
        )


def _param(params: dict, name: str, where: Path) -> Any:
    if name not in params or params[name] is None:
        raise PirexError(
            f"{where}: the run records no parameter {name!r}, which this table needs: the bundle was "
            "written by an older pirex or is damaged; run the experiment again"
        )
    return params[name]


@dataclass(frozen=True)
class Step:
    """One completed step of a bundle: where its outputs are and the parameters it ran with (the manifest's plan)."""

    bundle: Bundle
    variant: str
    repetition: int
    started: str | None
    ended: str | None
    params: dict
    cpus: str | None = None  # the CPUs it ran on, where the step was pinned on its own (a duet)
    start: float | None = None  # when its command started and ended, seconds since the epoch (a duet)
    end: float | None = None

    @property
    def dir(self) -> Path:
        return self.bundle.step_dir(self.variant, self.repetition)

    def param(self, name: str) -> Any:
        """A parameter this step ran with; PirexError naming the bundle when it was not recorded."""
        return _param(self.params, name, self.bundle.path / MANIFEST)

    def info(self) -> dict:
        """step.json: argv, returncode, seconds."""
        f = self.dir / STEP_INFO
        doc = read_json(f, dict)
        _check_schema(f, doc, STEP_SCHEMA_VERSION)
        return doc

    @property
    def seconds(self) -> float:
        """The step's wall time as step.json recorded it."""
        with reading(self.dir / STEP_INFO):
            return float(self.info()["seconds"])

    def stdout_lines(self) -> list[tuple[float | None, str]]:
        """stdout.txt's lines (split at newlines only, as they arrived) with the moment each arrived; None for every
        line of a step recorded before stdout.times existed."""
        text = read_text(self.dir / STDOUT) if (self.dir / STDOUT).exists() else ""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        f = self.dir / STDOUT_TIMES
        if not f.exists():
            return [(None, line) for line in lines]
        with reading(f):
            times = [float(t) for t in read_text(f).split()]
            if not all(math.isfinite(t) for t in times):
                raise ValueError("a time that is not a number")
            if len(times) != len(lines):
                raise ValueError(f"{len(times)} times for {len(lines)} lines of {STDOUT}")
        return list(zip(times, lines, strict=True))


def write_step_info(out: Path, argv: list[str], returncode: int, seconds: float) -> None:
    """step.json in a step's folder being written (inside Bundle.step)."""
    doc = {"schema_version": STEP_SCHEMA_VERSION, "argv": argv, "returncode": returncode, "seconds": round(seconds, 3)}
    write_json(out / STEP_INFO, doc)


class Bundle:
    """One result bundle. Bundle.create starts one, Bundle.resume continues one, Bundle.open only reads."""

    def __init__(self, path: Path, manifest: dict, lock_fd: int | None = None):
        self.path = path
        self.manifest = manifest
        self._lock_fd = lock_fd
        self._pending: dict[tuple[str, int], dict] = {}  # Bundle.record's fields of the steps being written
        self.kept_failed: list[Path] = []  # the folders of steps that failed, kept under _failed/ (steps_together)

    # --- starting, opening, resuming

    @classmethod
    def create(
        cls,
        results_dir: Path,
        experiment: str,
        profile: str,
        parameters: dict,
        variants: list[str],
        plan: Iterable,
        images: object,
        tool: dict,
        *,
        run_id: str | None = None,
        design: str | None = None,
    ) -> Bundle:
        """Create results_dir/<experiment>/<run-id>/ with its manifest (status running). Never replaces a bundle.
        design: how the steps ran (DESIGNS), recorded when given."""
        _check_name("experiment", experiment)
        variants = [_check_name("variant", v) for v in variants]
        if len(set(variants)) != len(variants):
            raise PirexError(f"variants {variants}: each variant may be named only once")
        if not isinstance(tool, dict) or not {"version", "commit"} <= set(tool):
            raise PirexError(f"tool: expected {{version, commit}}, found {tool!r}")
        if design is not None and design not in DESIGNS:
            raise PirexError(f"design {design!r}: expected one of {', '.join(DESIGNS)}")
        now = utcnow()
        run_id = _check_name("run id", run_id or new_run_id(now))
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "experiment": experiment,
            "profile": profile,
            "parameters": parameters,
            "variants": variants,
            **({"design": design} if design else {}),
            "images": images,
            "tool": dict(tool),
            "started": iso(now),
            "ended": None,
            "resumed": [],
            "status": RUNNING,
            "plan": _normalise_plan(plan, variants),
            "completed": [],
            "files": {},
        }
        parent = Path(results_dir) / experiment
        final = parent / run_id
        text = _dump(final / MANIFEST, manifest)
        if final.exists():
            raise PirexError(f"{final} already exists: bundles are never overwritten; start the run again for a new id")
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{run_id}{TMP_MARK}"))
        try:
            os.chmod(tmp, 0o755)  # mkdtemp makes it owner-only
            _write_atomic(tmp / MANIFEST, text)
            os.rename(tmp, final)  # fails on a non-empty target, and final always holds a manifest
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if final.exists():
                raise PirexError(
                    f"{final} already exists: bundles are never overwritten; start the run again for a new id"
                ) from None
            raise PirexError(f"cannot create the bundle {final}: {e.strerror}; check that {parent} is writable") from e
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _fsync_dir(parent)
        return cls(final, manifest, flock.lock(final))

    @classmethod
    def open(cls, path: Path) -> Bundle:
        """Read a bundle (for remaining_steps, reports). Writing needs Bundle.resume."""
        path = Path(path)
        return cls(path, _read_manifest(path))

    @classmethod
    def resume(cls, path: Path) -> Bundle:
        """Continue an interrupted, partial or failed run: drop steps that never completed, set status running."""
        path = Path(path)
        manifest = _read_manifest(path)
        if manifest["status"] == COMPLETE:
            raise PirexError(
                f"{path} is complete: there is nothing to resume; run the experiment again for a new bundle"
            )
        fd = flock.lock(path)
        try:
            b = cls(path, _read_manifest(path), fd)  # re-read under the lock
            b._drop_half_done()
            done = b._completed_keys()
            for v in b.manifest["variants"]:
                vdir = path / v
                if not vdir.is_dir():
                    continue
                for d in vdir.iterdir():
                    rep = d.name.split(TMP_MARK)[0]
                    if d.is_dir() and (TMP_MARK in d.name or not rep.isdigit() or (v, int(rep)) not in done):
                        shutil.rmtree(d)  # a step cut short, or renamed into place but never recorded
            for stale in path.glob(f".{MANIFEST}.*"):
                stale.unlink()
            for stale in path.glob(f".{MACHINE}.*"):
                stale.unlink()
            b.manifest["status"] = RUNNING
            b.manifest["ended"] = None
            b.manifest["resumed"].append(iso(utcnow()))
            b._save()
        except BaseException:
            os.close(fd)
            raise
        return b

    # --- properties

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    def json(self, rel: str, expect: type | tuple[type, ...] = dict, default: Any = None) -> Any:
        """A JSON file of the bundle by relative path (run.json, <variant>/<rep>/jmh.json); `default` when it is
        absent and a default is given, else PirexError."""
        f = self.path / rel
        if default is not None and not f.exists():
            return default
        return read_json(f, expect)

    @property
    def experiment(self) -> str:
        return self.manifest["experiment"]

    @property
    def profile(self) -> str:
        return self.manifest["profile"]

    @property
    def parameters(self) -> dict:
        """The run's resolved parameters (a step's own, e.g. a matrix case's depth, are in Step.params)."""
        return self.manifest["parameters"]

    @property
    def variants(self) -> list[str]:
        return self.manifest["variants"]

    @property
    def images(self) -> dict:
        """The images the run used, by the experiment's image name: {"reference", "digest", "platform", ...} as the
        runner passed them."""
        return self.manifest["images"]

    @property
    def plan(self) -> list[dict]:
        """The ordered steps the run planned: [{"variant", "repetition", "params"?, "cpus"?}, ...]."""
        return self.manifest["plan"]

    @property
    def completed(self) -> list[dict]:
        """The steps done, in the order they completed: [{"variant", "repetition", "started", "ended", "cpus"?,
        "start"?, "end"?}, ...] (steps() reads them with their parameters)."""
        return self.manifest["completed"]

    @property
    def files(self) -> dict[str, dict]:
        """Every file of the bundle but manifest.json: {"<relative path>": {"sha256", "size"}}."""
        return self.manifest["files"]

    @property
    def design(self) -> str | None:
        """How the steps ran (DESIGNS); None for a bundle written before the manifest said (one step at a time)."""
        return self.manifest.get("design")

    @property
    def commit(self) -> str | None:
        return self.manifest["tool"].get("commit")

    @property
    def started(self) -> str:
        """When the bundle was created (UTC ISO 8601: from_iso() reads it)."""
        return self.manifest["started"]

    @property
    def ended(self) -> str | None:
        """When the run last finished (UTC ISO 8601); None while it runs, or after it was cut short."""
        return self.manifest["ended"]

    @property
    def resumed(self) -> list[str]:
        """The UTC times at which the run was resumed, oldest first; [] for a run that went through at once."""
        return self.manifest["resumed"]

    def param(self, name: str) -> Any:
        """A run parameter a reader needs; PirexError naming the bundle when it lacks it (never a default)."""
        return _param(self.parameters, name, self.path / MANIFEST)

    def machine_before(self) -> MachineRecord:
        """machine.json's record taken before the run."""
        return read_machine(self.path / MACHINE)

    def run_info(self) -> RunInfo:
        """run.json (how the run was planned); an empty RunInfo for a bundle without one."""
        f = self.path / RUN_INFO
        doc = read_json(f, dict) if f.exists() else {}
        _check_schema(f, doc, RUN_SCHEMA_VERSION)
        return RunInfo(doc)

    def write_run_info(self, doc: dict) -> None:
        """run.json, once, before the first step: the runner's plan of the run, with its schema version."""
        self._writable()
        f = self.path / RUN_INFO
        _write_atomic(f, _dump(f, {"schema_version": RUN_SCHEMA_VERSION, **doc}))

    @property
    def matrix(self) -> str | None:
        """The matrix this bundle ran (its view: e.g. moobench's fluctuation cases), or None."""
        return self.run_info().matrix

    def steps(self) -> list[Step]:
        """The completed steps, in the order they completed, each with its resolved parameters."""
        planned = {(s["variant"], s["repetition"]): s.get("params") for s in self.manifest["plan"]}
        return [
            Step(
                self,
                s["variant"],
                s["repetition"],
                s.get("started"),
                s.get("ended"),
                planned.get((s["variant"], s["repetition"])) or self.parameters,
                s.get("cpus"),
                s.get("start"),
                s.get("end"),
            )
            for s in self.manifest["completed"]
        ]

    @property
    def status(self) -> str:
        return self.manifest["status"]

    def remaining_steps(self) -> list[dict]:
        """The planned steps not yet completed, in plan order: what a resumed run still has to do."""
        done = self._completed_keys()
        return [dict(s) for s in self.manifest["plan"] if (s["variant"], s["repetition"]) not in done]

    def step_dir(self, variant: str, repetition: int) -> Path:
        return self.path / variant / str(repetition)

    # --- writing

    @contextmanager
    def step(self, variant: str, repetition: int) -> Iterator[Path]:
        """A fresh directory for one step's outputs. When the block succeeds, it becomes step_dir(variant, repetition)
        and the step is recorded as completed; when it raises (KeyboardInterrupt included), it is removed."""
        with self.steps_together([(variant, repetition)]) as dirs:
            yield dirs[(variant, repetition)]

    @contextmanager
    def steps_together(self, keys: list[tuple[str, int]]) -> Iterator[dict[tuple[str, int], Path]]:
        """Fresh directories for steps that run at the same time (a duet's repetition), by (variant, repetition).
        When the block succeeds, each becomes its step_dir and all are recorded as completed in one manifest write;
        when it raises, none of them counts, and a resumed run does them all again: on a failure (an Exception) each
        is kept under _failed/ to look in (`kept_failed` names them), on an interruption each is removed."""
        self._writable()
        if len(set(keys)) != len(keys) or not keys:
            raise PirexError(f"{self.path}: steps {keys} must be distinct (and at least one)")
        finals = {k: self._fresh(*k) for k in keys}
        tmps = {k: f.with_name(f"{f.name}{TMP_MARK}{os.getpid()}") for k, f in finals.items()}
        started = utcnow()
        self._pending = {}
        try:
            for tmp in tmps.values():
                if tmp.exists():
                    shutil.rmtree(tmp)
                tmp.mkdir(parents=True)
            yield dict(tmps)
            for k, tmp in tmps.items():
                _fsync_tree(tmp)
                os.rename(tmp, finals[k])
        except BaseException as e:
            for k in keys:  # renamed or not: none of them is recorded
                if isinstance(e, Exception) and tmps[k].is_dir():
                    self._keep_failed(tmps[k], *k)
                shutil.rmtree(tmps[k], ignore_errors=True)
                if finals[k].exists() and k not in self._completed_keys():
                    shutil.rmtree(finals[k], ignore_errors=True)
            self._pending = {}
            raise
        ended = utcnow()
        for variant, repetition in keys:
            _fsync_dir(finals[(variant, repetition)].parent)
            self.manifest["completed"].append(
                {
                    "variant": variant,
                    "repetition": repetition,
                    "started": iso(started),
                    "ended": iso(ended),
                    **self._pending.get((variant, repetition), {}),
                }
            )
            self.manifest["files"].update(hashed(self.path, files_of(self.path, finals[(variant, repetition)])))
        self._pending = {}
        self._save()

    def _keep_failed(self, tmp: Path, variant: str, repetition: int) -> None:
        """A failed step's folder moved to _failed/<variant>/<repetition>[.N]/ (never a step: resume and readers skip
        it; finish hashes its files like any other, so verify checks them)."""
        parent = self.path / FAILED_STEPS / variant
        dest, n = parent / str(repetition), 1
        while dest.exists():
            n += 1
            dest = parent / f"{repetition}.{n}"
        try:
            parent.mkdir(parents=True, exist_ok=True)
            os.rename(tmp, dest)
        except OSError as e:  # a full disk: the failure's own error matters more than its folder
            log.warning("could not keep the failed step's folder %s: %s", tmp, e)
            return
        self.kept_failed.append(dest)

    def record(self, variant: str, repetition: int, **fields: Any) -> None:
        """Add to the completed record of a step being written (inside step or steps_together): cpus (a CPU list),
        start and end (seconds since the epoch, when its command started and ended)."""
        if unknown := sorted(set(fields) - set(RECORDED)):
            raise PirexError(f"record: {', '.join(unknown)} is not among {', '.join(RECORDED)}")
        for key in ("start", "end"):
            if key in fields:
                fields[key] = round(float(fields[key]), 6)
        self._pending.setdefault((variant, repetition), {}).update(fields)

    def _fresh(self, variant: str, repetition: int) -> Path:
        """Where a step that may run now goes; PirexError when it is not planned, done, or left by a crash."""
        if not any(s["variant"] == variant and s["repetition"] == repetition for s in self.manifest["plan"]):
            raise PirexError(f"{self.path}: {variant} repetition {repetition} is not in the plan of this run")
        if (variant, repetition) in self._completed_keys():
            raise PirexError(f"{self.path}: {variant} repetition {repetition} is already completed; it is never rerun")
        final = self.step_dir(variant, repetition)
        if final.exists():
            raise PirexError(f"{final} exists but is not recorded as completed: resume the bundle to clear it")
        return final

    def write_machine(self, *, before: dict | None = None, after: dict | None = None) -> None:
        """machine.json = {"before": ..., "after": ...}; an argument left out keeps what the file already holds."""
        self._writable()
        f = self.path / MACHINE
        doc = {"before": None, "after": None}
        if f.exists():
            try:
                doc.update(json.loads(f.read_text()))
            except ValueError as e:
                raise PirexError(f"{f} is not valid JSON ({e}): remove it and take the machine record again") from None
        if before is not None:
            doc["before"] = before
        if after is not None:
            doc["after"] = after
        _write_atomic(f, _dump(f, doc))

    def finish(self, status: str = PARTIAL) -> str:
        """Hash every file, set ended and status, release the bundle. The status is complete when every planned step
        completed, otherwise `status` (partial: stopped early; failed: a step or the runner failed). Returns it."""
        if status not in (PARTIAL, FAILED):
            raise ValueError(f"finish(status={status!r}): pass partial or failed; complete is decided by the plan")
        self._writable()
        self.manifest["files"] = hashed(self.path, files_of(self.path))
        self.manifest["ended"] = iso(utcnow())
        self.manifest["status"] = COMPLETE if not self.remaining_steps() else status
        self._save()
        self.close()
        return self.manifest["status"]

    def mark_interrupted(self) -> str:
        """finish() after Ctrl-C or SIGTERM: the bundle is partial (complete if the last step had just finished)."""
        return self.finish(PARTIAL)

    def close(self) -> None:
        """Release the bundle without finishing it (as a crash would); Bundle.resume picks it up again."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- internals

    def _drop_half_done(self) -> None:
        """A duet's repetition counts only when all its steps completed (they ran at the same time, and a ratio
        pairs them): the completed records of a repetition with a step still to do go, with their folders and
        files, so that the resumed run does the whole repetition again."""
        if self.design != DUET:
            return
        planned: dict[int, set[str]] = {}
        for s in self.manifest["plan"]:
            planned.setdefault(s["repetition"], set()).add(s["variant"])
        done: dict[int, set[str]] = {}
        for s in self.manifest["completed"]:
            done.setdefault(s["repetition"], set()).add(s["variant"])
        half = {r for r, vs in done.items() if vs != planned.get(r, set())}
        if not half:
            return
        self.manifest["completed"] = [s for s in self.manifest["completed"] if s["repetition"] not in half]
        prefixes = tuple(f"{v}/{r}/" for r in half for v in done[r])
        self.manifest["files"] = {k: v for k, v in self.manifest["files"].items() if not k.startswith(prefixes)}
        for r in half:
            for v in done[r]:
                shutil.rmtree(self.step_dir(v, r), ignore_errors=True)

    def _completed_keys(self) -> set[tuple[str, int]]:
        return {(s["variant"], s["repetition"]) for s in self.manifest["completed"]}

    def _writable(self) -> None:
        if self._lock_fd is None or self.manifest["status"] != RUNNING:
            raise PirexError(f"{self.path} is {self.status} and not open for writing: resume it first")

    def _save(self) -> None:
        f = self.path / MANIFEST
        _write_atomic(f, _dump(f, self.manifest))


def writing(path: Path) -> bool:
    """Whether a pirex process holds the bundle open for writing now (its flock; gone with the process)."""
    return flock.held(path, os.O_DIRECTORY)


def verify(path: Path, *, digests: bool = True, complete: bool = True) -> list[str]:
    """Everything wrong with the bundle at `path` compared with its manifest; an empty list means it is intact (and,
    with complete, complete). The one checker: `pirex verify` calls it as it is, readers through Verifier.

    digests=False checks sizes only (a stat per file, no read): a byte changed in place is then not seen, a file
    truncated, grown, removed or replaced by one of another size is. complete=False: a bundle that stopped early
    (partial, failed) or is being written (running) is no problem in itself; a running bundle's files not yet in
    its manifest are not either (finish() lists every file; a step's folder is listed when it completes), so only
    what its manifest lists is checked."""
    path = Path(path)
    try:
        m = _read_manifest(path)
    except PirexError as e:
        return [str(e)]
    files = m["files"]
    problems = []
    for rel, want in sorted(files.items()):
        f = path / rel
        if not f.is_file():
            problems.append(f"{f}: listed in the manifest but missing")
            continue
        if not isinstance(want, dict):
            problems.append(f"{path / MANIFEST}: files.{rel}: expected {{sha256, size}}, found {want!r}")
            continue
        size = f.stat().st_size
        if size != want.get("size"):
            problems.append(f"{f}: changed: {size} bytes, the manifest says {want.get('size')}")
        elif digests and sha256(f) != want.get("sha256"):
            problems.append(f"{f}: changed: its sha256 differs from the manifest's")
    if complete or m["status"] != RUNNING:
        for rel in files_of(path):
            if rel not in files:
                problems.append(f"{path / rel}: not listed in the manifest (added after the run, or left by a crash)")
    if not complete:
        return problems
    done = {(s["variant"], s["repetition"]) for s in m["completed"]}
    left = [s for s in m["plan"] if (s["variant"], s["repetition"]) not in done]
    if m["status"] != COMPLETE:
        problems.append(
            f"{path}: status is {m['status']}, not complete: {len(left)} of {len(m['plan'])} planned steps "
            "did not complete; resume the run to finish them"
        )
    elif left:
        problems.append(f"{path}: status is complete, but {len(left)} planned steps never completed")
    return problems


class Verifier:
    """verify() for the commands that read bundles for a table, a comparison or a verdict (pirex table, compare,
    plot, reproduce, a fleet's tables): nothing is read from a bundle that fails it. Each bundle is verified once
    per command (one Verifier per command): sizes always, sha256 digests where the bundle may have come from
    elsewhere (given by hand, fetched from a fleet host, or left under results/ by an earlier command); a bundle
    this command itself wrote may skip them (digests=False). A bundle that stopped early (partial) is read as
    before: only its listed files are checked, not whether it completed (verify's complete=False)."""

    def __init__(self) -> None:
        self._done: dict[Path, tuple[bool, list[str]]] = {}  # resolved path -> (with digests, problems)

    def problems(self, path: Path, digests: bool = True) -> list[str]:
        """verify(path, digests=digests, complete=False), once: a bundle verified with digests is not checked again."""
        key = Path(path).resolve()
        done = self._done.get(key)
        if done is None or (digests and not done[0]):
            done = self._done[key] = (digests, verify(path, digests=digests, complete=False))
        return done[1]

    def reason(self, path: Path, digests: bool = True) -> str | None:
        """None when the bundle passes; else one line: its first problem (naming the file), how many more, and
        what to do."""
        found = self.problems(path, digests)
        if not found:
            return None
        more = f" (and {len(found) - 1} more problem{'s' * (len(found) > 2)})" if len(found) > 1 else ""
        return (
            f"{found[0]}{more}; `pirex verify {path}` lists what changed since the run: restore the bundle from a "
            "copy, or run it again"
        )

    def refuse(self, paths: Iterable[Path], digests: bool = True) -> None:
        """PirexError naming the first bundle among `paths` that fails (a folder without a manifest is no bundle:
        nothing to verify, e.g. a `pirex compose` run folder)."""
        for p in paths:
            if (Path(p) / MANIFEST).is_file() and (why := self.reason(p, digests)):
                raise PirexError(f"{p} fails verification, so nothing is read from it: {why}")
