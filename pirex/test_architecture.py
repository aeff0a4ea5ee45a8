"""The design's rules that a grep can check, checked on every test run (docs/design.md: "Layers", "Reading and
planning", "The experiment folder is the unit", "Claims, verdicts, precision"):

- one reading of a bundle: no module but pirex/core/bundle.py parses manifest.json, run.json, step.json or machine.json;
- one verdict system: the analysis modules do not judge against the papers (pirex/reproduce does);
- no experiment's name in the CLI, the runner or reproduce, outside help text, docstrings and comments;
- no module over 800 lines (tests aside);
- every NAME read off a pirex module (`runner.Continuation`) is there: ruff's autofix drops an unused import;
- `ruff format` applies to the tree: a `# fmt: skip` only for a table of data, a handful in all;
- the layers (pyproject.toml's [tool.importlinter], run by make lint) fail on an import that goes up, and no two
  modules import each other, however far round.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from pirex.core import experiment

PKG = Path(__file__).resolve().parent
BUNDLE_FILES = {"manifest.json", "run.json", "step.json", "machine.json"}
BUNDLE_NAMES = {"MANIFEST", "MACHINE", "RUN_INFO", "STEP_INFO"}  # pirex.core.bundle's constants for them
READERS = {"load", "loads", "read_json", "read_text", "safe_load"}


def _sources(*under: str) -> list[Path]:
    out = []
    for u in under:
        p = PKG / u
        files = [p] if p.suffix == ".py" else sorted(p.rglob("*.py"))
        out += [f for f in files if not f.name.startswith("test_") and f.name != "conftest.py"]
    return out


def _names_a_bundle_file(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in BUNDLE_FILES:
            return True
        if isinstance(n, ast.Attribute | ast.Name) and getattr(n, "attr", getattr(n, "id", None)) in BUNDLE_NAMES:
            return True
    return False


def _bundle_reads(source: str) -> list[int]:
    """The lines of calls like json.loads((b / "run.json").read_text()) or read_json(d / MACHINE)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in READERS and _names_a_bundle_file(node):
            out.append(node.lineno)
    return sorted(set(out))  # json.loads(f.read_text()) is one read


def test_only_the_bundle_module_reads_a_bundles_own_files():
    found = [
        f"{f.relative_to(PKG.parent)}:{line}"
        for f in _sources(".")
        if f.name != "bundle.py"
        for line in _bundle_reads(f.read_text())
    ]
    assert not found, (
        "read these through pirex.core.bundle (Bundle.run_info, machine_before, Step.info...): " + ", ".join(found)
    )


def test_the_check_finds_hand_reads_of_bundle_files():
    source = 'x = json.loads((b / "run.json").read_text())\ny = read_json(d / bundle.MACHINE)\nz = json.loads(s)\n'
    assert _bundle_reads(source) == [1, 2]


def test_analysis_modules_give_no_verdicts_of_their_own():
    hits = [f.name for f in _sources("analysis") if "consistent with the paper" in f.read_text().lower()]
    assert not hits, f"claims.yaml and pirex/reproduce/verdict.py are the only judges; found verdict words in {hits}"


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are neither docstrings nor click help texts."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            skip.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "epilog", "short_help"):
            skip.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.Assign) and all(getattr(t, "id", "").endswith("_HELP") for t in node.targets):
            skip.update(id(n) for n in ast.walk(node.value))  # a help text shared by several options
    return [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
    ]


def test_no_experiment_is_named_in_the_cli_the_runner_or_reproduce():
    ids = experiment.available()
    assert ids, "no experiments found"
    word = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, ids)) + r"|spass|specj)(?![\w-])", re.IGNORECASE)
    found = [
        f"{f.relative_to(PKG.parent)}:{line}: {text!r}"
        for f in _sources("cli", "runner", "reproduce")
        for line, text in _code_strings(f)
        if word.search(text)
    ]
    assert not found, "experiment names belong in experiments/<id>/ (experiment.yaml), not in core code:\n" + "\n".join(
        found
    )


def test_format_skips_are_a_handful():
    skips = sum(f.read_text().count("# fmt: skip") for f in PKG.rglob("*.py"))
    assert skips <= 20, f"{skips} '# fmt: skip' in pirex/: let ruff format the code; skip only tables of data"


