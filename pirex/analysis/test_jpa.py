"""ICPE'18 Table 3 on handmade runs (testdata/jpa/README.md), expected values computed here by hand or straight with
numpy/scipy from the numbers typed below, not through jpa's reader."""

import csv
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from pirex.analysis import jpa, jpa_memory
from pirex.analysis import tables as T
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.core.paths import PAPERS

DATA = Path(__file__).parent / "testdata" / "jpa"
NATIVE, DOCKER = "web-native_db-native", "web-docker_db-docker"
MACHINE = {
    "hostname": "pi-a",
    "pi": {"model": "Raspberry Pi 4 Model B Rev 1.5"},
    "storage": {"kind": "usb", "model": "WD Elements", "fstype": "ext4"},
}
HEADER = "operation,seq,user,start_ns,response_time_us,locust_response_time_us,status,ok,service_time_ns,error\n"


def t_half(values, level=0.99):
    a = np.asarray(values, dtype=float)
    return sps.t.ppf(1 - (1 - level) / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)


def results_by_key():
    runs = jpa.runs_from_dirs({NATIVE: DATA / "native", DOCKER: DATA / "docker"}, device="Pi 4", storage="usb")
    return runs, {(r.configuration, r.operation): r for r in jpa.analyse(runs)}


def test_warmup_rule_failures_and_outside_time_of_one_run():
    run = jpa.read_run(DATA / "native")
    read, create, change = (run.operations[op] for op in ("read", "create-random", "change-name"))
    assert (read.count, read.warmup, read.rows) == (8, 4, 8)
    assert sorted(read.steady) == [100, 110, 120, 130]  # seq 5-8; the failed seq 4 is warm-up
    assert (read.failed, read.warmup_failed) == (0, 1)
    assert sorted(read.outside) == pytest.approx([39.5, 40, 40])  # seq 7 has no service time
    assert sorted(read.service) == pytest.approx([60, 70, 90.5])
    # 7 rows, but summary.json says 8 were issued: warm-up 4, one never answered
    assert (create.count, create.warmup, create.rows, create.missing) == (8, 4, 7, 1)
    assert sorted(create.steady) == [10, 12, 14.5] and sorted(create.outside) == pytest.approx([8, 9, 10.5])
    assert sorted(change.steady) == [1000, 1200] and (change.failed, change.requests) == (2, 4)
    assert change.error_kinds == {"HTTP 500": 1, "ConnectionRefusedError": 1}
    assert change.outside.size == 0
    assert run.complete is False and run.driver_us_per_request == 150.0


def test_warmup_parameter():
    run = jpa.read_run(DATA / "native", warmup=2)
    assert sorted(run.operations["read"].steady) == [100, 110, 120, 130, 300]
    assert run.operations["read"].failed == 1  # seq 4 is after this warm-up now: counted, not averaged
    run = jpa.read_run(DATA / "native", warmup={"read": 0})
    assert run.operations["read"].steady.size == 7 and run.operations["read"].warmup == 0
    assert run.operations["change-name"].warmup == 4  # not named: half
    # without summary.json: half of the operation's highest seq
    run = jpa.read_run(DATA / "docker" / "1" / "requests.csv")
    assert {op: o.warmup for op, o in run.operations.items()} == {"read": 3, "create-random": 2, "change-name": 1}


