"""A reproduction's state.json (results/reproduce/<paper>-<id>/, reproduction.py): read and written here only.

It is what `pirex reproduce --resume DIR` continues from (what was asked, what ran, the estimates, the attempts, a
budget's design), what the report's verdicts are kept as (artifact/rerun.py compares with them) and what an
artifact packs (artifact/pack.py). `ReproductionState.read` opens it (a missing or unreadable file, or a key of the
wrong type, is one PirexError naming the file); `write` saves it atomically (a temporary file renamed over it), with
the same keys and values in the same order as every earlier version: a reproduction started by one resumes with the
next. A key an older state.json lacks reads as the default the reproduction took for it; a key pirex never writes (a
newer pirex's, or an edit) is refused by name, since resuming would silently drop what it says."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pirex.core.errors import PirexError
from pirex.reproduce.plan import INTERLEAVED

STATE = "state.json"
BUDGET = "budget"  # the entry of a budgeted reproduction (budgeted.py)
WHAT_TO_DO = "give a results/reproduce/<paper>-<id> folder that `pirex reproduce` wrote, or start a new reproduction"


@dataclass
class Budget:
    """A budgeted reproduction's entry (`pirex reproduce --budget`, budgeted.py): each attempt's budget (seconds),
    the seconds spent, the rounds run, and the group-sequential design (budget.Design's JSON)."""

    given: list[float] = field(default_factory=list)
    spent: float = 0.0
    rounds: int = 0
    design: dict[str, Any] | None = None
    pilot: float = 0.0  # seconds the pilot's runs took (before the budget, which is the rounds')
    rounds_spent: float = 0.0  # seconds the rounds' extensions took
    forecast: dict[str, Any] | None = None  # budget.Forecast at the pilot's estimates: design, even split, oracle

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Budget:
        return cls(
            list(doc.get("given") or []),
            doc.get("spent", 0.0),
            doc.get("rounds", 0),
            doc.get("design"),
            doc.get("pilot", 0.0),
            doc.get("rounds_spent", 0.0),
            doc.get("forecast"),
        )

    def to_json(self) -> dict[str, Any]:
        out = {"given": self.given, "spent": self.spent, "rounds": self.rounds, "design": self.design}
        more = {"pilot": self.pilot, "rounds_spent": self.rounds_spent, "forecast": self.forecast}
        return {**out, **{k: v for k, v in more.items() if v}}  # written when set: an earlier state reads back the same


@dataclass
class Running:
    """The run under way (a need's, or its extension's by a budget's round: extends, run.json's name of it) and
    when it started (epoch seconds): what a killed attempt leaves behind for the next to find."""

    key: str
    started: float
    extends: str | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Running:
        return cls(doc["key"], doc["started"], doc.get("extends"))

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "started": self.started, **({"extends": self.extends} if self.extends else {})}


# each key's JSON type (None allowed for all): a state.json whose key has another is not one pirex wrote
_TYPES: dict[str, type | tuple[type, ...]] = {
    "papers": list,
    "level": str,
    "sets": dict,
    "aa": bool,
    "experiments": list,
    "inventory": str,
    "given": list,
    "storages": list,
    "design": str,
    "confidence": (int, float),
    "artifact": str,
    "artifact_images": dict,
    "fleets": dict,
    "hosts_failed": dict,
    "commit": str,
    "failed": dict,
    "score": (int, float),
    "estimates": dict,
    "bundles": dict,
    "ran": dict,
    "attempts": list,
    "partial": dict,
    "running": dict,
    BUDGET: dict,
    "extended": dict,
    "verdicts": dict,
    "reasons": dict,
    "left_out": dict,
    "calibrations": list,
}


