"""ICPE'18 Experiment 3 on one machine through docker compose (compose/jpa-rest.yml): this
machine's platform of the postgres, jpa-rest and locust images put into the engine, the
machine recorded, `docker compose up --exit-code-from driver`, and `down -v` on every exit
path. The driver writes requests.csv and summary.json into the run's folder."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pirex import experiment, machine, proc
from pirex.bundle import sha256, utcnow
from pirex.errors import PirexError
from pirex.images import localregistry, publish
from pirex.images import platforms as plat
from pirex.paths import REPO
from pirex.runner import leftovers
from pirex.runner.deployment import masked

log = logging.getLogger(__name__)

COMPOSE_FILE = REPO / "compose" / "jpa-rest.yml"
IMAGES = ("postgres", "jpa-rest", "locust")
TIMEOUT = {"quick": 1800, "paper": 6 * 3600}


def run(tag: str, results_dir: Path, profile: str = "quick", customers: int | None = None, users: int = 16,
        timeout: float | None = None) -> Path:  # fmt: skip
    if profile not in TIMEOUT:
        raise PirexError(f"--profile {profile!r}: expected one of {', '.join(TIMEOUT)}")
    customers = customers or experiment.load("jpa-rest").resolve(profile)["customers"]  # one source of the numbers
    platform = plat.host()
    images = {}
    with localregistry.local_registry():
        for name in IMAGES:
            ref, local = publish.load_local(name, tag, platform)
            images[name] = {"reference": local, "digest": ref.split("@", 1)[1], "platform": str(platform)}
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    out = results_dir / "jpa-rest" / f"compose-{stamp}"
    out.mkdir(parents=True)
    out.chmod(0o777)  # the driver runs as the image's user
    (out / "machine.json").write_text(json.dumps({"before": machine.record(out)}, indent=2) + "\n")
    env = {"PIREX_TAG": tag, "PIREX_IMAGES": f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}",
           "RESULTS_DIR": str(out.resolve()), "PROFILE": profile, "CUSTOMERS": str(customers),
           "USERS": str(users)}  # fmt: skip
    (out / "compose.json").write_text(json.dumps({
        "compose_file": str(COMPOSE_FILE.relative_to(REPO)), "compose_file_sha256": sha256(COMPOSE_FILE),
        "images": images, "environment": env, "profile": profile, "deployment": "docker (one host, compose network)",
    }, indent=2) + "\n")  # fmt: skip
    project = f"pirex-jpa-rest-{stamp.lower()}"
    base = ["docker", "compose", "-p", project, "-f", str(COMPOSE_FILE)]
    with leftovers.Owner(project, out):  # a kill leaves the project up: recorded, for doctor --reap
        leftovers.note("compose", project=project)
        try:
            r = proc.run([*base, "up", "--exit-code-from", "driver"], timeout=timeout or TIMEOUT[profile],
                         check=False, env=env)  # fmt: skip
            (out / "compose.log").write_text(r.stdout + r.stderr)
        finally:
            proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, check=False, env=env)
    if r.returncode != 0 or not (out / "requests.csv").exists():
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise PirexError(f"the jpa-rest run failed (exit {r.returncode}); log in {out / 'compose.log'}:\n{tail}")
    return out


# --- one role of the split run: two Pis and a laptop, one command per host ---------------------------------------

ROLE_FILES = {"db": "db.yml", "web": "web.yml", "driver": "driver.yml"}


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as docker compose reads them (comments, blank lines, optional quotes)."""
    out = {}
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise PirexError(f"{path} is not a text file of KEY=VALUE lines: start from compose/example.env") from None
    except OSError as e:
        raise PirexError(f"{path}: cannot be read ({e.strerror}): name the run's .env file") from None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not key.strip():
            raise PirexError(f"{path}:{n}: expected KEY=VALUE, not {line[:80]!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def results_dir_of(env: dict[str, str]) -> Path:
    """RESULTS_DIR as compose resolves it: relative to the compose files' folder."""
    d = Path(env.get("RESULTS_DIR", "../results/jpa-rest/split"))
    return d if d.is_absolute() else (COMPOSE_FILE.parent / d).resolve()


def role(name: str, env_file: Path, down: bool = False, timeout: float | None = None) -> Path:
    """This host's role of the split run: `up` (db and web wait until healthy and stay up; the
    driver runs to its end) with this host's machine record and what it ran written to the run's
    results folder (RESULTS_DIR) as machine-<role>.json and compose-<role>.json; `down` stops it.
    Copy the db and web hosts' records beside the driver's requests.csv (or share the folder) for
    `pirex table jpa-rest` to name the placement."""
    if name not in ROLE_FILES:
        raise PirexError(f"--role {name!r}: expected one of {', '.join(ROLE_FILES)}")
    if not env_file.is_file():
        raise PirexError(f"--env-file {env_file}: no such file (copy compose/example.env and fill it in)")
    env = read_env_file(env_file)
    file = COMPOSE_FILE.parent / ROLE_FILES[name]
    base = ["docker", "compose", "-f", str(file), "--env-file", str(env_file.resolve())]
    if down:
        proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300)
        return file
    out = results_dir_of(env)
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o777)  # the driver runs as the image's user
    record = {"role": name, "before": machine.record(out)}
    (out / f"machine-{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    args = ["up", "--exit-code-from", "driver"] if name == "driver" else ["up", "-d", "--wait"]
    r = None
    try:
        r = proc.run([*base, *args], timeout=timeout or TIMEOUT["paper"], check=False)
        images = _images_of(base)
    finally:
        if r is None or r.returncode != 0 or name == "driver":  # a failed role is not left running
            if r is not None and r.returncode != 0:  # the services' own logs say why (e.g. the database DOWN)
                logs = proc.run([*base, "logs", "--no-color", "--tail", "200"], timeout=120, check=False)
                (out / f"compose-{name}-services.log").write_text(logs.stdout + logs.stderr)
            proc.run([*base, "down", "--timeout", "30"], timeout=300, check=False)
    if name == "driver":
        record["after"] = machine.record(out)
        (out / f"machine-{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"compose-{name}.json").write_text(json.dumps({
        "role": name, "compose_file": str(file.relative_to(REPO)), "compose_file_sha256": sha256(file),
        "environment": masked(env), "images": images,
        "command": args, "exit_code": r.returncode,
    }, indent=2) + "\n")  # fmt: skip
    (out / f"compose-{name}.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise PirexError(
            f"the {name} role failed (exit {r.returncode}) and was taken down; logs in "
            f"{out / f'compose-{name}.log'} and {out / f'compose-{name}-services.log'}:\n{tail}"
        )
    return out


def _images_of(base: list[str]) -> dict[str, dict]:
    """The image each service of the role's project ran: reference and image ID."""
    images = {}
    for c in proc.run([*base, "ps", "-a", "-q"], timeout=60, check=False).stdout.split():
        info = json.loads(proc.run(["docker", "inspect", c], timeout=60).stdout)[0]
        images[info["Config"]["Labels"].get("com.docker.compose.service", c)] = {
            "reference": info["Config"]["Image"], "image_id": info["Image"]}  # fmt: skip
    return images
