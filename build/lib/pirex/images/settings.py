"""An experiment's numbers as NAME=VALUE settings, the one form in which they leave
experiment.yaml: the compose files and the swarm stack file read them from their environment, and
an image's stand-alone defaults (`docker run IMAGE`, without the tool) are a file of them rendered
here and committed (images/<image>/profiles/<profile>.env), never numbers written out by hand.

Each parameter of the profile (overridden by --set, checked against its declaration) is its name
in upper case (customers -> CUSTOMERS), PROFILE the profile's name, and each role of a deployment
adds <ROLE>_PORT, the port it listens on (db -> DB_PORT=5432). `pirex env EXPERIMENT` prints them, and
for an experiment with a compose deployment also its images and results folder (compose_env).

The tools the images run (JMH, Kieker, ...) are pinned once as well, in images/pom.xml (Locust: in the pip
requirements of its image); tool_versions() reads them there.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pirex.core import experiment
from pirex.core.errors import PirexError
from pirex.core.paths import REPO

# The first lines of a rendered file: the command that writes it (pirex/images/test_settings.py checks it is current).
HEADER = (
    "# written by `pirex env {experiment} --profile {profile} --write {path}`\n"
    "# from experiments/{experiment}/experiment.yaml: edit that file, then rerun the command"
)
GENERATED = re.compile(
    r"^# written by `pirex env (?P<experiment>\S+) --profile (?P<profile>\S+) --write (?P<path>\S+)`"
)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def of(exp: experiment.Experiment, profile: str, sets: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """The settings of a profile, --set NAME=VALUE pairs applied (checked)."""
    values = exp.requested(profile, overrides=exp.overrides(list(sets)))
    out = {"PROFILE": profile, **{name.upper(): _text(v) for name, v in values.items()}}
    if exp.deployment:
        out.update({f"{name.upper()}_PORT": str(r.port) for name, r in exp.deployment.roles.items()})
    return out


def compose_env(exp: experiment.Experiment, tag: str, results: str) -> dict[str, str]:
    """What a compose file needs besides the numbers: the images, this machine's platform of each
    tagged in the engine as `pirex compose` tags them (localhost:5000/pirex/<image>:<tag>, whether
    built, imported or pulled by digest), and RESULTS_DIR, the driver's results folder."""
    from pirex.images import localregistry, publish, sources
    from pirex.images import platforms as plat

    with localregistry.local_registry():
        for name in exp.images:
            sources.tagged_locally(name, tag, plat.host())
    return {
        "PIREX_IMAGES": f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}",
        "PIREX_TAG": tag,
        "RESULTS_DIR": results,
    }


def parameters(exp: experiment.Experiment, env: dict[str, str], profile: str) -> dict[str, Any]:
    """The other way round: the parameters an env file gives (its upper-case names, checked against
    their declarations), over the profile's."""
    given = [f"{name}={env[name.upper()]}" for name in exp.declared if name.upper() in env]
    try:
        return exp.requested(profile, overrides=exp.overrides(given))
    except PirexError as e:
        raise PirexError(f"{e} (in the .env file, as its upper-case name)") from None


def text(values: dict[str, str], header: str = "") -> str:
    """NAME=VALUE lines, quoted as a POSIX shell and docker compose's env files both read them."""
    lines = [header] if header else []
    return "\n".join(lines + [f"{k}={shlex.quote(v)}" for k, v in values.items()]) + "\n"


def rendered(experiment_id: str, profile: str, path: str) -> str:
    """A committed file's content (path: relative to the checkout): the header, then the profile's settings."""
    exp = experiment.load(experiment_id)
    return text(of(exp, profile), HEADER.format(experiment=experiment_id, profile=profile, path=path))


def generated_files(root: Path = REPO) -> list[Path]:
    """Every committed file rendered here (images/*/profiles/*.env), found by its header."""
    return sorted(p for p in root.glob("images/*/profiles/*.env") if GENERATED.match(p.read_text()))


# Each tool the images run, by the name the docs give it: its property in images/pom.xml, or for a Python tool
# the requirements file that pins it (as <name in lower case>==VERSION).
MAVEN_TOOLS = {
    "JMH": "jmh.version",
    "Kieker": "kieker.version",
    "OpenTelemetry": "otel.version",
    "Spring Boot": "spring-boot.version",
}
PIP_TOOLS = {"Locust": "images/locust/requirements.txt"}
POM = {"m": "http://maven.apache.org/POM/4.0.0"}


def tool_versions(root: Path = REPO) -> dict[str, str]:
    """The pinned version of each tool of MAVEN_TOOLS and PIP_TOOLS."""
    props = ET.parse(root / "images" / "pom.xml").getroot().find("m:properties", POM)
    out = {tool: props.findtext(f"m:{name}", namespaces=POM) for tool, name in MAVEN_TOOLS.items()}
    for tool, path in PIP_TOOLS.items():
        found = re.search(rf"^{tool.lower()}==(\S+)$", (root / path).read_text(), re.M)
        out[tool] = found[1] if found else None
    missing = [t for t, v in out.items() if not v]
    if missing:
        raise PirexError(f"no pinned version of {', '.join(missing)}: pin it once, in images/pom.xml or {PIP_TOOLS}")
    return out