def test_pooled_statistics_and_intervals():
    runs, by = results_by_key()
    assert [r.repetition for r in runs if r.configuration == DOCKER] == [0, 1]
    read = by[(DOCKER, "read")]
    values = [150, 160, 170, 180, 190, 200]
    assert read.summary.n == 6 and read.summary.mean == pytest.approx(175)
    assert read.summary.sd == pytest.approx(np.std(values, ddof=1))
    lo, hi = read.ci()
    assert (lo, hi) == pytest.approx((175 - t_half(values), 175 + t_half(values)))
    # over the runs' means 160 and 190: two runs give no interval (the one rule: 5 runs)
    assert all(math.isnan(x) for x in read.run_ci())
    assert read.run_interval().reason == "no interval: 2 runs, 5 needed"
    assert read.runs == 2 and read.warmup == [3, 3]
    native = by[(NATIVE, "read")]
    assert native.summary.mean == pytest.approx(115) and math.isnan(native.run_ci()[0])  # one run
    change = by[(NATIVE, "change-name")]
    assert (change.summary.n, change.summary.mean, change.failed, change.requests) == (2, 1100, 2, 4)
    assert change.failed_share == 0.5 and change.warmup_failed == 0
    assert by[(NATIVE, "read")].warmup_failed == 1 and by[(NATIVE, "create-random")].missing == 1
    assert by[(DOCKER, "change-name")].summary.mean == pytest.approx(np.mean([2000, 3000, 3100, 3200]))


def test_table3_layout_and_outputs(tmp_path):
    _, by = results_by_key()
    t = jpa.table3(list(by.values()))
    assert [row[1] for row in t.rows] == ["Read customer"] * 2 + ["Create random customer"] * 2 + [
        "Change customer name"
    ] * 2
    assert t.rows[0][2] == f"Pi 4, usb, {NATIVE}" and t.rows[0][3] == "115.0" and t.rows[0][-1] == "line 1"
    assert t.rows[1][2].endswith(DOCKER) and t.rows[1][-1] == "line 2" and t.rows[5][-1] == "line 14"
    half = t_half([100, 110, 120, 130])
    assert t.rows[0][4] == f"[{115 - half:,.1f} ; {115 + half:,.1f}]"
    assert t.rows[4][9] == "2 (50.00 %)" and t.rows[0][9] == "0 (0.00 %)"
    assert any("2 of 4 requests failed after warm-up" in n and "HTTP 500 x1" in n for n in t.notes)
    assert f"Create random customer, Pi 4, usb, {NATIVE}: 1 requests issued but never answered." in t.notes
    assert f"Pi 4, usb, {NATIVE}: 1 run(s) stopped before every request was answered" in " ".join(t.notes)
    assert f"Read customer, Pi 4, usb, {NATIVE}: 1 requests failed during warm-up, none after it." in t.notes
    md = T.markdown(t)
    assert "| Line # | Operation | Configuration | Mean Response Time (µs) | 99 % CI Resp. Time (µs) |" in md
    assert r"$\sigma$ ($\mu$s)" in T.latex(t)
    T.write_csv(t, tmp_path / "table3.csv")
    rows = list(csv.DictReader(open(tmp_path / "table3.csv")))
    assert len(rows) == 6 and rows[0]["operation"] == "read" and float(rows[0]["mean_us"]) == 115
    assert rows[0]["paper_line"] == "1" and rows[4]["failed"] == "2" and float(rows[4]["failed_share"]) == 0.5


def test_outside_the_service():
    _, by = results_by_key()
    assert by[(NATIVE, "read")].outside.mean == pytest.approx(np.mean([40, 40, 39.5]))
    assert by[(NATIVE, "create-random")].outside.mean == pytest.approx(np.mean([8, 9, 10.5]))
    docker = by[(DOCKER, "read")]  # 150-100, 160-100, 170-100, 180-150, 190-150, 200-150
    assert docker.outside.mean == pytest.approx(50) and docker.outside_run_means == pytest.approx([60, 40])
    assert by[(NATIVE, "change-name")].outside.n == 0
    t = jpa.overhead_table(list(by.values()))
    row = next(r for r in t.rows if r[0] == "Read customer" and r[1].endswith(DOCKER))
    assert row[2] == "6 of 6" and row[5] == "50.0" and row[-1] == "170.0"  # docker/1 has no summary.json
    row = next(r for r in t.rows if r[0] == "Read customer" and r[1].endswith(NATIVE))
    assert row[2] == "3 of 4" and row[3] == f"{np.mean([100, 110, 130]):,.1f}" and row[-1] == "150.0"


