"""The conformance suite again, through LiteLLM's ``anthropic/`` route against the fake
Messages API: a second real wire, reached through LiteLLM's own translation."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from fake_messages import ISSUED, FakeMessages, MessagesReply

from oma_core import image_url
from oma_core.testing import FakeServer, NeutralRequest, RecordedRequest, ScriptedReply
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


def _document_found(block: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """A PDF arrives as a base64 ``document``; a text document as a text block holding its
    text (the OpenAI form's framed text part, which LiteLLM passes on as text)."""
    source = block["source"]
    if source["media_type"] == "application/pdf":
        wanted = {"type": "base64", "media_type": "application/pdf", "data": source["data"]}
        return sent.get("type") == "document" and sent.get("source") == wanted
    text = base64.b64decode(source["data"]).decode("utf-8")
    return sent.get("type") == "text" and text in sent["text"]


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
        if sample.block_type == "document" and _document_found(block, sent):
            return True
        if (
            sample.block_type == "tool_use"
            and kind == "tool_use"
            and (sent["id"], sent["name"], sent["input"])
            == (block["id"], block["name"], block["input"])
        ):
            return True
        if (
            sample.block_type == "reasoning"
            and kind == "thinking"
            and (sent["thinking"], sent["signature"]) == (block["text"], block["signature"])
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


def _read_block(block: Mapping[str, Any]) -> Any:
    """A Messages API content block as the core's block (from the API reference)."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        source = block["source"]
        if source["type"] == "url":  # the wire names no media type: the URL's extension does
            return image_url(source["url"])
        media = {k: source[k] for k in ("type", "media_type", "data")}
        return {"type": "image", "source": media}
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
            parts = [_read_block(p) for p in content]
            content = parts
            if all(p["type"] == "text" for p in parts):
                content = "".join(p["text"] for p in parts)
        result = {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": content}
        return {**result, "is_error": bool(block.get("is_error", False))}
    raise AssertionError(f"the reader does not know {kind!r} blocks")


def read_messages_body(body: Mapping[str, Any]) -> NeutralRequest:
    """What the Messages API understands from ``body`` (``POST /v1/messages`` reference):
    structured output is ``output_config.format``, a ``json_schema`` with its ``schema``."""
    output_format = (body.get("output_config") or {}).get("format") or {}
    system = body.get("system")
    if isinstance(system, list):  # text blocks
        system = "".join(b["text"] for b in system)
    choice = body.get("tool_choice")
    if choice is not None:
        choice = {"auto": "auto", "any": "required", "none": "none"}.get(choice["type"]) or (
            choice["name"]
        )
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
        tool_choice=choice,
        temperature=body.get("temperature"),
        max_tokens=body.get("max_tokens"),
        stop=body.get("stop_sequences"),
        output_schema=output_format.get("schema")
        if output_format.get("type") == "json_schema"
        else None,
    )


class TestLiteLLMConformanceAnthropicRoute(ProviderConformance):
    provider_name = "litellm"
    model = "anthropic/claude-fake"
    api_key = "test-key"
    tool_error_flag = False  # LiteLLM translates a Chat Completions tool message: text only
    streams_tool_arguments = True  # input_json_delta, through LiteLLM
    render_is_the_wire = False  # render is the body handed to LiteLLM, which translates it
    output_modes = frozenset({"native", "tool", "prompted"})
    # LiteLLM turns response_format into a forced tool of its own on this route, and hands
    # the tool's arguments back as the reply's text
    native_output_tool = "json_tool_call"
    # cache_read/cache_creation_input_tokens, which LiteLLM hands back in OpenAI's usage form
    cache_usage = frozenset({"read", "write"})

    @pytest.fixture(autouse=True)
    def _model_map(self) -> Iterator[None]:
        """The fake model in LiteLLM's model map, taking what the real one takes (the plugin
        refuses a PDF or audio block for a model the map does not say takes it)."""
        import litellm

        entries = {"anthropic/claude-fake": {"supports_pdf_input": True}}
        litellm.register_model(entries)
        yield
        for name in entries:
            litellm.model_cost.pop(name, None)

    def refused_for_the_model(self, sample: Sample) -> bool:
        """Claude takes no audio: LiteLLM's model map says so, and the plugin refuses it."""
        return sample.block_type == "audio"

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeMessages:
        return fake_server_factory(FakeMessages)  # type: ignore[no-any-return]

    def script_text(self, server: FakeMessages, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeMessages, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_use(call_id, name, arguments)

    def script_reply(self, server: FakeMessages, reply: ScriptedReply) -> None:
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
        server.reply(
            MessagesReply(
                tuple(blocks),
                stop_reason=reply.stop_reason,  # the API's vocabulary is oma's
                # counted apart from input_tokens, as the API does
                input_tokens=reply.usage.input_tokens
                - reply.usage.cache_read_tokens
                - reply.usage.cache_write_tokens,
                output_tokens=reply.usage.output_tokens,
                cache_read=reply.usage.cache_read_tokens,
                cache_write=reply.usage.cache_write_tokens,
            )
        )

    def script_reasoning(
        self,
        server: FakeMessages,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Claude's signed thinking, then the text or the tool call, through LiteLLM (which
        hands it back as ``thinking_blocks``); the fake verifies the signature it issued."""
        signature = ISSUED + secrets.token_urlsafe(24)
        blocks: list[Mapping[str, Any]] = [
            {"type": "thinking", "thinking": reasoning, "signature": signature}
        ]
        if call is None:
            blocks.append({"type": "text", "text": text})
        else:
            blocks.append({"type": "tool_use", "id": call[0], "name": call[1],
                           "input": dict(call[2])})  # fmt: skip
        stop = "end_turn" if call is None else "tool_use"
        server.reply(MessagesReply(tuple(blocks), stop_reason=stop))

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        return read_messages_body(body)

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
