"""Bring your own paper (issue 54): in a copy of the checkout, an experiment of one's own whose CSV has a row per size
(experiments/memcopy) and a paper of one's own with two claims on it (analysis/memcopy23) are all it takes: `pirex
table` prints a metric per size and `pirex reproduce --reuse-only` judges both claims on bundles made here, with no
file under pirex/ changed, and the unit suite's checks over every experiment and paper pass with them present. And
docs/experiments.md's long-CSV case, as written, names the metrics it says. No Docker: the bundles are constructed,
as pirex's own tests construct them (pirex/reproduce/test_reproduce.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pirex.analysis import generic
from pirex.core import experiment
from pirex.core.paths import REPO
from tests.checkout import committed_copy, git

# The user's experiment: memcpy throughput at two buffer sizes, one step writing a row per size. Data only: it is
# never run here (no Docker), so its image is base's name, which the loader takes as any image name.
MEMCOPY = """\
schema: 1
id: memcopy
title: memcpy throughput at two buffer sizes (tests/test_bring_your_own.py)
source: the fixture paper memcopy23 (analysis/memcopy23)
image: base
command: [memcopy, --sizes, "{sizes}", --rounds, "{rounds}", --out, "{output}/memcopy.csv"]
parameters:
  sizes: {type: list, of: int, min: 1, default: "32768,33554432", doc: buffer sizes in bytes}
  rounds: {type: int, min: 1, doc: copies per size}
profiles:
  quick: {repetitions: 3, rounds: 10}
  paper: {repetitions: 10, rounds: 1000}
variants: [native, docker]
outputs:
  - {path: memcopy.csv, format: csv, keys: [size_bytes]}
"""

# The user's paper: its published table, and two claims on memcopy that derive their values from it.
TABLE = """\
# memcopy23 (a fixture paper, tests/test_bring_your_own.py), Table 1: memcpy throughput in MB/s
size_bytes,variant,mb_per_s
32768,native,20000
32768,docker,19800
33554432,native,10000
33554432,docker,9900
"""

CLAIMS = """\
paper: memcopy23
title: A fixture paper on memcpy throughput, native and in Docker (tests/test_bring_your_own.py)
claims:
  - id: docker-close-at-32mib
    where: Table 1, 32 MiB
    says: Docker's memcpy throughput is within 3 % of native's at 32 MiB
    scope: any Linux machine with Docker; a buffer past the caches
    experiment: memcopy
    variants: [native, docker]
    ratio: {metric: "mb_per_s[size_bytes=33554432]", numerator: docker, denominator: native}
    published: {table: table1.csv, numerator: {size_bytes: 33554432, variant: docker},
                denominator: {size_bytes: 33554432, variant: native}, column: mb_per_s}
    rule: equivalent
    margin: 0.03
  - id: large-buffer-slower
    where: Table 1, native
    says: natively, copying a 32 MiB buffer runs at a lower throughput than a 32 KiB one
    scope: any machine whose caches hold 32 KiB but not 32 MiB
    experiment: memcopy
    variants: [native]
    ratio: {numerator: {metric: "mb_per_s[size_bytes=33554432]", variant: native},
            denominator: {metric: "mb_per_s[size_bytes=32768]", variant: native}}
    published: {table: table1.csv, numerator: {size_bytes: 33554432, variant: native},
                denominator: {size_bytes: 32768, variant: native}, column: mb_per_s}
    rule: direction
"""

ADDED = {
    "experiments/memcopy/experiment.yaml": MEMCOPY,
    "analysis/memcopy23/table1.csv": TABLE,
    "analysis/memcopy23/claims.yaml": CLAIMS,
}
REPS = 6

# Run by the copy's pirex (REPO is the copy): a complete bundle of the quick profile on this machine, a memcopy.csv
# per step. docker/native 0.999 at both sizes, 32 MiB at half the throughput of 32 KiB; a drift over repetitions
# that both variants share, and noise of 0.01 %.
MAKE_BUNDLE = f"""
import json
import numpy as np
import pirex
from pirex.core import experiment, machine
from pirex.core.bundle import Bundle
from pirex.core.paths import REPO, git_version

