"""An experiment's deployment through docker compose, on one machine or split over hosts
(experiment.yaml: deployment.compose; ICPE'18 Experiment 3 is one, compose/jpa-rest.yml): this
machine's platform of the roles' and the driver's images put into the engine, the machine
recorded, `docker compose up --exit-code-from driver`, and `down -v` on every exit path. The
driver writes its results (jpa-rest: requests.csv and summary.json) into the run's folder.

The compose files hold no number of the experiment: each comes from the environment, which
pirex fills from experiment.yaml (pirex/images/settings.py: the profile, and --set; in a split run the
.env file's own settings win)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pirex.core import experiment, machine, proc
from pirex.core.bundle import sha256
from pirex.core.bundle_files import write_json
from pirex.core.errors import PirexError
from pirex.core.paths import REPO
from pirex.images import localregistry, publish, settings, sources
from pirex.images import platforms as plat
from pirex.runner import deployment_bundle, leftovers, outputs
from pirex.runner.executors import SECRET, masked

log = logging.getLogger(__name__)

TIMEOUT = {"quick": 1800, "paper": 6 * 3600}  # the driver's run, per profile (another profile: the paper's)
DRIVER = "driver"  # the host file of the driver: the one that runs to its end


def deployment_of(experiment_id: str) -> tuple[experiment.Experiment, experiment.Deployment]:
    """The experiment and its deployment with compose files, or an error naming those that have one."""
    exp = experiment.load(experiment_id)
    if exp.deployment is None or not exp.deployment.compose:
        offered = [e for e in experiment.available() if (d := experiment.load(e).deployment) and d.compose]
        raise PirexError(
            f"{exp.id} declares no deployment with compose files (experiment.yaml: deployment.compose); "
            f"experiments that do: {', '.join(offered) or 'none'}"
        )
    return exp, exp.deployment


def images(experiment_id: str) -> tuple[str, ...]:
    """The images a compose run of the experiment uses: the driver's and its roles'."""
    return deployment_of(experiment_id)[0].images


def one_host_file(experiment_id: str) -> Path:
    exp, dep = deployment_of(experiment_id)
    if "one_host" not in dep.compose:
        raise PirexError(f"{exp.id} declares no one_host compose file (experiment.yaml: deployment.compose)")
    return REPO / dep.compose["one_host"]


def run(
    experiment_id: str,
    tag: str,
    results_dir: Path,
    profile: str = "quick",
    sets: tuple[str, ...] = (),
    timeout: float | None = None,
) -> Path:
    exp, _ = deployment_of(experiment_id)
    numbers = settings.of(exp, profile, sets)  # checked before anything starts
    file = one_host_file(experiment_id)
    platform = plat.host()
    refs = {}
    with localregistry.local_registry():
        for name in images(experiment_id):
            refs[name] = sources.tagged_locally(name, tag, platform)
    with deployment_bundle.writing(results_dir, exp, profile, sets, "compose", refs) as bundle:
        out = bundle.path
        bundle.write_machine(before=machine.record(out))
        with deployment_bundle.driver_step(bundle) as step:
            env = {
                **numbers,
                "PIREX_TAG": tag,
                "PIREX_IMAGES": f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}",
                "RESULTS_DIR": str(step.resolve()),
            }
            write_json(
                out / "compose.json",
                {
                    "compose_file": str(file.relative_to(REPO)),
                    "compose_file_sha256": sha256(file),
                    "images": refs,
                    "environment": masked(env),
                    "profile": profile,
                    "deployment": "docker (one host, compose network)",
                },
            )
            _up(exp, file, out, env, timeout or _timeout(profile))
            if why := outputs.problem(exp.outputs, step):
                raise PirexError(f"the {exp.id} run {why}; log in {out / 'compose.log'}")
        bundle.write_machine(after=machine.record(out))
    return out


def _up(exp: experiment.Experiment, file: Path, out: Path, env: dict[str, str], timeout: float) -> None:
    """`docker compose up` to the driver's end, its output in out/compose.log, and `down -v` on every exit path."""
    project = f"pirex-{exp.id}-{out.name.lower()}"
    base = ["docker", "compose", "-p", project, "-f", str(file)]
    with leftovers.Owner(project, out):  # a kill leaves the project up: recorded, for doctor --reap
        leftovers.note("compose", project=project)
        try:
            r = proc.run([*base, "up", "--exit-code-from", DRIVER], timeout=timeout, check=False, env=env)
            (out / "compose.log").write_text(r.stdout + r.stderr)
        finally:
            proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, check=False, env=env)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise PirexError(f"the {exp.id} run failed (exit {r.returncode}); log in {out / 'compose.log'}:\n{tail}")


def _timeout(profile: str) -> float:
    return TIMEOUT.get(profile, TIMEOUT["paper"])


