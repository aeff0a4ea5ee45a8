"""Reading a file of a result bundle or run folder (jmh.json, requests.csv, stdout.txt...): every decode error,
missing key or wrong type becomes one PirexError naming the file and what to do. pirex/core/bundle.py reads a
bundle's own files (run.json, step.json, machine.json) through these; the analysis reads its outputs with them.
A record pirex writes into a run folder (a step's, a role's, a deployment's) is written as JSON by write_json."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pirex.core.bundle_format import MANIFEST, short
from pirex.core.errors import PirexError


def bundle_of(path: Path) -> Path | None:
    """The bundle directory a file lies in (the nearest parent with a manifest.json), if any."""
    for d in Path(path).parents:
        if (d / MANIFEST).is_file():
            return d
    return None


def damaged(path: Path, problem: str) -> PirexError:
    """The error for a file of a bundle that cannot be used: the file, the problem, and the fix."""
    b = bundle_of(path)
    fix = f"`pirex verify {b}` says what changed since the run" if b else "restore it from a copy"
    return PirexError(f"{path}: {problem}: {fix}")


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Parse a file inside this block: a decode error, a missing key or a wrong type becomes one
    PirexError naming the file (readers of tables wrap their per-file parsing in it)."""
    try:
        yield
    except PirexError:
        raise
    except FileNotFoundError:
        raise damaged(path, "is missing") from None
    except OSError as e:
        raise PirexError(f"{path}: cannot be read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise damaged(path, "is not text (binary or damaged)") from None
    except json.JSONDecodeError as e:
        raise damaged(path, f"is not valid JSON ({short(e)}), it may be truncated") from None
    except csv.Error as e:
        raise damaged(path, f"is not valid CSV ({short(e)})") from None
    except KeyError as e:
        raise damaged(path, f"has no {short(e)}") from None
    except (ValueError, TypeError, IndexError, AttributeError) as e:
        raise damaged(path, f"is not as expected ({short(e)})") from None


def write_json(path: Path, doc: Any) -> None:
    """A record as every run folder holds it: indented JSON ending in a newline."""
    path.write_text(json.dumps(doc, indent=2) + "\n")


def read_text(path: Path) -> str:
    with reading(path):
        return Path(path).read_text()


def read_json(path: Path, expect: type | tuple[type, ...] = (dict, list)) -> Any:
    """A JSON file (jmh.json, run.json, machine.json, summary.json...), of the expected type."""
    with reading(path):
        doc = json.loads(Path(path).read_text())
    if not isinstance(doc, expect):
        names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
        raise damaged(path, f"expected a JSON {names}, found {type(doc).__name__}")
    return doc


def read_csv(path: Path, required: Iterable[str] = ()) -> list[dict[str, str]]:
    """A CSV file with a header row (requests.csv, web-memory.csv...), as dicts; `required` columns checked."""
    with reading(path), open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        header = set(rows[0]) if rows else set()
    if missing := [c for c in required if rows and c not in header]:
        raise damaged(path, f"has no column {', '.join(missing)}")
    return rows