results = REPO / "results"
variants = ["native", "docker"]
steps = [(v, r) for r in range({REPS}) for v in variants]
params = {{**experiment.load("memcopy").resolve("quick"), "repetitions": {REPS}}}
tool = {{"version": "t", "commit": git_version()[1]}}
b = Bundle.create(results, "memcopy", "quick", params, variants, steps, {{}}, tool)
record = machine.record(results, docker=False)
b.write_machine(before=record, after=record)
rng = np.random.default_rng(54)
for v, r in steps:
    with b.step(v, r) as d:
        rows = ["size_bytes,mb_per_s"]
        for size, base in ((32768, 20000.0), (33554432, 10000.0)):
            x = base * (1 + 0.01 * r) * (0.999 if v == "docker" else 1) * (1 + rng.normal(0, 1e-4))
            rows.append(f"{{size}},{{x:.3f}}")
        (d / "memcopy.csv").write_text("\\n".join(rows) + "\\n")
        (d / "step.json").write_text(json.dumps({{"seconds": 2.0}}))
assert b.finish() == "complete"
print(json.dumps({{"bundle": str(b.path), "pirex": pirex.__file__}}))
"""


def pirex_in(tree: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A Python command with the copy's pirex first on the path (its REPO: the copy), in the copy."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)


def ok(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


@pytest.fixture(scope="module")
def pirex_untouched():
    """What `git status` says of this checkout's pirex/ before the module's tests: theirs must leave it so."""
    return git(REPO, "status", "--porcelain", "--untracked-files=all", "pirex/")


@pytest.fixture(scope="module")
def tree(tmp_path_factory, pirex_untouched) -> Path:
    """The tracked files of this checkout as they are now, committed in a repository of their own; then the user's
    experiment and paper added (left uncommitted, so that `git status` names them), and a bundle of memcopy made by
    the copy's pirex."""
    d = committed_copy(tmp_path_factory.mktemp("byo") / "checkout")
    for rel, text in ADDED.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    made = json.loads(ok(pirex_in(d, "-c", MAKE_BUNDLE)).splitlines()[-1])
    assert Path(made["pirex"]).is_relative_to(d), made  # the copy's pirex made it, not this checkout's
    assert Path(made["bundle"]).parent == d / "results" / "memcopy"
    return d


def test_pirex_table_prints_a_metric_per_size(tree):
    out = ok(pirex_in(tree, "-m", "pirex", "table", "memcopy", timeout=60))
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:3]) for line in out.splitlines() if "|" in line}
    for size, native in (("32768", 2.05e4), ("33554432", 1.025e4)):  # the mean over 6 repetitions of a 1 % drift
        metric = f"mb_per_s[size_bytes={size}]"
        assert (metric, "native", str(REPS)) in rows and (metric, "docker", str(REPS)) in rows, out
        (mean,) = [line.split("|")[4] for line in out.splitlines() if f"| {metric} | native |" in line]
        assert float(mean.replace(",", "")) == pytest.approx(native, rel=1e-3)
    assert not any(r[0] in ("size_bytes", "mb_per_s") for r in rows), "rows of two sizes averaged together"
    assert (tree / "results" / "tables" / "memcopy" / "summary.csv").is_file()


def test_pirex_reproduce_judges_both_claims_on_the_bundles_there_are(tree):
    results = tree / "results"
    assert "memcopy23" in ok(pirex_in(tree, "-m", "pirex", "reproduce", "--help")).split("Papers here")[1]
    out = ok(pirex_in(tree, "-m", "pirex", "reproduce", "memcopy23", "--reuse-only", "--results-dir", str(results)))
    assert "done: 1 bundle(s) of this commit and machine" in out, out
    for claim, published, ours in (
        ("docker-close-at-32mib", "0.990", "0.9990"),
        ("large-buffer-slower", "0.500", "0.5000"),
    ):
        assert re.search(rf"^holds +memcopy23:{claim} +paper +{published} +ours {ours} \[", out, re.MULTILINE), out
    (folder,) = results.glob("reproduce/memcopy23-*/")
    state = json.loads((folder / "state.json").read_text())
    assert state["verdicts"] == {"memcopy23:docker-close-at-32mib": "holds", "memcopy23:large-buffer-slower": "holds"}
    report = (folder / "REPORT.md").read_text()
    assert "Verdicts: 2 holds, 0 differs, 0 inconclusive, 0 not run here" in report
    (bundle,) = (results / "memcopy").glob("*/manifest.json")
    assert f"Run: memcopy@quick, bundles {bundle.parent.name}." in report
    # only its own paper's deviations (none declared) and what its own claims need: not ICPE'18's Table 5 cases
    assert "- none declared: the papers judged have no deviations.yaml" in report and "Java 17" not in report
    assert "of moobench[fluctuation]" not in report


