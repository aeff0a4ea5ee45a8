"""The compose files as docker compose reads them (`docker compose config`: the client alone, no engine):
every number is experiment.yaml's, passed in as pirex/images/settings.py renders it, and one left out is an
error naming it and `pirex env`, never a default written into the file."""

import json
import os
import shutil
import subprocess

import pytest

from pirex.core import experiment
from pirex.images import settings
from pirex.runner import compose

HAS_COMPOSE = (
    bool(shutil.which("docker"))
    and subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60).returncode == 0
)
FILES = {"one_host": compose.one_host_file("jpa-rest"), **compose.host_files("jpa-rest")}


def config(file, env: dict, tmp_path) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty.env"  # not compose/.env of this checkout, if there is one
    empty.write_text("")
    clean = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **env}
    return subprocess.run(
        ["docker", "compose", "-f", str(file), "--env-file", str(empty), "config", "--format", "json"],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not HAS_COMPOSE, reason="no docker compose client")
@pytest.mark.parametrize("name", list(FILES))
def test_the_numbers_come_from_experiment_yaml(name, tmp_path):
    exp = experiment.load("jpa-rest")
    env = {
        **settings.of(exp, "paper"),
        "PIREX_TAG": "t",
        "DB_HOST": "192.0.2.2",
        "WEB_HOST": "192.0.2.3",
        "RESULTS_DIR": str(tmp_path),
    }
    r = config(FILES[name], env, tmp_path)
    assert r.returncode == 0, r.stderr
    text = json.dumps(json.loads(r.stdout))
    used = [
        k
        for k in ("CUSTOMERS", "REQUESTS_PER_OPERATION", "POOL_SIZE", "DB_PORT", "WEB_PORT")
        if f"${{{k}" in FILES[name].read_text()
    ]
    assert used, "each file takes some of the experiment's numbers"
    for key in used:
        assert env[key] in text, f"{name}: {key}={env[key]} (the paper profile's) not in what compose runs"
        missing = config(FILES[name], {k: v for k, v in env.items() if k != key}, tmp_path)
        assert missing.returncode != 0 and key in missing.stderr and "pirex env jpa-rest" in missing.stderr
