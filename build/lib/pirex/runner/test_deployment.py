"""The deployment runner's pieces that need no engine: the experiment's deployment block, the
process tree's memory, the health wait, the setup's closing line, and the split run's .env file."""

import http.server
import json
import threading

import pytest

from pirex.core import experiment, proc
from pirex.core.errors import PirexError
from pirex.runner import compose, deployment, samplers


def test_jpa_rest_declares_its_roles_in_start_order():
    dep = experiment.load("jpa-rest").deployment
    assert list(dep.roles) == ["db", "web"] and dep.images == ("postgres", "jpa-rest")
    db, web = dep.roles["db"], dep.roles["web"]
    assert db.image == "postgres" and db.ready_line and db.data and not db.samples
    assert web.image == "jpa-rest" and web.health == "/actuator/health" and web.samples == ("spring-actuator-memory",)
    assert dep.setup.runs_in == "web" and dep.setup.needs == ("db",) and dep.setup.record == "db-load"
    assert dep.urls() == {"web_url"}, "the driver reaches the role with a health path"
    env = deployment.environment(
        web,
        {
            "port": 9,
            "db_host": "db",
            "db_port": 5432,
            "db_name": "x",
            "db_user": "u",
            "db_password": "p",
            "pool_size": 16,
        },
    )
    assert env["DB_URL"] == "jdbc:postgresql://db:5432/x" and env["PORT"] == "9"


def load_changed(tmp_path, *changes: tuple[str, str]) -> experiment.Experiment:
    doc = experiment.path_of("jpa-rest").read_text()
    for old, new in changes:
        assert old in doc
        doc = doc.replace(old, new)
    path = tmp_path / "jpa-rest" / "experiment.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(doc)
    return experiment.load(path)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("{pool_size}", "{pool_sise}", "deployment.roles.web.command: expected placeholders among"),
        ("samples: [spring-actuator-memory]", "samples: [jfr]", "roles.web.samples: expected sampler kinds among"),
        ("      health: /actuator/health\n", "", "roles.web.ready_line: expected either ready_line"),
        ("runs_in: web", "runs_in: loader", r"deployment.setup.runs_in: expected a role \(db, web\), found .loader."),
        ("needs: [db]", "needs: [cache]", "deployment.setup.needs: expected roles among db, web"),
        ("one_host: compose/jpa-rest.yml", "one_host: compose/nope.yml", "deployment.compose: expected paths"),
        ('"{web_url}"', '"{cache_url}"', "command names cache_url"),
    ],
)
def test_a_deployment_mistake_fails_at_load_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(PirexError, match=message):
        load_changed(tmp_path, (old, new))


def test_a_third_role_is_only_data(tmp_path):
    """A role more (a cache between the service and the database) is a block of experiment.yaml: its
    placeholders (cache_host, cache_port) are known to the others, and it starts after the database."""
    cache = """    cache:
      image: postgres
      command: [cache, --port, "{port}", --db, "{db_host}:{db_port}"]
      port: 6379
      ready_line: ready
    web:"""
    exp = load_changed(tmp_path, ("    web:", cache), ("jdbc:postgresql://{db_host}", "jdbc:postgresql://{cache_host}"))
    assert list(exp.deployment.roles) == ["db", "cache", "web"]


def test_the_setups_closing_line_is_its_result(tmp_path):
    setup = experiment.load("jpa-rest").deployment.setup
    out = "connecting\npirex-load-customers: status=loaded rows=3000 rows_per_s=1234.5 server_version=15.8\n"
    r = proc.Result(["x"], 0, out, "")
    assert deployment.setup_result(r, tmp_path / "setup.log", setup) == {
        "status": "loaded",
        "rows": "3000",
        "rows_per_s": "1234.5",
        "server_version": "15.8",
    }
    assert (tmp_path / "setup.log").read_text() == out
    with pytest.raises(PirexError, match=r"the setup \(customer table\) failed \(exit 1\)"):
        deployment.setup_result(proc.Result(["x"], 1, "", "no database"), tmp_path / "setup.log", setup)


def test_tree_rss_sums_a_process_and_its_descendants(tmp_path):
    def proc_(pid, rss_kb, children=()):
        task = tmp_path / str(pid) / "task" / str(pid)
        task.mkdir(parents=True)
        (task / "children").write_text(" ".join(map(str, children)))
        (tmp_path / str(pid) / "status").write_text(f"Name:\tx\nVmRSS:\t{rss_kb} kB\n")

    proc_(10, 100, [11])
    proc_(11, 2000, [12])
    proc_(12, 30)
    proc_(99, 5000)  # not in the tree
    assert samplers.tree_rss_bytes(10, tmp_path) == (100 + 2000 + 30) * 1024
    assert samplers.tree_rss_bytes(404, tmp_path) is None


class _Health(http.server.BaseHTTPRequestHandler):
    answers: list = []

    def do_GET(self):  # noqa: N802 (the http.server API)
        code, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        self.send_response(code)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def health_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_the_health_wait_takes_the_top_level_status_and_is_bounded(health_server):
    url = f"http://127.0.0.1:{health_server.server_port}/actuator/health"
    _Health.answers = [
        (503, {"status": "DOWN", "components": {"diskSpace": {"status": "UP"}}}),
        (200, {"status": "UP"}),
    ]
    assert deployment.wait_healthy(url, 30) is None
    _Health.answers = [(503, {"status": "DOWN", "components": {"db": {"status": "DOWN"}}})]
    last = deployment.wait_healthy(url, 2)
    assert last.startswith("HTTP 503") and '"DOWN"' in last
    assert "has stopped" in deployment.wait_healthy(url, 30, running=lambda: False)


def test_env_file_is_read_as_compose_reads_it(tmp_path):
    f = tmp_path / "pair.env"
    f.write_text("# comment\n\nPIREX_TAG=0.1.0\nexport DB_HOST='10.0.0.2'\nDB_PASSWORD=\"a=b\"\n")
    assert compose.read_env_file(f) == {"PIREX_TAG": "0.1.0", "DB_HOST": "10.0.0.2", "DB_PASSWORD": "a=b"}
    f.write_text("JUST A LINE\n")
    with pytest.raises(PirexError, match="pair.env:1: expected KEY=VALUE"):
        compose.read_env_file(f)
    assert compose.results_dir_of("jpa-rest", {"RESULTS_DIR": "/abs/x"}).as_posix() == "/abs/x"
    assert compose.results_dir_of("jpa-rest", {}).parts[-2:] == ("jpa-rest", "split")


def test_every_sampler_kind_experiment_yaml_may_name_is_one_the_runner_runs():
    assert set(samplers.KINDS) == set(experiment.SAMPLER_KINDS)
