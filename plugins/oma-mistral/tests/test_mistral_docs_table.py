"""docs/providers/mistral.md's table of what the plugin carries is the truth, twice over: the
plugin's Capabilities and ``oma plugins --json`` must both say what it says."""

from __future__ import annotations

from pathlib import Path

from oma_mistral import CAPABILITIES

from oma_core.testing.docs_table import CapabilityTableConformance, capability_table


class TestDocsTable(CapabilityTableConformance):
    provider = "mistral"
    doc = Path(__file__).resolve().parents[3] / "docs" / "providers" / "mistral.md"
    capabilities = CAPABILITIES


def test_video_is_refused() -> None:
    rows = capability_table(TestDocsTable.doc)
    assert rows[("video", "user", "base64")] == rows[("video", "user", "url")] == "refused"
