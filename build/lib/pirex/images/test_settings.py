"""The experiment's numbers leave experiment.yaml in one form: every committed file rendered from it
is current, the compose files and image scripts hold no copy, and an .env file's values are checked.
The tools' versions are pinned once, and every text that names one says the same."""

import os
import re
import subprocess

import pytest

from pirex.core import experiment
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.images import settings
from pirex.runner import compose

# Each image that runs on its own (`docker run IMAGE`: CMD ["quick"]) and the experiment whose profiles it runs
STAND_ALONE = {"jmh": "jmh", "fork": "fork", "moobench": "moobench", "locust": "jpa-rest"}


def test_every_rendered_file_is_current():
    files = settings.generated_files()
    assert {f.relative_to(REPO).as_posix() for f in files} >= {
        "images/jmh/profiles/quick.env",
        "images/jmh/profiles/paper.env",
        "images/fork/profiles/quick.env",
        "images/fork/profiles/paper.env",
        "images/locust/profiles/quick.env",
        "images/locust/profiles/paper.env",
        "images/moobench/profiles/quick.env",
    }
    assert set(files) == set(REPO.glob("images/*/profiles/*")), "a file of profiles/ written by hand"
    for f in files:
        m = settings.GENERATED.match(f.read_text())
        assert m["path"] == f.relative_to(REPO).as_posix(), f"{f}: its header names another file"
        assert f.read_text() == settings.rendered(m["experiment"], m["profile"], m["path"]), (
            f"{f} is stale: run {m[0].removeprefix('# written by ')}"
        )


def test_every_stand_alone_image_runs_its_experiments_rendered_quick_profile():
    runs_alone = {f.parent.name for f in REPO.glob("images/*/Dockerfile") if 'CMD ["quick"]' in f.read_text()}
    assert runs_alone == set(STAND_ALONE), "an image's `docker run IMAGE` needs its profiles rendered here"
    for image, experiment_id in STAND_ALONE.items():
        quick = REPO / "images" / image / "profiles" / "quick.env"
        assert settings.GENERATED.match(quick.read_text())["experiment"] == experiment_id, quick
        assert f"COPY {image}/profiles/ /opt/pirex/profiles/" in (REPO / "images" / image / "Dockerfile").read_text()


def fake_tools(tmp_path, *names):
    """Commands on PATH that print their arguments, one a line, instead of running."""
    for name in names:
        f = tmp_path / "bin" / name
        f.parent.mkdir(exist_ok=True)
        f.write_text('#!/bin/sh\nprintf "%s\\n" "$(basename "$0")" "$@"\n')
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "RESULTS": str(tmp_path / "r")}


def test_the_jmh_image_alone_runs_the_profiles_forks_iterations_times_and_depth(tmp_path):
    env = {**fake_tools(tmp_path, "java"), "JMH_SINK": "sink.example:7"}
    for profile in ("quick", "paper"):
        p = experiment.load("jmh").resolve(profile)
        out = subprocess.run(
            ["sh", REPO / "images/jmh/pirex-jmh", profile], env=env, capture_output=True, text=True, check=True
        )
        argv = out.stdout.splitlines()
        options = dict(zip(argv[3:-1:2], argv[4:-1:2], strict=True))
        assert options["-f"] == str(p["repetitions"] * p["forks"]), "the profile's JVMs per benchmark"
        assert (options["-wi"], options["-i"]) == (str(p["warmup_iterations"]), str(p["iterations"]))
        assert (options["-w"], options["-r"]) == (p["warmup_time"], p["time"])
        assert options["-jvmArgsAppend"] == p["jvm_options"], "the forks' JVM options (paper: the serial collector)"
        assert f"depth={p['depth']}" in argv and "host=sink.example" in argv and argv[-1] == p["benchmarks"]


def test_the_fork_image_alone_runs_the_profiles_sizes_and_forks():
    for profile in ("quick", "paper"):
        p = experiment.load("fork").resolve(profile)
        out = subprocess.run(
            ["sh", REPO / "images/fork/pirex-fork", profile, "--dry-run", "--assume-cpus", "4"],
            capture_output=True,
            text=True,
            check=True,
        )
        modes = dict(ln.split(": ", 1) for ln in out.stdout.splitlines())
        assert list(modes) == p["modes"].split(",")
        for command in modes.values():
            words = command.split()
            assert words[words.index("--sizes") + 1] == p["sizes"]
            assert words[words.index("--repetitions") + 1] == str(p["repetitions"] * p["fork_repetitions"])
            assert "--raw-events" not in words, "auto is chosen by pirex run; the image alone counts none"


def test_the_jmh_jars_own_defaults_are_the_experiments():
    """`java -jar jmh.jar` without options runs the paper's protocol at the declared depth."""
    exp = experiment.load("jmh")
    paper = exp.resolve("paper")
    sources = REPO / "images/jmh/src/main/java/io/github/pirexbench/jmh"
    recursion = (sources / "RecursionBenchmark.java").read_text()
    assert re.search(r'@Param\("(\d+)"\)\s+public int depth;', recursion)[1] == str(exp.declared["depth"].default)
    for name in ("RecursionBenchmark", "FileWriteBenchmark", "TcpSendBenchmark"):
        text = (sources / f"{name}.java").read_text()
        assert f"@Fork({paper['repetitions'] * paper['forks']})" in text, name
        assert f"@Warmup(iterations = {paper['warmup_iterations']}, time = {paper['warmup_time'][:-1]})" in text
        assert f"@Measurement(iterations = {paper['iterations']}, time = {paper['time'][:-1]})" in text
        assert paper["time"].endswith("s") and "timeUnit" not in text, "JMH's default unit, seconds"


# a version as a text names a tool's: "Kieker 2.0.2", "OpenTelemetry Java agent 2.33.1", "Spring Boot 3.5"
NAMED_VERSION = re.compile(
    rf"({'|'.join(settings.MAVEN_TOOLS | settings.PIP_TOOLS)})(?: Java)?(?: agent)? (\d+(?:\.\d+)+)"
)


def test_every_text_that_names_a_tools_version_names_the_pinned_one():
    pinned = settings.tool_versions()
    texts = [REPO / "README.md", *REPO.glob("docs/*.md"), REPO / "registry.yaml", REPO / "analysis/deviations.yaml"]
    texts += [*REPO.glob("images/*/Dockerfile"), *REPO.glob("images/*/README.md"), *REPO.glob("images/*/pirex-*")]
    texts += REPO.glob("images/moobench/config/*/*")
    named = [(f, m[1], m[2]) for f in texts for m in NAMED_VERSION.finditer(f.read_text())]
    assert {tool for _, tool, _ in named} == set(pinned), "every tool named with its version somewhere"
    for f, tool, version in named:
        assert f"{pinned[tool]}.".startswith(f"{version}."), (
            f"{f.relative_to(REPO)}: {tool} {version}, pinned {pinned[tool]}"
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
        "images/jmh/pirex-jmh",
        "images/fork/pirex-fork",
    ],
)
def test_no_copy_of_a_number_of_the_experiments(path):
    """Every number of the experiments comes from experiment.yaml (pirex/images/settings.py); none is written out
    as a fallback default."""
    text = (REPO / path).read_text()
    numbers = {
        v
        for e in STAND_ALONE.values()
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
