"""The provider conformance suite of oma_core.testing, run against the fake Converse API:
once signed with SigV4 from the AWS credential chain, once with a Bedrock API key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import pytest
from fake_bedrock import FakeBedrock

from oma_core.testing import NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.cache_checks import CacheMarker
from oma_core.testing.conformance import ProviderConformance, Sample

#: The kit's model: a Claude model on Bedrock, which caches tools, system prompt and messages
#: and signs its reasoning.
CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"

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
            {
                "role": m["role"],
                "content": [_read_block(b) for b in m["content"] if "cachePoint" not in b],
            }
            for m in body["messages"]
        ],
        system_prompt=(
            "".join(b.get("text", "") for b in body["system"]) if "system" in body else None
        ),
        tools=[
            {
                "name": t["toolSpec"]["name"],
                "description": t["toolSpec"]["description"],
                "input_schema": t["toolSpec"]["inputSchema"]["json"],
            }
            for t in tools
            if "toolSpec" in t
        ],
        temperature=inference.get("temperature"),
        max_tokens=inference.get("maxTokens"),
        stop=inference.get("stopSequences"),
        tool_choice=_read_tool_choice(tool_config.get("toolChoice")),
        output_schema=_read_output_schema(body),
    )


def read_cache_markers(body: Mapping[str, Any]) -> list[CacheMarker]:
    """Where Converse sees cache checkpoints in ``body`` (the prompt caching documentation): a
    ``cachePoint`` block in ``toolConfig.tools``, ``system`` or a message's ``content`` caches
    what comes before it, so it marks the tool, system text or content block it follows."""
    markers: list[CacheMarker] = []
    tools = (body.get("toolConfig") or {}).get("tools") or []
    system = body.get("system") or []
    places: list[tuple[Literal["tools", "system", "messages"], list[Any]]] = [
        ("tools", tools),
        ("system", system),
        *(("messages", m["content"]) for m in body["messages"]),
    ]
    for place, blocks in places:
        for i, block in enumerate(blocks):
            if "cachePoint" not in block:
                continue
            before = blocks[i - 1] if i else {}
            ttl = block["cachePoint"].get("ttl")
            if place == "tools":
                name = before.get("toolSpec", {}).get("name")
                markers.append(CacheMarker("tools", name, ttl))
            else:
                markers.append(CacheMarker(place, before.get("text"), ttl))
    return markers


class TestBedrockConformanceSigV4(ProviderConformance):
    """Credentials from the environment (conftest), each request signed and checked."""

    provider_name = "bedrock"
    api_key = None  # type: ignore[assignment]  # no API key: SigV4 from the AWS chain
    transient_stream_error = "throttlingException"
    streams_tool_arguments = True  # contentBlockDelta.delta.toolUse.input
    output_modes = frozenset({"native", "tool", "prompted"})
    server_sent_events = False  # an AWS binary event stream
    model = CLAUDE
    cache_markers = True  # cachePoint blocks
    cache_usage = frozenset({"read", "write"})  # cacheRead/cacheWriteInputTokens
    cache_ttl_options: ClassVar[Mapping[str, Any]] = {"cache_ttl": "1h"}  # the hour, on each marker

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
        usage = reply.usage
        read, written = usage.cache_read_tokens, usage.cache_write_tokens
        server.reply(
            *blocks,
            stop_reason=reply.stop_reason,  # Converse's vocabulary is oma's
            # Converse's inputTokens leaves out the tokens read from or written to the cache
            input_tokens=usage.input_tokens - read - written,
            output_tokens=usage.output_tokens,
            cache_read=read or None,
            cache_write=written or None,
        )

    def script_reasoning(
        self,
        server: FakeBedrock,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Claude's reasoning signed by the server, then the text or the tool call."""
        if call is None:
            server.reply_reasoning(reasoning, {"text": text})
            return
        use = {"toolUse": {"toolUseId": call[0], "name": call[1], "input": dict(call[2])}}
        server.reply_reasoning(reasoning, use, stop_reason="tool_use")

    def read_cache_markers(self, body: Mapping[str, Any]) -> list[CacheMarker]:
        return read_cache_markers(body)

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