def test_deployment_and_paper_configurations():
    assert jpa.deployment(NATIVE) == "native" and jpa.deployment(DOCKER) == "docker"
    assert jpa.deployment("web-docker_db-native") == "mixed" and jpa.deployment("docker") == "docker"
    assert jpa.deployment("docker-hostnet") == "docker" and jpa.deployment("baseline") is None
    assert jpa.paper_config(NATIVE) == 1 and jpa.paper_config("web-docker_db-native") is None
    assert jpa.paper_config("swapped-disks", {"swapped-disks": 5}) == 5
    with pytest.raises(PirexError):
        jpa.paper_config("x", {"x": 7})


def write_run(d: Path, means: dict[str, float]) -> None:
    """Seq 1, 2 warm-up (1e6 µs: would show if kept), seq 3, 4 at mean -/+ 1."""
    lines = [HEADER]
    for op, m in means.items():
        for seq, v in ((1, 1e6), (2, 1e6), (3, m - 1), (4, m + 1)):
            lines.append(f"{op},{seq},0,{seq},{v},{v},200,1,,\n")
    (d / "requests.csv").write_text("".join(lines))


PARAMS = {"customers": 10_000, "requests_per_operation": 4, "mix": "sequential"}


def make_bundle(tmp_path: Path, runs: int = 5, params: dict | None = None) -> Path:
    plan = [(v, r) for r in range(runs) for v in (NATIVE, DOCKER, "web-docker_db-native")]
    b = Bundle.create(
        tmp_path,
        "jpa-rest",
        "quick",
        params or PARAMS,
        [NATIVE, DOCKER, "web-docker_db-native"],
        plan,
        {},
        {"version": "t", "commit": "c"},
    )
    b.write_machine(before=MACHINE, after=MACHINE)
    for v, r in plan:
        f = 1 + 0.01 * r
        with b.step(v, r) as d:
            if v == DOCKER:  # read and create-random 10 % slower, change-name the same
                write_run(d, {"read": 1100 * f, "create-random": 110 * f, "change-name": 3000 * f})
            else:
                write_run(d, {"read": 1000 * f, "create-random": 100 * f, "change-name": 3000 * f})
    b.finish()
    return b.path


def test_a_bundle_read_and_its_setup_never_pooled(tmp_path):
    results = jpa.analyse(jpa.runs_from_bundle(make_bundle(tmp_path)))
    by = {(r.configuration, r.operation): r for r in results}
    read = by[(NATIVE, "read")]
    assert read.device == "Raspberry Pi 4 Model B Rev 1.5 (pi-a)" and read.storage == "usb WD Elements ext4"
    assert read.runs == 5 and read.summary.n == 10 and read.summary.mean == pytest.approx(1020)  # warm-up dropped
    assert read.setup == "10,000 customers, 4 requests per operation, sequential operations"
    more = make_bundle(tmp_path / "more", params={**PARAMS, "customers": 10_000_000})
    named = {nt.name: nt.table for nt in jpa.tables([make_bundle(tmp_path / "again"), more])}
    assert list(named) == ["table3-setup1", "table3-setup2", "overhead-setup1", "overhead-setup2"]
    assert named["table3-setup1"].title.endswith("; 10,000 customers, 4 requests per operation, sequential operations")
    assert named["table3-setup2"].title.startswith("Results of the RESTful service experiment")
    assert "10,000,000 customers" in named["table3-setup2"].title and len(named["table3-setup2"].rows) == 9
    assert {r["setup"] for r in named["table3-setup2"].records} == {named["table3-setup2"].title.split("; ", 1)[1]}


def test_a_parameter_the_table_needs_is_never_taken_as_0(tmp_path):
    b = make_bundle(tmp_path, 1, {"customers": 10_000, "mix": "sequential"})
    with pytest.raises(PirexError, match="manifest.json: the run records no parameter 'requests_per_operation'"):
        jpa.tables([b])


