"""What a completed step must have written, per declared output format (experiment.yaml:
outputs). A step whose outputs fail these checks fails the run: a table without them would
mislead."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pirex.core.bundle import STDOUT


def _jmh_failures(step: Path) -> str | None:
    # JMH carries on past a failed benchmark and still writes its JSON without it
    stdout = (step / STDOUT).read_text(errors="replace") if (step / STDOUT).exists() else ""
    if "<failure>" not in stdout:
        return None
    detail = stdout[stdout.index("<failure>") :].splitlines()[:12]
    return "a benchmark failed:\n" + "\n".join(detail)


# format -> a check of the step's folder beyond the files being there (None: fine)
CHECKS: dict[str, Callable[[Path], str | None]] = {"jmh-json": _jmh_failures}


def problem(declared: Sequence[dict], step: Path) -> str | None:
    """Why the step's outputs are unusable, or None."""
    missing = [o["path"] for o in declared if not any(step.glob(o["path"]))]
    if missing:
        return f"wrote no {', '.join(missing)}"
    for fmt in dict.fromkeys(o["format"] for o in declared):
        if fmt in CHECKS and (why := CHECKS[fmt](step)):
            return why
    return None
