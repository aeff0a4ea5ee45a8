""".github/workflows/release.yml builds what docker-bake.hcl declares and nothing it lists by
hand: one docker/bake-action invocation over the bake group with docker/metadata-action's bake
file, provenance and SBOM, every platform; registry.yaml is written from bake's metadata by
`pirex images record`, as `make push` writes it. The graph is computed here as the workflow
computes it: bake over the files and variables of its bake step."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from pirex.core.paths import REPO
from pirex.images import bake
from pirex.images.platforms import SUPPORTED

WORKFLOW = Path(".github/workflows/release.yml")
SAMPLE_TAGS = ["1.2.3", "1.2", "sha-0123abc"]  # what metadata-action makes of refs/tags/v1.2.3
SAMPLE_CONTEXT = {
    "github.repository_owner": "lab",
    "github.repository": "lab/pirex",
    "github.server_url": "https://github.com",
    "github.sha": "0123abc" + "0" * 33,
    "steps.meta.outputs.version": SAMPLE_TAGS[0],
}


def steps(checkout: Path = REPO) -> list[dict]:
    doc = yaml.safe_load((checkout / WORKFLOW).read_text())
    (job,) = doc["jobs"].values()
    return job["steps"]


def step_using(action: str, checkout: Path = REPO) -> dict:
    (step,) = [s for s in steps(checkout) if s.get("uses", "").startswith(f"{action}@")]
    return step


def lines(text: str) -> list[str]:
    """A List input of an action: one item a line."""
    return [s.strip() for s in text.splitlines() if s.strip()]


def expand(text: str, context: dict[str, str]) -> str:
    """The workflow's ${{ ... }} expressions with sample values (an unknown one fails the test)."""
    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: context[m[1]], text)


def release_graph(checkout: Path, tmp: Path) -> bake.Graph:
    """The build graph of the release workflow's bake step, for a tag v1.2.3 of checkout."""
    doc = yaml.safe_load((checkout / WORKFLOW).read_text())
    meta_file = tmp / "docker-metadata-action-bake-tags.json"
    meta_file.write_text(
        json.dumps(
            {
                "target": {
                    step_using("docker/metadata-action", checkout)["with"].get(
                        "bake-target", "docker-metadata-action"
                    ): {
                        "tags": SAMPLE_TAGS,
                        "args": {"DOCKER_META_IMAGES": "", "DOCKER_META_VERSION": SAMPLE_TAGS[0]},
                    }
                }
            }
        )
    )
    context = {**SAMPLE_CONTEXT, "steps.meta.outputs.bake-file-tags": str(meta_file)}
    context |= {f"env.{k}": expand(v, context) for k, v in doc.get("env", {}).items()}
    step = step_using("docker/bake-action", checkout)
    w = step["with"]
    source = checkout / w.get("source", ".")
    files = tuple(source / expand(f, context) for f in lines(w["files"]))
    # bake reads its variables from the environment: the workflow's, the job's, the step's
    variables = {k[len("env.") :]: v for k, v in context.items() if k.startswith("env.")}
    variables |= {k: expand(v, context) for k, v in step.get("env", {}).items()}
    variables |= dict(line.split("=", 1) for line in lines(expand(w.get("vars", ""), context)))
    return bake.graph(w.get("targets", "default"), files=files, env=variables, cwd=source)


def test_one_bake_step_with_metadata_tags_provenance_and_sbom():
    meta = step_using("docker/metadata-action")
    assert "images" not in meta["with"], "tags only: docker-bake.hcl names each image"
    w = step_using("docker/bake-action")["with"]
    assert w["source"] == "."
    assert lines(w["files"]) == ["./docker-bake.hcl", "${{ steps.meta.outputs.bake-file-tags }}"]
    assert w["push"] is True and w["provenance"] == "mode=max" and w["sbom"] is True
    # nothing of the graph restated: no overrides, no per-image build steps or ordering
    assert "set" not in w
    text = (REPO / WORKFLOW).read_text()
    for hand_made in ("build-push-action", "matrix", "max-parallel", "build-contexts", "dockerfile"):
        assert hand_made not in text


def test_release_graph_is_the_bake_group_on_every_platform(graph, tmp_path):
    release = release_graph(REPO, tmp_path)
    assert release.images == graph.images
    for t in release.catalog():
        assert list(t.tags) == [f"ghcr.io/lab/{t.name}:{v}" for v in SAMPLE_TAGS]
        assert set(t.platforms) == set(map(str, SUPPORTED))
        assert t.args["VERSION"] == "1.2.3" and t.args["REVISION"] == SAMPLE_CONTEXT["github.sha"]
    # the Dockerfiles' pinned public bases, not the offline roles
    assert release.targets["base"].args["DEBIAN_IMAGE"] == bake.variable_default("DEBIAN_IMAGE")


def test_registry_yaml_is_recorded_from_bake_metadata():
    (record,) = [s for s in steps() if "pirex images record" in s.get("run", "")]
    assert record["env"]["METADATA"] == "${{ steps.bake.outputs.metadata }}"
    assert record["env"]["TAG"] == "${{ steps.meta.outputs.version }}"
    assert '--metadata "$RUNNER_TEMP/bake-metadata.json" --tag "$TAG"' in record["run"]
    assert 'printf \'%s\' "$METADATA" > "$RUNNER_TEMP/bake-metadata.json"' in record["run"]
    later = steps()[steps().index(record) + 1 :]
    assert any("git commit" in s.get("run", "") and "registry.yaml" in s["run"] for s in later)
