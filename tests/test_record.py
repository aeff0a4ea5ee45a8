"""`pirex images record`, as the release workflow runs it: registry.yaml from the metadata file
of a `docker buildx bake --push` of the collection (here `make build`'s own bake, pushed to the
local registry), with the digests checked against what the registry serves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from pirex.core.paths import REPO
from pirex.images import localregistry, publish, registryfile

pytestmark = pytest.mark.docker


def test_record_writes_registry_yaml_from_bake_metadata(built, tmp_path):
    metadata = tmp_path / "bake-metadata.json"
    metadata.write_text(json.dumps(built.metadata))
    regfile = tmp_path / "registry.yaml"
    shutil.copy(REPO / "registry.yaml", regfile)
    before = registryfile.load(regfile)

    cmd = [sys.executable, "-m", "pirex", "images", "record", "--metadata", metadata, "--tag", built.tag]
    r = subprocess.run([*map(str, cmd), "--registry-file", str(regfile)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    entries = registryfile.load(regfile)
    assert set(entries) >= set(built.digests)
    for name, digest in built.digests.items():
        e = entries[name]
        assert e.repository == f"{localregistry.HOST}/{publish.LOCAL_NAMESPACE}/{name}"
        assert (e.tag, e.digest) == (built.tag, digest)
        assert e.platforms == [str(p) for p in sorted(built.platforms_for(name))]
        assert e.extra == (before[name].extra if name in before else {})  # fields beyond the four are kept
