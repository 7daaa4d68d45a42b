"""The provider conformance suite of oma_core.testing, run against the fake Messages API."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
from fake_anthropic import FakeAnthropic
from oma_anthropic.provider import TRANSPORTS

from oma_core import AgentConfig, image_url
from oma_core.testing import FakeServer, NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.cache_checks import CacheMarker
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
    if kind == "document":
        return _document_on_wire(block)
    if kind == "reasoning":
        return {"type": "thinking", "thinking": block["text"], "signature": block["signature"]}
    if kind == "tool_result":
        content = block["content"]
        if not isinstance(content, str):
            content = [expected_on_wire(p) for p in content]
        return {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": content}
    return dict(block)  # text and tool_use have the same shape on both sides


def _document_on_wire(block: Mapping[str, Any]) -> dict[str, Any]:
    """A document block: a PDF as a base64 or url source, text of any ``text/*`` type as a
    ``text`` source (``text/plain``) holding the decoded text; the filename is the title."""
    source = block["source"]
    if source["type"] == "url":
        wire_source = {"type": "url", "url": source["url"]}
    elif source["media_type"].startswith("text/"):
        text = base64.b64decode(source["data"]).decode("utf-8")
        wire_source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        wire_source = {k: source[k] for k in ("type", "media_type", "data")}
    wire: dict[str, Any] = {"type": "document", "source": wire_source}
    if block.get("filename"):
        wire["title"] = block["filename"]
    return wire


def _read_block(block: Mapping[str, Any]) -> Any:
    """A Messages API content block as the core's block (from the API reference)."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        source = block["source"]
        if source["type"] == "url":  # the wire names no media type: the URL's extension does
            return image_url(source["url"])
        return {"type": "image", "source": dict(source)}
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block["input"],
        }
    if kind == "tool_result":
        content = block.get("content", "")
        if not isinstance(content, str):
            content = [_read_block(p) for p in content]
        result = {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": content}
        return {**result, "is_error": bool(block.get("is_error", False))}
    if kind == "thinking":
        return {"type": "reasoning", "text": block["thinking"], "signature": block["signature"]}
    raise AssertionError(f"the reader does not know {kind!r} blocks")


def _read_tool_choice(choice: Any) -> str | None:
    if choice is None:
        return None
    return {"auto": "auto", "any": "required", "none": "none"}.get(choice["type"]) or choice["name"]


def read_messages_body(body: Mapping[str, Any]) -> NeutralRequest:
    """What the Messages API understands from ``body`` (``POST /v1/messages`` reference):
    structured output is ``output_config.format``, a ``json_schema`` with its ``schema``."""
    output_format = (body.get("output_config") or {}).get("format") or {}
    system = body.get("system")
    if isinstance(system, list):  # text blocks
        system = "".join(b["text"] for b in system)
    return NeutralRequest(
        messages=[
            {
                "role": m["role"],
                "content": [{"type": "text", "text": m["content"]}]
                if isinstance(m["content"], str)
                else [_read_block(b) for b in m["content"]],
            }
            for m in body["messages"]
        ],
        system_prompt=system,
        tools=body.get("tools") or (),
        tool_choice=_read_tool_choice(body.get("tool_choice")),
        temperature=body.get("temperature"),
        max_tokens=body.get("max_tokens"),
        stop=body.get("stop_sequences"),
        output_schema=output_format.get("schema")
        if output_format.get("type") == "json_schema"
        else None,
    )


def read_cache_markers(body: Mapping[str, Any]) -> list[CacheMarker]:
    """Where the Messages API sees ``cache_control`` breakpoints in ``body`` (the prompt caching
    documentation): on tools, on system text blocks, on message content blocks; in that order."""
    markers = [
        CacheMarker("tools", tool["name"], tool["cache_control"].get("ttl"))
        for tool in body.get("tools") or ()
        if "cache_control" in tool
    ]
    system = body.get("system")
    if isinstance(system, list):
        markers += [
            CacheMarker("system", b["text"], b["cache_control"].get("ttl"))
            for b in system
            if "cache_control" in b
        ]
    for message in body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else ():
            if "cache_control" in block:
                ttl = block["cache_control"].get("ttl")
                markers.append(CacheMarker("messages", block.get("text"), ttl))
    return markers


class TestAnthropicConformance(ProviderConformance):
    """The suite, once per transport: every agent, ``run_agent`` call and provider it builds
    gets ``provider_options={"transport": ...}``."""

    provider_name = "anthropic"
    transport = "httpx"
    output_modes = frozenset({"native", "tool", "prompted"})
    streams_tool_arguments = True  # input_json_delta
    cache_markers = True  # cache_control breakpoints
    cache_usage = frozenset({"read", "write"})  # cache_read/cache_creation_input_tokens
    cache_ttl_options: ClassVar[Mapping[str, Any]] = {"cache_ttl": "1h"}  # the hour, on each marker
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "auto": {"tool_choice": {"type": "auto"}},
        "required": {"tool_choice": {"type": "any"}},
        "lookup": {"tool_choice": {"type": "tool", "name": "lookup"}},
    }

    def script_reasoning(
        self,
        server: Any,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Thinking with a signature (an opaque token), then the text or the tool call."""
        signature = "EqkB" + hashlib.sha256(reasoning.encode()).hexdigest()
        thinking = {"type": "thinking", "thinking": reasoning, "signature": signature}
        if call is None:
            server.reply(thinking, {"type": "text", "text": text})
            return
        use = {"type": "tool_use", "id": call[0], "name": call[1], "input": dict(call[2])}
        server.reply(thinking, use, stop_reason="tool_use")

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

    def script_reply(self, server: FakeAnthropic, reply: ScriptedReply) -> None:
        blocks: list[Mapping[str, Any]] = (
            [{"type": "text", "text": reply.text}] if reply.text else []
        )
        for call in reply.tool_calls:
            assert call.id is not None  # the service gives every call an id
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": dict(call.arguments),
                }
            )
        usage = reply.usage
        cached = usage.cache_read_tokens + usage.cache_write_tokens
        server.reply(
            *blocks,
            stop_reason=reply.stop_reason,  # the API's vocabulary is oma's
            # the API's input_tokens leaves out what was read from or written to the cache
            input_tokens=usage.input_tokens - cached,
            output_tokens=usage.output_tokens,
            usage={
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
            },
        )

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        return read_messages_body(body)

    def read_cache_markers(self, body: Mapping[str, Any]) -> list[CacheMarker]:
        return read_cache_markers(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, index, part = sample.locator
        sent = request.json["messages"][message]["content"][index]
        if part is not None:
            sent = sent["content"][part]
        assert sent == expected_on_wire(sample.block), sample.id
        assert request.json["messages"][message]["role"] == sample.conversation[message]["role"]