def test_published_table3_is_the_paper():
    with open(PAPERS / "icpe18" / "table3.csv") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 18 and [int(r["line"]) for r in rows] == list(range(1, 19))
    first = rows[0]
    assert (first["operation"], first["configuration"], first["variant"]) == ("read", "1", "native")
    assert [float(first[k]) for k in ("mean", "ci_low", "ci_high", "sd")] == [168914.4, 167197.2, 170631.7, 210817.8]
    assert [float(rows[9][k]) for k in ("mean", "ci_low", "ci_high", "sd")] == [14136.2, 14025.4, 14247.0, 13602.9]
    assert [float(rows[17][k]) for k in ("mean", "ci_low", "ci_high", "sd")] == [551034.6, 548759.9, 553309.2, 279250.8]
    for r in rows:
        k = int(r["configuration"])
        assert (r["web_device"], r["web_disk"], r["db_device"], r["db_disk"], r["variant"]) == jpa.PAPER_CONFIGS[k]
        assert jpa.OPERATIONS[r["operation"]] == r["paper_operation"]
        # the paper's 99 % CI is the t interval over its 100,000 requests after warm-up (within its rounding)
        half = sps.t.ppf(0.995, 100_000 - 1) * float(r["sd"]) / math.sqrt(100_000)
        assert float(r["ci_low"]) == pytest.approx(float(r["mean"]) - half, abs=0.1 + 1e-6)
        assert float(r["ci_high"]) == pytest.approx(float(r["mean"]) + half, abs=0.1 + 1e-6)


def test_damaged_input(tmp_path):
    (tmp_path / "requests.csv").write_text(HEADER + "read,1,0,1,5.0,5.0,200,1,,\nread,1,0,2,6.0,6.0,200,1,,\n")
    with pytest.raises(PirexError, match="seq more than once"):
        jpa.read_run(tmp_path)
    (tmp_path / "requests.csv").write_text("operation,seq\nread,1\n")
    with pytest.raises(PirexError, match="no column response_time_us"):
        jpa.read_run(tmp_path)
    (tmp_path / "requests.csv").write_text(HEADER + "read,x,0,1,5.0,5.0,200,1,,\n")
    with pytest.raises(PirexError, match=":2: cannot read"):
        jpa.read_run(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PirexError, match="no requests.csv"):
        jpa.runs_from_dirs({"native": tmp_path / "empty"})


def test_memory_trend_per_minute_and_its_slope(tmp_path):
    f = tmp_path / "web-memory.csv"
    mb = 1 << 20
    lines = ["t_s,rss_bytes,heap_used_bytes,heap_committed_bytes"]
    for t in range(0, 300, 5):  # RSS grows 2 MB a minute; the heap saws between 50 and 90 MB, its floor flat
        lines.append(f"{t},{(300 + 2 * t / 60) * mb},{(50 + (t % 30) * 40 / 30) * mb},{200 * mb}")
    f.write_text("\n".join(lines) + "\n")
    t = jpa_memory.memory_trend(f, "docker", "run", 0)
    assert t.samples == 60 and t.seconds == 295
    assert t.rss_slope_mb_per_min == pytest.approx(2.0, abs=0.01)
    assert t.heap_floor_slope_mb_per_min == pytest.approx(0.0, abs=1e-9) and t.heap_floor_first_mb == 50
    short = tmp_path / "short.csv"
    short.write_text("\n".join(lines[:5]) + "\n")
    assert jpa_memory.memory_trend(short).rss_slope_mb_per_min is None
    assert "too short" in T.markdown(jpa_memory.memory_table([jpa_memory.memory_trend(short)]))


