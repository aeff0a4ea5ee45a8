"""Every analysis module's tables (Markdown, CSV, LaTeX, as `pirex table` writes them) from sample bundles
built here out of the committed raw files in testdata/, against golden copies in testdata/golden/<sample>/:
any change of a table from the same bundle fails here, on purpose.

When a table is meant to change, regenerate the golden files deliberately and review the diff:

    PIREX_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q pirex/analysis/test_tables_golden.py
    git diff pirex/analysis/testdata/golden

Run ids and temporary paths are replaced by placeholders (<run-1>, <tmp>), so the files do not depend on
when or where the bundles were made. A text over MAX_BYTES is not kept (none is today)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

from pirex.analysis import fork, generic, jmh, jpa, modules, moobench
from pirex.analysis import tables as T
from pirex.core import experiment
from pirex.core.bundle import Bundle

DATA = Path(__file__).parent / "testdata"
GOLDEN = DATA / "golden"
UPDATE = os.environ.get("PIREX_UPDATE_GOLDEN") == "1"
MAX_BYTES = 50_000
TOOL = {"version": "t", "commit": "c"}

PI4 = {
    "hostname": "pi-a",
    "pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"},
    "storage": {"kind": "sd", "model": "SC64G", "fstype": "ext4"},
}
PI3 = {
    "hostname": "pi-b",
    "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
    "storage": {"kind": "usb", "model": "WD Elements", "fstype": "ext4"},
}
VM = {"hostname": "vm", "cpu": {"model": "QEMU Virtual CPU"}, "storage": {"kind": "ssd", "fstype": "ext4"}}


# the resolved parameters of each sample (its quick profile; fork's and jpa's counts as the raw files hold them)
PARAMS = {
    "fork": {**experiment.load("fork").resolve("quick"), "fork_repetitions": 3},
    "jmh": experiment.load("jmh").resolve("quick"),
    "jpa-rest": {**experiment.load("jpa-rest").resolve("quick"), "requests_per_operation": 8},
    # 40 calls per loop (raw-deactivated.csv; the handmade raw files are shorter excerpts), the configurations written
    "moobench": {
        **experiment.load("moobench").resolve("quick"),
        "calls": 40,
        "repetitions": 5,
        "configurations": "no-instrumentation,kieker-dump,deactivated",
    },
}


def _bundle(root: Path, exp: str, machine: dict, steps: dict[tuple[str, int], Callable[[Path], None]]) -> Path:
    """A finished bundle of the experiment whose step (variant, repetition) is filled by steps[...](step folder)."""
    variants = list(dict.fromkeys(v for v, _ in steps))
    b = Bundle.create(root, exp, "quick", PARAMS[exp], variants, list(steps), {}, TOOL)
    b.write_machine(before=machine, after=machine)
    for (v, r), fill in steps.items():
        with b.step(v, r) as d:
            fill(d)
    b.finish()
    return b.path


def _copy_modes(source: Path) -> Callable[[Path], None]:
    def fill(d: Path) -> None:
        for mode in sorted(source.iterdir()):
            if mode.is_dir():
                shutil.copytree(mode, d / mode.name)

    return fill


def _fork(root: Path, source: str, machine: dict) -> Path:
    return _bundle(
        root / source,
        "fork",
        machine,
        {(v, r): _copy_modes(DATA / "fork" / source) for r in range(2) for v in ("native", "docker")},
    )


PACKAGE = "io.github.pirexbench.jmh.X"


def _jmh(root: Path) -> Path:
    def fill(base: float, r: int) -> Callable[[Path], None]:
        raw = {
            "b1_default": [[base + r, base - r, base + 2 * r]],
            "b3_dontInline": [[base / 2 + r, base / 2 - r]],
            "b6_tcpSend": [[base / 10, base / 10 + r]],
        }
        doc = [
            {"benchmark": f"{PACKAGE}.{name}", "primaryMetric": {"rawData": v, "scoreUnit": "ops/s"}}
            for name, v in raw.items()
        ]
        return lambda d: (d / "jmh.json").write_text(json.dumps(doc))

    steps = {(v, r): fill(100.0 if v == "native" else 90.0 - r, r) for r in range(5) for v in ("native", "docker")}
    return _bundle(root / "jmh", "jmh", PI3, steps)


def _jpa(root: Path) -> Path:
    jpa_data = DATA / "jpa"
    source = {"native": [jpa_data / "native"], "docker": [jpa_data / "docker" / "1", jpa_data / "docker" / "2"]}

    def fill(src: Path) -> Callable[[Path], None]:
        return lambda d: shutil.copy(src / "requests.csv", d / "requests.csv")

    steps = {(v, r): fill(folders[r % len(folders)]) for r in range(3) for v, folders in source.items()}
    return _bundle(root / "jpa", "jpa-rest", PI4, steps)


def _moobench(root: Path, host: str, machine: dict) -> Path:
    def fill(r: int) -> Callable[[Path], None]:
        def write(d: Path) -> None:
            shutil.copy(DATA / "moobench" / "raw-threads.csv", d / "raw-no-instrumentation.csv")
            shutil.copy(DATA / "moobench" / "raw-handmade.csv", d / "raw-kieker-dump.csv")
            calls = "".join(f"1;{1000 + 37 * ((i * (r + 3)) % 11)};123456;0\n" for i in range(40))
            (d / "raw-deactivated.csv").write_text(calls)

        return write

    return _bundle(root / f"moobench-{host}", "moobench", machine, {("native", r): fill(r) for r in range(5)})


def samples(root: Path) -> dict[str, tuple[object, list[Path]]]:
    """Sample name -> (analysis module, its bundles), built under root."""
    return {
        "fork-pi4": (fork, [_fork(root, "pi4", PI4)]),
        "fork-vm": (fork, [_fork(root, "vm-x86_64", VM)]),
        "jmh": (jmh, [_jmh(root)]),
        "jpa": (jpa, [_jpa(root)]),
        "moobench": (moobench, [_moobench(root, "pi-a", PI3)]),
        "moobench-fleet": (moobench, [_moobench(root, "pi-a", PI3), _moobench(root, "pi-b", PI4)]),
        "generic": (generic, [_fork(root / "generic", "pi4", PI4)]),
    }


# the generic summary reads an experiment's outputs of format csv, which no committed experiment declares; the fork
# sample's rows are a size each (its whole-number column size_mb, declared a key: undeclared, the rows are refused)
GENERIC_EXPERIMENT = SimpleNamespace(id="fork", outputs=[{"path": "*/fork.csv", "format": "csv", "keys": ["size_mb"]}])


def render(root: Path) -> dict[str, str]:
    """'<sample>/<table>.<md|csv|tex>' -> text, for every sample's tables (modules.tables: as `pirex table`)."""
    out = {}
    load = generic.experiment.load  # every other experiment stays the committed one (moobench's defaults)
    with mock.patch.object(generic.experiment, "load", lambda i: GENERIC_EXPERIMENT if i == "fork" else load(i)):
        for name, (mod, bundles) in samples(root / "bundles").items():
            named = modules.tables(mod, bundles, None)
            ids = {Bundle.open(b).run_id: f"<run-{i}>" for i, b in enumerate(bundles, 1)}
            for nt in named:
                T.write_csv(nt.table, root / "csv" / name / f"{nt.name}.csv")
                texts = {
                    "md": T.markdown(nt.table) + "\n",
                    "tex": T.latex(nt.table),
                    "csv": (root / "csv" / name / f"{nt.name}.csv").read_text(),
                }
                for ext, text in texts.items():
                    for run_id, mark in ids.items():
                        text = text.replace(run_id, mark)
                    out[f"{name}/{nt.name}.{ext}"] = text.replace(str(root), "<tmp>")
    return out