def test_nothing_under_pirex_changed(tree, pirex_untouched):
    """The user's files are the copy's only change (results/ is ignored), and this checkout's pirex/ is as it was."""
    changed = {line[3:] for line in git(tree, "status", "--porcelain", "--untracked-files=all").splitlines()}
    assert changed == set(ADDED)
    assert git(REPO, "status", "--porcelain", "--untracked-files=all", "pirex/") == pirex_untouched


# The unit suite's checks that go over every experiment and every paper (experiment.available(), claims.available()).
GENERIC = [
    "pirex/core/test_experiment.py::test_every_committed_experiment_loads",
    "pirex/core/test_params.py::test_every_parameter_of_the_committed_experiments_is_declared_with_a_type",
    "pirex/core/test_schema.py::test_every_shipped_file_and_a_written_manifest_pass_their_schema",
    "pirex/analysis/test_modules.py",
    "pirex/test_architecture.py::test_no_experiment_is_named_in_the_cli_the_runner_or_reproduce",
    "pirex/reproduce/test_claims.py",
    "pirex/reproduce/test_scope.py",
    "pirex/reproduce/test_reproduce.py::test_every_claims_file_loads_and_its_values_come_from_the_published_tables",
    "pirex/reproduce/test_reproduce.py::test_a_reproduction_judges_the_bundles_there_are_and_writes_its_report",
    "pirex/artifact/test_citation.py",
    "pirex/artifact/test_pack.py::test_a_bad_paper_gives_reproduces_error_and_writes_nothing",
]


def test_the_unit_suites_checks_over_every_paper_pass_with_the_users_present(tree):
    r = pirex_in(tree, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "not docker", *GENERIC, timeout=300)
    out = ok(r)
    assert re.search(r"^=+ \d+ passed in ", out, re.MULTILINE), out[-2000:]
    # they did go over the user's: the experiment's analysis module, the claims' scopes listed
    assert "test_every_experiment_loads_its_analysis_module[memcopy] PASSED" in out
    assert "memcopy23:docker-close-at-32mib | any Linux machine" in out


def test_the_long_csv_case_of_docs_experiments_md_as_written(tmp_path):
    """docs/experiments.md states the case in a sentence, not a fenced example: an output `{path: ..., format: csv,
    keys: [...]}` with rows `HEADER` gives the metrics it names. Its output is put in an experiment.yaml as written
    (the loader takes it), a CSV of that header with a row per size the names give, and the names must be theirs."""
    text = " ".join((REPO / "docs" / "experiments.md").read_text().split())
    m = re.search(r"`(\{path: [^`]*keys: [^`]*\})` with rows `([^`]+)` gives `([^`]+)` and `([^`]+)`", text)
    assert m, "docs/experiments.md no longer states the long-CSV case as `{path, format: csv, keys}` with rows"
    output, header, names = yaml.safe_load(m.group(1)), m.group(2).split(","), [m.group(3), m.group(4)]
    assert output["format"] == "csv" and set(output["keys"]) <= set(header)
    doc = yaml.safe_load(MEMCOPY) | {"outputs": [output]}
    (tmp_path / "memcopy").mkdir()
    exp = experiment.parse(doc, tmp_path / "memcopy" / "experiment.yaml")
    assert exp.outputs == (output,)
    pattern = re.compile(r"^(\w+)\[(\w+)=([^\]]+)\]$")
    parsed = [pattern.match(n).groups() for n in names]
    assert {(v, k) for v, k, _ in parsed} == {(c, k) for c in header for k in output["keys"] if c != k}
    rows = [{key: size, value: str(1000 * (i + 1))} for i, (value, key, size) in enumerate(parsed)]
    csv = tmp_path / output["path"]
    csv.write_text(",".join(header) + "\n" + "".join(",".join(r[c] for c in header) + "\n" for r in rows))
    assert generic._csv_means(csv, output["keys"]) == {n: 1000.0 * (i + 1) for i, n in enumerate(names)}
