"""`pirex fleet run`: one experiment on every device of an Ansible inventory, through the playbook
fleet/run.yml (Ansible does the hosts: ssh, copying, running in parallel or one at a time, fetching).

The controller's side, here: it checks the request, names the fleet run
(results/<experiment>/fleet-<time>-<hex>/), runs ansible-playbook with the run's variables, reads
what each host ended with (fleet/callback_plugins/pirex_fleet.py writes it) and writes the fleet's
manifest, fleet.json: what was asked, and per host its state (verified, failed, unreachable or
missing), why, and where its bundle is (<fleet-run>/<host>/, the inventory name being the device's
identity: run ids and hostnames may collide across hosts). A host that fails does not stop the
others; `--resume FLEET_RUN` runs the playbook again for the hosts without a verified bundle.

The host's side, `pirex fleet on-host` (what the playbook runs there): the host's one bundle of
the fleet run under results/fleet/<fleet-run>/ is run, or resumed when an earlier attempt left it
partial (or waited for while that attempt still writes it), or taken as it is when complete."""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pirex.core import bundle as B
from pirex.core import experiment, proc
from pirex.core.bundle_files import write_json
from pirex.core.errors import PirexError
from pirex.core.fleetrun import (
    FAILED,
    MISSING,
    SCHEMA,
    UNREACHABLE,
    VERIFIED,
    read_manifest,
    write_manifest,
)
from pirex.core.paths import REPO

log = logging.getLogger(__name__)

PLAYBOOK = REPO / "fleet" / "run.yml"
WORK = ".fleet"  # the controller's files of a fleet run: variables, the checkout's git bundle, per-attempt status
HOST_RESULTS = "results/fleet"  # on a host, under its checkout: <fleet-run>/<experiment>/<run-id>/
BUNDLE_LINE = "pirex-fleet-bundle:"  # how on-host names its bundle to the playbook
HOST_TIMEOUT = 24 * 3600  # one host's run, at most (a paper profile on a Pi takes hours)
PREPARE_TIMEOUT = 3600  # copying, installing and loading images on every host


@dataclass
class Request:
    experiment: str
    inventory: Path
    profile: str = "quick"
    variants: str | None = None
    sets: tuple[str, ...] = ()
    tag: str = ""
    serial: bool = False
    results_dir: Path = REPO / "results"
    images_archive: Path | None = None
    host_timeout: float = HOST_TIMEOUT
    design: str = "interleaved"  # pirex run --design on each host: duet runs a repetition's two variants at once


@dataclass
class Outcome:
    dir: Path
    experiment: str
    hosts: dict[str, dict] = field(default_factory=dict)

    @property
    def bundles(self) -> list[Path]:
        return [self.dir / h for h, s in sorted(self.hosts.items()) if s["state"] == VERIFIED]

    @property
    def failed(self) -> dict[str, dict]:
        return {h: s for h, s in sorted(self.hosts.items()) if s["state"] != VERIFIED}


# --- the controller -------------------------------------------------------------------------------------------------


