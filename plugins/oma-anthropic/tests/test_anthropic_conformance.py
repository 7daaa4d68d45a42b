"""The provider conformance suite of oma_core.testing, run against the fake Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic
from oma_anthropic.provider import TRANSPORTS

from oma_core import AgentConfig
from oma_core.testing import FakeServer, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample
from oma_core.toolkit import ProviderSettings


def expected_on_wire(block: Mapping[str, Any]) -> dict[str, Any]:
    """A section-2 block as the Messages API documents it (written from the docs, by hand)."""
    kind = block["type"]
    if kind in ("image", "file"):
        source = block["source"]
        if source["type"] == "base64":
            wire_source = {k: source[k] for k in ("type", "media_type", "data")}
        else:
            wire_source = {"type": "url", "url": source["url"]}
        if kind == "image":
            return {"type": "image", "source": wire_source}
        return {"type": "document", "source": wire_source, "title": block["filename"]}
    if kind == "reasoning":
        return {"type": "thinking", "thinking": block["text"], "signature": block["signature"]}
    if kind == "tool_result":
        content = block["content"]
        if not isinstance(content, str):
            content = [expected_on_wire(p) for p in content]
        return {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": content}
    return dict(block)  # text and tool_use have the same shape on both sides


class TestAnthropicConformance(ProviderConformance):
    """The suite, once per transport: every agent, ``run_agent`` call and provider it builds
    gets ``provider_options={"transport": ...}``."""

    provider_name = "anthropic"
    transport = "httpx"

    @pytest.fixture(autouse=True, params=TRANSPORTS)
    def _each_transport(self, request: pytest.FixtureRequest) -> None:
        self.transport = request.param

    def settings(self, server: FakeServer, **options: Any) -> ProviderSettings:
        return super().settings(server, **{"transport": self.transport, **options})

    def config(self, server: FakeServer, **config: Any) -> AgentConfig:
        options = {"transport": self.transport, **dict(config.pop("provider_options", None) or {})}
        return super().config(server, provider_options=options, **config)

    def script_text(self, server: FakeAnthropic, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeAnthropic, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_use(call_id, name, arguments)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, index, part = sample.locator
        sent = request.json["messages"][message]["content"][index]
        if part is not None:
            sent = sent["content"][part]
        assert sent == expected_on_wire(sample.block), sample.id
        assert request.json["messages"][message]["role"] == sample.conversation[message]["role"]
