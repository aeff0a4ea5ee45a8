"""What a run starts, recorded as it starts, so that what a killed run leaves can be found and
removed: containers, networks and volumes (labelled pirex.run=<run-id>), compose projects, swarm
stacks (pirex swarm), native processes, the native chroot's mounts, tracefs and machine settings
(governor, swap).

Each record goes to two places before the thing is started:
- the bundle's resources.jsonl (one JSON object a line, appended and fsynced): what `pirex run
  --resume` reaps before it continues;
- the host's list of runs, <LOCK_DIR>/runs/<run-id>.json, held with an flock while the run's
  process lives: `pirex doctor` lists the leftovers of runs whose file is no longer held, and
  `pirex doctor --reap` removes them.
A run that ends by itself undoes everything on its own exit paths and removes its file.

Use: `with leftovers.Owner(run_id, bundle_path): ...` around what a run starts; inside it,
`leftovers.note(kind, ...)` before each start, and `leftovers.docker_args()` on every `docker run`,
`docker create` and `docker network create`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pirex.core import paths, proc, settings
from pirex.core.errors import PirexError
from pirex.core.flock import held
from pirex.runner import lock

log = logging.getLogger(__name__)

LABEL = "pirex.run"
RESOURCES = "resources.jsonl"
KINDS = ("container", "network", "volume", "compose", "stack", "process", "mount", "setting", "swap", "tracefs")
STACK_GRACE = 120  # seconds for a swarm to remove a removed stack's tasks


def runs_dir() -> Path:
    return lock.LOCK_DIR / "runs"


def native_dir() -> Path:
    return paths.cache_dir() / "native"


# The runs this process is inside, innermost last: a module-level stack, not a ContextVar, so that whatever thread
# starts something for the run records it there (Python 3.11's threads begin with an empty context); a forked duet
# side inherits the stack with the rest of its memory.
_current: list[Owner] = []


def current() -> Owner | None:
    return _current[-1] if _current else None


def docker_args() -> list[str]:
    """`--label pirex.run=<run-id>` for what the current run starts in Docker ([] outside a run)."""
    o = current()
    return ["--label", f"{LABEL}={o.run_id}"] if o else []


def note(kind: str, **info) -> None:
    """Record, before starting it, something the current run starts (no-op outside a run)."""
    if o := current():
        o.note(kind, **info)


def note_process(pid: int, what: str) -> None:
    """A process the current run started in its own process group (its start time tells it from a reused pid)."""
    note("process", pid=pid, start=proc.start_time(pid), what=what)


class Owner:
    """The record of what one pirex process starts for one run (see the module's docstring)."""

    def __init__(self, run_id: str, bundle: Path | None = None):
        self.run_id, self.bundle = run_id, bundle
        self.state = runs_dir() / f"{run_id}.json"
        self.doc = {
            "run_id": run_id,
            "pid": os.getpid(),
            "bundle": str(bundle.resolve()) if bundle else None,
            "host": lock.host_identity(),
            "resources": [],
        }
        self._fd: int | None = None

    def __enter__(self) -> Owner:
        self.state.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.state, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise PirexError(f"run {self.run_id} is still running (pid in {self.state}): stop it first") from None
        self._save()
        _current.append(self)
        if self.bundle is not None:  # what a second run, refused, names
            lock.describe(run_id=self.run_id, bundle=self.bundle)
        return self

    def __exit__(self, exc_type, *_) -> None:
        _current.remove(self)
        with contextlib.suppress(OSError):
            self.state.unlink()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def note(self, kind: str, **info) -> None:
        entry = {"kind": kind, "run_id": self.run_id, "pid": os.getpid(), "at": round(time.time(), 3), **info}
        entry = json.loads(json.dumps(entry, default=str))
        self.doc["resources"].append(entry)
        self._save()
        if self.bundle is not None:
            try:
                with open(self.bundle / RESOURCES, "a") as f:
                    f.write(json.dumps(entry) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # a full disk must not stop the cleanup record: the host's file has it
                log.warning(
                    "cannot append to %s (%s); the host's record %s has it",
                    self.bundle / RESOURCES,
                    e.strerror,
                    self.state,
                )

    def _save(self) -> None:
        data = json.dumps(self.doc).encode()
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, data, 0)
        except OSError as e:  # /run full: the bundle's record still has it
            log.warning("cannot write %s: %s", self.state, e.strerror)


# --- finding --------------------------------------------------------------------------------------------------------


@dataclass
class Leftover:
    run_id: str
    kind: str
    what: str  # one line: what it is
    entry: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.kind} {self.what} (run {self.run_id})"


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def live_runs() -> dict[str, dict]:
    """run id -> record, for every run whose process still holds its file."""
    d = runs_dir()
    out = {}
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        if held(f):
            out[f.stem] = _read_json(f)
    return out


