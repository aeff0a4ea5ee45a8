"""docker-bake.hcl is the build graph and the source of truth for the pinned bases: its group is
exactly the image folders, every other target is a shared build stage, and the Dockerfiles' own
defaults (used by a plain `docker build`) say what bake passes; every base is pinned by digest."""

import re

import pytest

from pirex.core.paths import REPO
from pirex.images import bake

IMAGES = REPO / "images"
STAGES = IMAGES / "stages"
BASE_ARG = re.compile(r"^ARG (\w+_IMAGE)=(\S+)$", re.M)


def pinning_dockerfiles() -> list[str]:
    """Every Dockerfile under images/ that pins a base in an ARG default, but the bootstrap
    roles' (pirex passes theirs; they are not part of the bake graph)."""
    return sorted(
        str(f.relative_to(IMAGES))
        for f in IMAGES.glob("**/Dockerfile")
        if "bootstrap" not in f.relative_to(IMAGES).parts and BASE_ARG.search(f.read_text())
    )


def test_the_group_is_the_image_folders(graph):
    folders = {d.name for d in IMAGES.iterdir() if (d / "Dockerfile").is_file()}
    assert set(graph.images) == folders
    for t in graph.catalog():
        assert t.dockerfile_path().resolve() == IMAGES / t.name / "Dockerfile", t.name


def test_every_other_target_is_a_shared_stage(graph):
    """A target outside the group is a stage an image builds on (images/stages/), never a
    forgotten image: an images/<name>/Dockerfile target that the group leaves out fails here."""
    declared = set(re.findall(r'^target "([^"]+)"', (REPO / "docker-bake.hcl").read_text(), re.M))
    helpers = {n for n in declared if n.startswith("_")} | {"docker-metadata-action"}
    for name in sorted(declared - set(graph.images) - helpers):
        assert name in graph.targets, f'target "{name}" is neither in group "default" nor a stage an image uses'
        t = graph.targets[name]
        assert t.dockerfile_path().resolve().is_relative_to(STAGES), name
        assert not t.tags, f"stage {name} is never tagged or pushed"


@pytest.mark.parametrize("dockerfile", pinning_dockerfiles())
def test_dockerfile_defaults_match_the_bake_file(graph, dockerfile):
    path = IMAGES / dockerfile
    users = [t for t in graph.targets.values() if t.dockerfile_path().resolve() == path]
    assert users, f"{dockerfile} pins a base but no target of docker-bake.hcl builds it"
    for arg, default in BASE_ARG.findall(path.read_text()):
        for t in users:
            assert t.args.get(arg) == default, f"{dockerfile}: ARG {arg} default differs from bake's (target {t.name})"


def test_the_dockerfiles_that_pin_a_base_are_found():
    # the Java images take theirs from the stage they build on
    assert {"base/Dockerfile", "jvm/Dockerfile", "fork/Dockerfile", "stages/java-build/Dockerfile"} <= set(
        pinning_dockerfiles()
    )


@pytest.mark.parametrize("arg", ["DEBIAN_IMAGE", "JDK_IMAGE", "MAVEN_IMAGE"])
def test_public_bases_are_pinned_by_tag_and_digest(arg):
    assert re.fullmatch(r"[a-z0-9.-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}", bake.variable_default(arg))


def test_no_syntax_line_anywhere():
    # A `# syntax=` line makes BuildKit pull a frontend image: offline builds would break.
    for f in REPO.glob("images/**/Dockerfile"):
        assert not re.search(r"^#\s*syntax\s*=", f.read_text(), re.M | re.I), f


# --- what changes with every commit reaches no layer -------------------------------------------------------------
# VERSION (git describe) and REVISION (the commit) change with every commit. BuildKit invalidates a stage's cache
# from an ARG's first use on (and a declared ARG enters every later RUN's environment), so they are declared and
# used only after the last instruction that makes a layer of the final stage: then only the image config changes,
# and a commit that touches nothing under images/ rebuilds no layer of any platform (issue 40).
PER_COMMIT = re.compile(r"\b(VERSION|REVISION)\b")


def instructions(text: str) -> list[str]:
    """A Dockerfile's instructions, continuation lines joined, comments (also those inside a continued
    instruction, which Docker drops) left out."""
    out, current = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        current += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            out.append(" ".join(current.split()))
            current = ""
    assert not current, "a continuation line runs past the end of the file"
    return out


def all_dockerfiles() -> list[str]:
    return sorted(str(f.relative_to(IMAGES)) for f in IMAGES.glob("**/Dockerfile"))


def test_instructions_join_continuations_and_drop_comments():
    text = "FROM x\n# a comment\nRUN a \\\n# inside\n\tb\n\nLABEL k=v \\\n  l=w\n"
    assert instructions(text) == ["FROM x", "RUN a b", "LABEL k=v l=w"]


@pytest.mark.parametrize("dockerfile", all_dockerfiles())
def test_per_commit_arguments_reach_only_the_final_labels(dockerfile):
    steps = instructions((IMAGES / dockerfile).read_text())
    first = next((i for i, s in enumerate(steps) if PER_COMMIT.search(s)), None)
    if first is None:
        return  # a stage or bootstrap role: no per-commit value at all
    tail = steps[first:]
    assert all(s.split()[0].upper() in ("ARG", "LABEL") for s in tail), (
        f"{dockerfile}: after `{steps[first]}` only ARG and LABEL may follow, not {tail}"
    )
    assert tail[-1].upper().startswith("LABEL"), f"{dockerfile}: the labels are its last instruction"
    assert "org.opencontainers.image.revision=" in tail[-1], dockerfile


def test_every_image_labels_its_revision_and_the_stages_none(graph):
    """The images record the commit they were built from (tests/test_images.py reads the label from the built
    configs); the shared build stages and the bootstrap roles, whose layers every image reuses, take no per-commit
    value, and bake passes none to them."""
    for t in graph.catalog():
        assert PER_COMMIT.search(t.dockerfile_path().read_text()), f"{t.name} records no revision"
        assert "REVISION" in t.args, t.name
    for name in set(graph.targets) - set(graph.images):
        assert not PER_COMMIT.search(graph.targets[name].dockerfile_path().read_text()), name
        assert not {"VERSION", "REVISION"} & set(graph.targets[name].args), name
    for f in (IMAGES / "bootstrap").glob("*/Dockerfile"):
        assert not PER_COMMIT.search(f.read_text()), f
