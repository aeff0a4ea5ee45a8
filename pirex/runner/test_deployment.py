"""The deployment runner's pieces that need no engine: the experiment's deployment block, the
process tree's memory, the health wait, and the split run's .env file."""

import http.server
import json
import threading

import pytest

from pirex import experiment
from pirex.errors import PirexError
from pirex.runner import compose, deployment


def test_jpa_rest_declares_its_roles():
    dep = experiment.load("jpa-rest").deployment
    assert dep.db.image == "postgres" and dep.db.ready_line and dep.db.data
    assert dep.web.image == "jpa-rest" and dep.web.health == "/actuator/health"
    env = deployment.environment(dep.web, {"port": 9, "db_host": "db", "db_port": 5432, "db_name": "x",
                                           "db_user": "u", "db_password": "p", "pool_size": 16})  # fmt: skip
    assert env["DB_URL"] == "jdbc:postgresql://db:5432/x" and env["PORT"] == "9"


def test_a_deployment_placeholder_without_a_value_fails_at_load(tmp_path):
    doc = (experiment.path_of("jpa-rest")).read_text().replace("{pool_size}", "{pool_sise}")
    path = tmp_path / "jpa-rest" / "experiment.yaml"
    path.parent.mkdir()
    path.write_text(doc)
    with pytest.raises(PirexError, match="deployment.web.command: expected placeholders among"):
        experiment.load(path)


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
    assert deployment.tree_rss_bytes(10, tmp_path) == (100 + 2000 + 30) * 1024
    assert deployment.tree_rss_bytes(404, tmp_path) is None


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
    _Health.answers = [(503, {"status": "DOWN", "components": {"diskSpace": {"status": "UP"}}}),
                       (200, {"status": "UP"})]  # fmt: skip
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
    assert compose.results_dir_of({"RESULTS_DIR": "/abs/x"}).as_posix() == "/abs/x"
    assert compose.results_dir_of({}).name == "split"