def dead_records() -> dict[str, dict]:
    """run id -> record of this host's runs whose process ended without removing its file (killed). Hosts
    that share the disk (network namespaces) share the directory: another host's run is its own to reap."""
    d = runs_dir()
    me = lock.host_identity()
    out = {f.stem: _read_json(f) for f in sorted(d.glob("*.json")) if d.is_dir() and not held(f)}
    return {rid: doc for rid, doc in out.items() if doc.get("host", me) == me}


def read_resources(bundle: Path) -> list[dict]:
    """The bundle's resources.jsonl; a line cut short by a kill is skipped."""
    out = []
    try:
        lines = (bundle / RESOURCES).read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        with contextlib.suppress(ValueError):
            e = json.loads(line)
            if isinstance(e, dict) and e.get("kind") in KINDS:
                out.append(e)
    return out


def find(run_id: str | None = None, bundle: Path | None = None) -> list[Leftover]:
    """What runs no longer running left on this host (only `run_id`'s, when given): recorded
    resources that still exist, Docker objects labelled with a dead run's id, and mounts under
    the native exports that no live run holds and no process is chroot-ed into."""
    live = live_runs()
    entries: list[dict] = []
    if run_id is None:
        for rid, doc in dead_records().items():
            if rid not in live:
                entries += [e for e in doc.get("resources") or [] if isinstance(e, dict)]
    else:
        doc = dead_records().get(run_id) or {}
        entries += [e for e in doc.get("resources") or [] if isinstance(e, dict)]
        entries += read_resources(bundle) if bundle else []
    out, seen = [], set()
    ours = {int(e["pid"]) for e in entries if e.get("kind") == "process" and str(e.get("pid", "")).isdigit()}
    for e in entries:
        for left in _still_there(e, ours):
            key = (left.kind, left.what)
            if key not in seen and (run_id is None or left.run_id == run_id):
                seen.add(key)
                out.append(left)
    for left in _docker_labelled(live, run_id):
        if (left.kind, left.what) not in seen:
            seen.add((left.kind, left.what))
            out.append(left)
    if run_id is None:
        held = {e.get("root") for doc in live.values() for e in doc.get("resources") or [] if e.get("kind") == "mount"}
        for root in _mounted_exports():
            if root not in held and not _chrooted_into(root) and ("mount", root) not in seen:
                out.append(Leftover("?", "mount", root, {"kind": "mount", "root": root}))
    return out


def _still_there(e: dict, ours: set[int] = frozenset()) -> list[Leftover]:
    """e as a leftover if it still exists; mounts only while no process but the run's own (process
    groups `ours`) runs chroot-ed into them: another run's chroot may share the export."""
    kind, rid = e.get("kind"), str(e.get("run_id", "?"))
    try:
        if kind == "container" and _docker_exists("container", e["name"]):
            return [Leftover(rid, kind, e["name"], e)]
        if kind == "network" and _docker_exists("network", e["name"]):
            return [Leftover(rid, kind, e["name"], e)]
        if kind == "volume" and _docker_exists("volume", e["name"]):
            return [Leftover(rid, kind, e["name"], e)]
        if kind == "compose" and _compose_objects(e["project"]):
            return [Leftover(rid, kind, e["project"], e)]
        if kind == "stack" and e["name"] in _stacks():
            return [Leftover(rid, kind, e["name"], e)]
        if kind == "process" and proc.same_process(int(e["pid"]), e.get("start")):
            return [Leftover(rid, kind, f"{e['pid']} ({e.get('what', '?')})", e)]
        if kind == "mount" and _mounts_under(Path(e["root"])):
            others = [p for p in _users_of(e["root"]) if _pgid(p) not in ours]
            if others:
                log.warning("%s: mounts in use by pid %s, not the killed run's: left alone", e["root"], others[0])
                return []
            return [Leftover(rid, kind, e["root"], e)]
        if kind == "setting" and (changed := settings.SysfsFile(e["path"]).changed(e["was"])):
            return [Leftover(rid, kind, changed, e)]
        if kind == "swap" and (changed := settings.Swap().changed(e["areas"])):
            return [Leftover(rid, kind, changed, e)]
        if kind == "tracefs" and any(
            _read(str(Path(e["root"]) / k)) not in (None, v) for k, v in (e.get("saved") or {}).items()
        ):
            return [Leftover(rid, kind, f"ftrace settings under {e['root']}", e)]
    except (KeyError, TypeError, ValueError):
        log.warning("ignoring a damaged resource record: %s", e)
    return []


