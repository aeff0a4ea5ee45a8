"""Offline stand-ins for the public base images (images/bootstrap/README.md): Debian rootfs
tarballs made by mmdebstrap, turned into multi-platform images in the local registry, and the
JDK and Maven roles built FROM them. Each role's tag carries a hash of its recipe, so a warm
run reuses what is there and any change to a recipe builds anew."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pirex.core import paths, proc
from pirex.core.bundle import sha256
from pirex.core.errors import PirexError
from pirex.images import builder, localregistry, regclient
from pirex.images.platforms import Platform

log = logging.getLogger(__name__)

ROLES = paths.REPO / "images" / "bootstrap"
SUITE = "bookworm"
SUITES = {SUITE, f"{SUITE}-updates", f"{SUITE}-security"}
# As debuerreotype makes the -slim images: no manuals, docs or translations.
SLIM_DPKG_OPTS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
    "path-exclude=/usr/share/lintian/*",
)
# As the official images' /etc/apt/apt.conf.d/docker-*: no package caches or translations
# left in image layers (without these, apt's pkgcache.bin alone adds ~40 MB to every layer that
# installs a package).
SLIM_APT_OPTS = (
    'Dir::Cache::pkgcache ""',
    'Dir::Cache::srcpkgcache ""',
    'Acquire::Languages "none"',
    'APT::AutoRemove::SuggestsImportant "false"',
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
    '/var/cache/apt/*.bin || true"; }',
)
# merged-/usr through mmdebstrap's hook (usr-is-merged) rather than the usrmerge package, which
# would pull full perl into every image, as debuerreotype does for the official images.
MERGED_USR_HOOK = "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr"
# dpkg under eatmydata while the rootfs is made (mmdebstrap's own hook, which removes it again): a foreign
# architecture's dpkg runs under QEMU, and its fsyncs were much of an arm rootfs's time (tests/emulated_pi.py's
# trees do the same). The tarball's files are the same; the hook needs dpkg-architecture (dpkg-dev).
EATMYDATA_HOOK = "--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata"
MMDEBSTRAP_TIMEOUT = 1800
# Raspberry Pi OS adds its own archive with a Debian-like path; its keyring is not in a Debian rootfs.
FOREIGN = re.compile(r"raspberrypi|raspbian", re.I)
ROLE_BUILD_TIMEOUT = 3600


# --- the host's Debian sources --------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    signed_by: str = ""

    def deb822(self) -> str:
        lines = ["Types: deb", f"URIs: {' '.join(self.uris)}", f"Suites: {' '.join(self.suites)}", "Components: main"]
        if self.signed_by.startswith("/usr/share/keyrings/debian-archive"):
            lines.append(f"Signed-By: {self.signed_by}")
        return "\n".join(lines) + "\n"


def parse_sources(texts: Iterable[tuple[str, str]]) -> list[Source]:
    """Debian bookworm entries of apt source files, given as (file name, text).

    Both formats: deb822 (*.sources) and one-line (sources.list). Anything else the host uses
    (Raspberry Pi's own archive, PPAs, other releases) is left out."""
    out: list[Source] = []
    for name, text in texts:
        if name.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[0].isspace():
                        continue
                    k, _, v = line.partition(":")
                    fields[k.strip().lower()] = v.strip()
                if fields.get("enabled", "yes").lower() == "no" or "deb" not in fields.get("types", "").split():
                    continue
                _keep(
                    out,
                    fields.get("uris", "").split(),
                    fields.get("suites", "").split(),
                    fields.get("components", "").split(),
                    fields.get("signed-by", ""),
                )
        else:
            for line in text.splitlines():
                m = re.match(
                    r"^\s*deb\s+(?:\[(?P<opts>[^]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)\s+(?P<comps>.*)$", line
                )
                if m:
                    signed = re.search(r"signed-by=(\S+)", m["opts"] or "")
                    _keep(out, [m["uri"]], [m["suite"]], m["comps"].split(), signed[1] if signed else "")
    return out


def _keep(out: list[Source], uris: list[str], suites: list[str], comps: list[str], signed_by: str) -> None:
    wanted = tuple(s for s in suites if s in SUITES)
    debian = all(re.search(r"/debian(-security)?/?$", u) and not FOREIGN.search(u) for u in uris)
    if uris and wanted and "main" in comps and debian:
        out.append(Source(tuple(uris), wanted, signed_by))


def host_sources() -> list[Source]:
    d = Path("/etc/apt/sources.list.d")
    files = [Path("/etc/apt/sources.list"), *sorted([*d.glob("*.list"), *d.glob("*.sources")])]
    return parse_sources((f.name, f.read_text(errors="replace")) for f in files if f.is_file())


def without_security(sources: list[Source]) -> list[Source]:
    out = []
    for s in sources:
        suites = tuple(x for x in s.suites if not x.endswith("-security"))
        if suites:
            out.append(Source(s.uris, suites, s.signed_by))
    return out


def source_candidates() -> list[tuple[str, str]]:
    """(description, deb822 text) to try in order: full sources, then the main suites alone."""
    if env := os.environ.get("PIREX_DEBIAN_SOURCES"):
        return [(f"PIREX_DEBIAN_SOURCES ({env})", Path(env).read_text())]
    full = host_sources()
    if not full:
        raise PirexError(
            "this host's apt sources have no Debian bookworm entry to build the offline base from; "
            "point PIREX_DEBIAN_SOURCES to a deb822 file with Debian bookworm sources"
        )
    cands = [("the host's Debian bookworm sources", "\n".join(s.deb822() for s in full))]
    main = without_security(full)
    if main != full:
        cands.append(("the main suites alone (without security updates)", "\n".join(s.deb822() for s in main)))
    return cands


# --- rootfs tarballs ------------------------------------------------------------------------


def rootfs_all(platforms: list[Platform], refresh: bool = False) -> dict[Platform, tuple[Path, dict]]:
    """rootfs() of each platform, all at once: a foreign architecture's package scripts run under QEMU, one
    process at a time, so one after another they left a CPU idle (on a 2-vCPU VM, about 4 minutes for three
    made in turn). Interrupted (Ctrl-C reaches this thread only) or failing, every mmdebstrap still running is
    ended first, and none is started again (no retry, no fallback)."""
    groups = proc.Groups()
    pool = ThreadPoolExecutor(len(platforms), thread_name_prefix="mmdebstrap")
    try:
        futures = {p: pool.submit(rootfs, p, refresh, groups) for p in platforms}
        return {p: f.result() for p, f in futures.items()}
    except BaseException:
        groups.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def rootfs(platform: Platform, refresh: bool = False, groups: proc.Groups | None = None) -> tuple[Path, dict]:
    """A minbase bookworm rootfs for platform, cached; returns (tarball, its record). Its mmdebstraps run in
    `groups` (rootfs_all's, which may stop them)."""
    groups = groups or proc.Groups()
    d = paths.cache_dir() / "bootstrap"
    d.mkdir(parents=True, exist_ok=True)
    options = [
        "--variant=minbase",
        MERGED_USR_HOOK,
        EATMYDATA_HOOK,
        *(f"--dpkgopt={o}" for o in SLIM_DPKG_OPTS),
        *(f"--aptopt={o}" for o in SLIM_APT_OPTS),
    ]
    cands = source_candidates()
    # a changed recipe or changed sources make a new one
    stem = f"rootfs-{platform.dpkg_arch}-{_key(SUITE, *options, cands[0][1])[:8]}"
    tar, meta = d / f"{stem}.tar", d / f"{stem}.json"
    if tar.exists() and meta.exists() and not refresh:
        record = json.loads(meta.read_text())
        if record["fallback"]:
            log.warning(
                "reusing the %s rootfs made WITHOUT security updates (%s); "
                "`pirex images bootstrap --refresh` tries the full sources again",
                platform,
                record["sources"],
            )
        return tar, record
    tmp = tar.with_suffix(".tar.part")
    for n, (desc, text) in enumerate(cands):
        src = d / f"sources-{platform.dpkg_arch}-{n}.sources"  # one per platform: they are made at once
        src.write_text(text)
        args = ["mmdebstrap", *options, f"--arch={platform.dpkg_arch}", "--format=tar", SUITE, tmp, src]
        log.info("making a Debian %s rootfs for %s from %s", SUITE, platform, desc)
        try:
            proc.retry(
                lambda args=args: groups.run(args, timeout=MMDEBSTRAP_TIMEOUT, what=f"mmdebstrap ({platform})"),
                attempts=3,
                what=f"mmdebstrap ({platform})",
                delay=10,
                retry_if=lambda _: not groups.stopping,
            )
        except PirexError as e:
            tmp.unlink(missing_ok=True)
            if n + 1 < len(cands) and not groups.stopping:
                log.warning(
                    "mmdebstrap failed three times with %s; FALLING BACK to %s: %s", desc, cands[n + 1][0], proc.gist(e)
                )
                continue
            raise
        record = {
            "platform": str(platform),
            "suite": SUITE,
            "sources": desc,
            "fallback": n > 0,
            "sha256": sha256(tmp),
            "mmdebstrap": _mmdebstrap_version(),
        }
        for stale in d.glob(f"rootfs-{platform.dpkg_arch}-*"):  # older recipes
            if stale != tmp:
                stale.unlink()
        os.replace(tmp, tar)
        meta.write_text(json.dumps(record, indent=2) + "\n")
        if n > 0:
            log.warning(
                "the %s rootfs was built WITHOUT security updates (%s): fine for measurements, "
                "not for anything exposed",
                platform,
                desc,
            )
        return tar, record
    raise AssertionError("unreachable")


def _mmdebstrap_version() -> str:
    return proc.run(["mmdebstrap", "--version"], timeout=30).stdout.strip()


# --- roles ----------------------------------------------------------------------------------


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _role_tag(role: str, key: str) -> str:
    return f"{localregistry.HOST}/pirex-bootstrap/{role}:{SUITE}-{key}"


def _build_role(
    name: str,
    tag: str,
    platforms: list[Platform],
    context: Path,
    builder_name: str,
    args: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> None:
    reg = regclient.Registry(localregistry.HOST)
    _, repo, ref = regclient.split_ref(tag)
    if reg.exists(repo, ref):
        log.info("bootstrap role %s: reusing %s", name, tag)
        return
    log.info("bootstrap role %s: building %s for %s", name, tag, ",".join(map(str, platforms)))
    cmd = [
        "build",
        "--builder",
        builder_name,
        "--platform",
        ",".join(map(str, platforms)),
        "--push",
        "--provenance=false",
        "-t",
        tag,
        "-f",
        ROLES / name / "Dockerfile",
    ]
    for k, v in (args or {}).items():
        cmd += ["--build-arg", f"{k}={v}"]
    for k, v in (labels or {}).items():
        cmd += ["--label", f"{k}={v}"]
    proc.retry(
        lambda: builder.buildx(
            *cmd, str(context), timeout=ROLE_BUILD_TIMEOUT, capture=False, what=f"building bootstrap role {name}"
        ),
        attempts=2,
        what=f"bootstrap role {name}",
        delay=10,
    )


def bootstrap(
    platforms: list[Platform], build_platform: Platform, builder_name: str, refresh: bool = False
) -> dict[str, str]:
    """Build the roles; return the bake variables that point the images at them."""
    want = sorted(set(platforms) | {build_platform})
    tars = rootfs_all(want, refresh)

    ctx = paths.cache_dir() / "bootstrap" / "context-debian"
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir(parents=True)
    for p, (tar, _) in tars.items():
        os.link(tar, ctx / f"rootfs-{p.architecture}{p.variant}.tar")  # TARGETARCH + TARGETVARIANT
    dockerfile = (ROLES / "debian" / "Dockerfile").read_bytes().decode()
    debian = _role_tag("debian", _key(dockerfile, *(f"{p}={rec['sha256']}" for p, (_, rec) in tars.items())))
    fallback = ",".join(str(p) for p, (_, rec) in tars.items() if rec["fallback"])
    _build_role("debian", debian, want, ctx, builder_name, labels={"org.pirex.bootstrap.fallback": fallback or "none"})

    def role(name: str, plats: list[Platform]) -> str:
        text = (ROLES / name / "Dockerfile").read_text()
        tag = _role_tag(name, _key(text, debian, *map(str, plats)))
        _build_role(name, tag, plats, ROLES / name, builder_name, args={"DEBIAN_IMAGE": debian})
        return tag

    return {
        "DEBIAN_IMAGE": debian,
        "JDK_IMAGE": role("jdk", sorted(set(platforms))),
        "MAVEN_IMAGE": role("maven", [build_platform]),
    }
