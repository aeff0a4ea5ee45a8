"""The Makefile as the tests read it: `make` itself, and a target's recipe lines as make would run them
(`make -n`), so that a smoke test runs what `make TARGET` runs, with the suite's own images and folders."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
from types import ModuleType

from pirex.core import paths


def make(*args: str) -> str:
    r = subprocess.run(["make", "--no-print-directory", *args], cwd=paths.REPO, capture_output=True, text=True)
    assert r.returncode == 0, f"make {' '.join(args)}: {r.stderr}"
    return r.stdout


def recipe_lines(target: str, program: str, *variables: str) -> list[list[str]]:
    """The commands of target's recipe that run program, as make would run them with these VAR=value."""
    return [shlex.split(line) for line in make("-n", target, *variables).splitlines() if program in line]


def recipe_line(target: str, script: str, args: str) -> list[str]:
    """The command of target's recipe that runs script, as make would run it with ARGS=args."""
    lines = recipe_lines(target, script, f"ARGS={args}")
    assert len(lines) == 1, f"make -n {target}: expected one line running {script}, got {lines}"
    return lines[0]


def script(name: str) -> ModuleType:
    """scripts/NAME.py as a module (scripts/ is no package), for a smoke test that runs its measuring on a lab or
    fixture of the suite instead of the one the script would make for itself."""
    spec = importlib.util.spec_from_file_location(f"pirex_script_{name}", paths.REPO / "scripts" / f"{name}.py")
    assert spec and spec.loader, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
