"""MkDocs hook: pirex/core/schemas/*.schema.json published with the docs, as files (schemas/<name>.schema.json, for
an editor's YAML language server) and inline where a page says <!-- schema: NAME -->. The files the runner
validates against are the ones shown: no copy to drift."""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

SCHEMAS = Path(__file__).resolve().parents[2] / "pirex" / "core" / "schemas"
MARK = re.compile(r"^<!-- schema: ([a-z]+) -->$", re.M)


def on_files(files, config):
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        files.append(File.generated(config, f"schemas/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    def inline(m: re.Match) -> str:
        return "```json\n" + (SCHEMAS / f"{m[1]}.schema.json").read_text().rstrip() + "\n```"

    return MARK.sub(inline, markdown)
