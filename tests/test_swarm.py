"""ICPE'18 Experiment 3 on a Docker Swarm across three hosts: network namespaces on a bridge, each
with its own Docker daemon and hostname (the laptop the manager, pi-a and pi-b workers labelled
pirex.role=web and db), `pirex swarm jpa-rest` run on the laptop. Afterwards nothing is left: the
stack, the swarm, the daemons, the namespaces, the FORWARD rule, the mounts."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pirex.analysis import jpa
from pirex.core import bundle, experiment, machine, proc
from pirex.core.bundle import Bundle
from pirex.core.paths import REPO
from pirex.images import localregistry, publish, settings
from pirex.images import platforms as plat

from . import netns
from .conftest import TEST_TAG

pytestmark = pytest.mark.docker

SITE = 2  # its own bridge, subnet and namespaces: the split test's hosts are site 0
NAMES = ["laptop", "pi-a", "pi-b"]
LABELS = {"pi-a": "web", "pi-b": "db"}
IMAGES = {"laptop": ["locust"], "pi-a": ["jpa-rest", "locust"], "pi-b": ["postgres", "jpa-rest", "locust"]}
TINY = ["--set", "customers=300", "--set", "requests_per_operation=30", "--set", "users=4"]


@contextlib.contextmanager
def swarm(hosts: dict[str, netns.Host]):
    """The three daemons joined into one swarm (laptop the manager), labelled; left on every exit path."""
    laptop = hosts["laptop"]
    for name in NAMES:  # a swarm an earlier (killed or failed) run left in the kept data roots
        if hosts[name].docker("info", "-f", "{{.Swarm.LocalNodeState}}", timeout=60).stdout.strip() != "inactive":
            hosts[name].docker("swarm", "leave", "--force", timeout=120)
    try:
        laptop.docker("swarm", "init", "--advertise-addr", laptop.address, timeout=120)
        token = laptop.docker("swarm", "join-token", "-q", "worker").stdout.strip()
        for name in ("pi-a", "pi-b"):
            hosts[name].docker("swarm", "join", "--token", token, f"{laptop.address}:2377", timeout=120)
        nodes = {
            n.split()[1]: n.split()[0]
            for n in laptop.docker("node", "ls", "--format", "{{.ID}} {{.Hostname}}").stdout.splitlines()
        }
        assert set(nodes) == set(NAMES), nodes  # each daemon its own hostname
        for name, role in LABELS.items():
            laptop.docker("node", "update", "--label-add", f"pirex.role={role}", nodes[name])
        yield nodes
    finally:
        for name in ("pi-a", "pi-b", "laptop"):
            hosts[name].docker("swarm", "leave", "--force", timeout=120, check=False)


@pytest.fixture(scope="module")
def swarm_hosts(built):
    missing = [t for t in ("ip", "nsenter", "unshare", "iptables", "dockerd") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        pytest.fail(f"the swarm test needs root and {', '.join(missing) or 'nothing else'}")
    with localregistry.local_registry():
        for name in ("postgres", "jpa-rest", "locust"):
            publish.load_local(name, TEST_TAG, plat.host())
    with netns.hosts(NAMES, site=SITE, hostnames=True) as hosts:
        for h in hosts.values():  # what a killed earlier run left in the kept data roots
            h.docker("container", "prune", "-f")
        for name, images in IMAGES.items():
            netns.copy_images(hosts[name], [publish.local_ref(i, TEST_TAG) for i in images])
        with swarm(hosts) as nodes:
            yield hosts, nodes
        for h in hosts.values():  # the data roots are kept for the next run: not the images a new build replaced
            h.docker("image", "prune", "-f", check=False)
    assert not leftovers(), leftovers()


def leftovers() -> list[str]:
    """What the hosts could leave on this machine: namespaces, the bridge, the FORWARD rule, mounts."""
    out = [ns for ns in proc.run(["ip", "netns", "list"], timeout=30).stdout.split() if ns.startswith(f"pirex{SITE}-")]
    if proc.run(["ip", "link", "show", f"pirexbr{SITE}"], timeout=30, check=False).ok:
        out.append(f"bridge pirexbr{SITE}")
    out += [r for r in proc.run(["iptables", "-S", "FORWARD"], timeout=30).stdout.splitlines() if f"pirexbr{SITE}" in r]
    with open("/proc/self/mountinfo") as f:
        out += [ln.split()[4] for ln in f if f"/run/pirex-netns{SITE}/" in ln.split()[4]]
    return out


STEP = Path("swarm", "0")  # a `pirex swarm` bundle's one step: the driver's results


def bundles(results: Path) -> list[Path]:
    """The bundles `pirex swarm` wrote under results."""
    return [m.parent for m in (results / "jpa-rest").glob("*/manifest.json")]


def pirex_swarm(hosts, results: Path, *args: str) -> proc.Result:
    """What the user types on the laptop: pirex in the laptop's namespace, against its daemon."""
    laptop = hosts["laptop"]
    return proc.run(
        [
            "nsenter",
            f"--net=/run/netns/{laptop.netns}",
            sys.executable,
            "-m",
            "pirex",
            "swarm",
            "jpa-rest",
            "--profile",
            "quick",
            "--tag",
            TEST_TAG,
            "--results-dir",
            str(results),
            *TINY,
            *args,
        ],
        timeout=1200,
        check=False,
        env=laptop.env,
    )


