"""The docs' commands without pirex in the run (once the README's), read from the pages themselves (DOCS) so
that they cannot drift from what is tested: every fenced sh block after a `<!-- tested: without-pirex ... -->`
comment runs line by line as written, as a non-root user in the docker group (the README: "any
user allowed to use Docker"), in a folder of theirs holding a copy of compose/ and a link to the
checkout's .venv; then the results and their owner are checked. The `.venv/bin/pirex` lines run as
root: on the CI machines the venv's Python lives in root's home.

Substituted, as the README tells its readers to: `<tag>`, the images' tag; PIREX_TAG in the
environment (the README: it chooses the tag `pirex env` writes) for this session's build; "fill
in addresses": DB_HOST and WEB_HOST. The per-role files run on three hosts, as the README's
comments place them ("on the database Pi", "on the web Pi", "on the laptop"): network namespaces
on a bridge, each with its own Docker daemon (tests/test_jpa_rest_split.py's), host networking as
compose/example.env has it; the user's docker CLI talks to each host's daemon."""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pirex.core import experiment, proc
from pirex.core.paths import REPO
from pirex.images import localregistry, publish, settings, sources
from pirex.images import platforms as plat

from . import netns
from .conftest import ROLES, TEST_TAG

pytestmark = pytest.mark.docker

USER = "pirex-readme"
MARK = re.compile(r"<!-- tested: without-pirex[^>]*-->\s*```sh\n(.*?)```", re.DOTALL)
# the pages that show the marked blocks: docker run of the images; docker compose on one host and per role
DOCS = (REPO / "docs/images.md", REPO / "docs/across-machines.md")


def readme_blocks() -> dict[str, list[str]]:
    """The marked blocks by what they run: one-host compose, the per-role files, docker run."""
    blocks = [b for doc in DOCS for b in MARK.findall(doc.read_text())]
    named = {}
    for b in blocks:
        key = "roles" if "pair.env" in b else "one-host" if "jpa-rest.yml" in b else "docker-run"
        named[key] = [ln for ln in b.splitlines() if ln.strip()]
    assert set(named) == {"one-host", "roles", "docker-run"}, f"marked blocks in {[str(d) for d in DOCS]}: {blocks}"
    return named


@pytest.fixture
def user():
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        proc.run(["useradd", "--create-home", "--groups", "docker", USER], timeout=60)
    yield pwd.getpwnam(USER)
    proc.run(["userdel", "--remove", USER], timeout=60, check=False)


@pytest.fixture
def home(user):
    """The user's folder standing for a checkout: compose/ copied, .venv linked."""
    d = Path(tempfile.mkdtemp(prefix="pirex-readme-"))
    shutil.copytree(REPO / "compose", d / "compose")
    (d / ".venv").symlink_to(REPO / ".venv")
    proc.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", d], timeout=60)
    d.chmod(0o755)
    yield d
    for f in ("jpa-rest.yml", "db.yml", "web.yml", "driver.yml"):
        env = ["--env-file", str(d / "compose/pair.env")] if f != "jpa-rest.yml" else []
        if (d / "compose/pair.env").exists() or not env:
            subprocess.run(
                ["docker", "compose", "-f", str(d / "compose" / f), *env, "down", "-v"],
                capture_output=True,
                timeout=300,
            )
    shutil.rmtree(d)


