"""The bootstrap's reading of the host's apt sources (no Docker needed)."""

import threading
from collections import Counter
from pathlib import Path

import pytest

from pirex.core import paths, proc
from pirex.images import bootstrap, platforms

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


def test_the_rootfs_trees_are_made_at_once(monkeypatch):
    """rootfs_all runs each platform's making in a thread of its own (all under way together) and returns each
    one's result."""
    plats = sorted(platforms.SUPPORTED)
    together = threading.Barrier(len(plats), timeout=30)

    def made(platform, refresh, groups):
        together.wait()  # every platform's making under way at the same time, or this times out
        return Path(f"/rootfs-{platform.dpkg_arch}.tar"), {"platform": str(platform)}

    monkeypatch.setattr(bootstrap, "rootfs", made)
    got = bootstrap.rootfs_all(plats)
    assert {p: r[1]["platform"] for p, r in got.items()} == {p: str(p) for p in plats}


def test_one_rootfs_failing_ends_the_other_mmdebstraps_with_no_retry_or_fallback(monkeypatch, tmp_path):
    """The real rootfs() with its retries and a fallback source: when one platform's making fails, the others'
    mmdebstraps (a sleep each, here) are ended, and none is started again, neither by a retry nor from the
    fallback source; their groups are gone when rootfs_all raises."""
    plats = sorted(platforms.SUPPORTED)
    first, others = plats[0].dpkg_arch, {p.dpkg_arch for p in plats[1:]}
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(bootstrap, "source_candidates", lambda: [("main", "Types: deb\n"), ("fallback", "x\n")])
    calls: Counter[str] = Counter()
    groups: dict[str, int] = {}
    under_way = threading.Event()
    real_run = proc.run

    def mmdebstrap(args, *, started=None, **kw):
        arch = next(a.split("=", 1)[1] for a in map(str, args) if a.startswith("--arch="))
        calls[arch] += 1
        if arch == first:
            assert under_way.wait(60), "the other platforms' mmdebstraps never started"
            raise OSError(28, "No space left on device")

        def begun(pgid: int) -> None:
            started(pgid)
            groups[arch] = pgid
            if set(groups) == others:
                under_way.set()

        return real_run(["sleep", "120"], started=begun, timeout=300, what=kw.get("what"))

    monkeypatch.setattr(proc, "run", mmdebstrap)
    with pytest.raises(OSError, match="No space left"):
        bootstrap.rootfs_all(plats)
    assert calls == Counter(dict.fromkeys([first, *others], 1)), "each started once: no retry, no fallback"
    assert not any(proc.group_alive(g) for g in groups.values())
    assert not list(tmp_path.glob("bootstrap/*.tar*")), "no tarball, not even a part"
