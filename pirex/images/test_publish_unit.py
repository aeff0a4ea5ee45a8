import pytest

from pirex.errors import PirexError
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
