import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pirex.core.errors import PirexError
from pirex.runner import deployment_bundle, swarm

JPA, SWARM = swarm.swarm_of("jpa-rest")


def test_the_numbers_come_from_experiment_yaml_and_set_is_checked():
    quick = JPA.resolve("quick")
    env = swarm.environment(JPA, "quick", ("customers=300",), tag="t", hosts={"db": "10.0.0.3", "web": "10.0.0.2"})
    assert env["CUSTOMERS"] == "300" and env["REQUESTS_PER_OPERATION"] == str(quick["requests_per_operation"])
    assert env["DB_HOST"] == "10.0.0.3" and env["WEB_HOST"] == "10.0.0.2" and env["NETWORK"] == "host"
    assert swarm.environment(JPA, "quick", network="overlay")["DB_HOST"] == "db"
    with pytest.raises(PirexError, match="frobnicate"):
        swarm.environment(JPA, "quick", ("frobnicate=1",))
    with pytest.raises(PirexError, match="--network 'bridge'"):
        swarm.environment(JPA, "quick", network="bridge")


def test_only_an_experiment_with_a_swarm_deployment_runs_on_a_swarm():
    with pytest.raises(PirexError, match=r"jmh declares no swarm deployment .*experiments that do: jpa-rest"):
        swarm.swarm_of("jmh")
    assert [s.service for s in SWARM.stages] == ["db", "loader", "web", "driver"] and SWARM.servers == ("db", "web")


def test_every_required_setting_of_the_stack_file_is_given_and_it_holds_no_number_of_the_experiment():
    text = swarm.stack_file(SWARM).read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    env = swarm.environment(
        JPA, "paper", tag="t", results=Path("/r"), reader=Path("/r/m.pyz"), hosts={"db": "a", "web": "b"}
    )
    assert required <= set(env), required - set(env)
    paper = JPA.resolve("paper")
    for name in ("customers", "requests_per_operation"):
        assert str(paper[name]) not in text, name


def test_placement_needs_exactly_one_ready_node_per_label(monkeypatch):
    monkeypatch.setattr(swarm, "_docker", lambda *a, **k: type("R", (), {"stdout": "me\n"})())
    node = {"id": "me", "hostname": "laptop", "state": "ready", "labels": {}}
    db = {"id": "b", "hostname": "pi-b", "state": "ready", "labels": {"pirex.role": "db"}}
    web = {"id": "a", "hostname": "pi-a", "state": "down", "labels": {"pirex.role": "web"}}
    with pytest.raises(PirexError, match="no node has the label pirex.role=web"):
        swarm.placement([node, db], SWARM.place)
    with pytest.raises(PirexError, match=r"2 nodes \(pi-b, pi-b\) have the label pirex.role=db"):
        swarm.placement([node, db, db], SWARM.place)
    with pytest.raises(PirexError, match="node pi-a .* is down"):
        swarm.placement([node, db, web], SWARM.place)
    web["state"] = "ready"
    assert {r: n["hostname"] for r, n in swarm.placement([node, db, web], SWARM.place).items()} == {
        "db": "pi-b",
        "web": "pi-a",
        "driver": "laptop",
    }


def test_the_machine_reader_runs_alone_and_its_log_gives_the_record_back(tmp_path):
    reader = swarm.write_reader(tmp_path / "reader.pyz")
    r = subprocess.run(
        [sys.executable, str(reader)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PIREX_NODE_ID": "n1", "PIREX_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    log = "\n".join(f"pirex_record.x@pi-a    | {line}" for line in r.stdout.splitlines()) + "\nnoise\n"
    [(node, record)] = swarm.records_from_log(log).items()
    assert node == "n1" and record["schema"] == "pirex-machine/1" and record["cpu"]["cores"]
    assert record["capabilities"]["root"], "the capabilities probed on the node"
    assert swarm.records_from_log("pirex-record n2 1/2 abc\n") == {}, "a record missing a part is not taken"


def test_describe_names_each_roles_node_from_the_bundle(tmp_path):
    with deployment_bundle.writing(tmp_path, JPA, "quick", (), "swarm", {}) as b:
        node = {"id": "n0123456789abcdef", "hostname": "pi-b", "address": "10.0.0.3"}
        (b.path / "nodes.json").write_text(json.dumps({"nodes": [node], "placement": {"db": node["id"]}}))
        with deployment_bundle.driver_step(b):
            pass
    assert swarm.describe(b.path) == "db on pi-b (n0123456789a, 10.0.0.3)"
