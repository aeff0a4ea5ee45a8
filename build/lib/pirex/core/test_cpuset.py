from pirex.core import cpuset


def test_cpu_lists_read_and_written_as_linux_does():
    assert cpuset.parse_cpus("0") == {0}
    assert cpuset.parse_cpus("0-2,5") == {0, 1, 2, 5}
    assert cpuset.cpu_list({5, 0, 2, 1}) == "0-2,5"
    assert cpuset.cpu_list(cpuset.parse_cpus("0,2-3,7")) == "0,2-3,7"
