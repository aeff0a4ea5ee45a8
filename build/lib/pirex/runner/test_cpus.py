"""`pirex run --cpus`: every step of every variant pinned alike, checked before anything runs."""

import os

import pytest

from pirex.core import experiment
from pirex.core.errors import PirexError
from pirex.runner import host, runplan


def one_online_cpu() -> str:
    return str(min(os.sched_getaffinity(0)))


def checked(text, exp, matrix=None):
    return runplan._cpus(text, exp, matrix, frozenset(host.online_cpus()))


def test_every_variant_and_its_aa_copy_is_pinned_and_the_record_says_so():
    exp = experiment.load("jmh")
    cpu = checked(f" {one_online_cpu()} ", exp)
    by_name = runplan.variants_of(exp, ("native", "docker", "native-aa"), cpus=cpu)
    assert {v.cpus for v in by_name.values()} == {cpu}
    assert by_name["native"].describe()["taskset"] == cpu
    assert by_name["native-aa"].describe()["taskset"] == cpu
    assert by_name["docker"].describe()["extra_docker_args"] == ["--cpuset-cpus", cpu]


def test_without_cpus_nothing_is_pinned():
    exp = experiment.load("jmh")
    assert checked(None, exp) is None
    by_name = runplan.variants_of(exp, ("native", "docker"))
    assert all(v.cpus is None for v in by_name.values())
    assert "--cpuset-cpus" not in by_name["docker"].describe()["extra_docker_args"]


@pytest.mark.parametrize("text", ["", "a", "1-", "-1", "1,,2", "0x1", "1 2"])
def test_a_malformed_cpu_list_is_refused_with_the_form_expected(text):
    with pytest.raises(PirexError, match="expected a CPU list"):
        checked(text, experiment.load("jmh"))


def test_cpus_not_online_here_are_named():
    absent = max(os.sched_getaffinity(0)) + 7
    with pytest.raises(PirexError, match=rf"CPUs \[{absent}\] are not online here"):
        checked(f"{one_online_cpu()},{absent}", experiment.load("jmh"))


def test_refused_with_a_matrix_whose_cases_declare_their_own_cpus():
    exp = experiment.load("moobench")
    with pytest.raises(PirexError, match="declares its cases' CPUs itself"):
        checked(one_online_cpu(), exp, runplan.matrix_of(exp, "fluctuation"))


def test_refused_for_a_deployment_it_would_not_pin():
    with pytest.raises(PirexError, match="deploys servers and a driver"):
        checked(one_online_cpu(), experiment.load("jpa-rest"))
