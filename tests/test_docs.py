"""The README is the five-minute start and docs/ holds the rest (issue 39): the README stays short and shows the
two commands, and every relative link of README.md and docs/*.md leads to a file of the checkout. The MkDocs build
itself (its links between pages and their headings) is `make lint`'s, not repeated here."""

from __future__ import annotations

import re
from pathlib import Path

from pirex.core.paths import REPO

README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 200  # issue 39: a newcomer reads it in five minutes

FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE = re.compile(r"`[^`\n]*`")
INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target), ![alt](target)
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)  # [name]: target
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)  # a scheme, protocol-relative, or this page


def relative_links(page: Path) -> list[str]:
    """The relative link targets of a Markdown page, outside code, without their #fragment."""
    text = CODE.sub("", FENCE.sub("", page.read_text()))
    targets = INLINE.findall(text) + REFERENCE.findall(text)
    return [t.split("#", 1)[0] for t in targets if not EXTERNAL.match(t)]


def test_the_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move a topic to docs/"


def test_the_readme_shows_the_two_commands():
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.DOTALL | re.MULTILINE)
    commands = {ln.split("#", 1)[0].strip() for b in blocks for ln in b.splitlines()}
    assert {"make run", "make test"} <= commands, f"README.md's sh blocks: {blocks}"


def test_every_relative_link_leads_to_a_file():
    assert PAGES, "docs/ has no pages"
    broken = [
        f"{page.relative_to(REPO)}: {target}"
        for page in [README, *PAGES]
        for target in relative_links(page)
        if not (page.parent / target).is_file()
    ]
    assert not broken, "links to no file:\n" + "\n".join(broken)


def test_the_reports_picture_is_small():
    picture = REPO / "docs/report.png"  # the README's picture of report.html
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size < 250_000


def test_the_links_are_read(tmp_path):
    """The parser on the forms the pages use: inline, image, reference, fragment; not code, not external."""
    page = tmp_path / "p.md"
    page.write_text(
        "[a](a.md) ![b](img/b.png) [c](c.md#part) [d](https://example.org/d.md) [e](#here) `[f](f.md)`\n"
        "```sh\n[g](g.md)\n```\n[h]: h.md\n"
    )
    assert relative_links(page) == ["a.md", "img/b.png", "c.md", "h.md"]
