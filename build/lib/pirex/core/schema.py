"""The shapes of pirex's input and record files as JSON Schema (pirex/core/schemas/*.schema.json, published in
docs/schemas.md), and the first problem a document has against one, for its reader to say in one line.

The schemas say what each key holds; what only the code can know (that a variant of `completed` is one of
`variants`, that a placeholder has a value) stays with the reader. Each schema node may carry `x-expected`, the
words a message uses for what belongs there ("a whole number of MB"), and an object node `x-unknown`, the words
for its allowed keys ("keys among command, ready_line"). A problem is reported at the nearest node above the
failing keyword that has words: a non-string item of `command` is "command: expected a non-empty list of
strings", the whole list shown. Draft 7, the newest draft every jsonschema from 3.2 (the dev extra's cffconvert
needs it) to 4.x (Debian bookworm's python3-jsonschema 4.10 on a 32-bit Pi) reads alike.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).resolve().parent / "schemas"
NAMES = ("experiment", "claims", "manifest")  # <name>.schema.json: experiment.yaml, claims.yaml, manifest.json
# "integer" as Python reads a file: 1 but neither 1.0 (which Draft 7 would take) nor true
_TYPES = jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
    "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
)
Validator = jsonschema.validators.extend(jsonschema.Draft7Validator, type_checker=_TYPES)


@dataclass(frozen=True)
class Problem:
    """Where a document breaks its schema: the node `at` (a key path), what belongs there, and what is there.
    `missing`: a required key absent from that node; `unknown`: keys the node does not allow."""

    at: tuple[str | int, ...]
    expected: str
    found: Any
    missing: str = ""
    unknown: tuple[str, ...] = ()

    def key(self, root: str = "(top level)") -> str:
        """The node's key path as messages write it: services.sink.ready_line, outputs[0].format."""
        return dotted((*self.at, self.missing) if self.missing else self.at) or root


def dotted(at: Sequence[str | int], start: str = "") -> str:
    """A key path as messages write it, after `start`: services.sink.ready_line, outputs[0].format."""
    out = start
    for part in at:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@functools.cache
def load(name: str) -> dict:
    """The schema of `name` (NAMES), checked once against its draft's metaschema."""
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Validator.check_schema(schema)
    return schema


def words(name: str, key: str) -> str:
    """The x-expected of top-level property `key` of schema `name`."""
    schema = load(name)
    prop = schema["properties"][key]
    return prop.get("x-expected", _deref(schema, prop).get("x-expected", ""))


@functools.cache
def _validator(name: str) -> Any:
    return Validator(load(name))


def first_problem(name: str, doc: Any, facts: dict[str, str] | None = None) -> Problem | None:
    """The document's first problem against schema `name`, None when it has none. First: in the order of the
    schema's top-level properties (the order a reader meets them), then of the items, shallower before deeper.
    `facts` fill the words' ${placeholders}: what only the reader knows (the experiments there are)."""
    schema = load(name)
    errors = list(_validator(name).iter_errors(doc))
    if not errors:
        return None
    order = list(schema.get("properties", {}))

    def rank(e: jsonschema.ValidationError) -> tuple:
        path = list(e.absolute_path)
        if not path and e.validator == "required":
            return order.index(_missing(e)) if _missing(e) in order else len(order), ()
        if not path:
            return -1, ()  # the top level's own type or unknown keys come first
        return (order.index(path[0]) if path[0] in order else len(order)), _positions(doc, path)

    problem = _problem(schema, doc, min(errors, key=rank))
    words = string.Template(problem.expected).safe_substitute(facts or {})
    return dataclasses.replace(problem, expected=words)


def _positions(doc: Any, path: Sequence[str | int]) -> tuple[int, ...]:
    """Where a node stands in the document: item indexes and the keys' places in their mappings, so that
    problems are met in the order the file is read (jsonschema gives a mapping's unknown keys as a set)."""
    out = []
    for p in path:
        out.append(list(doc).index(p) if isinstance(doc, dict) else p)
        doc = doc[p]
    return tuple(out)


def _missing(e: jsonschema.ValidationError) -> str:
    return next((k for k in e.validator_value if k not in e.instance), "")


