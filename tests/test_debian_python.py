"""The analysis on Debian bookworm's numpy 1.24, scipy 1.10 and matplotlib 3.6: what a 32-bit Pi's
virtualenv runs on (PyPI has no armv7 wheels; scripts/venv.sh takes Debian's packages there). The
virtualenv is made by make's own script on this machine's Debian packages (the same versions as
armhf), and the analysis unit tests run in it; the rest of the suite runs on the pinned wheels."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from pirex.core import paths, proc

DEBIAN_PYTHON = "/usr/bin/python3"


def test_the_analysis_tests_pass_on_debian_packages(tmp_path):
    have = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import numpy, scipy, matplotlib, yaml, jinja2, markdown, jsonschema"],
        capture_output=True,
    )
    if shutil.which("dpkg") is None or have.returncode != 0:
        pytest.skip(
            "Debian's python3-numpy/-scipy/-matplotlib/-yaml/-jinja2/-markdown/-jsonschema are not installed "
            "(scripts/host-setup.sh does it)"
        )
    venv = tmp_path / "venv"
    script = paths.REPO / "scripts" / "venv.sh"
    r = proc.run([script, "create", DEBIAN_PYTHON, venv, "1"], timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    assert "virtualenv on Debian's numpy 1.24" in r.stderr
    r = proc.run([script, "install", venv, "analysis", "pytest==9.2.0"], timeout=1800, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    show = (
        "import importlib.metadata as m; print(*(m.version(p) for p in ('numpy', 'scipy', 'matplotlib', 'jsonschema')))"
    )
    versions = proc.run([venv / "bin/python", "-c", show], timeout=120)
    assert [v.rsplit(".", 1)[0] for v in versions.stdout.split()] == ["1.24", "1.10", "3.6", "4.10"]
    # the analysis, and the schemas the runner reads its files through (Debian's jsonschema 4.10, not the pin's 3.2)
    schemas = ["pirex/core/test_schema.py", "pirex/core/test_experiment.py", "pirex/reproduce/test_claims.py"]
    r = proc.run(
        [venv / "bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "pirex/analysis", *schemas],
        timeout=1800,
        check=False,
        cwd=paths.REPO,
    )
    assert r.returncode == 0, r.stdout[-5000:]
