"""Checking experiments/<id>/experiment.yaml (pirex/core/experiment.py reads it): the Checker every problem is
said through, so that each names the file, the key and what was expected, and the names and patterns the
sections share."""

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


def strings(value: list) -> tuple[str, ...]:
    """A list the schema took as "a non-empty list of strings" (numbers allowed: YAML reads 100 as one), as text."""
    return tuple(str(a) for a in value)


class Checker:
    """The one way a problem of experiment.yaml is said: the file, the key, what was expected and what is there.
    The shapes are experiment.schema.json's (pirex/core/schema.py); what the keys name is checked in code."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, expected: str, got: Any) -> PirexError:
        return PirexError(f"{self.path}: {key}: expected {expected}, found {got!r}")