def ansible_tool(name: str) -> str:
    """An Ansible program: beside this Python (the venv's fleet extra), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise PirexError(
            f"{name} not found: install the fleet extra (make fleet-installed, or "
            f"`{sys.executable} -m pip install -e '.[fleet]'`)"
        )
    return found


def inventory_hosts(inventory: Path) -> dict[str, dict]:
    """Every host of the inventory (any format Ansible reads) and the few variables a fleet run records."""
    if not Path(inventory).is_file():
        raise PirexError(f"--inventory {inventory}: no such file (fleet/hosts.yml is an example)")
    r = proc.run([ansible_tool("ansible-inventory"), "-i", str(inventory), "--list"], timeout=120, check=False)
    if not r.ok:
        raise PirexError(f"ansible-inventory cannot read {inventory}: {proc.gist(proc.CommandFailed(r))}")
    return hosts_of(json.loads(r.stdout), inventory)


def hosts_of(listing: dict, inventory: Path | str = "the inventory") -> dict[str, dict]:
    """`ansible-inventory --list` output -> host name -> its address, user and device labels."""
    hostvars = (listing.get("_meta") or {}).get("hostvars") or {}
    names = set(hostvars)
    for group, doc in listing.items():
        if group != "_meta" and isinstance(doc, dict):
            names.update(doc.get("hosts") or [])
    if not names:
        raise PirexError(f"{inventory} lists no host: add the devices (fleet/hosts.yml shows how)")
    out = {}
    for name in sorted(names):
        if not B.NAME.match(name) or B.TMP_MARK in name:
            raise PirexError(
                f"{inventory}: host {name!r} cannot name a result folder: use letters, digits, '.', "
                "'_' and '-' (the inventory name is the device's identity in the results)"
            )
        v = hostvars.get(name) or {}
        out[name] = {
            "address": str(v.get("ansible_host") or name),
            "user": v.get("ansible_user"),
            "labels": v.get("pirex_device_labels") or {},
        }
    return out


def images_of(exp: experiment.Experiment) -> list[str]:
    return [exp.image, *(n for n in (exp.deployment.images if exp.deployment else ()) if n != exp.image)]


def new_dir(results_dir: Path, experiment_id: str) -> Path:
    stamp = B.utcnow().strftime("%Y%m%dT%H%M%SZ")
    return results_dir / experiment_id / f"fleet-{stamp}-{secrets.token_hex(3)}"


def playbook_vars(req: Request, fleet_dir: Path, fleet_run: str, images: list[str]) -> dict:
    """What fleet/run.yml reads (its header lists them)."""
    return {
        "pirex_experiment": req.experiment,
        "pirex_profile": req.profile,
        "pirex_variants": req.variants or "",
        "pirex_sets": list(req.sets),
        "pirex_design": req.design,
        "pirex_tag": req.tag,
        "pirex_fleet_run": fleet_run,
        "pirex_fleet_dir": str(fleet_dir.resolve()),
        "pirex_images": images,
        "pirex_images_archive": str(req.images_archive.resolve()) if req.images_archive else "",
        "pirex_serial": req.serial,
        "pirex_checkout": str(REPO),
        "pirex_controller": [sys.executable, "-m", "pirex"],
        "pirex_run_timeout": int(req.host_timeout),
    }


def command(req: Request, vars_file: Path, hosts: list[str]) -> list[str]:
    return [
        ansible_tool("ansible-playbook"),
        "-i",
        str(req.inventory),
        str(PLAYBOOK),
        "-e",
        f"@{vars_file}",
        "--limit",
        ",".join(hosts),
        "--forks",
        str(max(5, len(hosts))),
    ]


def environment(status: Path, log_file: Path) -> dict[str, str]:
    return {
        "ANSIBLE_CALLBACKS_ENABLED": "pirex_fleet",  # fleet/callback_plugins: each host's ending, as JSON
        "PIREX_FLEET_STATUS": str(status),
        "ANSIBLE_LOG_PATH": str(log_file),
        "ANSIBLE_RETRY_FILES_ENABLED": "false",
        "ANSIBLE_PYTHON_INTERPRETER": os.environ.get("ANSIBLE_PYTHON_INTERPRETER", "auto_silent"),
    }


def _check(req: Request) -> experiment.Experiment:
    """Everything the hosts would refuse, refused here first."""
    exp = experiment.load(req.experiment)
    overrides = exp.overrides(list(req.sets))  # bad --set values refused first, as the runner does
    exp.pick_variants(req.variants)
    if req.profile not in exp.profiles:
        raise PirexError(f"--profile {req.profile!r}: {exp.id} has {', '.join(exp.profiles)}")
    from pirex.runner import run as runner
    from pirex.runner import runplan

    # the hosts' own argument checks (--design duet where it cannot run, among them), made here once
    runplan.check(exp, runner.Options(exp.id, req.profile, req.variants, overrides=overrides, design=req.design))
    if req.images_archive and not req.images_archive.is_file():
        raise PirexError(f"--images-archive {req.images_archive}: no such file (`pirex images export` writes one)")
    return exp


def run(req: Request, say: Callable[[str], None] = print, resume: Path | None = None) -> Outcome:
    """A fleet run (or the rest of one): the playbook over the hosts still without a verified bundle."""
    doc = read_manifest(Path(resume)) if resume is not None else None
    if doc is not None:
        req = _resumed(doc, req)
    exp = _check(req)  # before any host is contacted
    hosts = inventory_hosts(req.inventory)
    if doc is not None:
        fleet_dir = Path(resume)
        todo = [h for h in hosts if (doc["hosts"].get(h) or {}).get("state") != VERIFIED]
        if not todo:
            say(f"every host of {fleet_dir} has a verified bundle: nothing to resume")
            return _outcome(fleet_dir, doc)
    else:
        fleet_dir = new_dir(req.results_dir, req.experiment)
        todo = list(hosts)
    version = _checkout_note(say)
    (fleet_dir / WORK).mkdir(parents=True, exist_ok=True)
    if doc is None:
        doc = _new_manifest(req, exp, fleet_dir, version)
    attempt = len(doc["attempts"]) + 1
    for h in todo:
        doc["hosts"][h] = {**hosts[h], "state": MISSING, "why": "running", "attempt": attempt}
    write_manifest(fleet_dir, doc)
    work = fleet_dir / WORK
    vars_file, status = work / "vars.json", work / f"status-{attempt}.json"
    write_json(vars_file, playbook_vars(req, fleet_dir, fleet_dir.name, images_of(exp)))
    mode = "one host at a time" if req.serial else "all hosts at once"
    say(f"fleet run {fleet_dir} ({exp.id}, {req.profile}, {mode}): {', '.join(todo)}")
    started = time.monotonic()
    limit = req.host_timeout * (len(todo) if req.serial else 1) + PREPARE_TIMEOUT
    r = _playbook(req, fleet_dir, doc, todo, vars_file, status, limit)
    wall = time.monotonic() - started
    ended = read_status(status)
    for h in todo:
        doc["hosts"][h].update(host_state(fleet_dir, h, ended.get(h), r.returncode))
    doc["attempts"].append(
        {
            "attempt": attempt,
            "hosts": todo,
            "serial": req.serial,
            "wall_seconds": round(wall, 1),
            "ansible_exit": r.returncode,
            "ended": B.iso(B.utcnow()),
        }
    )
    write_manifest(fleet_dir, doc)
    out = _outcome(fleet_dir, doc)
    for line in summary(out, wall, mode):
        say(line)
    return out


def _new_manifest(req: Request, exp: experiment.Experiment, fleet_dir: Path, version: str) -> dict:
    """A new fleet run's fleet.json: what was asked, so that --resume runs the same, with no attempt yet."""
    return {
        "schema": SCHEMA,
        "fleet_run": fleet_dir.name,
        "experiment": exp.id,
        "profile": req.profile,
        "variants": req.variants,
        "sets": list(req.sets),
        "design": req.design,
        "tag": req.tag,
        "serial": req.serial,
        "images_archive": str(req.images_archive) if req.images_archive else None,
        "inventory": str(Path(req.inventory).resolve()),
        "commit": version,
        "started": B.iso(B.utcnow()),
        "attempts": [],
        "hosts": {},
    }