def run_as(user, home: Path, line: str, tag: str, host: netns.Host | None = None) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": user.pw_dir, "PIREX_TAG": tag, **(host.env if host else {})}
    # the checkout's .venv: its Python may live in root's home (this CI machine's pyenv), out of the user's reach
    who = [] if line.startswith(".venv/bin/pirex ") else ["runuser", "-u", user.pw_name, "--"]
    r = subprocess.run(
        [*who, "bash", "-euc", line],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if not who:  # what the root line wrote is the user's, as if they had run it
        proc.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", home / "compose"], timeout=60)
    assert r.returncode == 0, f"README line failed ({r.returncode}): {line}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def owner(path: Path) -> int:
    return path.stat().st_uid


def requests(folder: Path) -> list[dict]:
    with open(folder / "requests.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_readme_blocks_run_as_written_by_a_non_root_user(built_host, user, home):
    tag = built_host.tag
    # the session's registry may be another pirex's that has stopped since: this test's own then
    with localregistry.local_registry():
        for name in ("jmh", "fork"):  # as `make load` leaves them: localhost:5000/pirex/<name>:<tag>
            sources.tagged_locally(name, tag, plat.host())
        run_blocks(user, home, tag)


def run_blocks(user, home: Path, tag: str) -> None:
    blocks = readme_blocks()
    quick = settings.of(experiment.load("jpa-rest"), "quick")
    results = home / "results/jpa-rest/compose"

    for line in blocks["one-host"]:
        run_as(user, home, line, tag)
    rows = requests(results)
    assert len(rows) == 3 * int(quick["REQUESTS_PER_OPERATION"]) and all(r["ok"] == "1" for r in rows)
    assert owner(results / "requests.csv") == user.pw_uid, "the folder was the user's: so are the results"
    results.rename(results.with_name("one-host"))

    for line in blocks["docker-run"]:
        run_as(user, home, line.replace("<tag>", tag), tag)
    jmh = json.loads((home / "results/jmh/jmh.json").read_text())
    assert {r["benchmark"].rsplit(".", 2)[-2] for r in jmh} == {
        "RecursionBenchmark",
        "FileWriteBenchmark",
        "TcpSendBenchmark",
    }
    assert owner(home / "results/jmh/jmh.json") == user.pw_uid
    forks = list((home / "results/fork").glob("*/fork.csv"))
    assert forks and all(owner(f) == user.pw_uid for f in forks)


WHERE = {"# on the database Pi": "pi-b", "# on the web Pi": "pi-a", "# on the laptop": "laptop"}


def test_the_per_role_files_run_as_written_on_three_hosts(three_hosts, user, home):
    """The README's per-role block: each `docker compose` line on the host its comment names (its daemon, in its
    namespace), the other lines here; the database and the service on two hosts, the driver on a third."""
    h = three_hosts
    quick = settings.of(experiment.load("jpa-rest"), "quick")
    results = home / "results/jpa-rest/compose"
    try:
        for line in readme_blocks()["roles"]:
            where = [host for comment, host in WHERE.items() if comment in line]
            run_as(user, home, line, TEST_TAG, h[where[0]] if where else None)
            if "example.env" in line:  # "fill in addresses"
                with open(home / "compose/pair.env", "a") as f:
                    f.write(f"DB_HOST={h['pi-b'].address}\nWEB_HOST={h['pi-a'].address}\n")
        rows = requests(results)
        assert len(rows) == 3 * int(quick["REQUESTS_PER_OPERATION"]) and all(r["ok"] == "1" for r in rows)
        # the service answered from pi-a and read pi-b's table: reads found the loaded customers
        assert all(r["status"] == "200" for r in rows if r["operation"] == "read")
        assert owner(results) == owner(results / "requests.csv") == 1000, "Docker made it: uid 1000 (the README)"
    finally:
        for host, (file, _) in ROLES.items():
            h[host].docker(
                "compose",
                "-f",
                str(home / "compose" / file),
                "--env-file",
                str(home / "compose/pair.env"),
                "down",
                "-v",
                "--timeout",
                "30",
                timeout=300,
                check=False,
            )


def test_a_folder_that_cannot_be_written_is_one_line(built_host, tmp_path):
    ref = publish.pull_local("jmh", built_host.tag, plat.host())
    r = proc.run(
        ["docker", "run", "--rm", "--user", "4321", "-v", f"{tmp_path}:/results", ref], timeout=300, check=False
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot write" in r.stderr, r.stderr
