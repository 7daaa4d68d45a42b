"""The conformance suite again, through LiteLLM's ``anthropic/`` route against the fake
Messages API: a second real wire, reached through LiteLLM's own translation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fake_messages import FakeMessages

from oma_core.testing import FakeServer, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample


def _wire_blocks(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    blocks: list[Mapping[str, Any]] = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content, "role": message["role"]})
        else:
            blocks.extend({**b, "role": message["role"]} for b in content)
    return blocks


def _found(sample: Sample, blocks: list[Mapping[str, Any]]) -> bool:
    """Whether the Messages API form of the sample's block (its documented fields) is there."""
    block, role = sample.block, sample.where
    for sent in blocks:
        if sent["role"] != role:
            continue
        kind = sent.get("type")
        if sample.block_type == "text" and kind == "text" and sent["text"] == block["text"]:
            return True
        if sample.block_type == "image" and kind == "image":
            source = block["source"]
            if source["type"] == "base64":
                wanted = {
                    "type": "base64",
                    "media_type": source["media_type"],
                    "data": source["data"],
                }
            else:
                wanted = {"type": "url", "url": source["url"]}
            if sent["source"] == wanted:
                return True
        if (
            sample.block_type == "tool_use"
            and kind == "tool_use"
            and (sent["id"], sent["name"], sent["input"])
            == (block["id"], block["name"], block["input"])
        ):
            return True
        if (
            sample.block_type == "tool_result"
            and kind == "tool_result"
            and sent["tool_use_id"] == block["tool_use_id"]
            and block["content"] in str(sent["content"])
        ):
            return True
    return False


class TestLiteLLMConformanceAnthropicRoute(ProviderConformance):
    provider_name = "litellm"
    model = "anthropic/claude-fake"
    api_key = "test-key"

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeMessages:
        return fake_server_factory(FakeMessages)  # type: ignore[no-any-return]

    def script_text(self, server: FakeMessages, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeMessages, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_use(call_id, name, arguments)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.json["model"] == "claude-fake"
        assert _found(sample, _wire_blocks(request.json)), (sample.id, request.json)

    async def test_render_is_what_reaches_the_wire(self, server: FakeServer) -> None:
        """Departure from the kit: on a route LiteLLM translates, ``render`` is the body
        handed to LiteLLM, not the wire's; what must hold is that every rendered block
        reaches the wire in the route's shape (``assert_on_wire``) and the model is the
        rendered one. Byte equality is held on the ``openai/`` route."""
        async with self.agent(server) as agent:
            hi = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
            rendered = agent.provider().render(agent.build_request(hi))
            result = await agent.run("hi")
        assert result.success, result.status.error
        assert server.requests[0].json["model"] == rendered["model"] == "claude-fake"
        assert server.requests[0].json["messages"][0]["content"][0]["text"] == "hi"
