"""The provider conformance suite of oma_core.testing, run against the fake Converse API:
once signed with SigV4 from the AWS credential chain, once with a Bedrock API key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from fake_bedrock import FakeBedrock

from oma_core.testing import NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.conformance import ProviderConformance, Sample

_IMAGE = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_FILE = {"application/pdf": "pdf", "text/plain": "txt", "text/markdown": "md"}
_AUDIO = {"audio/wav": "wav", "audio/mpeg": "mp3"}


def expected_on_wire(block: Mapping[str, Any]) -> dict[str, Any]:
    """A section-2 block as the Converse API documents it (written from the docs, by hand)."""
    kind = block["type"]
    if kind == "text":
        return {"text": block["text"]}
    if kind == "image":
        source = block["source"]
        return {
            "image": {"format": _IMAGE[source["media_type"]], "source": {"bytes": source["data"]}}
        }
    if kind == "video":
        return {"video": {"format": "mp4", "source": {"bytes": block["source"]["data"]}}}
    if kind == "file":
        source = block["source"]
        return {
            "document": {
                "format": _FILE[source["media_type"]],
                "source": {"bytes": source["data"]},
                "name": block["filename"].rpartition(".")[0],
            }
        }
    if kind == "document":
        # the name is the filename's stem, "document" without one
        source = block["source"]
        name = block["filename"].rpartition(".")[0] if block.get("filename") else "document"
        return {
            "document": {
                "format": _FILE[source["media_type"]],
                "source": {"bytes": source["data"]},
                "name": name,
            }
        }
    if kind == "audio":
        source = block["source"]
        return {
            "audio": {"format": _AUDIO[source["media_type"]], "source": {"bytes": source["data"]}}
        }
    if kind == "tool_use":
        return {
            "toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}
        }
    if kind == "tool_result":
        content = block["content"]
        parts = (
            [{"text": content}]
            if isinstance(content, str)
            else [expected_on_wire(p) for p in content]
        )
        return {"toolResult": {"toolUseId": block["tool_use_id"], "content": parts}}
    if kind == "reasoning":
        text = {"text": block["text"], "signature": block["signature"]}
        return {"reasoningContent": {"reasoningText": text}}
    raise AssertionError(f"no expectation for {kind}")


def assert_block_on_wire(sample: Sample, request: RecordedRequest) -> None:
    message, index, part = sample.locator
    sent = request.json["messages"][message]["content"][index]
    if part is not None:
        sent = sent["toolResult"]["content"][part]
    assert sent == expected_on_wire(sample.block), sample.id
    assert request.json["messages"][message]["role"] == sample.conversation[message]["role"]


_FORMATS = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


def _read_block(block: Mapping[str, Any]) -> Any:
    """A Converse ``ContentBlock`` as the core's block (from the Converse API reference)."""
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "image" in block:
        image = block["image"]
        source = {"type": "base64", "media_type": _FORMATS[image["format"]],
                  "data": image["source"]["bytes"]}  # fmt: skip
        return {"type": "image", "source": source}
    if "toolUse" in block:
        use = block["toolUse"]
        return {"type": "tool_use", "id": use["toolUseId"], "name": use["name"],
                "input": use["input"]}  # fmt: skip
    if "toolResult" in block:
        result = block["toolResult"]
        parts = [_read_block(p) for p in result["content"]]
        content: Any = parts
        if all(p["type"] == "text" for p in parts):
            content = "".join(p["text"] for p in parts)
        return {
            "type": "tool_result",
            "tool_use_id": result["toolUseId"],
            "content": content,
            "is_error": result.get("status") == "error",
        }
    if "reasoningContent" in block:
        return {"type": "reasoning", "text": block["reasoningContent"]["reasoningText"]["text"]}
    raise AssertionError(f"the reader does not know the block {sorted(block)}")


def _read_tool_choice(choice: Mapping[str, Any] | None) -> str | None:
    """A Converse ``toolChoice``: ``{"auto": {}}``, ``{"any": {}}`` or ``{"tool": {"name"}}``."""
    if not choice:
        return None
    if "tool" in choice:
        return str(choice["tool"]["name"])
    return {"auto": "auto", "any": "required"}[next(iter(choice))]


def _read_output_schema(body: Mapping[str, Any]) -> Any:
    """``outputConfig.textFormat``: a ``json_schema`` whose structure holds the schema as a
    JSON string (``jsonSchema.schema``)."""
    text_format = (body.get("outputConfig") or {}).get("textFormat") or {}
    if text_format.get("type") != "json_schema":
        return None
    return json.loads(text_format["structure"]["jsonSchema"]["schema"])


def read_converse_body(body: Mapping[str, Any]) -> NeutralRequest:
    """What Converse understands from ``body`` (the model is in the URL)."""
    inference = body.get("inferenceConfig") or {}
    tool_config = body.get("toolConfig") or {}
    tools = tool_config.get("tools") or ()
    return NeutralRequest(
        messages=[
            {"role": m["role"], "content": [_read_block(b) for b in m["content"]]}
            for m in body["messages"]
        ],
        system_prompt="".join(b["text"] for b in body["system"]) if "system" in body else None,
        tools=[
            {
                "name": t["toolSpec"]["name"],
                "description": t["toolSpec"]["description"],
                "input_schema": t["toolSpec"]["inputSchema"]["json"],
            }
            for t in tools
        ],
        temperature=inference.get("temperature"),
        max_tokens=inference.get("maxTokens"),
        stop=inference.get("stopSequences"),
        tool_choice=_read_tool_choice(tool_config.get("toolChoice")),
        output_schema=_read_output_schema(body),
    )


class TestBedrockConformanceSigV4(ProviderConformance):
    """Credentials from the environment (conftest), each request signed and checked."""

    provider_name = "bedrock"
    api_key = None  # type: ignore[assignment]  # no API key: SigV4 from the AWS chain
    transient_stream_error = "throttlingException"
    streams_tool_arguments = True  # contentBlockDelta.delta.toolUse.input
    output_modes = frozenset({"native", "tool", "prompted"})
    server_sent_events = False  # an AWS binary event stream

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeBedrock:
        return fake_server_factory(FakeBedrock)  # type: ignore[no-any-return]

    def script_text(self, server: FakeBedrock, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeBedrock, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_use(call_id, name, arguments)

    def script_reply(self, server: FakeBedrock, reply: ScriptedReply) -> None:
        blocks: list[Mapping[str, Any]] = [{"text": reply.text}] if reply.text else []
        for call in reply.tool_calls:
            assert call.id is not None  # the service gives every call an id
            use = {"toolUseId": call.id, "name": call.name, "input": dict(call.arguments)}
            blocks.append({"toolUse": use})
        server.reply(
            *blocks,
            stop_reason=reply.stop_reason,  # Converse's vocabulary is oma's
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
        )

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        return read_converse_body(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        assert_block_on_wire(sample, request)


class TestBedrockConformanceApiKey(TestBedrockConformanceSigV4):
    """A Bedrock API key (``AgentConfig.api_key``) sent as a bearer token."""

    api_key = "bedrock-api-key-for-tests"  # type: ignore[assignment]  # the base says None

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeBedrock:
        return fake_server_factory(FakeBedrock, api_key=self.api_key)  # type: ignore[no-any-return]

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.headers["authorization"] == f"Bearer {self.api_key}"
        assert_block_on_wire(sample, request)
