"""A provider plugin's docs table held to the truth: inherit ``CapabilityTableConformance``.

A plugin's page ``docs/providers/NAME.md`` has a table under "## What it carries" with the
columns ``block | where | sources | mode | notes`` (``where`` and ``sources`` may list several,
comma-separated; ``-`` for no source). The kit checks it twice over: against the plugin's
``Capabilities`` (every row says what the capabilities say, and nothing they declare is missing)
and against ``oma plugins --json`` (every capability column it shows). A provider that declares
media size limits (``Capabilities.limits``) lists them under "## Size limits" in a table with
the columns ``blocks | per | at most (bytes) | counted as | set by`` (``-`` for no option),
checked against the declared limits both ways::

    class TestGeminiDocsTable(CapabilityTableConformance):
        provider = "gemini"
        doc = Path(__file__).resolve().parents[3] / "docs" / "providers" / "gemini.md"
        capabilities = CAPABILITIES
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..capabilities import Capabilities

__all__ = ["CLI_COLUMNS", "CapabilityTableConformance", "capability_table", "limits_table"]

#: ``oma plugins --json`` capability columns -> the (block, where, source) row they show.
CLI_COLUMNS: dict[str, tuple[str, str, str | None]] = {
    "text": ("text", "user", None),
    "image_base64": ("image", "user", "base64"),
    "image_url": ("image", "user", "url"),
    "video_base64": ("video", "user", "base64"),
    "video_url": ("video", "user", "url"),
    "tool_use": ("tool_use", "assistant", None),
    "tool_result_media": ("image", "tool_result", None),
    "document": ("document", "user", None),
    "audio": ("audio", "user", None),
}
_MEDIA = ("image", "video", "document", "audio", "file")

Rows = dict[tuple[str, str, str | None], str]


def capability_table(doc: Path) -> Rows:
    """(block, where, source) -> mode, one entry per role and source a row of the table lists."""
    section = doc.read_text(encoding="utf-8").split("## What it carries", 1)[1]
    lines = section.split("\n## ", 1)[0].splitlines()  # up to the next section
    rows: Rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("block", "") or set(cells[0]) <= {"-"}:
            continue
        block, wheres, sources, mode = cells[0], cells[1], cells[2], cells[3]
        for where in (w.strip() for w in wheres.split(",")):
            for source in [None] if sources == "-" else [s.strip() for s in sources.split(",")]:
                rows[(block, where, source)] = mode
    assert rows, f"no table under '## What it carries' in {doc}"
    return rows


LimitRow = tuple[frozenset[str], str, int, str, str | None]


def limits_table(doc: Path) -> set[LimitRow]:
    """(block types, per, max bytes, counted as, option) of each row under "## Size limits";
    empty when the page has no such section."""
    text = doc.read_text(encoding="utf-8")
    if "## Size limits" not in text:
        return set()
    section = text.split("## Size limits", 1)[1].split("\n## ", 1)[0]
    rows: set[LimitRow] = set()
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("blocks", "") or set(cells[0]) <= {"-"}:
            continue
        blocks = frozenset(b.strip() for b in cells[0].split(","))
        option = None if cells[4] == "-" else cells[4].removeprefix("provider_options.")
        rows.add(
            (blocks, cells[1], int(cells[2].replace(",", "").replace("_", "")), cells[3], option)
        )
    return rows


class CapabilityTableConformance:
    """The inherited tests; set ``provider``, ``doc`` and ``capabilities``.

    ``every_column_documented``: each ``oma plugins --json`` column has its own row in the
    table (set False for a table that leaves refused blocks out: they are then expected
    "refused").
    """

    provider: ClassVar[str]
    doc: ClassVar[Path]
    capabilities: ClassVar[Capabilities]
    every_column_documented: ClassVar[bool] = True

    def test_table_matches_the_capabilities(self) -> None:
        rows = capability_table(self.doc)
        for (block, where, source), mode in rows.items():
            declared = self.capabilities.mode(block, where, source)
            assert (declared.value if declared else "refused") == mode, (block, where, source)
        for support in self.capabilities.blocks:  # nothing declared is missing from the table
            for where in support.roles:
                media = support.block_type in _MEDIA
                for source in sorted(support.sources) if media else [None]:
                    assert (support.block_type, where, source) in rows, (support.block_type, where)

    def test_size_limits_table_matches_the_declared_limits(self) -> None:
        declared = {
            (limit.block_types, limit.scope, limit.max_bytes, limit.measure, limit.option)
            for limit in self.capabilities.limits
        }
        assert limits_table(self.doc) == declared

    @pytest.mark.parametrize("column", sorted(CLI_COLUMNS))
    def test_oma_plugins_json_matches_the_table(
        self, column: str, plugins_json: dict[str, Any]
    ) -> None:
        rows = capability_table(self.doc)
        block, where, source = CLI_COLUMNS[column]
        if source is None and block == "image":  # any source in a tool result
            expected = rows.get((block, where, "base64"), "refused")
        elif source is None and block in _MEDIA:  # the best mode over its sources
            found = {rows.get((block, where, kind), "refused") for kind in ("base64", "url")}
            expected = next((m for m in ("native", "forwarded") if m in found), "refused")
        elif self.every_column_documented:
            expected = rows[(block, where, source)]
        else:
            expected = rows.get((block, where, source), "refused")
        assert plugins_json["providers"][self.provider]["capabilities"][column] == expected

    @pytest.fixture(scope="class")
    @classmethod
    def plugins_json(cls) -> dict[str, Any]:
        code = "from oma_core.cli import main; main(['plugins', '--json'])"
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert out.returncode == 0, out.stderr
        result: dict[str, Any] = json.loads(out.stdout)
        return result
