"""Checking experiments/<id>/experiment.yaml (pirex/core/experiment.py reads it): the Checker every section is
read through, so that each problem names the file, the key and what was expected, and the names and patterns
the sections share."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from pirex.core.errors import PirexError

# The variants the runner knows (docs/design.md, "Variants"): the image's own files outside any container, a
# default `docker run`, and Docker taken apart one mechanism at a time.
KNOWN_VARIANTS = ("native", "docker", "docker-host-network", "docker-bind-workdir", "docker-seccomp-unconfined")
NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
ANALYSIS = re.compile(r"^[a-z][a-z0-9_]*$")  # a module of pirex/analysis/


def placeholders(args: tuple[str, ...]) -> set[str]:
    return {f for a in args for _, f, _, _ in string.Formatter().parse(a) if f}


class Checker:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, expected: str, got: Any) -> PirexError:
        return PirexError(f"{self.path}: {key}: expected {expected}, found {got!r}")

    def get(
        self,
        doc: dict,
        key: str,
        kind: type | tuple[type, ...],
        expected: str,
        prefix: str = "",
        required: bool = True,
        default: Any = None,
    ) -> Any:
        if key not in doc:
            if required:
                raise PirexError(f"{self.path}: {prefix}{key}: missing ({expected})")
            return default
        value = doc[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _tuple(kind)):
            raise self.fail(prefix + key, expected, value)
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(a, str | int | float) for a in value):
            raise self.fail(key, "a non-empty list of strings", value)
        return tuple(str(a) for a in value)


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