def _docker(*args: str, timeout: float = 60) -> proc.Result | None:
    if proc.which("docker") is None:
        return None
    try:
        return proc.run(["docker", *args], timeout=timeout, check=False)
    except PirexError:
        return None


def _docker_exists(kind: str, name: str) -> bool:
    r = _docker(kind, "inspect", name)
    return bool(r and r.ok)


def _docker_labelled(live: dict, run_id: str | None) -> list[Leftover]:
    want = f"label={LABEL}" + (f"={run_id}" if run_id else "")
    out = []
    for kind, cmd, fmt in (
        ("container", ["ps", "-a"], "{{.Names}}"),
        ("network", ["network", "ls"], "{{.Name}}"),
        ("volume", ["volume", "ls"], "{{.Name}}"),
    ):
        r = _docker(*cmd, "--filter", want, "--format", fmt + ' {{.Label "' + LABEL + '"}}')
        for line in r.stdout.splitlines() if r and r.ok else []:
            name, _, rid = line.partition(" ")
            if rid and rid not in live:
                out.append(Leftover(rid, kind, name, {"kind": kind, "name": name, "run_id": rid}))
    return out


def _stacks() -> list[str]:
    """The swarm stacks deployed from this engine (none where it is no swarm manager)."""
    r = _docker("stack", "ls", "--format", "{{.Name}}")
    return r.stdout.split() if r and r.ok else []


def remove_stack(name: str, grace: float = STACK_GRACE) -> None:
    """docker stack rm, then until the swarm has removed its tasks (rm returns at once)."""
    _docker("stack", "rm", name, timeout=120)

    def removed() -> bool:
        r = _docker("stack", "ps", "-q", name)
        return not (r and r.ok and r.stdout.strip())

    if not proc.wait_until(removed, grace, 1):
        log.warning("the stack %s still had tasks %.0f s after docker stack rm", name, grace)


def _compose_objects(project: str) -> list[tuple[str, str]]:
    label = f"label=com.docker.compose.project={project}"
    out = []
    for kind, cmd, fmt in (
        ("container", ["ps", "-a"], "{{.ID}}"),
        ("network", ["network", "ls"], "{{.ID}}"),
        ("volume", ["volume", "ls"], "{{.Name}}"),
    ):
        r = _docker(*cmd, "--filter", label, "--format", fmt)
        out += [(kind, x) for x in (r.stdout.split() if r and r.ok else [])]
    return out


def _mountpoints() -> list[str]:
    try:
        with open("/proc/self/mountinfo") as f:
            return [line.split()[4].replace("\\040", " ") for line in f]
    except OSError:
        return []


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root) + "/"
    return [p for p in _mountpoints() if p.startswith(prefix)]


def _mounted_exports() -> list[str]:
    """The native exports (cache/native/<id>) with anything mounted inside."""
    base = str(native_dir()) + "/"
    return sorted({base + p[len(base) :].split("/", 1)[0] for p in _mountpoints() if p.startswith(base)})


def _chrooted_into(root: str) -> bool:
    """Whether a live process runs chroot-ed into root (then its mounts are in use, whoever made them)."""
    return bool(_users_of(root))


