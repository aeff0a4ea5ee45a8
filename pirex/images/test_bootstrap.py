"""The bootstrap's reading of the host's apt sources (no Docker needed)."""

from pathlib import Path

from pirex.images import bootstrap

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://mirror.example/debian
Suites: bookworm
Components: main

Types: deb
URIs: http://mirror.example/debian
Suites: trixie
Components: main
"""

RASPI = """\
deb http://archive.raspberrypi.example/debian/ bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bookworm main
deb http://mirror.example/debian-security/ bookworm-security main
# deb http://mirror.example/debian bookworm-backports main
deb http://ppa.example/ubuntu jammy main
"""


def test_deb822_keeps_bookworm_binary_entries_only():
    srcs = bootstrap.parse_sources([("debian.sources", DEB822)])
    assert [(s.uris, s.suites) for s in srcs] == [
        (("http://mirror.example/debian",), ("bookworm", "bookworm-updates")),
        (("http://mirror.example/debian-security",), ("bookworm-security",)),
    ]
    text = srcs[0].deb822()
    assert "Components: main\n" in text and "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in text


def test_one_line_format_and_foreign_archives():
    srcs = bootstrap.parse_sources([("sources.list", RASPI)])
    # Raspberry Pi's own archive (Debian-like path, own keyring), the PPA and the comment are dropped.
    assert [s.uris[0] for s in srcs] == ["http://mirror.example/debian", "http://mirror.example/debian-security/"]
    suites = [s.suites for s in srcs]
    assert ("bookworm-security",) in suites
    assert all("ppa.example" not in u for s in srcs for u in s.uris)
    signed = [s for s in srcs if s.signed_by]
    assert signed and signed[0].signed_by == "/usr/share/keyrings/debian-archive-keyring.gpg"


def test_disabled_stanza_is_skipped():
    text = DEB822.replace("Suites: bookworm bookworm-updates\n", "Suites: bookworm bookworm-updates\nEnabled: no\n", 1)
    assert [s.suites for s in bootstrap.parse_sources([("x.sources", text)])] == [("bookworm-security",)]


def test_fallback_drops_the_security_suite():
    srcs = bootstrap.parse_sources([("debian.sources", DEB822)])
    main = bootstrap.without_security(srcs)
    assert [s.suites for s in main] == [("bookworm", "bookworm-updates")]
    assert bootstrap.without_security(main) == main


def test_role_keys_change_with_the_recipe():
    assert bootstrap._key("FROM x", "a") != bootstrap._key("FROM x", "b")
    assert bootstrap._key("FROM x", "a") == bootstrap._key("FROM x", "a")
    assert bootstrap._role_tag("jdk", "0123").endswith("/pirex-bootstrap/jdk:bookworm-0123")


def test_the_rootfs_trees_are_made_at_once_and_a_failure_ends_the_others(monkeypatch):
    """rootfs_all runs each platform's making in a thread of its own (all three under way together), returns each
    one's result, and when one fails ends every mmdebstrap still running before it raises (no process left)."""
    import signal
    import threading

    import pytest

    from pirex.core import proc
    from pirex.core.errors import PirexError
    from pirex.images import platforms

    plats = sorted(platforms.SUPPORTED)
    together = threading.Barrier(len(plats), timeout=30)

    def made(platform, refresh, started):
        together.wait()  # every platform's making under way at the same time, or this times out
        return Path(f"/rootfs-{platform.dpkg_arch}.tar"), {"platform": str(platform)}

    monkeypatch.setattr(bootstrap, "rootfs", made)
    got = bootstrap.rootfs_all(plats)
    assert {p: r[1]["platform"] for p, r in got.items()} == {p: str(p) for p in plats}

    sleepers: list[int] = []
    ended: list[int] = []

    def one_fails(platform, refresh, started):
        if platform != plats[0]:
            p = proc.start(["sleep", "120"])
            sleepers.append(p.pid)
            started(p.pid)
            ended.append(p.wait())  # until rootfs_all ends it (a signal), or its two minutes (0)
            raise PirexError(f"mmdebstrap ({platform}) ended")
        while len(sleepers) < len(plats) - 1:
            threading.Event().wait(0.05)
        raise PirexError("mmdebstrap (the first) failed")

    monkeypatch.setattr(bootstrap, "rootfs", one_fails)
    with pytest.raises(PirexError, match="the first"):
        bootstrap.rootfs_all(plats)
    assert ended == [-signal.SIGTERM] * (len(plats) - 1) and not any(proc.group_alive(pid) for pid in sleepers)
