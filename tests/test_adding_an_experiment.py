"""Adding to the collection touches no code: in a copy of the checkout, a small image foo is
one folder (images/foo/Dockerfile) plus its target and group membership in docker-bake.hcl, and
an experiment foo is one folder (experiments/foo/experiment.yaml); nothing under pirex/, tests/,
the Makefile or .github/ changes. `pirex images list`, the image tests, the release workflow's
build graph, `pirex run`, the generic `pirex table` and `make run` all take them up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pirex.core.paths import REPO
from pirex.images.test_release_workflow import SAMPLE_TAGS, release_graph
from tests.checkout import committed_copy, git

FOO_DOCKERFILE = """\
# pirex foo: the smallest image, for tests/test_adding_an_experiment.py.
# hadolint ignore=DL3006
FROM base
CMD ["echo", "foo"]
"""

FOO_EXPERIMENT = """\
schema: 1
id: foo
title: the smallest experiment (tests/test_adding_an_experiment.py)
image: foo
command: [sh, -c, "printf 'value,size\\n{repetition},{size}\\n' > {output}/out.csv"]
parameters:
  size: {type: int, min: 1, default: 3}
profiles:
  quick: {repetitions: 2}
  paper: {repetitions: 5}
variants: [native, docker]
default_variants: [docker]
outputs:
  - {path: out.csv, format: csv}
"""

FOO_TARGET = """
target "foo" {
  inherits = ["_common"]
  context  = "images/foo"
  contexts = { base = "target:base" }
  tags     = tags("foo", target.docker-metadata-action.tags)
}
"""


def add_to_group(bake_file: Path, name: str) -> None:
    text = bake_file.read_text()
    text, n = re.subn(r'(group "default" \{\s*targets = \[)([^\]]*)\]', rf'\1\2, "{name}"]', text)
    assert n == 1, "group default not found in docker-bake.hcl"
    bake_file.write_text(text)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The tracked files of this checkout as they are now, committed in a repository of their
    own; then foo added the way a contributor adds an image."""
    d = committed_copy(tmp_path_factory.mktemp("checkout"))

    (d / "images" / "foo").mkdir()
    (d / "images" / "foo" / "Dockerfile").write_text(FOO_DOCKERFILE)
    add_to_group(d / "docker-bake.hcl", "foo")
    with open(d / "docker-bake.hcl", "a") as f:
        f.write(FOO_TARGET)
    (d / "experiments" / "foo").mkdir()
    (d / "experiments" / "foo" / "experiment.yaml").write_text(FOO_EXPERIMENT)
    return d


def run_in(checkout: Path, *args: str, timeout: float = 120) -> str:
    """A Python command with the copy's pirex (not this checkout's) first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, *args], cwd=checkout, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_only_the_image_folder_and_the_bake_file_change(checkout):
    changed = {line[3:] for line in git(checkout, "status", "--porcelain", "--untracked-files=all").splitlines()}
    assert changed == {"docker-bake.hcl", "images/foo/Dockerfile", "experiments/foo/experiment.yaml"}


@pytest.mark.docker
def test_pirex_images_list_names_it(docker, checkout):
    rows = [line.split()[:2] for line in run_in(checkout, "-m", "pirex", "images", "list").splitlines()]
    assert ["foo", "images/foo"] in rows


@pytest.mark.docker
def test_the_image_tests_include_it(docker, checkout):
    out = run_in(checkout, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "tests/test_images.py")
    assert "tests/test_images.py::test_manifest_list_has_every_platform_with_matching_config[foo]" in out
    assert "tests/test_images.py::test_oci_labels_and_non_root_user[foo]" in out


@pytest.mark.docker
def test_the_release_graph_includes_it(docker, checkout, tmp_path):
    release = release_graph(checkout, tmp_path)
    assert "foo" in release.images
    foo = release.targets["foo"]
    assert list(foo.tags) == [f"ghcr.io/lab/foo:{v}" for v in SAMPLE_TAGS]
    assert foo.contexts == {"base": "target:base"} and len(foo.platforms) == 3


@pytest.mark.docker
def test_pirex_run_and_the_generic_table_take_the_experiment(built, checkout, tmp_path):
    tag = f"{built.tag}-foo"
    run_in(
        checkout,
        "-m",
        "pirex",
        "images",
        "build",
        "--platforms",
        "host",
        "--offline",
        "1",
        "--tag",
        tag,
        "foo",
        timeout=900,
    )
    results = tmp_path / "results"
    run_in(
        checkout,
        "-m",
        "pirex",
        "run",
        "foo",
        "--tag",
        tag,
        "--results-dir",
        str(results),
        "--set",
        "size=7",
        timeout=600,
    )
    (bundle,) = results.glob("foo/*/manifest.json")
    assert all(s["params"]["size"] == 7 for s in json.loads(bundle.read_text())["plan"])
    table = run_in(checkout, "-m", "pirex", "table", "foo", "--results-dir", str(results))
    assert "Per variant: mean over runs (steps) of each measured column" in table
    assert "| size | docker | 2 | 7 | no interval: 2 runs, 5 needed |" in table
    assert (results / "tables" / "foo" / "summary.csv").is_file()


@pytest.mark.docker
def test_make_run_takes_it(built, checkout):
    """`make run` derives its steps from experiments/: limited to foo (EXPERIMENTS, a setting of the
    Makefile that names no experiment) it builds foo's image alone and runs foo, with this session's tag
    (HOST_SETUP=0: the host is set up; VENV: this checkout's, whose Python runs the copy's pirex; BUDGET=: foo has
    no measured durations yet, and a budgeted reproduction starts no run of unknown length)."""
    tag = f"{built.tag}-foo"
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run(
        [
            "make",
            "run",
            "EXPERIMENTS=foo",
            "BUDGET=",
            f"TAG={tag}",
            "HOST_SETUP=0",
            f"VENV={REPO / '.venv'}",
            "OFFLINE=1",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "--experiment foo" in r.stdout and f"reproduce all --level kick-the-tires --tag {tag}" in r.stdout
    (bundle,) = (checkout / "results" / "foo").glob("*/manifest.json")
    manifest = json.loads(bundle.read_text())
    assert manifest["status"] == "complete" and manifest["profile"] == "quick"
    sizes = [s["params"]["size"] for s in manifest["plan"]]
    assert sizes == [3] * 5, "kick-the-tires: the quick profile's docker variant, at least 5 repetitions"
