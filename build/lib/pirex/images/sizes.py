"""What the collection weighs: each image's compressed size per platform as stored in the
registry, and the distinct bytes per platform (layers shared between images counted once:
what a Pi actually downloads to get every image)."""

from __future__ import annotations

from pirex.images import regclient
from pirex.images.platforms import Platform


def table(reg: regclient.Registry, repos: dict[str, str], tag: str) -> tuple[list[list[str]], dict[Platform, int]]:
    """Rows (image, platform, layers, compressed MB) and distinct bytes per platform."""
    rows: list[list[str]] = []
    distinct: dict[Platform, dict[str, int]] = {}
    for name, repo in repos.items():
        _, images = reg.platform_images(repo, tag)
        for p, img in sorted(images.items()):
            rows.append([name, str(p), str(len(img.layers)), f"{img.compressed_size / 1e6:.1f}"])
            distinct.setdefault(p, {}).update(dict(img.layers))
    return rows, {p: sum(layers.values()) for p, layers in sorted(distinct.items())}


def markdown(rows: list[list[str]], distinct: dict[Platform, int]) -> str:
    out = ["| image | platform | layers | compressed MB |", "|---|---|---:|---:|"]
    out += [f"| {' | '.join(r)} |" for r in rows]
    out += ["", "| platform | distinct compressed MB (shared layers once) |", "|---|---:|"]
    out += [f"| {p} | {b / 1e6:.1f} |" for p, b in distinct.items()]
    return "\n".join(out)
