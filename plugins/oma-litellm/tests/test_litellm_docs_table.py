"""docs/providers/litellm.md's table of what the plugin carries is the truth, twice over: the
plugin's Capabilities and ``oma plugins --json`` must both say what it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from oma_litellm import CAPABILITIES

DOC = Path(__file__).resolve().parents[3] / "docs" / "providers" / "litellm.md"

#: `oma plugins --json` capability columns -> (block, where, source) rows of the table.
CLI_COLUMNS = {
    "text": ("text", "user", None),
    "image_base64": ("image", "user", "base64"),
    "image_url": ("image", "user", "url"),
    "video_base64": ("video", "user", "base64"),
    "video_url": ("video", "user", "url"),
    "tool_use": ("tool_use", "assistant", None),
    "tool_result_media": ("image", "tool_result", None),
}


def table() -> dict[tuple[str, str, str | None], str]:
    """(block, where, source) -> mode, one entry per role and source a row lists."""
    lines = DOC.read_text(encoding="utf-8").split("## What it carries", 1)[1].splitlines()
    rows: dict[tuple[str, str, str | None], str] = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("block", "") or set(cells[0]) <= {"-"}:
            continue
        block, wheres, sources, mode = cells[0], cells[1], cells[2], cells[3]
        for where in (w.strip() for w in wheres.split(",")):
            for source in [None] if sources == "-" else [s.strip() for s in sources.split(",")]:
                rows[(block, where, source)] = mode
    assert rows, "the table was not found"
    return rows


def test_table_matches_the_capabilities() -> None:
    rows = table()
    for (block, where, source), mode in rows.items():
        declared = CAPABILITIES.mode(block, where, source)
        assert (declared.value if declared else "refused") == mode, (block, where, source)
    for support in CAPABILITIES.blocks:
        for where in support.roles:
            media = support.block_type in ("image", "video", "file")
            for source in sorted(support.sources) if media else [None]:
                assert (support.block_type, where, source) in rows, (support.block_type, where)


@pytest.mark.parametrize("column", sorted(CLI_COLUMNS))
def test_oma_plugins_json_matches_the_table(column: str, plugins_json: dict) -> None:  # type: ignore[type-arg]
    rows = table()
    block, where, source = CLI_COLUMNS[column]
    if source is None and block == "image":  # any source in a tool result
        expected = rows.get((block, where, "base64"), "refused")
    else:
        expected = rows.get((block, where, source), "refused")
    assert plugins_json["providers"]["litellm"]["capabilities"][column] == expected


@pytest.fixture(scope="module")
def plugins_json() -> dict:  # type: ignore[type-arg]
    code = "import sys; from oma_core.cli import main; main(['plugins', '--json'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]
