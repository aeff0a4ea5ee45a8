"""Claims across devices and storage devices, judged on bundles of several machines (--bundles): the devices told
apart by their records, a device that differs named, a Pi against a server per size, a storage effect with its
direction, and a claim on one machine judged on each device (a column per device in the report)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import html5lib
import numpy as np
import pytest

from pirex.analysis.test_fork import DATA as FORK_DATA
from pirex.analysis.test_fork import PI, SERVER, make_bundle
from pirex.core import experiment, fleetrun
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.reproduce import reproduction, sources
from pirex.reproduce.state import ReproductionState
from pirex.reproduce.test_reproduce import BENCHMARKS
from pirex.reproduce.verdict import DIFFERS, HOLDS, NOT_RUN


@pytest.fixture(autouse=True)
def _quick_calibration(monkeypatch):
    monkeypatch.setattr(reproduction.plan, "calibration_score", lambda *a, **k: 1e7)


def record(name: str, kind: str | None = "virtio", work_dir: str = "/srv") -> dict:
    """A machine record as a fleet host writes it: its inventory name tells the device."""
    return {
        "hostname": name,
        "device": {"name": name, "labels": {}},
        "cpu": {"model": "Cortex-A72"},
        "pi": {"model": "Raspberry Pi 4 Model B Rev 1.4"},
        "storage": {"kind": kind, "fstype": "ext4" if kind else "tmpfs", "work_dir": work_dir},
        "capabilities": {},
    }


def jmh_bundle(
    results: Path,
    rec: dict,
    speed: float = 1.0,
    b5: float = 1.0,
    reps: int = 6,
    seed: int = 0,
    stop: int | None = None,
    **run,
):
    """A complete jmh bundle of native runs on the machine `rec`: every benchmark at `speed` x a fixed
    throughput (B5 also x b5), 1 % apart per repetition and 0.1 % noise; partial after `stop` steps if given."""
    params = {**experiment.load("jmh").resolve("quick"), "repetitions": reps, "sink_port": 40123}
    steps = [("native", r) for r in range(reps)]
    b = Bundle.create(results, "jmh", "quick", params, ["native"], steps, {}, {"version": "t", "commit": "c"})
    b.write_run_info(run)
    b.write_machine(before=rec, after=rec)
    rng = np.random.default_rng(seed)
    for v, r in steps[:stop]:
        base = 1e7 * speed * (1 + 0.01 * r)
        with b.step(v, r) as d:
            raw = {
                n: [[base * f * (b5 if n.startswith("b5") else 1) * (1 + rng.normal(0, 0.001)) for _ in range(3)]]
                for n, f in BENCHMARKS
            }
            doc = [
                {"benchmark": f"io.github.pirexbench.jmh.X.{n}", "primaryMetric": {"rawData": x, "scoreUnit": "ops/s"}}
                for n, x in raw.items()
            ]
            (d / "jmh.json").write_text(json.dumps(doc))
    b.finish()
    return b.path


def judge(tmp_path: Path, papers: list[str], given: list[Path]) -> tuple[dict, str, str]:
    out = reproduction.reproduce(
        reproduction.Options(papers, results_dir=tmp_path / "results", bundles=given),
        run_one=None,
        echo=lambda *_: None,
    )
    return ReproductionState.read(out).verdicts, (out / "REPORT.md").read_text(), (out / "report.html").read_text()


def test_identical_devices_agree_and_a_slow_one_is_named(tmp_path):
    given = [jmh_bundle(tmp_path / h, record(h), seed=i) for i, h in enumerate(("pi-a", "pi-b"))]
    verdicts, report, html = judge(tmp_path, ["icpe18"], given)
    assert verdicts["icpe18:t1-devices-agree"] == HOLDS
    assert "device level holds" in report  # the variance decomposed with the device on top
    # a claim on one machine: one verdict per device, a column per device in the report
    assert verdicts["icpe18:t1-b3-not-inlined@pi-a (Raspberry Pi 4 Model B Rev 1.4)"] == HOLDS
    assert "| Claim | Published | pi-a (Raspberry Pi 4 Model B Rev 1.4) | pi-b (" in report
    assert '<table class="verdicts per-device">' in html
    html5lib.HTMLParser(strict=True).parse(html)  # the per-device table keeps the page valid

    given.append(jmh_bundle(tmp_path / "pi-c", record("pi-c"), speed=0.7, seed=2))  # a throttled third
    verdicts, report, _ = judge(tmp_path, ["icpe18"], given)
    assert verdicts["icpe18:t1-devices-agree"] == DIFFERS
    line = next(ln for ln in report.splitlines() if ln.startswith("| icpe18:t1-devices-agree"))
    assert (
        "pi-c (Raspberry Pi 4 Model B Rev 1.4) differs" in line
        and "pi-a (Raspberry Pi 4 Model B Rev 1.4) differs" not in line
    )


def test_one_device_is_not_enough_for_a_claim_across_devices(tmp_path):
    verdicts, _, _ = judge(tmp_path, ["icpe18"], [jmh_bundle(tmp_path / "a", record("pi-a"))])
    assert verdicts["icpe18:t1-devices-agree"] == NOT_RUN


def test_two_bundles_of_one_device_are_one_device_whatever_their_folders(tmp_path):
    a = jmh_bundle(tmp_path / "x", record("pi-a"), seed=1)
    b = jmh_bundle(tmp_path / "y", record("pi-a"), seed=2)
    verdicts, _, _ = judge(tmp_path, ["icpe18"], [a, b])
    assert verdicts["icpe18:t1-devices-agree"] == NOT_RUN  # one device, however many folders
    assert verdicts["icpe18:t1-b3-not-inlined"] == HOLDS  # and judged as one machine, no device column


def test_a_storage_effect_is_judged_with_its_direction(tmp_path):
    fast = jmh_bundle(tmp_path / "t", record("pi-a", None, "/mnt/ram"), b5=2.0, seed=1, work_dir="/mnt/ram")
    slow = jmh_bundle(tmp_path / "d", record("pi-a", "usb", "/mnt/usb"), seed=2, work_dir="/mnt/usb")
    verdicts, report, _ = judge(tmp_path, ["icpe18"], [fast, slow])
    assert verdicts["icpe18:t1-b5-storage"] == HOLDS
    line = next(ln for ln in report.splitlines() if ln.startswith("| icpe18:t1-b5-storage"))
    assert (
        "higher by 100 %" in line and "RAM drive (tmpfs) at /mnt/ram over usb ext4 at /mnt/usb" in line
    )  # B5 twice the throughput on the RAM drive
    assert verdicts["icpe18:t1-b1-docker"] == NOT_RUN  # a storage's runs never answer the other claims


def _mean(source: str, mode: str, size: int, counter: str = "cpu-clock") -> float:
    with open(FORK_DATA / source / mode / "fork.csv") as f:
        xs = [float(r[counter]) for r in csv.DictReader(f) if r["size_mb"] == str(size)]
    return sum(xs) / len(xs)


@pytest.mark.parametrize("server", ["server", "vm-x86_64"])
def test_a_pi_against_a_server_per_size(tmp_path, server):
    """The thesis: with migration the server is faster below 32 MB (Pi/server > 1), the Pi beyond. Each step of a
    sample bundle holds the same files, so every size's ratio is a point: the ratio of the CSVs' means."""
    vm = {**SERVER, "hostname": "vm", "cpu": {"model": "Intel Xeon"}}
    pi = make_bundle(tmp_path / "p", "pi4", PI, variants=("native",), reps=5)
    srv = make_bundle(tmp_path / "s", server, SERVER if server == "server" else vm, variants=("native",), reps=5)
    verdicts, report, _ = judge(tmp_path, ["fork24"], [pi, srv])
    want = {s: _mean("pi4", "single-migrate", s) / _mean(server, "single-migrate", s) for s in (1, 8, 64)}
    expected = [want[1] > 1, want[8] > 1, want[64] < 1]  # the thesis's side of 1 at each size
    line = next(ln for ln in report.splitlines() if ln.startswith("| fork24:pi-vs-server"))
    for s in (1, 8, 64):
        assert f"{s}: {want[s]:.3g} " in line
    assert verdicts["fork24:pi-vs-server"] == (HOLDS if all(expected) else DIFFERS)
    if server == "server":  # synthetic: the server at 0.6 of the Pi everywhere: right below 32 MB, wrong beyond
        assert expected == [True, True, False]


def test_given_paths_expand_to_bundles_and_a_path_without_one_is_an_error(tmp_path):
    a = jmh_bundle(tmp_path / "r" / "jmh", record("pi-a"))
    assert sources.given_bundles([tmp_path / "r"]) == [a]
    assert sources.given_bundles([a, tmp_path / "r"]) == [a]  # each once
    unpacked = tmp_path / "r" / ".artifact-1-2-x" / "unpacked" / "icpe18-artifact" / "reproduction" / "bundles"
    shutil.copytree(a, unpacked / "jmh" / a.name)  # a rerun's scratch folder: the artifact's bundles, not results
    assert sources.given_bundles([tmp_path / "r"]) == [a]
    (tmp_path / "empty").mkdir()
    with pytest.raises(PirexError, match="no bundle there"):
        sources.given_bundles([tmp_path / "empty"])
    with pytest.raises(PirexError, match="leave out --inventory and --storage"):
        reproduction.reproduce(
            reproduction.Options(["icpe18"], results_dir=tmp_path, bundles=[a], storages=[tmp_path]),
            run_one=None,
            echo=lambda *_: None,
        )


def test_storages_must_be_two_writable_directories(tmp_path):
    opts = reproduction.Options(["icpe18"], results_dir=tmp_path, storages=[tmp_path / "nope"])
    with pytest.raises(PirexError, match="not a directory"):
        reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)
    opts.storages = [tmp_path, tmp_path]
    with pytest.raises(PirexError, match="the same directory twice"):
        reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)
    opts.storages = [tmp_path]  # "give two": one is refused, not run with nothing to compare (issue 51)
    with pytest.raises(PirexError, match="one storage device; give two"):
        reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)


def test_inventory_runs_each_need_on_the_fleet_names_a_failed_device_and_resumes_the_same_fleet_run(
    tmp_path, monkeypatch
):
    """The fleet itself (Ansible, ssh) is tests/test_fleet.py's; here what reproduce does with its outcome: a
    host that failed is named and the claims are judged on the others, and a resumed reproduction takes up the
    fleet run it started instead of starting another."""
    from pirex import fleet

    hosts = {h: {"address": h, "user": None, "labels": {}} for h in ("pi-a", "pi-b", "pi-c")}
    monkeypatch.setattr(fleet, "inventory_hosts", lambda inventory: hosts)
    calls = []

    def fake_run(req, say, resume=None):
        calls.append((req, resume))
        d = Path(resume) if resume else tmp_path / "results" / "jmh" / f"fleet-{len(calls)}"
        made = {h: jmh_bundle(d / "src" / h, record(h), seed=i) for i, h in enumerate(("pi-a", "pi-b"))}
        out = fleet.Outcome(d, req.experiment)
        out.hosts = {h: {"state": fleetrun.VERIFIED} for h in made}
        out.hosts["pi-c"] = {"state": fleetrun.UNREACHABLE, "why": "unreachable at 'run the experiment'"}
        monkeypatch.setattr(fleet.Outcome, "bundles", property(lambda self: list(made.values())))
        return out

    monkeypatch.setattr(fleet, "run", fake_run)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all: {}\n")
    opts = reproduction.Options(["icpe18"], results_dir=tmp_path / "results", inventory=inventory)
    opts.experiments = ["jmh"]
    out = reproduction.reproduce(opts, run_one=None, echo=lambda *_: None)
    [(req, resume)] = calls
    assert resume is None and req.variants == "native,docker" and "repetitions=5" in req.sets
    state = ReproductionState.read(out)
    assert state.hosts_failed == {"jmh@quick": {"pi-c": "unreachable at 'run the experiment'"}}
    report = (out / "REPORT.md").read_text()
    assert "device pi-c failed or was unreachable" in report
    assert state.verdicts["icpe18:t1-b1-docker@pi-c (failed)"] == NOT_RUN  # its column says why
    assert state.verdicts["icpe18:t1-devices-agree"] == HOLDS  # pi-a and pi-b: two devices, as it needs

    state.bundles = {}  # as if killed before the fleet run ended: resumed, the same fleet run goes on
    state.write(out)
    reproduction.reproduce(reproduction.Options([], resume=out), run_one=None, echo=lambda *_: None)
    assert calls[1][1] == Path(state.fleets["jmh@quick"])


def test_the_devices_table_and_the_verdicts_name_the_same_devices(tmp_path):
    from pirex.analysis import devices, jmh
    from pirex.reproduce import spans

    given = [jmh_bundle(tmp_path / h, record(h), seed=i) for i, h in enumerate(("pi-a", "pi-b", "pi-c"))]
    given.append(jmh_bundle(tmp_path / "again", record("pi-b"), seed=9))  # a second bundle of pi-b
    table = devices.table(jmh.run_values(given))
    assert table.columns[2:] == [g.name for g in spans.groups(given, "devices")]
    assert [len(g.bundles) for g in spans.groups(given, "devices")] == [1, 2, 1]


def one_byte(f: Path, old: str, new: str) -> None:
    """Change one character of a file in place, its size unchanged: only its sha256 can tell."""
    text = f.read_text()
    assert len(old) == len(new) == 1 and text.count(old) == 1
    f.write_text(text.replace(old, new))


def test_a_bundle_that_fails_verification_is_left_out_named_and_the_rest_judged(tmp_path):
    given = [jmh_bundle(tmp_path / h, record(h), seed=i, seed_of_order=7) for i, h in enumerate(("pi-a", "pi-b"))]
    slow = jmh_bundle(tmp_path / "pi-c", record("pi-c"), speed=0.7, seed=2, seed_of_order=7)  # it would differ
    one_byte(slow / "run.json", "7", "8")
    verdicts, report, html = judge(tmp_path, ["icpe18"], [*given, slow])
    assert verdicts["icpe18:t1-devices-agree"] == HOLDS  # pi-a and pi-b only: nothing read from pi-c
    assert not any("pi-c" in k for k in verdicts)  # no column of its own either
    section = report[report.index("## Bundles left out") : report.index("## Verdicts")]
    assert f"- `{slow}`: {slow / 'run.json'}: changed: its sha256 differs from the manifest's" in section
    assert f"`pirex verify {slow}`" in section and str(given[0]) not in section
    assert "<h2>Bundles left out</h2>" in html and str(slow / "run.json") in html
    html5lib.HTMLParser(strict=True).parse(html)
    _, clean, page = judge(tmp_path, ["icpe18"], given)
    assert "Bundles left out" not in clean and "Bundles left out" not in page  # only when some were


def test_pirex_reproduce_exits_1_after_writing_the_report_and_pirex_table_refuses(tmp_path):
    from pirex.test_inputs import _pirex

    good = jmh_bundle(tmp_path / "pi-a", record("pi-a"), seed_of_order=7)
    bad = jmh_bundle(tmp_path / "pi-b", record("pi-b"), seed=1, seed_of_order=7)
    one_byte(bad / "run.json", "7", "8")
    results = tmp_path / "results"
    code, _, err = _pirex(
        "reproduce", "icpe18", "--bundles", str(good), "--bundles", str(bad), "--results-dir", str(results)
    )
    assert code == 1 and "1 bundle(s) failed verification and were left out" in err and str(bad / "run.json") in err
    (out,) = (results / "reproduce").iterdir()
    assert "## Bundles left out" in (out / "REPORT.md").read_text()  # the report is there, judged from the rest
    code, _, _ = _pirex("reproduce", "icpe18", "--bundles", str(good), "--results-dir", str(tmp_path / "r2"))
    assert code == 0

    tables = tmp_path / "tables"
    code, _, err = _pirex("table", "jmh", str(good), str(bad), "--out", str(tables))
    assert code == 1 and err.count("\n") == 1 and not tables.exists()  # refused: nothing written
    assert err.startswith(f"pirex: error: {bad} fails verification, so nothing is read from it: {bad / 'run.json'}")
    assert f"`pirex verify {bad}`" in err
    for command in ("compare", "plot"):  # every command that reads bundles for a table, a comparison, a figure
        code, _, err = _pirex(command, "jmh", str(bad), "--results-dir", str(tmp_path / command))
        assert code == 1 and "fails verification" in err and not (tmp_path / command).exists()
    assert _pirex("table", "jmh", str(good), "--out", str(tables))[0] == 0


def test_a_partial_bundle_is_still_read_by_pirex_table(tmp_path):
    from pirex.test_inputs import _pirex

    partial = jmh_bundle(tmp_path / "a", record("pi-a"), stop=5)  # stopped after 5 of 6 repetitions
    assert Bundle.open(partial).status == "partial"
    code, out, err = _pirex("table", "jmh", str(partial), "--out", str(tmp_path / "t"))
    assert code == 0, err
    assert (tmp_path / "t" / "table1.csv").is_file()


def test_the_device_share_is_printed_with_its_interval_or_as_not_estimable_and_of_one_iterations_value(tmp_path):
    from pirex.analysis import jmh
    from pirex.reproduce import claims, spans

    (claim,) = [c for c in claims.load("icpe18").claims if c.id == "t1-devices-agree"]
    given = [jmh_bundle(tmp_path / h, record(h), speed=1 + 0.01 * i, seed=i) for i, h in enumerate(("a", "b", "c"))]
    found = spans.groups(given, "devices")
    values = {g.name: jmh.run_values(list(g.bundles)) for g in found}
    text = spans._decomposition(claim, found, values, "B1", "native")
    assert re.fullmatch(
        r"B1: the device level holds \d+ % \[\d+ %; \d+ %\] \(95 % interval from 3 devices, 2 degrees of freedom\) "
        r"of the variance of one iteration's value; by level: device \d+ % / repetition \d+ % / iteration \d+ %\.",
        text,
    ), text
    two = spans._decomposition(claim, found[:2], values, "B1", "native")
    assert "(from 2 devices: not estimable, a 95 % interval of the device variance would span a factor of about" in two
    assert "one repetition's variance" not in text + two  # what is decomposed is one iteration's value
