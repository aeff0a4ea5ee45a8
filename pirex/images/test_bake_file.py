"""docker-bake.hcl is the source of truth for the pinned bases; the Dockerfiles' own defaults
(used by a plain `docker build`) must say the same, and every base is pinned by digest."""

import re

import pytest

from pirex.images import bake
from pirex.paths import REPO


@pytest.mark.parametrize(
    ("dockerfile", "arg"), [("base", "DEBIAN_IMAGE"), ("jvm", "JDK_IMAGE"), ("jmh", "MAVEN_IMAGE")]
)
def test_dockerfile_defaults_match_the_bake_file(dockerfile, arg):
    text = (REPO / "images" / dockerfile / "Dockerfile").read_text()
    m = re.search(rf"^ARG {arg}=(\S+)$", text, re.M)
    assert m and m[1] == bake.variable_default(arg)


@pytest.mark.parametrize("arg", ["DEBIAN_IMAGE", "JDK_IMAGE", "MAVEN_IMAGE"])
def test_public_bases_are_pinned_by_tag_and_digest(arg):
    assert re.fullmatch(r"[a-z0-9.-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}", bake.variable_default(arg))


def test_no_syntax_line_anywhere():
    # A `# syntax=` line makes BuildKit pull a frontend image: offline builds would break.
    for f in REPO.glob("images/**/Dockerfile"):
        assert not re.search(r"^#\s*syntax\s*=", f.read_text(), re.M | re.I), f
