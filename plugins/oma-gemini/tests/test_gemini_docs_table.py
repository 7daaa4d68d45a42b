"""docs/providers/gemini.md's table of what the plugin carries is the truth, twice over: the
plugin's Capabilities and ``oma plugins --json`` must both say what it says."""

from __future__ import annotations

from pathlib import Path

from oma_gemini import CAPABILITIES

from oma_core.testing.docs_table import CapabilityTableConformance, capability_table


class TestDocsTable(CapabilityTableConformance):
    provider = "gemini"
    doc = Path(__file__).resolve().parents[3] / "docs" / "providers" / "gemini.md"
    capabilities = CAPABILITIES


def test_video_base64_and_video_url_are_native() -> None:
    rows = capability_table(TestDocsTable.doc)
    assert rows[("video", "user", "base64")] == rows[("video", "user", "url")] == "native"
