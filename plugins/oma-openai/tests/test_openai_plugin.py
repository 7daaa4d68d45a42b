"""Registration, lazy SDK import, and the docs' tables held to what the plugin declares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from oma_openai import PRESETS, oma_register_providers

from oma_core import PluginHost
from oma_core.cli import cli
from oma_core.toolkit import Mode

DOC = Path(__file__).resolve().parents[3] / "docs" / "providers" / "openai.md"


def _table(heading_cell: str) -> list[dict[str, str]]:
    """The markdown table of DOC whose header row starts with ``heading_cell``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {heading_cell} |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def test_every_preset_is_registered_with_its_settings() -> None:
    specs = {spec.name: spec for spec in oma_register_providers()}
    assert list(specs) == [p.name for p in PRESETS]
    assert specs["minimax"].display_name == "MiniMax"
    assert specs["minimax"].default_base_url == "https://api.minimax.io/v1"
    assert specs["minimax"].api_key_env == "MINIMAX_API_KEY"
    assert specs["openai-compatible"].default_base_url is None


def test_the_plugin_is_discovered_through_its_entry_point() -> None:
    host = PluginHost()
    assert not [f for f in host.failures if "openai" in f.name]
    assert host.provider_spec("minimax").display_name == "MiniMax"


def test_loading_the_plugin_imports_no_sdk() -> None:
    code = (
        "import sys, oma_openai; oma_openai.oma_register_providers(); "
        "print('openai' in sys.modules, 'httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_presets_table_matches_the_presets() -> None:
    rows = {row["name"]: row for row in _table("name")}
    assert list(rows) == [p.name for p in PRESETS]
    for p in PRESETS:
        row = rows[p.name]
        assert row["display name"] == p.display_name
        assert row["base URL"].strip("`") == (p.base_url or "— (required)")
        key = row["key variable"].strip("`")
        assert key == p.api_key_env or (p.api_key_env is None and key.startswith("—"))
        assert row["default model"].strip("`") == (p.default_model or "—")


def test_oma_plugins_json_capabilities_equal_the_docs_table() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    providers = json.loads(result.output)["providers"]
    columns = {
        "text": "text",
        "image base64": "image_base64",
        "image url": "image_url",
        "video base64": "video_base64",
        "video url": "video_url",
        "tool use": "tool_use",
        "tool-result media": "tool_result_media",
    }
    rows = _table("preset")
    media = {row["provider"]: row for row in _table("provider")}  # documents and audio
    assert [row["preset"] for row in rows] == [p.name for p in PRESETS]
    for row in rows:
        shown = providers[row["preset"]]["capabilities"]
        expected = {key: row[label] for label, key in columns.items()}
        documents = media[row["preset"]]
        found = {documents[c] for c in ("PDF base64", "text document", "PDF url")}
        expected["document"] = next((m for m in ("native", "forwarded") if m in found), "refused")
        expected["audio"] = documents["audio base64"]
        assert expected == shown, row["preset"]


def test_docs_extra_columns_equal_the_declared_capabilities() -> None:
    by_name = {p.name: p for p in PRESETS}

    def word(mode: Mode | None) -> str:
        return "refused" if mode is None else mode.value

    for row in _table("preset"):
        caps = by_name[row["preset"]].capabilities
        assert row["reasoning (history)"] == word(caps.mode("reasoning", "assistant"))
        assert row["tool-result file"] == word(caps.mode("file", "tool_result", "base64"))


def test_docs_documents_and_audio_table_equals_the_declared_capabilities() -> None:
    by_name = {p.name: p for p in PRESETS}
    cells = {
        "PDF base64": ("document", "base64", "application/pdf"),
        "PDF url": ("document", "url", "application/pdf"),
        "text document": ("document", "base64", "text/markdown"),
        "audio base64": ("audio", "base64", "audio/wav"),
    }
    rows = _table("provider")
    assert [row["provider"] for row in rows] == [p.name for p in PRESETS]
    for row in rows:
        caps = by_name[row["provider"]].capabilities
        for label, (block, source, media_type) in cells.items():
            modes = [
                s.mode.value
                for s in caps.find(block, "user")
                if source in s.sources and (s.media_types is None or media_type in s.media_types)
            ]
            assert row[label] == (modes[0] if modes else "refused"), (row["provider"], label)
