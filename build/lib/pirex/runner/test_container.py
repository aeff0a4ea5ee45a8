"""ContainerSpec.argv() at every place the runner starts a container, against the argv that place wrote out by hand
before the spec (the literal lists below): the same flags in the same order, the image, its command. The engine is
not asked: proc.run records what it would have run, inside a run of its own (labelled pirex.run=r1)."""

from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import pytest

from pirex.core import proc
from pirex.runner import container, deployment, leftovers, run, variants

LABEL = ["--label", "pirex.run=r1"]
REF = "example/jmh@sha256:0123"
PLATFORM = "linux/arm64"


@pytest.fixture
def ran(monkeypatch) -> list[list[str]]:
    """Every command proc.run was given (each answered as done, saying the image's user and a ready line)."""
    calls = []

    def fake_run(cmd, *args, **kwargs):
        calls.append(list(cmd))
        return proc.Result(list(cmd), 0, "ready\n" if cmd[:2] == ["docker", "logs"] else "999:999\n", "", [])

    monkeypatch.setattr(proc, "run", fake_run)
    monkeypatch.setattr(leftovers, "current", lambda: SimpleNamespace(run_id="r1", note=lambda kind, **info: None))
    return calls


def docker_run(calls: list[list[str]]) -> list[str]:
    (found,) = [c for c in calls if c[:2] == ["docker", "run"]]
    return found


def servers(tmp_path: Path) -> deployment.Servers:
    return deployment.Servers(SimpleNamespace(roles={}), {}, {}, SimpleNamespace(run_id="r1"), tmp_path, {})


def test_the_labels_are_the_runs(ran):
    assert ["--label", *container.run_labels()] == leftovers.docker_args() == LABEL
    assert container.ContainerSpec(REF, labels=("a=1", "b=2")).argv() == [
        "docker",
        "run",
        "--label",
        "a=1",
        "--label",
        "b=2",
        REF,
    ]


def test_an_empty_spec_is_docker_run_of_the_image():
    assert container.ContainerSpec(REF).argv() == ["docker", "run", REF]
    assert container.ContainerSpec(REF, ("java", "-version")).argv() == ["docker", "run", REF, "java", "-version"]


@pytest.mark.parametrize("host_network", [False, True])
def test_deployment_setup(ran, tmp_path, host_network):
    s = servers(tmp_path)
    v = variants.Variant("docker", host_network=host_network)
    image = {"reference": REF, "platform": PLATFORM}
    env = {"DB_URL": "jdbc:postgresql://db:5432/x", "DB_PASSWORD": "p"}
    s._run_to_end(v, image, ["load", "--rows", "3000"], env, "pirex-r1-setup", 60)
    network = ["--network", "host"] if host_network else ["--network", "pirex-r1-net"]
    old = ["docker", "run", "--rm", "--name", "pirex-r1-setup", *LABEL, "--platform", PLATFORM, *network]
    for k, val in env.items():
        old += ["-e", f"{k}={val}"]
    assert docker_run(ran) == [*old, REF, "load", "--rows", "3000"]


@pytest.mark.parametrize("bridged", [False, True])
def test_deployment_role(ran, tmp_path, bridged):
    s = servers(tmp_path)
    v = variants.Variant("docker", ["--security-opt", "seccomp=unconfined"], host_network=not bridged)
    s.images = {"postgres": {"reference": REF, "platform": PLATFORM}}
    role = SimpleNamespace(
        name="db", image="postgres", command=("postgres", "-p", "{port}"), environment={"POSTGRES_PASSWORD": "{pw}"}
    )
    binds = {tmp_path / "db-data": "/var/lib/postgresql/data"}
    publish = (40001, 5432) if bridged else None
    how: dict = {}
    with ExitStack() as stack:
        s._start(stack, role, v, {"port": 5432, "pw": "secret"}, tmp_path, binds, how, publish)
        argv = docker_run(ran)
    old = [
        "docker",
        "run",
        "-d",
        "--name",
        "pirex-r1-db",
        *LABEL,
        "--platform",
        PLATFORM,
        "--security-opt",
        "seccomp=unconfined",
        *(["--network", "pirex-r1-net"] if bridged else ["--network", "host"]),
    ]
    if bridged:
        old += ["--network-alias", "db"]
        old += ["-p", "127.0.0.1:40001:5432"]
    old += ["-v", f"{tmp_path / 'db-data'}:/var/lib/postgresql/data"]
    old += ["-e", "POSTGRES_PASSWORD=secret"]
    assert argv == [*old, REF, "postgres", "-p", "5432"]
    assert how["db"]["docker_args"] == [*old[2:-1], "POSTGRES_PASSWORD=(set)"], "the record: no secret, no image"


def test_deployment_image_user(ran):
    assert deployment.image_user(REF) == "999:999"
    old = ["docker", "run", "--rm", *LABEL, "--entrypoint", "sh", REF, "-c", 'echo "$(id -u):$(id -g)"']
    assert docker_run(ran) == old


def test_run_jvm_of(ran):
    run.jvm_of({"reference": REF, "platform": PLATFORM})
    old = ["docker", "run", "--rm", "--platform", PLATFORM, REF, "java", "-XshowSettings:properties", "-version"]
    assert docker_run(ran) == old


def test_run_service(ran):
    spec = SimpleNamespace(name="sink", command=("sink", "--port", "{sink_port}"), ready_line="ready")
    run.Service(spec, REF, {"sink_port": 9000}, "pirex-r1-sink").__enter__()
    old = ["docker", "run", "-d", "--rm", "--name", "pirex-r1-sink", *LABEL, "--network", "host", REF]
    assert docker_run(ran) == [*old, "sink", "--port", "9000"]


def test_run_optional_part_probe(ran):
    matrix = SimpleNamespace(fallback={"probe": ["java", "-cp", "/opt/spass", "Probe"]})
    assert not run._lacks_optional_part(matrix, {"reference": REF, "platform": PLATFORM})
    old = ["docker", "run", "--rm", "--platform", PLATFORM, REF, "java", "-cp", "/opt/spass", "Probe"]
    assert docker_run(ran) == old


@pytest.mark.parametrize(
    "variant",
    [
        variants.by_name("docker"),
        variants.by_name("docker-host-network"),
        variants.by_name("docker-bind-workdir"),
        variants.by_name("docker-seccomp-unconfined"),
        variants.Variant("depth-1", ["--user", "0:0"], bind_workdir=True, cpus="1-2", ram_workdir_mb=100),
    ],
    ids=lambda v: v.name,
)
@pytest.mark.parametrize("platform", [PLATFORM, None])
def test_variants_step(ran, tmp_path, variant, platform):
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    r = variants.run_step(variant, REF, ["-f", "1", "-i", "2"], out, work, 60, "pirex-r1-docker-0", platform)
    old = ["docker", "run", "--name", "pirex-r1-docker-0", *LABEL, "-v", f"{out}:/results"]
    if platform:
        old += ["--platform", platform]
    old += variant.extra_docker_args(work)
    assert docker_run(ran) == r.argv == [*old, REF, "-f", "1", "-i", "2"]