MAX_LINES = 800  # docs/design.md ("Layers"): a module longer than this holds more than one job


def test_no_module_is_over_800_lines():
    long = {
        str(f.relative_to(PKG.parent)): n for f in _sources(".") if (n := len(f.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"split these by what they do (one job a module): {long}"


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_contract_fails_on_an_upward_import_even_inside_a_function(tmp_path):
    shutil.copytree(PKG, tmp_path / "pirex", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PKG.parent / "pyproject.toml", tmp_path)
    assert _lint_imports(tmp_path).returncode == 0, "the tree as it is keeps its layers"
    core = tmp_path / "pirex" / "core" / "bundle.py"
    core.write_text(core.read_text() + "\n\ndef _upward():\n    from pirex.runner import run  # noqa: F401\n")
    r = _lint_imports(tmp_path)
    assert r.returncode != 0 and "pirex.core.bundle -> pirex.runner.run" in r.stdout, r.stdout + r.stderr


def test_no_two_modules_import_each_other_however_far_round():
    graph = grimp.build_graph("pirex")
    modules = sorted(m for m in graph.modules if ".test_" not in m and not m.endswith(".conftest"))
    circles = [
        f"{a} <-> {b}"
        for a in modules
        for b in graph.find_upstream_modules(a)
        if a < b and ".test_" not in b and graph.find_shortest_chain(importer=b, imported=a)
    ]
    assert not circles, "modules that import each other (one of them belongs lower):\n" + "\n".join(circles)


def _module_reads(source: str) -> list[tuple[int, str, str]]:
    """(line, module, name) for every NAME read off a pirex module bound by an import (`runner.Continuation` after
    `from pirex.runner import run as runner`), each read with the imports of its function (or the file's), where the
    alias is never bound otherwise in the file."""
    tree = ast.parse(source)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in [*n.args, *n.kwonlyargs]}
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {id(n) for f in functions for n in ast.walk(f)}
    outside = [n for n in ast.walk(tree) if id(n) not in inside]
    top = _aliases(outside)
    scopes = [(outside, top), *((list(ast.walk(f)), top | _aliases(ast.walk(f))) for f in functions)]
    return sorted(
        {
            (n.lineno, aliases[n.value.id], n.attr)
            for nodes, aliases in scopes
            for n in nodes
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id in aliases
            and n.value.id not in bound
        }
    )


def _aliases(nodes) -> dict[str, str]:
    """alias -> the pirex module an import among `nodes` binds it to."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.asname: a.name for a in node.names if a.asname and a.name.startswith("pirex.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("pirex"):
            out |= {
                a.asname or a.name: f"{node.module}.{a.name}"
                for a in node.names
                if _is_module(f"{node.module}.{a.name}")
            }
    return out


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:
        return False


def test_every_name_read_off_a_pirex_module_is_there():
    """A name one module reads off another must still be there: ruff's autofix drops an import that only another
    module used (runner.Continuation went so, and only a Docker test saw it)."""
    missing = [
        f"{f.relative_to(PKG.parent)}:{line}: {module}.{name}"
        for f in [*PKG.rglob("*.py"), *(PKG.parent / "tests").glob("*.py"), *(PKG.parent / "scripts").glob("*.py")]
        for line, module, name in _module_reads(f.read_text())
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing, "no such name in the module (import it where it lives): " + ", ".join(missing)


def test_the_check_finds_a_name_a_module_no_longer_has():
    source = "from pirex.runner import run as runner\nrunner.Continuation('x')\nrunner.run\n"
    reads = _module_reads(source)
    assert reads == [(2, "pirex.runner.run", "Continuation"), (3, "pirex.runner.run", "run")]
    assert not hasattr(importlib.import_module("pirex.runner.run"), "Continuation")
    assert _module_reads("from pirex.core import bundle\n\ndef f(bundle):\n    return bundle.path\n") == []
    two = (
        "def f():\n    from pirex.reproduce import sources\n\n"
        "def g():\n    from pirex.images import sources\n    sources.x\n"
    )
    assert _module_reads(two) == [(6, "pirex.images.sources", "x")], "each function with its own imports"