@dataclass
class ReproductionState:
    """state.json, typed. A fresh reproduction's previous state is `ReproductionState()`: every default."""

    papers: list[str] = field(default_factory=list)  # claims.yaml paths, or ids of the papers under claims/
    level: str | None = None
    sets: dict[str, dict[str, Any]] = field(default_factory=dict)  # experiment -> --set overrides
    aa: bool | None = None
    experiments: list[str] = field(default_factory=list)  # --experiment (all: [])
    inventory: Path | None = None
    given: list[Path] = field(default_factory=list)  # --bundles
    storages: list[Path] = field(default_factory=list)  # --storage
    design: str = INTERLEAVED
    confidence: float | None = None  # None: a state from before it was kept (the reproduction's option holds)
    artifact: Path | None = None  # a rerun of this artifact (artifact/rerun.py)
    artifact_images: dict[str, str] | None = None  # its images imported ({}: none); None: not a rerun
    fleets: dict[str, str] = field(default_factory=dict)  # need -> its fleet run (--inventory)
    hosts_failed: dict[str, dict[str, str]] = field(default_factory=dict)  # need -> host -> why
    commit: str | None = None
    failed: dict[str, str] = field(default_factory=dict)  # need -> why it did not run
    score: float | None = None  # plan.calibration_score() of the first attempt
    estimates: dict[str, float | None] = field(default_factory=dict)  # need -> seconds, the first plan's
    bundles: dict[str, list[Path]] = field(default_factory=dict)  # need -> its bundles
    ran: dict[str, float] = field(default_factory=dict)  # need -> seconds its run took
    attempts: list[dict[str, float]] = field(default_factory=list)  # {"started", "ended"}: epoch seconds
    partial: dict[str, float] = field(default_factory=dict)  # need -> seconds spent in attempts killed in its run
    running: Running | None = None  # the run under way
    budget: Budget | None = None  # --budget's entry
    extended: dict[str, float] | None = None  # need -> seconds its extensions took (a budget's rounds)
    verdicts: dict[str, str] | None = None  # verdict key (reproduction.verdict_key) -> verdict, once judged
    reasons: dict[str, str] | None = None  # and its reason
    left_out: dict[str, str] | None = None  # bundles that failed verification: path -> why
    calibrations: list[Path] = field(default_factory=list)  # --calibration: a resume judges with the same ones

    @classmethod
    def read(cls, folder: Path) -> ReproductionState:
        """The state.json in a reproduction's folder; PirexError (one line, naming it) when missing or unreadable."""
        path = Path(folder) / STATE
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            raise PirexError(f"{path}: no such file: {WHAT_TO_DO}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise PirexError(f"{path}: cannot be read ({getattr(e, 'strerror', None) or e}): {WHAT_TO_DO}") from None
        except ValueError as e:
            raise PirexError(f"{path}: not JSON ({e}): {WHAT_TO_DO}") from None
        return cls.from_json(doc, path)

    @classmethod
    def from_json(cls, doc: Any, path: Path | str = STATE) -> ReproductionState:
        """The state of a parsed state.json (path: named in the error when a key has the wrong type)."""
        if not isinstance(doc, dict):
            raise PirexError(f"{path}: not a JSON object but {type(doc).__name__}: {WHAT_TO_DO}")
        if unknown := [k for k in doc if k not in _TYPES]:  # a newer pirex's, or an edit: resuming would drop them
            raise PirexError(
                f"{path}: keys pirex never writes: {', '.join(map(repr, unknown))} (a newer pirex's state, or edited "
                f"by hand): {WHAT_TO_DO}"
            )
        for key, want in _TYPES.items():
            value = doc.get(key)
            if value is not None and (not isinstance(value, want) or (isinstance(value, bool) and want is not bool)):
                raise PirexError(f"{path}: {key!r} is {type(value).__name__}, not what pirex writes: {WHAT_TO_DO}")
        paths = doc.get("bundles") or {}
        if not all(isinstance(v, list) for v in paths.values()):
            raise PirexError(f"{path}: 'bundles' holds something other than lists of paths: {WHAT_TO_DO}")
        running = doc.get("running")
        if running and not (isinstance(running.get("key"), str) and isinstance(running.get("started"), (int, float))):
            raise PirexError(f"{path}: 'running' names no run and when it started: {WHAT_TO_DO}")
        has = doc.get
        return cls(
            papers=list(has("papers") or []),
            level=has("level"),
            sets=has("sets") or {},
            aa=has("aa"),
            experiments=list(has("experiments") or []),
            inventory=Path(has("inventory")) if has("inventory") else None,
            given=[Path(b) for b in has("given") or []],
            storages=[Path(s) for s in has("storages") or []],
            design=has("design") or INTERLEAVED,
            confidence=has("confidence"),
            artifact=Path(has("artifact")) if has("artifact") else None,
            artifact_images=has("artifact_images"),
            fleets=has("fleets") or {},
            hosts_failed=has("hosts_failed") or {},
            commit=has("commit"),
            failed=has("failed") or {},
            score=has("score"),
            estimates=has("estimates") or {},
            bundles={k: [Path(b) for b in v] for k, v in paths.items()},
            ran=has("ran") or {},
            attempts=[dict(a) for a in has("attempts") or []],
            partial=has("partial") or {},
            running=Running.from_json(running) if running else None,
            budget=Budget.from_json(doc[BUDGET]) if has(BUDGET) else None,
            extended=has("extended"),
            verdicts=has("verdicts"),
            reasons=has("reasons"),
            left_out=has("left_out"),
            calibrations=[Path(c) for c in has("calibrations") or []],
        )

    def to_json(self) -> dict[str, Any]:
        """The document state.json holds: its keys in the order every version wrote them."""
        doc: dict[str, Any] = {
            "papers": self.papers,
            "level": self.level,
            "sets": self.sets,
            "aa": self.aa,
            "experiments": self.experiments,
            "inventory": str(self.inventory) if self.inventory else None,
            "given": [str(b) for b in self.given],
            "storages": [str(s) for s in self.storages],
            "design": self.design,
            "confidence": self.confidence,
            "artifact": str(self.artifact) if self.artifact else None,
            "artifact_images": self.artifact_images,
            "fleets": self.fleets,
            "hosts_failed": self.hosts_failed,
            "commit": self.commit,
            "failed": self.failed,
            "score": self.score,
            "estimates": self.estimates,
            "bundles": {k: [str(b) for b in v] for k, v in self.bundles.items()},
            "ran": self.ran,
            "attempts": self.attempts,
            "partial": self.partial,
            "running": self.running.to_json() if self.running else None,
        }
        later = {  # the keys a reproduction adds as it goes, after `running`: written once set
            BUDGET: self.budget.to_json() if self.budget is not None else None,
            "extended": self.extended,
            "verdicts": self.verdicts,
            "reasons": self.reasons,
            "left_out": self.left_out,
            "calibrations": [str(c) for c in self.calibrations] or None,  # only where --calibration was given
        }
        doc.update((k, v) for k, v in later.items() if v is not None)
        return doc

    def write(self, folder: Path) -> None:
        """state.json in folder, atomically: a temporary file beside it, renamed over it."""
        tmp = Path(folder) / f".{STATE}.tmp"
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        tmp.replace(Path(folder) / STATE)

    def bundle_paths(self) -> list[Path]:
        """Every bundle the reproduction ran or reused, need after need, in the order saved (duplicates kept)."""
        return [b for bs in self.bundles.values() for b in bs]

    def taken_over(self, last_step_end: float | None) -> tuple[list, dict, dict | None]:
        """The attempts, and the seconds of unfinished runs, as a resumed reproduction takes them over: the run under
        way when this attempt was killed had taken from its start until the last step it completed (last_step_end,
        epoch seconds), counted to the need's own run (partial) or to its extensions (extended) for a budget's round;
        the attempt lasted at least as long."""
        attempts, partial = [dict(a) for a in self.attempts], dict(self.partial)
        extended = dict(self.extended) if self.extended is not None else None
        running = self.running
        if running and attempts:
            attempts[-1]["ended"] = max(attempts[-1]["ended"], last_step_end or 0.0)
            key, lost = running.key, max(attempts[-1]["ended"] - running.started, 0.0)
            if running.extends:
                extended = {**(extended or {}), key: round((extended or {}).get(key, 0.0) + lost, 1)}
            else:
                partial[key] = partial.get(key, 0.0) + lost
        return attempts, partial, extended

    def time_taken(self) -> float | None:
        """The reproduction's time: every attempt's, added up (None for a state from before attempts were kept)."""
        return sum(a["ended"] - a["started"] for a in self.attempts) if self.attempts else None
