"""The provider conformance suite of oma_core.testing, run through LiteLLM's ``openai/`` route
against the fake Chat Completions API (``api_base`` pointed at it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions

from oma_core.testing import FakeServer, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample


def _url(source: Mapping[str, Any]) -> str:
    if source["type"] == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    return str(source["url"])


def _wire_items(body: Mapping[str, Any]) -> list[Any]:
    """Every message, content part and tool call of a request body, flattened."""
    items: list[Any] = []
    for message in body["messages"]:
        items.append(message)
        if isinstance(message.get("content"), list):
            items.extend(message["content"])
        items.extend(message.get("tool_calls") or ())
    return items


def expected_on_wire(sample: Sample) -> Any:
    """The Chat Completions form of the sample's block, as OpenAI's reference gives it."""
    block = sample.block
    if sample.block_type == "text":
        return {"role": sample.where, "content": block["text"]}
    if sample.block_type == "image":
        return {"type": "image_url", "image_url": {"url": _url(block["source"])}}
    if sample.block_type == "tool_use":
        function = {"name": block["name"], "arguments": json.dumps(block["input"])}
        return {"id": block["id"], "type": "function", "function": function}
    if sample.block_type == "tool_result":
        return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]}
    raise AssertionError(f"no expectation for {sample.id}")


class TestLiteLLMConformanceOpenAIRoute(ProviderConformance):
    provider_name = "litellm"
    model = "openai/gpt-fake"
    api_key = "test-key"
    transient_stream_error = "server_error"

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeChatCompletions:
        return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeChatCompletions)
        return server.base_url

    def script_text(self, server: FakeChatCompletions, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeChatCompletions, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_call(call_id, name, arguments)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.json["model"] == "gpt-fake"
        assert expected_on_wire(sample) in _wire_items(request.json), sample.id