def _kept(texts: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in texts.items() if len(v.encode()) <= MAX_BYTES}


def test_tables_match_the_golden_files(tmp_path):
    texts = _kept(render(tmp_path))
    if UPDATE:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, text in texts.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(text)
        pytest.skip(f"PIREX_UPDATE_GOLDEN=1: wrote {len(texts)} golden files under {GOLDEN}; review `git diff`")
    how = "if the change is meant, regenerate with PIREX_UPDATE_GOLDEN=1 (see this module's docstring)"
    golden = {str(p.relative_to(GOLDEN)): p.read_text() for p in sorted(GOLDEN.rglob("*.*"))}
    assert golden, f"no golden files under {GOLDEN}: {how}"
    assert sorted(texts) == sorted(golden), f"tables added or gone: {how}"
    for rel, text in texts.items():
        assert same_table(text, golden[rel]), f"{rel} differs from {GOLDEN / rel}: {how}"


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
RELATIVE = 1e-6  # CSVs keep every digit: scipy 1.10 (Debian's, tests/test_debian_python.py) and 1.16 differ at ~1e-9


def same_table(ours: str, golden: str) -> bool:
    """The same text but for numbers, which agree to RELATIVE: the printed digits of the Markdown and LaTeX tables
    match exactly; a CSV's full-precision floats may differ in the last digits between numerical libraries."""
    if ours == golden:
        return True
    if NUMBER.sub("#", ours) != NUMBER.sub("#", golden):
        return False
    pairs = zip(NUMBER.findall(ours), NUMBER.findall(golden), strict=True)
    return all(math.isclose(float(a), float(b), rel_tol=RELATIVE, abs_tol=1e-12) for a, b in pairs)


def test_same_table_forgives_only_the_last_digits_of_numbers():
    assert same_table("a,4.53032837192988,nan\n", "a,4.53032837974446,nan\n")
    assert not same_table("a,4.5303,nan\n", "a,4.5403,nan\n")
    assert not same_table("| 1,234 | µs |", "| 1,234 | ms |")
    assert not same_table("a,1,2\n", "a,1,2,3\n")
