import json
import os
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pirex.core import bundle
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.machine import MachineRecord

PLAN = [
    {"variant": "native", "repetition": 0},
    {"variant": "docker", "repetition": 0, "params": {"seed": 7}},
    ("native", 1),
    ("docker", 1),
]


def make(tmp_path, **kw) -> Bundle:
    args = {
        "experiment": "jmh",
        "profile": "quick",
        "parameters": {"forks": 1},
        "variants": ["native", "docker"],
        "plan": PLAN,
        "images": {"jmh": {"reference": "ghcr.io/lab/jmh:v1", "digest": "sha256:" + "a" * 64, "platform": "x"}},
        "tool": {"version": "0.1.0", "commit": "abc123"},
    }
    args.update(kw)
    return Bundle.create(tmp_path / "results", **args)


def run_step(b: Bundle, variant: str, rep: int, text: str = "out") -> None:
    with b.step(variant, rep) as d:
        (d / "stdout").write_text(text)
        (d / "raw").mkdir()
        (d / "raw" / "result.json").write_text('{"score": 1}')


def manifest(b: Bundle) -> dict:
    return json.loads((b.path / "manifest.json").read_text())


def run_all(b: Bundle) -> Bundle:
    for s in b.remaining_steps():
        run_step(b, s["variant"], s["repetition"])
    b.write_machine(before={"model": "Pi 4"}, after={"throttled": "0x0"})
    b.finish()
    return b


def test_create_writes_a_running_manifest(tmp_path):
    b = make(tmp_path)
    assert b.path.parent == tmp_path / "results" / "jmh"
    assert sorted(p.name for p in b.path.parent.iterdir()) == [b.run_id]  # no temporary directory left
    m = manifest(b)
    assert m["schema_version"] == bundle.SCHEMA_VERSION
    assert m["status"] == "running" and m["ended"] is None and m["completed"] == [] and m["files"] == {}
    assert m["plan"][1] == {"variant": "docker", "repetition": 0, "params": {"seed": 7}}
    assert m["plan"][2] == {"variant": "native", "repetition": 1}
    assert m["tool"] == {"version": "0.1.0", "commit": "abc123"}
    assert m["started"].endswith("Z")


def test_never_overwrites_an_existing_bundle(tmp_path):
    b = make(tmp_path, run_id="20260101T000000Z-aaaaaa")
    run_all(b)
    before = (b.path / "manifest.json").read_bytes()
    with pytest.raises(PirexError, match="already exists: bundles are never overwritten"):
        make(tmp_path, run_id="20260101T000000Z-aaaaaa")
    assert (b.path / "manifest.json").read_bytes() == before
    assert bundle.verify(b.path) == []
    assert [p.name for p in b.path.parent.iterdir()] == ["20260101T000000Z-aaaaaa"]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"experiment": "../x"}, "experiment '../x' cannot name a directory"),
        ({"variants": ["native", "a/b"]}, "variant 'a/b' cannot name a directory"),
        ({"plan": [("podman", 0)]}, "variant 'podman' is not one of"),
        ({"plan": [("native", 0), ("native", 0)]}, "native repetition 0 is planned twice"),
        ({"plan": [("native", -1)]}, "repetition must be an integer >= 0"),
        ({"tool": {"version": "1"}}, "tool: expected"),
        ({"parameters": {"when": datetime.now(UTC)}}, "cannot be written as JSON"),
    ],
)
def test_bad_arguments_are_named_and_leave_nothing(tmp_path, kw, message):
    with pytest.raises(PirexError, match=message.replace("(", r"\(")):
        make(tmp_path, **kw)
    exp = tmp_path / "results" / "jmh"
    assert not exp.exists() or list(exp.iterdir()) == []


def test_step_success_moves_into_place_and_is_recorded(tmp_path):
    b = make(tmp_path)
    with b.step("native", 0) as d:
        assert d.name == f"0.tmp-{os.getpid()}" and d.parent.name == "native"
        (d / "stdout").write_text("hello")
        assert not b.step_dir("native", 0).exists()
    assert (b.step_dir("native", 0) / "stdout").read_text() == "hello"
    assert list((b.path / "native").iterdir()) == [b.step_dir("native", 0)]
    m = manifest(b)
    assert [(s["variant"], s["repetition"]) for s in m["completed"]] == [("native", 0)]
    assert m["files"]["native/0/stdout"]["size"] == 5
    with pytest.raises(PirexError, match="already completed"):
        with b.step("native", 0):
            pass
    with pytest.raises(PirexError, match="not in the plan"):
        with b.step("native", 9):
            pass