def _users_of(root: str) -> list[int]:
    """The live processes chroot-ed into root."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                r = os.readlink(p / "root")
                if (r == root or r.startswith(root + "/")) and proc.same_process(int(p.name), None):
                    out.append(int(p.name))
    return out


def _pgid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def _read(path: str) -> str | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return "" if text.startswith("#") else " ".join(text.split())


# --- removing -------------------------------------------------------------------------------------------------------


def reap(found: list[Leftover]) -> list[str]:
    """Remove what find() found: processes first (they hold mounts), then containers, networks,
    volumes, mounts, settings. Returns what could not be removed."""
    order = {
        k: i
        for i, k in enumerate(
            ("process", "stack", "container", "compose", "network", "volume", "mount", "tracefs", "setting", "swap")
        )
    }
    failed = []
    for left in sorted(found, key=lambda x: order.get(x.kind, 99)):
        # what is removed may be ending by itself meanwhile: an error then is a race, not a failure
        for attempt in (1, 2):
            try:
                _reap_one(left)
                break
            except (OSError, PirexError) as e:
                if _gone(left):
                    break
                if attempt == 2:
                    failed.append(f"{left}: {e}")
    return failed


def _gone(left: Leftover) -> bool:
    """Whether what failed to be removed went meanwhile: a mount by its mounts alone (_still_there leaves one in use
    by another chroot alone, which a failed unmount must not hide)."""
    if left.kind == "mount":
        return not _mounts_under(Path(left.entry["root"]))
    return not _still_there(left.entry)


def _reap_one(left: Leftover) -> None:
    e = left.entry
    kind = left.kind
    if kind == "process":
        _kill_group(int(e["pid"]), e.get("start"))
    elif kind == "container":
        _docker("rm", "-f", e["name"], timeout=120)
    elif kind == "network":
        _docker("network", "rm", e["name"], timeout=120)
    elif kind == "volume":
        _docker("volume", "rm", "-f", e["name"], timeout=120)
    elif kind == "compose":
        objs = _compose_objects(e["project"])
        for k, cmd in (("container", ("rm", "-f")), ("network", ("network", "rm")), ("volume", ("volume", "rm", "-f"))):
            ids = [x for kk, x in objs if kk == k]
            if ids:
                _docker(*cmd, *ids, timeout=300)
    elif kind == "stack":
        remove_stack(e["name"])
    elif kind == "mount":
        unmount_under(Path(e["root"]))
    elif kind == "setting":
        settings.SysfsFile(e["path"]).write(e["was"])
    elif kind == "swap":  # each at the priority it had (a record before priorities: the kernel's)
        settings.Swap().on(e["areas"], e.get("priorities"))
    elif kind == "tracefs":
        root = Path(e["root"])
        for name in ("tracing_on", "current_tracer"):  # off first, so the rest can be written
            with contextlib.suppress(OSError):
                (root / name).write_text(("0" if name == "tracing_on" else "nop") + "\n")
        for name, value in (e.get("saved") or {}).items():
            if value is not None:
                with contextlib.suppress(OSError):
                    (root / name).write_text(value + "\n")


def unmount_under(root: Path) -> None:
    """Detach every mount under root, deepest first (a lazy unmount: a user left finishes it)."""
    for point in sorted(_mounts_under(root), key=len, reverse=True):
        proc.run(["umount", "-R", "-l", point], timeout=60, check=False)
    if left := _mounts_under(root):
        raise PirexError(f"{root} still has mounts ({', '.join(left)}): unmount them by hand")


def _kill_group(pid: int, start: str | None, grace: float = 10) -> None:
    """SIGTERM, then SIGKILL, to the process group a run started; never to a reused pid."""
    now = proc.start_time(pid)
    if now is not None and start is not None and now != start:
        return  # the pid is another process now: the group it led is gone
    proc.terminate_group(pid, grace)


def reap_run(run_id: str, bundle: Path, say=print) -> list[Leftover]:
    """Before a killed run is resumed: what it left (by its records and labels, and containers named
    after it by a pirex that did not label yet), removed; says what it found."""
    found = find(run_id, bundle)
    r = _docker("ps", "-a", "--filter", f"name=^pirex-{run_id}-", "--format", "{{.Names}}")
    names = {x.what for x in found if x.kind == "container"}
    for name in r.stdout.split() if r and r.ok else []:
        if name not in names:
            found.append(Leftover(run_id, "container", name, {"kind": "container", "name": name}))
    if not found:
        return []
    say(f"the interrupted run left {len(found)} thing(s) behind; removing them before resuming:")
    for left in found:
        say(f"  {left.kind} {left.what}")
    failed = reap(found)
    if failed:
        raise PirexError(
            "could not remove what the killed run left: "
            + "; ".join(failed)
            + " (remove them by hand, or see `pirex doctor`)"
        )
    with contextlib.suppress(OSError):
        (runs_dir() / f"{run_id}.json").unlink()
    return found


def forget_dead() -> None:
    """Drop the host's files of dead runs that left nothing (after a reap)."""
    for rid in dead_records():
        if not find(rid):
            with contextlib.suppress(OSError):
                (runs_dir() / f"{rid}.json").unlink()


def doctor(reap_them: bool, say=print) -> bool:
    """`pirex doctor`'s part: what runs no longer running left here, listed (a running container or a
    changed governor disturbs the next measurement), or removed with --reap. False when some
    could not be removed."""
    found = find()
    if not found:
        say("OK    leftovers    nothing left by killed runs")
        if reap_them:
            forget_dead()
        return True
    for left in found:
        say(f"WARN  leftovers    {left}" + ("" if reap_them else "\n      fix: pirex doctor --reap"))
    if not reap_them:
        return True
    failed = reap(found)
    for f in failed:
        say(f"FAIL  leftovers    could not remove {f}")
    forget_dead()
    if not failed:
        say(f"OK    leftovers    removed {len(found)}")
    return not failed
