"""ICPE'18 Experiment 3 on one machine through docker compose (compose/jpa-rest.yml): this
machine's platform of the postgres, jpa-rest and locust images put into the engine, the
machine recorded, `docker compose up --exit-code-from driver`, and `down -v` on every exit
path. The driver writes requests.csv and summary.json into the run's folder."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pirex import machine, proc
from pirex.bundle import sha256, utcnow
from pirex.errors import PirexError
from pirex.images import localregistry, publish
from pirex.images import platforms as plat
from pirex.paths import REPO

log = logging.getLogger(__name__)

COMPOSE_FILE = REPO / "compose" / "jpa-rest.yml"
IMAGES = ("postgres", "jpa-rest", "locust")
PROFILES = {"quick": 10_000, "paper": 10_000_000}  # customers loaded
TIMEOUT = {"quick": 1800, "paper": 6 * 3600}


def run(tag: str, results_dir: Path, profile: str = "quick", customers: int | None = None, users: int = 16,
        timeout: float | None = None) -> Path:  # fmt: skip
    if profile not in PROFILES:
        raise PirexError(f"--profile {profile!r}: expected one of {', '.join(PROFILES)}")
    customers = customers or PROFILES[profile]
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
    try:
        r = proc.run([*base, "up", "--exit-code-from", "driver"], timeout=timeout or TIMEOUT[profile], check=False,
                     env=env)  # fmt: skip
        (out / "compose.log").write_text(r.stdout + r.stderr)
    finally:
        proc.run([*base, "down", "-v", "--timeout", "30"], timeout=300, check=False, env=env)
    if r.returncode != 0 or not (out / "requests.csv").exists():
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-25:])
        raise PirexError(f"the jpa-rest run failed (exit {r.returncode}); log in {out / 'compose.log'}:\n{tail}")
    return out
