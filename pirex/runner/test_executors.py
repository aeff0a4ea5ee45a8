"""The one place that chooses how a variant runs (Variant.executor), and what each executor does of its own in a
duet and in a record; the steps themselves run in the Docker tests (tests/test_run_*.py, test_container.py)."""

from pirex.runner import duet, executors, leftovers, native, variants


def test_every_variant_has_one_executor_and_a_case_or_copy_runs_as_its_base():
    for name in ("native", "native-aa", "docker", "docker-host-network", "docker-bind-workdir", "docker-aa"):
        v = variants.by_name(name)
        expected = executors.Native if name.startswith("native") else executors.Docker
        assert type(v.executor) is expected and v.executor.variant is v
        assert v.executor.kind == ("native" if name.startswith("native") else "docker")


def test_two_native_sides_of_a_duet_get_their_own_work_directory_and_tmp(monkeypatch, tmp_path):
    root = tmp_path / "export"
    monkeypatch.setattr(native, "rootfs", lambda ref: (root, {}))
    v = variants.by_name("native")
    alone, nothing = v.executor.beside(1, {"reference": "r"}, tmp_path, "native", "c")
    assert alone.variant is v and nothing is None
    own, prepare = v.executor.beside(2, {"reference": "r"}, tmp_path, "native-aa", "c")
    assert own.variant.bind_workdir and not v.bind_workdir and callable(prepare)
    bound = []
    monkeypatch.setattr(duet, "own_mounts", bound.append)  # in the side's process: its /tmp over the shared root's
    prepare()
    assert bound == [{tmp_path / "native-aa-tmp": root / "tmp"}]


def test_a_docker_side_is_noted_before_it_starts(monkeypatch, tmp_path):
    noted = []
    monkeypatch.setattr(leftovers, "note", lambda kind, **info: noted.append((kind, info)))
    v = variants.by_name("docker")
    ex = v.executor
    same, prepare = ex.beside(2, {"reference": "r"}, tmp_path, "docker", "pirex-r1-docker-0")
    assert same is ex and prepare is None
    assert noted == [("container", {"name": "pirex-r1-docker-0"})]


def test_a_served_role_records_where_it_listens_and_no_secret():
    where = executors.Serving("pirex-r1-web", "host", address="127.0.0.1:8080")
    assert where.alias is None and where.publish is None
    assert executors.masked({"DB_PASSWORD": "x", "PORT": "1"}) == {"DB_PASSWORD": "(set)", "PORT": "1"}
    assert executors._masked("DB_PASSWORD=x") == "DB_PASSWORD=(set)" and executors._masked("--name=x") == "--name=x"
