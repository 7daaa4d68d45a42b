"""The core's provider conformance suite against the fake Gemini API."""

from __future__ import annotations

from typing import Any

from fake_gemini import FakeGemini, Reply

from oma_core.testing import FakeServer, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample


def expected_on_wire(sample: Sample) -> Any:
    """The Gemini part for the sample's block."""
    block = dict(sample.block)
    kind = sample.block_type
    if kind == "text":
        return {"text": block["text"]}
    if kind in ("image", "video", "file"):
        source = block["source"]
        if source["type"] == "base64":
            return {"inlineData": {"mimeType": source["media_type"], "data": source["data"]}}
        return {"fileData": {"mimeType": source["media_type"], "fileUri": source["url"]}}
    if kind == "tool_use":
        return {"functionCall": {"id": block["id"], "name": block["name"], "args": block["input"]}}
    if kind == "tool_result":
        response = {"result": block["content"]}
        return {
            "functionResponse": {"id": block["tool_use_id"], "name": "lookup", "response": response}
        }
    if kind == "reasoning":
        return {"text": block["text"], "thought": True, "thoughtSignature": block["signature"]}
    raise AssertionError(f"no expectation for {sample.id}")


class TestGeminiConformance(ProviderConformance):
    provider_name = "gemini"
    transient_stream_error = "UNAVAILABLE"

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeGemini)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(Reply(text="", calls=((call_id, name, dict(arguments)),)))

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, _, _ = sample.locator
        parts = request.json["contents"][message]["parts"]
        assert expected_on_wire(sample) in parts, (sample.id, parts)
        role = "model" if sample.where == "assistant" else "user"
        assert request.json["contents"][message]["role"] == role
