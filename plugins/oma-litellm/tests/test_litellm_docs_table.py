"""docs/providers/litellm.md's table of what the plugin carries is the truth, twice over: the
plugin's Capabilities and ``oma plugins --json`` must both say what it says."""

from __future__ import annotations

from pathlib import Path

from oma_litellm import CAPABILITIES

from oma_core.testing.docs_table import CapabilityTableConformance


class TestDocsTable(CapabilityTableConformance):
    provider = "litellm"
    doc = Path(__file__).resolve().parents[3] / "docs" / "providers" / "litellm.md"
    capabilities = CAPABILITIES
    every_column_documented = False  # refused blocks are left out of the table