def stack_left(hosts) -> list[str]:
    """The stack and its containers on any node. pirex returns once the swarm has removed the tasks;
    each node removes a task's container right after, on its own: a minute's grace for that."""
    deadline = time.monotonic() + 60
    while True:
        out = hosts["laptop"].docker("stack", "ls", "--format", "{{.Name}}").stdout.split()
        for h in hosts.values():
            out += h.docker("ps", "-aq", "--filter", "label=com.docker.stack.namespace=pirex").stdout.split()
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(1)


def test_the_stack_runs_each_role_on_its_node_and_is_removed(swarm_hosts, tmp_path):
    hosts, nodes = swarm_hosts
    r = pirex_swarm(hosts, tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [out] = bundles(tmp_path)
    rows = list(csv.DictReader((out / STEP / "requests.csv").read_text().splitlines()))
    assert len(rows) == 3 * 30 and all(row["ok"] == "1" for row in rows), "no failed request"
    assert all(row["status"] == "200" for row in rows if row["operation"] == "read"), "pi-b's table, read from pi-a"
    assert Bundle.open(out).status == "complete" and bundle.verify(out) == [], "a bundle, as every run writes"
    disk = machine.record(Path("/"), docker=False)["storage"]  # the nodes' / is this machine's
    for node, node_id in nodes.items():  # a record from every node, each taken on that node
        record = json.loads((out / f"machine-node-{node_id[:12]}.json").read_text())
        assert record["before"]["hostname"] == node and record["before"]["cpu"]["cores"], node
        storage = record["before"]["storage"]  # the node's root disk, not the container's overlay
        assert (storage["fstype"], storage["disk"]) == (disk["fstype"], disk["disk"]) != ("overlay", None), storage
    for role, node in (("db", "pi-b"), ("web", "pi-a"), ("driver", "laptop")):
        record = json.loads((out / f"machine-{role}.json").read_text())
        assert record["node"]["hostname"] == node and record["before"]["hostname"] == node
    assert len((out / STEP / "web-memory.csv").read_text().splitlines()) >= 2, "the service's heap, sampled"
    assert "placement: db on pi-b" in r.stdout and "web on pi-a" in r.stdout and "driver on laptop" in r.stdout
    label = jpa.placement(out)
    assert label.startswith("web pi-a (") and ", db pi-b (" in label and label.endswith("docker (host network)")
    assert label in r.stdout, "Table 3 names the placement"
    assert (out / "stack" / "loader.log").read_text(), "the services' logs are kept"
    assert not stack_left(hosts)


def test_the_overlay_variant_runs_without_iptables_in_the_namespaces(swarm_hosts, tmp_path):
    """The daemons run with --iptables=false: the roles find each other by DNS (endpoint_mode dnsrr, no
    virtual IP, which needs IPVS and iptables), across nodes over VXLAN."""
    hosts, _ = swarm_hosts
    r = pirex_swarm(hosts, tmp_path, "--network", "overlay")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [out] = bundles(tmp_path)
    rows = list(csv.DictReader((out / STEP / "requests.csv").read_text().splitlines()))
    assert len(rows) == 3 * 30 and all(row["ok"] == "1" for row in rows)
    assert jpa.placement(out).endswith("docker (overlay network)")
    assert not stack_left(hosts)
    assert not hosts["laptop"].docker("network", "ls", "-q", "--filter", "name=pirex-overlay").stdout.strip()


# the page that shows the swarm's by-hand line (it was the README's)
SWARM_DOC = REPO / "docs/across-machines.md"


def readme_stack_line() -> str:
    """The docs' line that deploys the stack by hand, as written there."""
    lines = [ln for ln in SWARM_DOC.read_text().splitlines() if "docker stack deploy -c" in ln]
    found = [ln for ln in lines if ln.startswith("eval ")]
    assert len(found) == 1, f"{SWARM_DOC}: expected one `eval ... && docker stack deploy` line, found {lines}"
    return found[0]


def test_the_readmes_plain_stack_deploy_runs_as_written(swarm_hosts):
    """`eval "$(.venv/bin/pirex swarm jpa-rest --print-env)" && docker stack deploy -c compose/stack.yml pirex`,
    read from docs/across-machines.md and run from the checkout on the laptop (PIREX_TAG naming this session's
    images, as the docs say): every role at once at the quick profile (the driver waits for the service to be healthy),
    nothing pirex does in between; the results land in the checkout's results/jpa-rest/swarm-by-hand."""
    hosts, _ = swarm_hosts
    laptop = hosts["laptop"]
    out = REPO / "results" / "jpa-rest" / "swarm-by-hand"
    made = [d for d in (out.parent.parent, out.parent) if not d.exists()]  # removed again: root's, in a checkout
    kept = out.with_name(f"swarm-by-hand.kept-{os.getpid()}")
    if out.exists():  # a user's own by-hand results are put back afterwards
        out.rename(kept)
    quick = settings.of(experiment.load("jpa-rest"), "quick")
    try:
        deploy = proc.run(
            ["nsenter", f"--net=/run/netns/{laptop.netns}", "bash", "-euc", readme_stack_line()],
            timeout=300,
            check=False,
            env={
                **laptop.env,
                "PATH": os.environ["PATH"],
                "HOME": os.environ.get("HOME", "/root"),
                "PIREX_TAG": TEST_TAG,
            },
            cwd=REPO,
        )
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        deadline = time.monotonic() + 900
        while not (
            state := laptop.docker("service", "ps", "--format", "{{.CurrentState}}", "pirex_driver").stdout
        ).startswith(("Complete", "Failed", "Rejected")):
            assert time.monotonic() < deadline, state
            time.sleep(2)
        rows = list(csv.DictReader((out / "requests.csv").read_text().splitlines()))
        assert len(rows) == 3 * int(quick["REQUESTS_PER_OPERATION"]) and all(row["ok"] == "1" for row in rows), state
    finally:
        laptop.docker("stack", "rm", "pirex", check=False)
        shutil.rmtree(out, ignore_errors=True)
        if kept.exists():
            kept.rename(out)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
    assert not stack_left(hosts)


def test_a_killed_pirex_swarm_leaves_its_stack_which_doctor_reaps(swarm_hosts, tmp_path):
    """SIGKILL gives pirex no chance to remove the stack: its record (leftovers) does."""
    hosts, _ = swarm_hosts
    laptop = hosts["laptop"]
    in_laptop = ["nsenter", f"--net=/run/netns/{laptop.netns}", sys.executable, "-m", "pirex"]
    with open(tmp_path / "out", "w") as out:
        killed = subprocess.Popen(
            [*in_laptop, "swarm", "jpa-rest", "--tag", TEST_TAG, "--results-dir", str(tmp_path), *TINY],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **laptop.env},
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 600
        while "pirex_db" not in laptop.docker("service", "ls", "--format", "{{.Name}}").stdout.split():
            assert killed.poll() is None and time.monotonic() < deadline, (tmp_path / "out").read_text()[-3000:]
            time.sleep(1)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=60)
    assert "pirex" in laptop.docker("stack", "ls", "--format", "{{.Name}}").stdout.split(), "left up by the kill"
    [run] = bundles(tmp_path)
    doctor = proc.run([*in_laptop, "doctor"], timeout=300, check=False, env=laptop.env)
    assert f"WARN  leftovers    stack pirex (run {run.name})" in doctor.stdout, doctor.stdout + doctor.stderr
    reaped = proc.run([*in_laptop, "doctor", "--reap"], timeout=300, check=False, env=laptop.env)
    assert "OK    leftovers    removed" in reaped.stdout, reaped.stdout + reaped.stderr
    assert not stack_left(hosts)


def test_a_role_that_fails_names_its_node_and_the_stack_is_removed(swarm_hosts, tmp_path):
    hosts, nodes = swarm_hosts
    hosts["pi-b"].docker("image", "rm", publish.local_ref("postgres", TEST_TAG))
    r = pirex_swarm(hosts, tmp_path)
    assert r.returncode == 1
    [line] = r.stderr.strip().splitlines()
    assert f"the db role failed on node pi-b ({nodes['pi-b'][:12]})" in line and "No such image" in line, line
    [out] = bundles(tmp_path)
    assert (out / "stack" / "tasks.json").exists() and (out / "stack" / "record.log").read_text(), "logs kept"
    assert not stack_left(hosts)
