"""The fleet's Python side without hosts: the inventory read through Ansible's own reader, the
playbook's command line and variables, each host's state from what the callback recorded, the
host's choice between running, resuming and taking its bundle, and bundles of several devices
merged (colliding run ids and hostnames) into one table with a column per device. The hosts
themselves are in tests/test_fleet.py."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pirex import fleet
from pirex.analysis import devices, jmh, modules
from pirex.analysis.tidy import device_of
from pirex.core import bundle as B
from pirex.core import experiment, fleetrun, machine
from pirex.core.errors import PirexError
from pirex.core.paths import REPO

RUN_ID = "20261124T090000Z-c0ffee"  # the same run id on every host: it happens, and must not matter
CPU = {"model": "Cortex-A53", "cores": 4}


def jmh_bundle(root: Path, host: str, hostname: str, values: list[float], named: bool = True) -> Path:
    """A complete jmh bundle as host `host` would write it, moved to <root>/<host> as a fleet run holds it."""
    b = B.Bundle.create(
        root / "host" / host,
        "jmh",
        "quick",
        experiment.load("jmh").resolve("quick"),
        ["docker"],
        [("docker", r) for r in range(len(values))],
        {},
        {"version": "0", "commit": "c"},
        run_id=RUN_ID,
    )
    for r, v in enumerate(values):
        result = {
            "benchmark": "x.RecursionBenchmark.b1_default",
            "primaryMetric": {"rawData": [[v, v]], "scoreUnit": "ops/s"},
        }
        with b.step("docker", r) as d:
            (d / "jmh.json").write_text(json.dumps([result]))
    record = {"hostname": hostname, "cpu": CPU, "device": {"name": host, "labels": {}} if named else None}
    b.write_machine(before=record, after=record)
    assert b.finish() == B.COMPLETE
    out = root / host
    b.path.rename(out)
    return out


def test_the_device_is_named_by_its_inventory_name_from_the_environment():
    assert machine.device_identity({}) is None
    got = machine.device_identity({"PIREX_DEVICE": "pi-a", "PIREX_DEVICE_LABELS": '{"storage": "usb"}'})
    assert got == {"name": "pi-a", "labels": {"storage": "usb"}}
    with pytest.raises(ValueError):
        machine.device_identity({"PIREX_DEVICE": "pi-a", "PIREX_DEVICE_LABELS": "[1]"})
    pi = {"pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"}, "hostname": "raspberrypi"}
    assert device_of(pi) == "Raspberry Pi 3 Model B Rev 1.2 (raspberrypi)"
    # two Pis of one hostname stay two devices: their boards (the record's serial digest) tell them apart
    a = {**pi, "pi": {**pi["pi"], "serial_hmac_sha256": "aa" * 32}, "machine_id": "cc" * 16}
    b = {**pi, "pi": {**pi["pi"], "serial_hmac_sha256": "bb" * 32}, "machine_id": "cc" * 16}
    assert device_of(a) == "Raspberry Pi 3 Model B Rev 1.2 (raspberrypi, board aaaaaaaa)" != device_of(b)
    assert device_of({"cpu": CPU, "hostname": "srv", "machine_id": "0123abcd" * 4}) == "Cortex-A53 (srv, id 0123abcd)"
    assert device_of({**pi, "device": {"name": "pi-a"}}) == "pi-a (Raspberry Pi 3 Model B Rev 1.2, host raspberrypi)"
    assert device_of({"cpu": CPU, "hostname": "srv", "device": {"name": "srv"}}) == "srv (Cortex-A53)"


def test_bundles_with_colliding_run_ids_and_hostnames_merge_one_column_per_device(tmp_path):
    paths = [
        jmh_bundle(tmp_path, h, "raspberrypi", [v * k for k in (1.0, 1.1, 0.9, 1.05, 0.95)])
        for h, v in (("pi-a", 100.0), ("pi-b", 200.0), ("pi-c", 300.0))
    ]
    (tmp_path / fleetrun.MANIFEST).write_text("{}")
    assert modules._expand(tmp_path) == paths  # a fleet run's folder stands for its hosts' bundles
    named = modules.tables(jmh, paths, None)
    assert [n.name for n in named][-1] == "devices"
    t = named[-1].table
    assert t.columns[2:] == [f"{h} (Cortex-A53, host raspberrypi)" for h in ("pi-a", "pi-b", "pi-c")]
    [row] = t.rows
    assert row[:2] == ["B1 (ops/s)", "docker"] and all(c.endswith(", n=5") and "[" in c for c in row[2:])
    assert [round(r["mean"]) for r in t.records] == [100, 200, 300]
    assert len({r.device for r in jmh.run_values(paths)}) == 3  # not pooled: each device its own runs
    assert [n.name for n in modules.tables(jmh, paths[:1], None)] == ["table1"]  # one device: no such table


def test_too_few_runs_give_no_interval_per_device(tmp_path):
    a, b = jmh_bundle(tmp_path, "pi-a", "x", [1.0, 2.0]), jmh_bundle(tmp_path, "srv", "y", [3.0, 4.0])
    cells = devices.table(jmh.run_values([a, b])).rows[0][2:]
    assert cells == [
        "1.500 (no interval: 2 repetitions, 5 needed), n=2",
        "3.500 (no interval: 2 repetitions, 5 needed), n=2",
    ]
    assert [devices.digits(x) for x in (18_881_298.4, 1.5, 0.0012345, 0.0)] == [0, 3, 6, 0]


def test_the_inventory_is_read_by_ansible_and_names_must_name_folders(tmp_path):
    if not shutil.which("ansible-inventory", path=str(Path(sys.executable).parent)) and not shutil.which(
        "ansible-inventory"
    ):
        pytest.skip("ansible-core (the fleet extra) is not installed")
    hosts = fleet.inventory_hosts(REPO / "fleet" / "hosts.yml")
    assert set(hosts) == {"pi-1", "pi-2", "pi-3", "server"}
    assert hosts["pi-1"]["user"] == "pi" and hosts["pi-1"]["labels"]["storage"] == "sd-card"
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts:\n    'pi a':\n      ansible_host: 10.0.0.1\n")
    with pytest.raises(PirexError, match="cannot name a result folder"):
        fleet.inventory_hosts(bad)
    with pytest.raises(PirexError, match="no such file"):
        fleet.inventory_hosts(tmp_path / "missing.yml")


def test_hosts_of_an_empty_inventory_is_an_error():
    with pytest.raises(PirexError, match="lists no host"):
        fleet.hosts_of({"_meta": {"hostvars": {}}, "all": {"children": ["ungrouped"]}})


def test_the_playbook_gets_the_request_and_only_the_hosts_left(tmp_path):
    req = fleet.Request("jmh", tmp_path / "inv.yml", sets=("repetitions=1",), tag="t1", serial=True)
    v = fleet.playbook_vars(req, tmp_path / "run", "fleet-x", ["jmh"])
    assert v["pirex_sets"] == ["repetitions=1"] and v["pirex_serial"] is True and v["pirex_tag"] == "t1"
    assert v["pirex_design"] == "interleaved"
    duet = fleet.Request("jmh", tmp_path / "inv.yml", design="duet")
    assert fleet.playbook_vars(duet, tmp_path / "run", "fleet-x", ["jmh"])["pirex_design"] == "duet"
    with pytest.raises(PirexError, match="does not suit --design duet: a step runs three processes"):
        fleet.run(fleet.Request("jpa-rest", tmp_path / "inv.yml", design="duet"))  # refused before any host
    assert v["pirex_fleet_dir"] == str((tmp_path / "run").resolve()) and v["pirex_controller"][1:] == ["-m", "pirex"]
    cmd = fleet.command(req, tmp_path / "vars.json", ["pi-a", "pi-c"])
    assert cmd[cmd.index("--limit") + 1] == "pi-a,pi-c" and f"@{tmp_path / 'vars.json'}" in cmd


def test_a_host_state_says_which_task_failed_and_why(tmp_path):
    unreachable = {"failed": {"task": "run the experiment", "unreachable": True, "message": "Connection refused"}}
    s = fleet.host_state(tmp_path, "pi-c", unreachable, 4)
    assert s["state"] == fleetrun.UNREACHABLE and s["why"] == "unreachable at 'run the experiment': Connection refused"
    assert fleet.host_state(tmp_path, "pi-b", None, 2)["state"] == fleetrun.MISSING
    jmh_bundle(tmp_path, "pi-a", "h", [1.0])
    s = fleet.host_state(tmp_path, "pi-a", {"failed": None, "verified": True, "bundle": "/x"}, 0)
    assert s["state"] == fleetrun.VERIFIED and s["run_id"] == RUN_ID and s["bundle"] == "pi-a"
    assert fleet.host_state(tmp_path, "pi-a", {"failed": None, "verified": False}, 0)["state"] == fleetrun.MISSING


def test_the_callback_names_pirex_own_error_line():
    spec = importlib.util.spec_from_file_location("pirex_fleet", REPO / "fleet" / "callback_plugins" / "pirex_fleet.py")
    if importlib.util.find_spec("ansible") is None:
        pytest.skip("ansible-core (the fleet extra) is not installed")
    cb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cb)
    assert cb.message({"msg": "non-zero return code", "stderr": "pirex: x\npirex: error: no jmh image\n"}) == (
        "no jmh image"
    )
    assert cb.message({"msg": "non-zero return code", "stderr": "a\nb\n"}) == "a / b"
    assert cb.message({"msg": "Failed to connect to the host via ssh: refused"}).endswith("refused")


class _Opts:
    def __init__(self, results: Path):
        self.results_dir, self.experiment, self.allow_concurrent = results, "jmh", False


def test_on_host_takes_a_complete_bundle_as_it_is(tmp_path, monkeypatch):
    from pirex.runner import run as runner

    monkeypatch.setattr(runner, "run", lambda opts: pytest.fail("ran again"))
    monkeypatch.setattr(runner, "resume", lambda *a: pytest.fail("resumed"))
    results = tmp_path / "results"
    done = jmh_bundle(tmp_path, "pi-a", "h", [1.0])
    (results / "jmh").mkdir(parents=True)
    done.rename(results / "jmh" / RUN_ID)
    assert fleet.on_host(_Opts(results)) == results / "jmh" / RUN_ID


def test_on_host_waits_for_an_earlier_attempt_still_writing_then_resumes(tmp_path, monkeypatch):
    from pirex.runner import run as runner

    results = tmp_path / "results"
    b = B.Bundle.create(results, "jmh", "quick", {}, ["docker"], [("docker", 0)], {}, {"version": "0", "commit": "c"})
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import fcntl, os, time; fd = os.open({str(b.path)!r}, "
            "os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); print(1, flush=True); time.sleep(2)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    b.close()  # our own lock gone: the other process's flock is the earlier attempt's
    assert writer.stdout.readline().strip() == "1"
    calls = []
    monkeypatch.setattr(runner, "resume", lambda path, allow: calls.append(B.writing(path)) or path)
    assert fleet.on_host(_Opts(results), wait=60, poll=0.2) == b.path
    writer.wait(timeout=30)
    assert calls == [False], "resumed only once the earlier attempt let go"
    monkeypatch.setattr(runner, "run", lambda opts: "ran")
    shutil.rmtree(results)
    assert fleet.on_host(_Opts(results)) == "ran"


def test_on_host_refuses_two_bundles(tmp_path):
    results = tmp_path / "results"
    for _ in range(2):
        B.Bundle.create(
            results, "jmh", "quick", {}, ["docker"], [("docker", 0)], {}, {"version": "0", "commit": "c"}
        ).close()
    with pytest.raises(PirexError, match="holds 2 jmh bundles"):
        fleet.on_host(_Opts(results))


def test_resume_needs_a_fleet_run(tmp_path):
    with pytest.raises(PirexError, match="not a fleet run"):
        fleetrun.read_manifest(tmp_path)
    fleetrun.write_manifest(tmp_path, {"schema": "other"})
    with pytest.raises(PirexError, match="is not pirex-fleet/1"):
        fleetrun.read_manifest(tmp_path)
    assert os.listdir(tmp_path) == [fleetrun.MANIFEST]


def test_pirex_table_without_bundles_reads_the_newest_fleet_run(tmp_path):
    from pirex.core import experiment

    single = jmh_bundle(tmp_path / "results" / "jmh", "20261101T000000Z-000001", "h", [1.0])
    os.utime(single / B.MANIFEST, (1, 1))  # an older run of one machine
    fleet_dir = tmp_path / "results" / "jmh" / "fleet-x"
    hosts = [jmh_bundle(fleet_dir, h, "h", [1.0]) for h in ("pi-a", "pi-b")]
    fleetrun.write_manifest(fleet_dir, {"schema": fleetrun.SCHEMA})
    assert modules.bundles(experiment.load("jmh"), [], tmp_path / "results", None) == hosts


def test_moobench_from_three_pis_gives_ssp17_table1_with_a_column_per_device(tmp_path):
    """Three Pi 3s, all called raspberrypi, one run id: SSP'17 Table 1's layout names each by its inventory name."""
    from pirex.analysis import moobench
    from pirex.core import experiment

    paths = []
    for k, host in enumerate(("pi-1", "pi-2", "pi-3"), 1):
        b = B.Bundle.create(
            tmp_path / "host" / host,
            "moobench",
            "quick",
            {**experiment.load("moobench").resolve("quick"), "calls": 40},
            ["native"],
            [("native", r) for r in range(5)],
            {},
            {"version": "0", "commit": "c"},
            run_id=RUN_ID,
        )
        for r in range(5):
            with b.step("native", r) as d:
                (d / "raw-baseline.csv").write_text("".join(f"1;{1000 * k + 10 * r + i};1;0\n" for i in range(40)))
        record = {
            "hostname": "raspberrypi",
            "pi": {"model": "Raspberry Pi 3 Model B Rev 1.2"},
            "storage": {"kind": "sd-card", "fstype": "ext4"},
            "device": {"name": host, "labels": {}},
        }
        b.write_machine(before=record, after=record)
        b.finish()
        b.path.rename(tmp_path / host)
        paths.append(tmp_path / host)
    named = {n.name: n.table for n in modules.tables(moobench, paths, None)}
    devs = [f"pi-{k} (Raspberry Pi 3 Model B Rev 1.2, host raspberrypi)" for k in (1, 2, 3)]
    assert named["table1"].columns == ["Experiment"] + [
        f"{d}: {c}" for d in devs for c in ("95 % CI", "σ", "95 % CI (loops)")
    ]
    assert named["devices"].columns[2:] == devs
