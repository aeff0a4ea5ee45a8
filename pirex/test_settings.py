"""The experiment's numbers leave experiment.yaml in one form: every committed file rendered from it
is current, the compose files and image scripts hold no copy, and an .env file's values are checked."""

import re

import pytest

from pirex import experiment, settings
from pirex.errors import PirexError
from pirex.paths import REPO
from pirex.runner import compose


def test_every_rendered_file_is_current():
    files = settings.generated_files()
    assert {f.relative_to(REPO).as_posix() for f in files} >= {
        "images/locust/profiles/quick.env",
        "images/locust/profiles/paper.env",
        "images/moobench/profiles/quick.env",
    }
    for f in files:
        m = settings.GENERATED.match(f.read_text())
        assert m["path"] == f.relative_to(REPO).as_posix(), f"{f}: its header names another file"
        assert f.read_text() == settings.rendered(m["experiment"], m["profile"], m["path"]), (
            f"{f} is stale: run {m[0].removeprefix('# written by ')}"
        )


def test_the_settings_are_the_parameters_in_upper_case_and_the_role_ports():
    exp = experiment.load("jpa-rest")
    s = settings.of(exp, "paper", ["customers=5"])
    assert s["PROFILE"] == "paper" and s["CUSTOMERS"] == "5" and s["REQUESTS_PER_OPERATION"] == "200000"
    assert (s["DB_PORT"], s["WEB_PORT"]) == ("5432", "8080"), "the roles' ports of experiment.yaml"
    with pytest.raises(PirexError, match="customers"):
        settings.of(exp, "quick", ["customers=0"])
    text = settings.text({"A": "", "B": "two words", "C": "1"})
    assert text == "A=''\nB='two words'\nC=1\n"


# a number as compose files and scripts used to write them: a default after :-, an assignment, an option's value
COPY = re.compile(r":-(\d+)|^\s*\w+=(\d+)\b|--[a-z-]+ (\d+)\b", re.M)


@pytest.mark.parametrize(
    "path",
    [
        "compose/jpa-rest.yml",
        "compose/db.yml",
        "compose/web.yml",
        "compose/driver.yml",
        "compose/stack.yml",
        "compose/example.env",
        "images/locust/pirex-locust",
        "images/moobench/pirex-moobench",
    ],
)
def test_no_copy_of_a_number_of_the_experiments(path):
    """Every number of jpa-rest and moobench comes from experiment.yaml (pirex/settings.py); none is written out
    as a fallback default."""
    text = (REPO / path).read_text()
    numbers = {
        v
        for e in ("jpa-rest", "moobench")
        for p in ("quick", "paper")
        for k, v in settings.of(experiment.load(e), p).items()
        if v.isdigit() and int(v) > 1
    }
    found = [m.group(0) for m in COPY.finditer(text) if next(g for g in m.groups() if g) in numbers]
    assert not found, f"{path}: {found}"


def test_a_split_run_takes_the_profiles_numbers_under_the_files_own():
    env = compose.split_env("jpa-rest", {"PROFILE": "paper", "CUSTOMERS": "2000", "DB_PASSWORD": "x"})
    assert env["CUSTOMERS"] == "2000" and env["REQUESTS_PER_OPERATION"] == "200000" and env["POOL_SIZE"] == "16"
    assert "DB_PASSWORD" not in compose.split_env("jpa-rest", {}), "a secret only from the file"
    with pytest.raises(PirexError, match=r"customers='many'.*in the .env file"):
        compose.split_env("jpa-rest", {"CUSTOMERS": "many"})


def test_compose_names_the_experiments_with_a_deployment():
    with pytest.raises(
        PirexError, match="jmh declares no deployment with compose files.*experiments that do: jpa-rest"
    ):
        compose.deployment_of("jmh")
    assert compose.images("jpa-rest") == ("locust", "postgres", "jpa-rest")
    assert compose.one_host_file("jpa-rest") == REPO / "compose" / "jpa-rest.yml"
    assert set(compose.host_files("jpa-rest")) == {"db", "web", "driver"}
