"""What a result bundle's files hold, and the names and versions this pirex reads (pirex/core/bundle.py reads and
writes the files; no other module parses them). check_manifest checks a manifest's fields.

Layout::

    results/<experiment>/<run-id>/
      manifest.json            what was run and every file of the bundle with its sha256 (below)
      machine.json             the machine record: {"before": {...}, "after": {...}}
      <variant>/<repetition>/  one completed step: raw outputs as the benchmark wrote them, stdout, stderr
      _failed/<variant>/<repetition>[.N]/  a step that failed, as it was left (stdout, stderr, step.json with the
                               argv as run, where the runner got that far): to look in, never read as a step;
                               .N for its N-th failure (a resumed run that failed again)

manifest.json (SCHEMA_VERSION 1), keys in this order:

    schema_version  1; readers refuse any other number
    run_id          "20261122T061500Z-3fa9c1": UTC start, then 6 random hex digits; sorts by start time
    experiment      experiments/<id>, and the directory above the bundle
    profile         "quick", "paper", ...
    parameters      the resolved parameters, as the runner passed them
    variants        ["native", "docker", ...]
    design          absent (older bundles: one step at a time, in run.json's order), "interleaved", "sequential", or
                    "duet": the variants of one repetition ran at the same moment, each on its own CPUs
    images          the images used, as the runner passed them (reference, digest, platform)
    tool            {"version": ..., "commit": ...}: the pirex that wrote the bundle
    started         UTC ISO 8601 ("2026-11-22T06:15:00Z"), when the bundle was created
    ended           UTC ISO 8601 of the last finish(), null while running
    resumed         UTC times at which the run was resumed, oldest first
    status          running | complete | partial | failed
    plan            the ordered steps: [{"variant", "repetition", "params"?, "cpus"?}, ...]; "params" only if a step
                    has its own, "cpus" (a CPU list such as "0" or "2-3") only if a step is pinned on its own (a duet)
    completed       the steps done, in the order they completed: [{"variant", "repetition", "started", "ended",
                    "cpus"?, "start"?, "end"?}, ...]; started/ended: UTC ISO 8601 of the step's folder (to the
                    second); cpus: the CPUs it ran on; start/end: seconds since the epoch (UTC, to the microsecond)
                    when its command started and ended, for steps that ran at the same time as others (a duet)
    files           {"<relative path>": {"sha256": <hex>, "size": <bytes>}} for every file except manifest.json

run.json (RUN_SCHEMA_VERSION 1), how the runner planned the run, written once before the first step and read again
on resume, by reuse (pirex reproduce) and by the analysis (read it with Bundle.run_info(), a RunInfo):

    schema_version  1 (a bundle written before the field existed has none: read as 1, the same layout)
    order, seed     how the steps were ordered (random interleaving and its seed)
    matrix          null, or {"name", "runs_as", "cases", "notes": {case: [why]}, "same_as_base": [case],
                    "fallback"?}: the matrix run (a view) and the facts the runner learned about its cases
    cpus            the --cpus list every step was pinned to, or null
    work_dir        absent, or the host directory every variant's /work was bound to (--work-dir: a storage device)
    trace           null, or {"enabled", "tracer", "functions", "output"} / {"enabled": false, "reason"}
    variants        {name: how it ran}; jvm: the JVM that ran; soak; preflight; requested; skipped_variants
    design          absent in older bundles, else as the manifest's; duet: absent, or a duet's CPU halves
                    {"halves": [cpu list, cpu list], "swapped": "every repetition", "unused_cpus", "shared_cores"}
    deployment      absent, or the command that wrote the bundle: "compose" (`pirex compose`, one host) or "swarm"
                    (`pirex swarm`); then its one step is <kind>/0/, the driver's outputs, and the records of the
                    run's roles sit at its top (runner/deployment_bundle.py)
    extends         absent, or "<plan>@<repetitions before>": a later bundle of one plan (a budget's round, a
                    precision second stage), whose size was chosen from the data: never reused as a plain run

<variant>/<repetition>/step.json (STEP_SCHEMA_VERSION 1), one step as it ran (Step.info()):

    schema_version  1 (absent in older bundles: read as 1)
    argv            the command line the step ran; returncode; seconds: its wall time

<variant>/<repetition>/stdout.times: when each line of the step's stdout.txt arrived, one line each, seconds since the
epoch (UTC, to the millisecond); absent in older bundles (Step.stdout_lines()).
"""

from __future__ import annotations

import re
from pathlib import Path

from pirex.core import schema
from pirex.core.errors import PirexError

SCHEMA_VERSION = 1
RUN_SCHEMA_VERSION = 1  # run.json
STEP_SCHEMA_VERSION = 1  # <variant>/<repetition>/step.json
MANIFEST = "manifest.json"
MACHINE = "machine.json"
RUN_INFO = "run.json"
STEP_INFO = "step.json"
STDOUT, STDOUT_TIMES = "stdout.txt", "stdout.times"

RUNNING, COMPLETE, PARTIAL, FAILED = "running", "complete", "partial", "failed"
STATUSES = (RUNNING, COMPLETE, PARTIAL, FAILED)

FAILED_STEPS = "_failed"  # no variant name begins with "_" (NAME): a failed step's folder, kept to look in
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # experiment and variant names become directory names
TMP_MARK = ".tmp-"  # <repetition>.tmp-<pid>: a step being written
DESIGNS = ("interleaved", "sequential", "duet")  # the manifest's design; duet: a repetition's steps at once
DUET = "duet"
CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
RECORDED = ("cpus", "start", "end")  # what Bundle.record adds to a completed step


def check_manifest(f: Path, doc: object) -> dict:
    """manifest.json's decoded JSON (`f`: the file, for messages) checked for what every reader relies on: the
    schema version this pirex reads, every key Bundle.create writes, and their types (manifest.schema.json), and
    that every step names one of the variants; PirexError otherwise."""
    problem = schema.first_problem("manifest", doc)
    if problem is None:
        stray = [k for k in ("plan", "completed") if any(s["variant"] not in doc["variants"] for s in doc[k])]
        if not stray:
            return doc
        problem = schema.Problem((stray[0],), schema.words("manifest", stray[0]), doc[stray[0]])
    raise PirexError(_say(f, doc, problem))


def _say(f: Path, doc: object, problem: schema.Problem) -> str:
    """A manifest's problem in one line, with what to do."""
    key = problem.at[0] if problem.at else problem.missing
    if not key:
        return f"{f}: expected a JSON object, found {type(doc).__name__}: the bundle is damaged"
    if key == "schema_version":
        return (
            f"{f}: schema_version {doc.get('schema_version')!r} is not {SCHEMA_VERSION}, the one this pirex reads: "
            "use the pirex version that wrote it"
        )
    if problem.missing:
        missing = [k for k in schema.load("manifest")["required"] if k not in doc]  # every key Bundle.create writes
        return f"{f}: missing {', '.join(missing)}: the bundle is damaged"
    if key == "status":
        return f"{f}: status {doc['status']!r} is not one of {', '.join(STATUSES)}"
    return (
        f"{f}: {key}: expected {problem.expected}, found {short(repr(doc.get(key)))}: the bundle is "
        "damaged; restore it from a copy"
    )


def short(e: object, n: int = 120) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= n else text[: n - 3] + "..."