@pytest.mark.parametrize("exc", [RuntimeError("benchmark crashed"), KeyboardInterrupt()])
def test_a_failed_step_leaves_no_directory_and_a_valid_manifest(tmp_path, exc):
    b = make(tmp_path)
    run_step(b, "native", 0)
    with pytest.raises(type(exc)):
        with b.step("docker", 0) as d:
            (d / "stdout").write_text("half of it")
            raise exc
    assert list((b.path / "docker").iterdir()) == []
    m = manifest(b)  # still valid JSON
    assert [(s["variant"], s["repetition"]) for s in m["completed"]] == [("native", 0)]
    assert not any(f.startswith("docker/") for f in m["files"])
    assert [(s["variant"], s["repetition"]) for s in b.remaining_steps()] == [
        ("docker", 0),
        ("native", 1),
        ("docker", 1),
    ]
    run_step(b, "docker", 0)  # the step can be run again
    assert (b.step_dir("docker", 0) / "stdout").read_text() == "out"
    # a failure keeps what the step left to look in, apart from the steps; an interruption keeps nothing
    kept = b.path / "_failed" / "docker" / "0"
    if isinstance(exc, KeyboardInterrupt):
        assert not kept.exists() and b.kept_failed == []
    else:
        assert (kept / "stdout").read_text() == "half of it" and b.kept_failed == [kept]


def test_a_step_that_fails_again_keeps_each_failures_folder_and_the_bundle_verifies(tmp_path):
    b = make(tmp_path)
    for attempt in (1, 2):
        with pytest.raises(RuntimeError):
            with b.step("native", 0) as d:
                (d / "stderr").write_text(f"attempt {attempt}")
                raise RuntimeError("exited 3")
    assert [p.name for p in b.kept_failed] == ["0", "0.2"]
    assert b.finish("failed") == "failed"
    assert (b.path / "_failed/native/0.2/stderr").read_text() == "attempt 2"
    assert bundle.Verifier().problems(b.path) == [] and "_failed/native/0/stderr" in manifest(b)["files"]
    again = Bundle.resume(b.path)  # resume runs the step again; the failures' folders stay as they were
    run_step(again, "native", 0)
    assert (again.path / "_failed/native/0/stderr").exists() and again.remaining_steps()[0]["variant"] == "docker"


