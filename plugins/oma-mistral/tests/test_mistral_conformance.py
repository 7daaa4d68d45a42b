"""The core's provider conformance suite against the fake Mistral service."""

from __future__ import annotations

import json
from typing import Any

from fake_mistral import FakeMistral, Reply, tool_reply
from oma_mistral import wire_id

from oma_core.testing import FakeServer, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample


def expected_on_wire(sample: Sample) -> Any:
    """The Mistral form of the sample's block, as found by ``_wire_items``."""
    block = dict(sample.block)
    if sample.block_type == "text":
        return {"role": sample.where, "content": block["text"]}
    if sample.block_type == "image":
        source = block["source"]
        url = (
            f"data:{source['media_type']};base64,{source['data']}"
            if source["type"] == "base64"
            else source["url"]
        )
        return {"type": "image_url", "image_url": url}
    if sample.block_type == "tool_use":
        function = {"name": block["name"], "arguments": json.dumps(block["input"])}
        return {"id": wire_id(block["id"]), "type": "function", "function": function}
    if sample.block_type == "tool_result":
        return {
            "role": "tool",
            "tool_call_id": wire_id(block["tool_use_id"]),
            "name": "lookup",
            "content": block["content"],
        }
    raise AssertionError(f"no expectation for {sample.id}")


def _wire_items(body: dict[str, Any]) -> list[Any]:
    items: list[Any] = []
    for message in body["messages"]:
        items.append(message)
        if isinstance(message.get("content"), list):
            items.extend(message["content"])
        items.extend(message.get("tool_calls") or ())
    return items


class TestMistralConformance(ProviderConformance):
    provider_name = "mistral"
    transient_stream_error = "service_unavailable"

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeMistral)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(tool_reply(call_id, name, arguments))

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert expected_on_wire(sample) in _wire_items(request.json), sample.id
