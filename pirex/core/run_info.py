"""run.json of a result bundle, read: RunInfo, the typed fields of how the runner planned the run (the format is in
pirex/core/bundle_format.py; Bundle.run_info() reads the file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_LEGACY_SAME = "same as its base here"


@dataclass(frozen=True)
class RunInfo:
    """run.json, read (its format: bundle_format.py). `doc` is the whole file for fields no reader needs typed."""

    doc: dict

    @property
    def _matrix(self) -> dict:
        m = self.doc.get("matrix")
        return m if isinstance(m, dict) else {}

    @property
    def matrix(self) -> str | None:
        return self._matrix.get("name")

    @property
    def work_dir(self) -> Path | None:
        """The host directory the workload's /work was on (a storage device's mount), or None: the default."""
        w = self.doc.get("work_dir")
        return Path(w) if w else None

    @property
    def runs_as(self) -> str | None:
        """The variant the matrix's cases ran as (native, docker)."""
        return self._matrix.get("runs_as")

    @property
    def notes(self) -> dict[str, list[str]]:
        """Per matrix case, what the runner noted about it here (e.g. why it equals its base)."""
        return dict(self._matrix.get("notes") or {})

    @property
    def same_as_base(self) -> frozenset[str]:
        """The matrix cases that ran exactly as their base here (the setting was already in force)."""
        if "same_as_base" in self._matrix or "schema_version" in self.doc:
            return frozenset(self._matrix.get("same_as_base") or ())
        # run.json before schema 1 said so only in a note's words, which the runner then always began with this
        return frozenset(c for c, notes in self.notes.items() if any(n.startswith(_LEGACY_SAME) for n in notes))

    @property
    def fallback(self) -> dict | None:
        return self._matrix.get("fallback")

    @property
    def deployment(self) -> str | None:
        """The command that wrote the bundle when it was a deployment's run (compose, swarm), or None: `pirex run`."""
        return self.doc.get("deployment")

    @property
    def extends(self) -> str | None:
        """A later bundle of one plan (a budget's round, a precision second stage): "<plan>@<repetitions before>"."""
        return self.doc.get("extends")

    @property
    def requested(self) -> dict | None:
        """The parameters the run was asked for (before the profile's were filled in); None in older bundles."""
        r = self.doc.get("requested")
        return r if isinstance(r, dict) else None

    @property
    def skipped_variants(self) -> dict:
        """Variants (a matrix's cases) the plan left out, each with why."""
        return self.doc.get("skipped_variants") or {}

    @property
    def cpus(self) -> str | None:
        return self.doc.get("cpus")

    @property
    def trace(self) -> dict:
        return self.doc.get("trace") or {}

    @property
    def soak(self) -> dict:
        return self.doc.get("soak") or {}

    @property
    def jvm(self) -> dict | None:
        return self.doc.get("jvm")

    @property
    def duet(self) -> dict:
        """A duet run's CPU halves and how they were assigned ({"halves": [...], ...}); {} for any other run."""
        d = self.doc.get("duet")
        return d if isinstance(d, dict) else {}