# --- one host of a split run: e.g. two Pis and a laptop, one command per host ------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as docker compose reads them (comments, blank lines, optional quotes). Not `docker compose
    --env-file F config`: that prints a compose file with the values it uses, without the keys no compose file names
    (the native role's own, e.g. DB_DATA_DIR)."""
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


def results_dir_of(experiment_id: str, env: dict[str, str]) -> Path:
    """RESULTS_DIR as compose resolves it: relative to the compose files' folder."""
    d = Path(env.get("RESULTS_DIR", f"../results/{experiment_id}/split"))
    return d if d.is_absolute() else (REPO / "compose" / d).resolve()


def host_files(experiment_id: str) -> dict[str, Path]:
    """Each host's compose file of the split run: role (or driver) -> file."""
    _, dep = deployment_of(experiment_id)
    return {name: REPO / f for name, f in (dep.compose.get("hosts") or {}).items()}


def split_env(experiment_id: str, env: dict[str, str]) -> dict[str, str]:
    """What docker compose reads for a host of the split run: the experiment's settings for the .env
    file's PROFILE, under the file's own settings; secrets (the database's password) only from the file."""
    exp, _ = deployment_of(experiment_id)
    profile = env.get("PROFILE", "quick")
    settings.parameters(exp, env, profile)  # the file's values checked against their declarations
    numbers = {k: v for k, v in settings.of(exp, profile).items() if not SECRET.search(k)}
    return {**numbers, **env}


def role(experiment_id: str, name: str, env_file: Path, down: bool = False, timeout: float | None = None) -> Path:
    """This host's role of the split run: `up` (the servers wait until healthy and stay up; the
    driver runs to its end) with this host's machine record and what it ran written to the run's
    results folder (RESULTS_DIR) as machine-<role>.json and compose-<role>.json; `down` stops it.
    Copy the server hosts' records beside the driver's results (or share the folder) for
    `pirex table` to name the placement."""
    files = host_files(experiment_id)
    if name not in files:
        raise PirexError(f"--role {name!r}: expected one of {', '.join(files)}")
    if not env_file.is_file():
        raise PirexError(f"--env-file {env_file}: no such file (copy compose/example.env and fill it in)")
    env = read_env_file(env_file)
    full = split_env(experiment_id, env)
    file = files[name]
    base = ["docker", "compose", "-f", str(file), "--env-file", str(env_file.resolve())]
    if down:
        proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, env=full)
        return file
    out = results_dir_of(experiment_id, env)
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o777)  # the driver runs as the image's user
    # how the role ran, in the record the analysis reads (pirex.analysis.jpa.placement), not told by the files' times
    record = {"role": name, "variant": "docker", "network": full.get("NETWORK_MODE") or "bridge"}
    record["before"] = machine.record(out)
    write_json(out / f"machine-{name}.json", record)
    args = ["up", "--exit-code-from", DRIVER] if name == DRIVER else ["up", "-d", "--wait"]
    r = None
    try:
        r = proc.run([*base, *args], timeout=timeout or TIMEOUT["paper"], check=False, env=full)
        used = _images_of(base, full)
    finally:
        if r is None or r.returncode != 0 or name == DRIVER:  # a failed role is not left running
            if r is not None and r.returncode != 0:  # the services' own logs say why (e.g. the database DOWN)
                logs = proc.run([*base, "logs", "--no-color", "--tail", "200"], timeout=120, check=False, env=full)
                (out / f"compose-{name}-services.log").write_text(logs.stdout + logs.stderr)
            proc.run([*base, "down", "--timeout", "30"], timeout=300, check=False, env=full)
    if name == DRIVER:
        record["after"] = machine.record(out)
        write_json(out / f"machine-{name}.json", record)
    write_json(
        out / f"compose-{name}.json",
        {
            "role": name,
            "compose_file": str(file.relative_to(REPO)),
            "compose_file_sha256": sha256(file),
            "environment": masked(full),
            "images": used,
            "command": args,
            "exit_code": r.returncode,
        },
    )
    (out / f"compose-{name}.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise PirexError(
            f"the {name} role failed (exit {r.returncode}) and was taken down; logs in "
            f"{out / f'compose-{name}.log'} and {out / f'compose-{name}-services.log'}:\n{tail}"
        )
    return out


def _images_of(base: list[str], env: dict[str, str]) -> dict[str, dict]:
    """The image each service of the role's project ran: reference and image ID."""
    images = {}
    for c in proc.run([*base, "ps", "-a", "-q"], timeout=60, check=False, env=env).stdout.split():
        info = json.loads(proc.run(["docker", "inspect", c], timeout=60).stdout)[0]
        images[info["Config"]["Labels"].get("com.docker.compose.service", c)] = {
            "reference": info["Config"]["Image"],
            "image_id": info["Image"],
        }
    return images