def test_finish_statuses(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    assert b.finish("failed") == "failed"
    assert manifest(b)["status"] == "failed" and manifest(b)["ended"]
    with pytest.raises(PirexError, match="not open for writing: resume it first"):
        run_step(b, "docker", 0)

    b = make(tmp_path)
    run_step(b, "native", 0)
    assert b.mark_interrupted() == "partial"

    b = make(tmp_path)
    assert run_all(b).status == "complete"
    m = manifest(b)
    assert set(m["files"]) == {
        "machine.json",
        *(f"{v}/{r}/{f}" for v in ("native", "docker") for r in (0, 1) for f in ("stdout", "raw/result.json")),
    }
    assert json.loads((b.path / "machine.json").read_text()) == {
        "before": {"model": "Pi 4"},
        "after": {"throttled": "0x0"},
    }

    with pytest.raises(ValueError, match="complete is decided by the plan"):
        make(tmp_path).finish("complete")


def test_complete_even_when_failed_is_asked_after_every_step(tmp_path):
    b = make(tmp_path)
    for s in b.remaining_steps():
        run_step(b, s["variant"], s["repetition"])
    assert b.finish("failed") == "complete"


def test_write_machine_keeps_the_other_half(tmp_path):
    b = make(tmp_path)
    b.write_machine(before={"cpu": "A72"})
    b.write_machine(after={"throttled": "0x50005"})
    assert json.loads((b.path / "machine.json").read_text()) == {
        "before": {"cpu": "A72"},
        "after": {"throttled": "0x50005"},
    }
    assert [p.name for p in b.path.iterdir() if p.name.startswith(".")] == []


def test_resume_continues_exactly_the_remaining_steps(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    run_step(b, "docker", 0)
    # a crash: one step half-written, one renamed into place but never recorded, a manifest write cut short
    (b.path / "native" / "1.tmp-99999").mkdir(parents=True)
    (b.path / "native" / "1.tmp-99999" / "stdout").write_text("half")
    (b.path / "docker" / "1").mkdir()
    (b.path / "docker" / "1" / "stdout").write_text("unrecorded")
    (b.path / ".manifest.json.x1y2").write_text("{")
    b.close()

    assert [(s["variant"], s["repetition"]) for s in Bundle.open(b.path).remaining_steps()] == [
        ("native", 1),
        ("docker", 1),
    ]
    r = Bundle.resume(b.path)
    assert r.status == "running" and len(manifest(r)["resumed"]) == 1
    assert sorted(p.name for p in (b.path / "native").iterdir()) == ["0"]
    assert sorted(p.name for p in (b.path / "docker").iterdir()) == ["0"]
    assert not (b.path / ".manifest.json.x1y2").exists()
    ran = []
    for s in r.remaining_steps():
        run_step(r, s["variant"], s["repetition"])
        ran.append((s["variant"], s["repetition"]))
    assert ran == [("native", 1), ("docker", 1)]
    assert r.finish() == "complete"
    assert (b.step_dir("native", 0) / "stdout").read_text() == "out"  # earlier steps kept
    assert bundle.verify(b.path) == []


def test_resume_after_partial_and_refusals(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    b.mark_interrupted()
    r = Bundle.resume(b.path)
    with pytest.raises(PirexError, match="being written by another pirex process"):
        Bundle.resume(b.path)
    run_all(r)
    with pytest.raises(PirexError, match="is complete: there is nothing to resume"):
        Bundle.resume(b.path)
    with pytest.raises(PirexError, match="manifest.json is missing"):
        Bundle.resume(tmp_path)


def test_verify_a_complete_bundle_is_clean(tmp_path):
    assert bundle.verify(run_all(make(tmp_path)).path) == []


def test_verify_catches_a_changed_file(tmp_path):
    b = run_all(make(tmp_path))
    f = b.step_dir("docker", 1) / "stdout"
    f.write_text("tuo")  # same size, other content
    assert bundle.verify(b.path) == [f"{f}: changed: its sha256 differs from the manifest's"]
    f.write_text("longer")
    assert bundle.verify(b.path) == [f"{f}: changed: 6 bytes, the manifest says 3"]


def test_verify_catches_a_missing_and_an_extra_file(tmp_path):
    b = run_all(make(tmp_path))
    (b.step_dir("native", 0) / "raw" / "result.json").unlink()
    (b.step_dir("native", 1) / "notes.txt").write_text("added later")
    problems = bundle.verify(b.path)
    assert len(problems) == 2
    assert "native/0/raw/result.json: listed in the manifest but missing" in problems[0]
    assert "native/1/notes.txt: not listed in the manifest" in problems[1]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda t: t[: len(t) // 2], "manifest.json is not valid JSON"),
        (lambda t: t.replace('"schema_version": 1', '"schema_version": 99'), "schema_version 99 is not 1"),
        (lambda t: "[]", "expected a JSON object"),
    ],
)
def test_verify_catches_a_damaged_manifest(tmp_path, damage, message):
    b = run_all(make(tmp_path))
    m = b.path / "manifest.json"
    m.write_text(damage(m.read_text()))
    problems = bundle.verify(b.path)
    assert len(problems) == 1 and message in problems[0]
    with pytest.raises(PirexError, match=message):
        Bundle.open(b.path)


def test_verify_missing_manifest_and_incomplete_status(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    b.write_machine(before={})
    b.finish()
    problems = bundle.verify(b.path)
    assert problems == [
        f"{b.path}: status is partial, not complete: 3 of 4 planned steps did not complete; "
        "resume the run to finish them"
    ]
    (b.path / "manifest.json").unlink()
    assert "manifest.json is missing" in bundle.verify(b.path)[0]
    assert "not a result bundle directory" in bundle.verify(tmp_path / "nothing")[0]


def test_sizes_only_see_a_file_of_another_size_and_digests_a_byte_changed_in_place(tmp_path):
    b = run_all(make(tmp_path))
    f = b.step_dir("native", 1) / "stdout"
    f.write_text("ouT")  # one byte, same size
    assert bundle.verify(b.path, digests=False) == []  # a stat per file cannot see it
    assert bundle.verify(b.path, digests=False, complete=False) == []
    assert bundle.verify(b.path, complete=False) == [f"{f}: changed: its sha256 differs from the manifest's"]
    f.write_text("o")
    assert bundle.verify(b.path, digests=False) == [f"{f}: changed: 1 bytes, the manifest says 3"]


def test_a_partial_bundle_passes_for_reading_and_a_running_one_is_checked_on_what_it_lists(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    b.write_machine(before={})
    b.finish()  # partial: 1 of 4 steps
    assert bundle.verify(b.path, complete=False) == []  # read as before; pirex verify still says it is partial
    assert "status is partial" in bundle.verify(b.path)[0]
    r = Bundle.resume(b.path)
    run_step(r, "docker", 0)
    r.write_run_info({"order": "given"})
    r.close()  # as a crash would leave it: running, run.json written but not yet listed (finish() lists it)
    assert bundle.verify(r.path, complete=False) == []
    (r.step_dir("docker", 0) / "stdout").write_text("o")  # a listed file of a completed step changed
    (found,) = bundle.verify(r.path, digests=False, complete=False)
    assert found.endswith("docker/0/stdout: changed: 1 bytes, the manifest says 3")
    assert any(
        p.endswith("run.json: not listed in the manifest (added after the run, or left by a crash)")
        for p in bundle.verify(r.path)
    )  # pirex verify: everything, as before


def test_the_verifier_hashes_a_bundle_once_per_command_and_refuses_naming_bundle_file_and_fix(tmp_path, monkeypatch):
    good, bad = run_all(make(tmp_path)), run_all(make(tmp_path))
    f = bad.step_dir("docker", 0) / "raw" / "result.json"
    f.write_text(f.read_text().replace("1", "2"))
    hashed = []
    real = bundle.sha256
    monkeypatch.setattr(bundle, "sha256", lambda p: hashed.append(p) or real(p))
    v = bundle.Verifier()
    assert v.problems(good.path, digests=False) == [] and hashed == []  # sizes: no file read
    assert v.problems(good.path) == [] and len(hashed) == len(manifest(good)["files"]) == 9  # 4 steps x 2, machine
    assert v.problems(good.path) == [] and v.problems(good.path, digests=False) == [] and len(hashed) == 9  # cached
    v.refuse([good.path, tmp_path / "not-a-bundle"])  # a folder without a manifest is no bundle: nothing to check
    with pytest.raises(PirexError) as e:
        v.refuse([good.path, bad.path])
    text = str(e.value)
    assert text.startswith(f"{bad.path} fails verification, so nothing is read from it: {f}: changed: its sha256")
    assert f"`pirex verify {bad.path}`" in text and "\n" not in text
    assert v.reason(good.path) is None and v.reason(bad.path).startswith(str(f))


def test_run_ids_sort_by_time_and_are_unique():
    t = datetime(2026, 11, 22, 6, 15, tzinfo=UTC)
    ids = [bundle.new_run_id(t + timedelta(seconds=s)) for s in (3600, 1, 0, 59, 86400 * 40)]
    assert sorted(ids) == [ids[2], ids[1], ids[3], ids[0], ids[4]]
    assert ids[2].startswith("20261122T061500Z-") and len(ids[2]) == len("20261122T061500Z-") + 6
    assert len({bundle.new_run_id(t) for _ in range(50)}) == 50
    local = datetime(2026, 11, 22, 7, 15, tzinfo=timezone(timedelta(hours=1)))
    assert bundle.new_run_id(local).startswith("20261122T061500Z-")
    with pytest.raises(ValueError, match="aware datetime"):
        bundle.new_run_id(datetime(2026, 1, 1))


def test_from_iso_reads_what_iso_writes():
    t = datetime(2026, 11, 26, 3, 18, 13, tzinfo=UTC)
    assert bundle.from_iso(bundle.iso(t)) == t
    with pytest.raises(ValueError):
        bundle.from_iso("2026-11-26 03:18:13")


def test_the_manifests_steps_images_and_files_are_properties_and_the_record_is_read_typed(tmp_path):
    b = make(tmp_path)
    run_step(b, "native", 0)
    b.write_machine(before={"hostname": "pi", "pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"}}, after={})
    b.finish()
    r, m = Bundle.open(b.path), manifest(b)
    assert (r.images, r.plan, r.completed, r.files) == (m["images"], m["plan"], m["completed"], m["files"])
    assert [(s["variant"], s["repetition"]) for s in r.completed] == [("native", 0)] and len(r.plan) == 4
    record = r.machine_before()
    assert isinstance(record, MachineRecord) and record == bundle.read_machine(b.path / bundle.MACHINE)
    assert (record.hostname, record.pi_model, record.storage) == ("pi", "Raspberry Pi 4 Model B Rev 1.4", {})
