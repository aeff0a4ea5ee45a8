"""Declared parameters of an experiment: a type and, where it matters, a range, so that a
profile, a matrix case or `--set NAME=VALUE` is checked before anything runs.

In experiment.yaml::

    parameters:
      depth: {type: int, min: 1, default: 10, doc: recursion depth of B1-B4}
      time: {type: duration, doc: JMH iteration time}          # no default: every profile sets it
      sizes: {type: list, of: int, min: 1, default: "1,8,16"}  # comma-separated, as the command takes it
      mix: {type: choice, choices: [sequential, interleaved], default: sequential}

Types: int, float, string, bool, duration (a number with a unit: 200ms, 1s, 10m, 1h30m),
choice (one of `choices`), list (comma-separated items `of` int, float or string, each in the
range or among `choices`). `repetitions` (a whole number >= 1) is declared for every experiment.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pirex.core.errors import PirexError

TYPES = ("int", "float", "string", "bool", "duration", "choice", "list")
ITEM_TYPES = ("int", "float", "string")
KEYS = {"type", "default", "min", "max", "choices", "of", "doc", "pattern"}
DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|min|h))+$")
REPETITIONS = "repetitions"
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: Any = _NO_DEFAULT
    min: float | None = None
    max: float | None = None
    choices: tuple = ()
    of: str = "string"  # a list's items
    pattern: str = ""
    doc: str = ""

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def allowed(self) -> str:
        """What this parameter accepts, for error messages."""
        rng = _range_text(self.min, self.max)
        if self.type == "choice":
            return "one of " + ", ".join(map(str, self.choices))
        if self.type == "list":
            if self.choices:
                return "a comma-separated list of names among " + ", ".join(map(str, self.choices))
            return f"a comma-separated list of {self.of}s{rng}"
        if self.type == "duration":
            return "a duration like 200ms, 1s, 10m or 1h30m"
        if self.type == "string" and self.pattern:
            return f"text matching {self.pattern}"
        kinds = {"int": "a whole number", "float": "a number", "string": "text", "bool": "true or false"}
        return kinds[self.type] + rng

    def check(self, value: Any) -> Any:
        """The value if it is allowed, else a PirexError naming the parameter, value and what is allowed."""
        ok = _valid(self, value)
        if ok is None:
            raise PirexError(f"{self.name}={value!r}: expected {self.allowed()}")
        return ok

    def parse(self, text: str) -> Any:
        """A --set value (text) as this parameter's type, checked; errors quote the text as given."""
        try:
            return self._parse(text.strip())
        except PirexError:
            raise PirexError(f"{self.name}={text!r}: expected {self.allowed()}") from None

    def _parse(self, t: str) -> Any:
        if self.type == "int" and re.fullmatch(r"[+-]?\d+", t):
            return self.check(int(t))
        if self.type == "float":
            try:
                return self.check(float(t))
            except ValueError:
                pass
        if self.type == "bool" and t.lower() in ("true", "false", "1", "0", "yes", "no"):
            return t.lower() in ("true", "1", "yes")
        return self.check(t)


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" from {lo:g} to {hi:g}"
    if lo is not None:
        return f" >= {lo:g}"
    if hi is not None:
        return f" <= {hi:g}"
    return ""


def _in_range(p: Param, x: float) -> bool:
    return math.isfinite(x) and (p.min is None or x >= p.min) and (p.max is None or x <= p.max)


def _number(kind: str, value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if kind == "int":
        return value if isinstance(value, int) else None
    if kind == "float":
        return value if isinstance(value, int | float) else None
    return None


def _item(p: Param, text: str) -> bool:
    if p.choices:
        return text in map(str, p.choices)
    if p.of == "string":
        return bool(text)
    try:
        x = int(text) if p.of == "int" else float(text)
    except ValueError:
        return False
    return _in_range(p, x)


def _valid(p: Param, value: Any) -> Any:
    """The (normalised) value if allowed, else None."""
    if p.type in ("int", "float"):
        x = _number(p.type, value)
        return value if x is not None and _in_range(p, x) else None
    if p.type == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value)
    if p.type == "choice":
        return value if text in map(str, p.choices) else None
    if p.type == "duration":
        return text if DURATION.match(text) else None
    if p.type == "list":
        items = text.split(",")
        return text if items and all(_item(p, i.strip()) for i in items) else None
    if p.pattern and not re.fullmatch(p.pattern, text):
        return None
    return text if isinstance(value, str) else value


def declare(name: str, doc: Any, where: str) -> Param:
    """One declaration from experiment.yaml; `where` names file and key for errors."""
    if not isinstance(doc, dict):
        raise PirexError(f"{where}: expected a declaration like {{type: int, min: 1, default: 10}}, found {doc!r}")
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        raise PirexError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})")
    kind = doc.get("type")
    if kind not in TYPES:
        raise PirexError(f"{where}.type: expected one of {', '.join(TYPES)}, found {kind!r}")
    for key in ("min", "max"):
        if key in doc and (isinstance(doc[key], bool) or not isinstance(doc[key], int | float)):
            raise PirexError(f"{where}.{key}: expected a number, found {doc[key]!r}")
    choices = doc.get("choices", [])
    if not isinstance(choices, list) or (kind == "choice" and not choices):
        raise PirexError(f"{where}.choices: expected a non-empty list, found {choices!r}")
    of = doc.get("of", "string")
    if of not in ITEM_TYPES:
        raise PirexError(f"{where}.of: expected one of {', '.join(ITEM_TYPES)}, found {of!r}")
    pattern = doc.get("pattern", "")
    try:
        re.compile(pattern)
    except (re.error, TypeError):
        raise PirexError(f"{where}.pattern: not a regular expression: {pattern!r}") from None
    p = Param(
        name,
        kind,
        doc.get("default", _NO_DEFAULT),
        doc.get("min"),
        doc.get("max"),
        tuple(choices),
        of,
        str(pattern),
        str(doc.get("doc", "")),
    )
    if p.has_default and _valid(p, p.default) is None:
        raise PirexError(f"{where}.default: expected {p.allowed()}, found {p.default!r}")
    return p


def builtin() -> dict[str, Param]:
    """Declared for every experiment: the runner's own."""
    return {REPETITIONS: Param(REPETITIONS, "int", min=1, doc="independent repetitions per variant")}


def check_values(declared: dict[str, Param], values: dict, where: str) -> dict:
    """Values (a profile, a matrix case, overrides) against the declarations: unknown names are
    refused with the list of known ones, each value checked against its type and range."""
    out = {}
    for name, value in values.items():
        if name not in declared:
            raise PirexError(f"{where}: unknown parameter {name!r} (parameters: {', '.join(sorted(declared))})")
        try:
            out[name] = declared[name].check(value)
        except PirexError as e:
            raise PirexError(f"{where}: {e}") from None
    return out


def parse_overrides(declared: dict[str, Param], pairs: list[str] | tuple[str, ...]) -> dict:
    """`--set NAME=VALUE` pairs, typed and checked."""
    out = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise PirexError(f"--set {pair!r}: expected NAME=VALUE, e.g. --set repetitions=5")
        if name not in declared:
            raise PirexError(f"--set {name}: unknown parameter (parameters: {', '.join(sorted(declared))})")
        try:
            out[name] = declared[name].parse(text)
        except PirexError as e:
            raise PirexError(f"--set {e}") from None
    return out