def _playbook(
    req: Request, fleet_dir: Path, doc: dict, todo: list[str], vars_file: Path, status: Path, limit: float
) -> proc.Result:
    """Run the playbook over the hosts to do; stopped (a time limit, Ctrl-C), the manifest says so first."""
    try:
        return proc.run(
            command(req, vars_file, todo),
            timeout=limit,
            check=False,
            capture=False,
            env=environment(status, fleet_dir / "ansible.log"),
            what="ansible-playbook",
        )
    except BaseException as e:  # a time limit, Ctrl-C: the manifest says so, --resume goes on from there
        for h in todo:
            doc["hosts"][h].update(
                why=f"the fleet run was stopped ({type(e).__name__}: {e}); a host's run may go on "
                "there: --resume takes it over"
            )
        write_manifest(fleet_dir, doc)
        raise


def _resumed(doc: dict, req: Request) -> Request:
    """The fleet run's own request (what its hosts ran), whatever the command line repeats."""
    if req.experiment and req.experiment != doc["experiment"]:
        raise PirexError(f"the fleet run is of {doc['experiment']}, not {req.experiment}: leave EXPERIMENT out")
    archive = Path(doc["images_archive"]) if doc.get("images_archive") else None
    return Request(
        doc["experiment"],
        req.inventory,
        doc["profile"],
        doc["variants"],
        tuple(doc["sets"]),
        doc["tag"],
        req.serial,
        req.results_dir,
        req.images_archive or archive,
        req.host_timeout,
        doc.get("design", "interleaved"),  # a fleet run from before designs: one step at a time
    )