def test_placement_names_hosts_and_how_each_role_ran(tmp_path):
    def record(role: str, host: str, how: str, env: dict | None = None) -> None:
        m = {**MACHINE, "hostname": host}
        (tmp_path / f"machine-{role}.json").write_text(json.dumps({"role": role, "before": m}))
        (tmp_path / f"{how}-{role}.json").write_text(json.dumps({"role": role, "environment": env or {}}))

    assert jpa.placement(tmp_path) is None  # no records: not a split run
    record("web", "pi-a", "native")
    record("db", "pi-b", "native")
    label = jpa.placement(tmp_path)
    assert label.startswith("web pi-a (") and ", db pi-b (" in label and label.endswith(", native")
    record("web", "pi-a", "compose", {"NETWORK_MODE": "host"})  # a newer docker record in the same folder wins
    os.utime(tmp_path / "native-web.json", (1, 1))
    assert jpa.placement(tmp_path).endswith(", web docker (host network), db native")


def test_placement_takes_how_a_role_ran_from_its_machine_record_whatever_the_files_times(tmp_path):
    """A folder copied from the hosts (new modification times) names each role as its own record says."""
    for role, host, how in (
        ("web", "pi-a", {"variant": "docker", "network": "host"}),
        ("db", "pi-b", {"variant": "native"}),
    ):
        record = {"role": role, **how, "before": {**MACHINE, "hostname": host}}
        (tmp_path / f"machine-{role}.json").write_text(json.dumps(record))
    (tmp_path / "native-web.json").write_text(json.dumps({"role": "web"}))  # an earlier native run of the web role
    (tmp_path / "compose-db.json").write_text(json.dumps({"role": "db", "environment": {"NETWORK_MODE": "host"}}))
    assert jpa.placement(tmp_path).endswith(", web docker (host network), db native")


def test_requests_in_flight_when_a_soak_stops_are_counted_apart(tmp_path):
    lines = [HEADER]
    for seq, v in ((1, 1e6), (2, 1e6), (3, 100.0), (4, 102.0)):
        lines.append(f"read,{seq},0,{seq},{v},{v},200,1,,\n")
    lines.append("read,5,0,5,0.000,0.000,0,0,,in-flight: the run's time ran out before the response came\n")
    (tmp_path / "requests.csv").write_text("".join(lines))
    run = jpa.read_run(tmp_path, 2, timed=True)
    o = run.operations["read"]
    assert o.in_flight == 1 and o.failed == 0 and list(o.steady) == [100.0, 102.0]  # neither failed nor timed
    (r,) = jpa.analyse([run])
    assert r.in_flight == 1 and r.failed == 0
    assert any("In flight when the soak's clock stopped: 1 requests" in n for n in jpa.table3([r]).notes)


def test_a_swarm_bundle_is_read_with_the_placement_its_roles_records_name(tmp_path):
    """`pirex swarm` writes a bundle (runner/deployment_bundle.py) with machine-<role>.json at its top."""
    b = Bundle.create(
        tmp_path, "jpa-rest", "quick", PARAMS, ["swarm"], [("swarm", 0)], {}, {"version": "t", "commit": "c"}
    )
    b.write_machine(before=MACHINE)
    for role, host in (("web", "pi-a"), ("db", "pi-b")):
        (b.path / f"machine-{role}.json").write_text(
            json.dumps({"role": role, "before": {**MACHINE, "hostname": host}})
        )
        (b.path / f"compose-{role}.json").write_text(json.dumps({"environment": {"NETWORK_MODE": "host"}}))
    with b.step("swarm", 0) as d:
        write_run(d, {"read": 1000, "create-random": 100, "change-name": 3000})
    b.finish()
    [r] = jpa.runs_from_bundle(b.path)
    assert r.configuration.startswith("web pi-a (") and r.configuration.endswith("docker (host network)")
    assert r.setup == "10,000 customers, 4 requests per operation, sequential operations", "its manifest's, not unknown"
    assert jpa.run_dirs(tmp_path / "jpa-rest") == [b.path]
