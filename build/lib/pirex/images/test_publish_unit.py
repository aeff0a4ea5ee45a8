import pytest

from pirex.core.errors import PirexError
from pirex.images import publish


@pytest.mark.parametrize("dest", ["ghcr.io/your-lab", "192.0.2.7:5000/pirex", "localhost:5001/a/b"])
def test_destination_ok(dest):
    assert publish.parse_destination(dest + "/") == dest


@pytest.mark.parametrize("dest", ["ghcr.io", "ghcr.io/Lab", "https://ghcr.io/lab", "ghcr.io/lab:tag x", ""])
def test_destination_bad(dest):
    with pytest.raises(PirexError, match="host\\[:port\\]/namespace"):
        publish.parse_destination(dest)


@pytest.mark.parametrize(
    "stderr",
    [
        "ERROR: failed to push: unexpected status from HEAD request: 401 Unauthorized",
        "error: authentication required",
        "no basic auth credentials",
        "denied: requested access to the resource is denied",
    ],
)
def test_auth_errors_are_recognized(stderr):
    assert publish.AUTH_ERROR.search(stderr)


def test_other_errors_are_not_auth_errors():
    assert not publish.AUTH_ERROR.search("dial tcp 127.0.0.1:5001: connect: connection refused")


def test_record_refuses_metadata_without_every_image(tmp_path):
    metadata = tmp_path / "metadata.json"
    metadata.write_text('{"base": {"containerimage.digest": "sha256:' + "0" * 64 + '", "image.name": "r/base:v1"}}')
    regfile = tmp_path / "registry.yaml"
    regfile.write_text("images: {}\n")
    with pytest.raises(PirexError, match="names no image jvm pushed with tag v1"):
        publish.record(metadata, "v1", ["jvm"], regfile)
    with pytest.raises(PirexError, match="names no image base pushed with tag v2"):
        publish.record(metadata, "v2", ["base"], regfile)
    assert regfile.read_text() == "images: {}\n"
