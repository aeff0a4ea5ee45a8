"""The matrices of an experiment (experiment.yaml's `matrices`, ICPE'18 Table 5): cases that each change one factor
of their base case (parameters, CPUs, a RAM work directory, the governor, swap), read and checked
(pirex/core/experiment.py reads the rest of the file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pirex.core import params as P
from pirex.core.errors import PirexError
from pirex.core.experiment_check import KNOWN_VARIANTS, Checker

# What a matrix case may change against its base case (ICPE'18 Table 5's factors).
CPU_LIST = r"\d+(-\d+)?(,\d+(-\d+)?)*"  # 0, 0-1, 0,2-3: what cpuset.parse_cpus reads (cases, --cpus)


@dataclass(frozen=True)
class Case:
    """One case of a matrix: its own change, applied on top of its base case's (see resolved)."""

    name: str
    table_id: int | None
    title: str
    base: str | None
    set: dict[str, Any]
    cpus: str | None = None
    ram_workdir_mb: int | None = None
    governor: str | None = None
    swap: str | None = None  # "off": every active swap area is turned off for the step


@dataclass(frozen=True)
class Matrix:
    name: str
    source: str
    runs_as: str
    cases: tuple[Case, ...]
    parameters: dict[str, Any]
    fallback: dict[str, Any]
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)  # per profile, over `parameters`

    def parameters_for(self, profile: str) -> dict[str, Any]:
        """The matrix's parameters at a profile (e.g. moobench's paper profile: MooBench's 2,000,000 calls)."""
        return {**self.parameters, **self.profiles.get(profile, {})}

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        raise PirexError(f"matrix {self.name}: no case {name!r}")

    def chain(self, name: str) -> list[Case]:
        """The case and its bases, the root first: each case changes one factor of its base."""
        out = [self.case(name)]
        while out[0].base:
            out.insert(0, self.case(out[0].base))
        return out

    def resolved(self, name: str) -> Case:
        """The case with every change along its base chain applied (later ones win)."""
        merged: dict[str, Any] = {"set": {}}
        for c in self.chain(name):
            merged["set"] = {**merged["set"], **c.set}
            for key in ("cpus", "ram_workdir_mb", "governor", "swap"):
                if getattr(c, key) is not None:
                    merged[key] = getattr(c, key)
        me = self.case(name)
        return Case(me.name, me.table_id, me.title, me.base, **merged)


def parse_matrix(c: Checker, name: str, doc: Any, declared: dict[str, P.Param]) -> Matrix:
    """A matrix whose shapes experiment.schema.json has checked: its parameters and cases' names, here."""
    key = f"matrices.{name}"
    runs_as = doc.get("runs_as", "native")
    params = doc.get("parameters", {})
    P.check_values(declared, params, f"{c.path}: {key}.parameters")
    fallback = doc.get("fallback", {})
    profiles = doc.get("profiles", {})
    for prof, values in profiles.items():
        P.check_values(declared, values, f"{c.path}: {key}.profiles.{prof}")
    cases: list[Case] = []
    for i, cd in enumerate(doc["cases"]):
        where = f"{key}.cases[{i}]"
        if cd["name"] in KNOWN_VARIANTS or any(x.name == cd["name"] for x in cases):
            raise c.fail(f"{where}.name", "a name not used by another case or variant", cd["name"])
        base = cd.get("base")
        if base is not None and not any(x.name == base for x in cases):
            raise c.fail(f"{where}.base", "an earlier case's name", base)
        sets = cd.get("set") or {}
        P.check_values(declared, sets, f"{c.path}: {where}.set")
        ram = cd.get("ram_workdir_mb")
        cases.append(
            Case(
                cd["name"],
                cd.get("table_id"),
                str(cd.get("title", cd["name"])),
                base,
                dict(sets),
                None if cd.get("cpus") is None else str(cd["cpus"]),
                ram,
                cd.get("governor"),
                cd.get("swap"),
            )
        )
    return Matrix(
        name,
        str(doc.get("source", "")),
        runs_as,
        tuple(cases),
        dict(params),
        dict(fallback),
        {k: dict(v) for k, v in profiles.items()},
    )