def _problem(schema: dict, doc: Any, e: jsonschema.ValidationError) -> Problem:
    """The error said at its nearest worded node: walk the schema path from the root, keeping the instance path
    beside it, and remember the last node that carries x-expected."""
    node, at, path = schema, [], list(e.absolute_path)
    worded = (schema.get("x-expected", ""), 0, schema)
    deepest = schema.get("x-report-depth", len(path))  # a reader that names top-level keys only: 1
    keys = list(e.absolute_schema_path)
    i = 0
    while i < len(keys):
        node = _deref(schema, node)
        k = keys[i]
        if k in ("properties", "patternProperties") and i + 1 < len(keys):
            node, i = node[k][keys[i + 1]], i + 2
            at.append(path[len(at)])
        elif k in ("additionalProperties", "items") and isinstance(node.get(k), dict) and len(at) < len(path):
            node, i = node[k], i + 1
            at.append(path[len(at)])
        elif k in ("anyOf", "allOf", "oneOf") and i + 1 < len(keys) and isinstance(keys[i + 1], int):
            node, i = node[k][keys[i + 1]], i + 2
        elif k == "if" and i + 1 < len(keys) and keys[i + 1] in ("then", "else"):  # jsonschema 3.2 names both
            i += 1
        elif k in ("then", "else"):  # a conditional's branch, on the same instance
            node, i = node[k], i + 1
        elif k == "propertyNames":  # a key of the mapping, not a value in it, is wrong
            names = node[k]
            return Problem((*path, e.instance), names.get("x-expected", worded[0]), e.instance)
        else:
            break
        words = node.get("x-expected", _deref(schema, node).get("x-expected")) if isinstance(node, dict) else None
        if words is not None and len(at) <= deepest:
            worded = (words, len(at), node)
    node = _deref(schema, node)
    if len(at) == len(path) <= deepest and e.validator == "required":
        return _absent(schema, doc, node, path, _missing(e), worded)
    if len(at) == len(path) <= deepest and e.validator == "additionalProperties" and isinstance(e.instance, dict):
        allowed = node.get("properties", {})
        unknown = tuple(sorted(str(k) for k in e.instance if k not in allowed))
        if "x-unknown" in node:  # "keys among ...", found: the keys that are not
            return Problem(tuple(path), node["x-unknown"], list(unknown), unknown=unknown)
        return Problem(tuple(path), node.get("x-expected", ""), e.instance, unknown=unknown)
    if len(at) == len(path) <= deepest and e.validator == "dependencies" and isinstance(e.instance, dict):
        deps = node["dependencies"].items()
        needing = next(k for k, needs in deps if k in e.instance and any(n not in e.instance for n in needs))
        return Problem((*path, needing), node.get("x-dependencies", ""), e.instance[needing])
    expected, depth, said = worded
    found = _at(doc, path[:depth])
    if said.get("x-found") == "keys" and isinstance(found, dict):  # the keys that clash, not their values
        found = sorted(found)
    return Problem(tuple(path[:depth]), expected, found)


def _absent(schema: dict, doc: Any, node: dict, path: list, missing: str, worded: tuple) -> Problem:
    """A required key that is absent, said as its schema asks: by default "missing" with the key's words; the
    object's "x-missing" words instead; a key's "x-missing": "self", as a problem of the object that lacks it;
    a key's "x-default", as a problem of the key holding that value (the reader took the default and refused it)."""
    raw = node.get("properties", {}).get(missing, {})
    prop = _deref(schema, raw)
    if raw.get("x-missing") == "self":
        words, depth, _ = worded
        return Problem(tuple(path[:depth]), words, _at(doc, path[:depth]))
    if "x-default" in raw:
        return Problem((*path, missing), raw.get("x-expected", prop.get("x-expected", "")), raw["x-default"])
    words = node.get("x-missing", raw.get("x-expected", prop.get("x-expected", "required")))
    return Problem(tuple(path), words, None, missing=missing)


def _deref(schema: dict, node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local references: {ref}")
        node = functools.reduce(lambda n, p: n[p], ref[2:].split("/"), schema)
    return node


def _at(doc: Any, path: Sequence[str | int]) -> Any:
    for p in path:
        doc = doc[p]
    return doc