def _checkout_note(say: Callable[[str], None]) -> str:
    """The commit the hosts get (the playbook ships HEAD); uncommitted changes do not travel."""
    r = proc.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], timeout=30, check=False)
    if not r.ok:
        raise PirexError(f"{REPO} is not a git checkout: the playbook ships its commit to the hosts (git clone it)")
    commit = proc.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], timeout=30).stdout.strip()
    if r.stdout.strip():
        say(f"note: the hosts get commit {commit[:12]}, without this checkout's uncommitted changes")
    return commit


def read_status(path: Path) -> dict[str, dict]:
    """The callback's per-host record; {} when the playbook ended before writing it."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return doc.get("hosts") or {} if isinstance(doc, dict) else {}


def host_state(fleet_dir: Path, host: str, ended: dict | None, ansible_exit: int) -> dict:
    """A host's state from what the callback recorded and what was fetched."""
    ended = ended or {}
    fetched = (fleet_dir / host / B.MANIFEST).is_file()
    if ended.get("failed"):
        f = ended["failed"]
        state = UNREACHABLE if f.get("unreachable") else FAILED
        return {"state": state, "why": f"{state} at '{f.get('task')}': {f.get('message')}", "bundle": None}
    if fetched and ended.get("verified"):
        return {
            "state": VERIFIED,
            "why": "",
            "bundle": host,
            "run_id": B.Bundle.open(fleet_dir / host).run_id,
            "host_bundle": ended.get("bundle"),
        }
    return {
        "state": MISSING,
        "why": f"the playbook ended (exit {ansible_exit}) before this host was done: see {fleet_dir / 'ansible.log'}",
        "bundle": None,
    }


def _outcome(fleet_dir: Path, doc: dict) -> Outcome:
    return Outcome(Path(fleet_dir), doc["experiment"], doc["hosts"])


def summary(out: Outcome, wall: float, mode: str) -> list[str]:
    n, ok = len(out.hosts), len(out.bundles)
    lines = [f"\nfleet {out.dir.name}: {ok} of {n} hosts verified ({mode}, {wall:.0f} s)"]
    width = max(len(h) for h in out.hosts)
    for h, s in sorted(out.hosts.items()):
        where = str(out.dir / h) if s["state"] == VERIFIED else s["why"]
        lines.append(f"  {h:{width}}  {s['state']:11}  {where}")
    return lines


def failure_line(out: Outcome) -> str:
    names = ", ".join(f"{h} ({s['state']})" for h, s in out.failed.items())
    return (
        f"{len(out.failed)} of {len(out.hosts)} hosts without a verified bundle: {names}; "
        f"`pirex fleet run --inventory INVENTORY --resume {out.dir}` finishes them"
    )


# --- the host ------------------------------------------------------------------------------------------------------


def host_bundle(results_dir: Path, experiment_id: str) -> Path | None:
    """The host's one bundle of this fleet run, if an earlier attempt created it."""
    found = sorted(p.parent for p in (Path(results_dir) / experiment_id).glob(f"*/{B.MANIFEST}"))
    if len(found) > 1:
        raise PirexError(
            f"{results_dir} holds {len(found)} {experiment_id} bundles, a fleet run's host has one: "
            "remove the ones not wanted"
        )
    return found[0] if found else None


def on_host(opts, wait: float = HOST_TIMEOUT, poll: float = 5.0) -> Path:
    """Run opts (a runner.Options whose results_dir is the fleet run's folder on this host), or finish the
    bundle an earlier attempt started: complete as it is; resumed once no pirex writes it any more."""
    from pirex.runner import run as runner

    found = None

    def settled() -> str | None:
        """What to do with the bundle an earlier attempt left: None while its run goes on (its controller lost the
        connection): let it end."""
        nonlocal found
        found = host_bundle(opts.results_dir, opts.experiment)
        if found is None:
            return "run"
        if B.Bundle.open(found).status == B.COMPLETE:
            return "complete"
        return None if B.writing(found) else "resume"

    what = proc.wait_until(settled, wait, poll)
    if what == "complete":
        print(f"{found}: complete (an earlier attempt ran it)", flush=True)
        return found
    if what == "resume":
        print(f"{found}: resuming what an earlier attempt left", flush=True)
        return runner.resume(found, opts.allow_concurrent)
    if what is None:
        raise PirexError(f"{found} is still being written by another pirex after {wait:.0f} s: stop it first")
    return runner.run(opts)
