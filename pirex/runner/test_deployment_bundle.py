"""A deployment's run writes a bundle as `pirex run` does (runner/deployment_bundle.py), without an engine: the
step is the driver's folder, the records sit at the top, a failed run is kept and marked and never resumed
(analysis/test_jpa.py reads one)."""

import json

import pytest

from pirex.core import bundle, experiment
from pirex.core.bundle import Bundle
from pirex.core.errors import PirexError
from pirex.runner import deployment_bundle, run

JPA = experiment.load("jpa-rest")
MACHINE = {"hostname": "pi-a", "pi": {"model": "Raspberry Pi 4 Model B Rev 1.5"}, "storage": {"kind": "usb"}}
HEADER = "operation,seq,user,start_ns,response_time_us,locust_response_time_us,status,ok,service_time_ns,error\n"


def write_run(d):
    """The driver's requests.csv: one request per operation after one of warm-up."""
    rows = [f"{op},{seq},0,{seq},{ms},{ms},200,1,,\n" for op in ("read", "change-name") for seq, ms in ((1, 9), (2, 1))]
    (d / "requests.csv").write_text(HEADER + "".join(rows))


def records(top, how="compose"):
    """What `pirex swarm` writes at the top: each role's machine and how it ran."""
    for role, host in (("web", "pi-a"), ("db", "pi-b")):
        (top / f"machine-{role}.json").write_text(json.dumps({"role": role, "before": {**MACHINE, "hostname": host}}))
        (top / f"{how}-{role}.json").write_text(json.dumps({"role": role, "environment": {"NETWORK_MODE": "host"}}))


def test_a_completed_run_is_a_complete_bundle_with_the_roles_records_at_its_top(tmp_path):
    with deployment_bundle.writing(tmp_path, JPA, "quick", ("customers=300",), "swarm", {"tag": "t"}) as b:
        b.write_machine(before=MACHINE)
        records(b.path)
        with deployment_bundle.driver_step(b) as step:
            assert step.stat().st_mode & 0o777 == 0o777, "the driver writes as the image's user"
            write_run(step)
    done = Bundle.open(b.path)
    assert (done.status, done.variants, done.run_info().deployment) == ("complete", ["swarm"], "swarm")
    assert done.param("customers") == 300 and done.profile == "quick"
    assert bundle.verify(b.path) == []
    assert (b.path / "swarm" / "0" / "requests.csv").is_file() and "machine-web.json" in done.files


def test_a_failed_run_keeps_its_bundle_and_logs_marked_failed_and_is_never_resumed(tmp_path):
    with pytest.raises(PirexError, match="the driver failed"):
        with deployment_bundle.writing(tmp_path, JPA, "quick", (), "compose", {}) as b:
            (b.path / "compose.log").write_text("why\n")
            with deployment_bundle.driver_step(b) as step:
                (step / "requests.csv").write_text("half")
                raise PirexError("the driver failed")
    failed = Bundle.open(b.path)
    assert failed.status == "failed" and failed.completed == [] and "compose.log" in failed.files
    assert not any((b.path / "compose").iterdir()), "the step cut short is not kept"
    with pytest.raises(PirexError, match=r"a run of `pirex compose`: one step, not resumed"):
        run.resume(b.path)
    assert Bundle.open(b.path).status == "failed", "left as it was"


def test_a_bad_parameter_is_named_before_a_bundle_is_made(tmp_path):
    with pytest.raises(PirexError, match="frobnicate"):
        with deployment_bundle.writing(tmp_path, JPA, "quick", ("frobnicate=1",), "compose", {}):
            pass
    assert not (tmp_path / "jpa-rest").exists()


def test_an_interrupted_run_is_partial_as_any_run(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with deployment_bundle.writing(tmp_path, JPA, "quick", (), "compose", {}) as b:
            with deployment_bundle.driver_step(b):
                raise KeyboardInterrupt
    assert Bundle.open(b.path).status == "partial" and bundle.verify(b.path, complete=False) == []
