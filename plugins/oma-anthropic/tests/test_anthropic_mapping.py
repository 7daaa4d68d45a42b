"""Block by block: what reaches the fake Messages API for each kind of input."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import Agent, AgentConfig, UnsupportedContentBlockError, load_messages
from oma_core.toolkit import ProviderRequest, ProviderSettings, ToolDefinition

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def png(source: str = "base64") -> dict[str, Any]:
    if source == "base64":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        }
    url = "https://example.com/cat.png"
    return {"type": "image", "source": {"type": "url", "media_type": "image/png", "url": url}}


async def send(server: FakeAnthropic, conversation: list[Any], **config: Any) -> dict[str, Any]:
    """Run the conversation through an Agent and return the body the server received."""
    values: dict[str, Any] = {
        "name": "t",
        "provider": "anthropic",
        "base_url": server.url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    values.update(config)
    async with Agent(AgentConfig(**values)) as agent:
        result = await agent.run(conversation)
    assert result.success, result.status.error
    body: dict[str, Any] = server.requests[-1].json
    return body


async def test_text_turns_keep_their_roles_and_order(server: FakeAnthropic) -> None:
    body = await send(server, [user(text("a")), assistant(text("b")), user(text("c"), text("d"))])
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
        {"role": "user", "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
    ]


async def test_base64_image_is_sent_as_a_base64_source(server: FakeAnthropic) -> None:
    body = await send(server, [user(png(), text("what is it?"))])
    assert body["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }


async def test_url_image_is_sent_as_a_url_source_without_media_type(server: FakeAnthropic) -> None:
    body = await send(server, [user(png("url"))])
    assert body["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/cat.png"},
    }


async def test_image_detail_is_not_sent(server: FakeAnthropic) -> None:
    body = await send(server, [user(dict(png(), detail="high"))])
    assert "detail" not in body["messages"][0]["content"][0]


async def test_tool_use_and_tool_result_round_trip(server: FakeAnthropic) -> None:
    call = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "add",
        "input": {"a": [1, 2], "b": {"c": None}},
    }
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"}
    body = await send(server, [user(text("add")), assistant(call), user(result, text("go on"))])
    assert body["messages"][1]["content"] == [call]
    assert body["messages"][2]["content"][0] == result


async def test_error_tool_result_carries_is_error(server: FakeAnthropic) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True}
    body = await send(server, [user(text("add")), assistant(call), user(result)])
    assert body["messages"][2]["content"][0]["is_error"] is True


async def test_tool_result_with_text_image_and_pdf_parts(server: FakeAnthropic) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}
    pdf = {
        "type": "file",
        "filename": "r.pdf",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
    }
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [text("see"), png(), png("url"), pdf],
    }
    body = await send(server, [user(text("shoot")), assistant(call), user(result)])
    assert body["messages"][2]["content"][0]["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "r.pdf",
        },
    ]


async def test_reasoning_goes_back_as_thinking_with_its_signature(server: FakeAnthropic) -> None:
    thought = {"type": "reasoning", "text": "hmm", "signature": "sig-123"}
    redacted = {"type": "reasoning", "text": "", "redacted_data": "opaque=="}
    body = await send(
        server, [user(text("q")), assistant(thought, redacted, text("a")), user(text("more"))]
    )
    assert body["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-123"},
        {"type": "redacted_thinking", "data": "opaque=="},
    ]


async def test_unsigned_reasoning_is_refused_before_any_request(server: FakeAnthropic) -> None:
    thought = {"type": "reasoning", "text": "hmm"}
    async with Agent(
        AgentConfig(name="t", provider="anthropic", base_url=server.url, api_key="k")
    ) as agent:
        result = await agent.run([user(text("q")), assistant(thought), user(text("more"))])
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert "signature" in str(result.status.error)
    assert server.requests == []


@pytest.mark.parametrize("role", ["user", "assistant"])
async def test_video_is_refused_locally(server: FakeAnthropic, role: str) -> None:
    video = {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": "https://e.com/v.mp4"},
    }
    conversation = (
        [user(video)] if role == "user" else [user(text("q")), assistant(video), user(text("x"))]
    )
    async with Agent(
        AgentConfig(name="t", provider="anthropic", base_url=server.url, api_key="k")
    ) as agent:
        result = await agent.run(conversation)
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error).startswith('Anthropic Messages cannot represent the "video" content block')
    assert server.requests == []


async def test_system_prompt_tools_and_default_max_tokens(server: FakeAnthropic) -> None:
    from oma_anthropic import create_provider

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    request = ProviderRequest(
        model="claude-test",
        messages=load_messages([user(text("hi"))]),
        system_prompt="be brief",
        tools=(ToolDefinition("double", "doubles x", schema),),
    )
    provider = create_provider(ProviderSettings(base_url=server.url, api_key="test-key"))
    try:
        await provider.complete(request)
    finally:
        await provider.aclose()
    body = server.requests[0].json
    assert body["system"] == "be brief"
    assert body["tools"] == [{"name": "double", "description": "doubles x", "input_schema": schema}]
    assert body["max_tokens"] == 4096
    assert body["model"] == "claude-test"


async def test_provider_options_reach_the_body_and_headers(server: FakeAnthropic) -> None:
    options = {
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "temperature": 1,
        "headers": {"x-team": "vision"},
        "extra_body": {"metadata": {"user_id": "u1"}},
    }
    body = await send(server, [user(text("hi"))], provider_options=options)
    assert body["max_tokens"] == 2048
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert "temperature" not in body  # the default model takes none while it thinks (a note)
    assert body["metadata"] == {"user_id": "u1"}
    assert server.requests[-1].headers["x-team"] == "vision"


async def test_model_defaults_to_the_spec_default(server: FakeAnthropic) -> None:
    body = await send(server, [user(text("hi"))])
    assert body["model"] == "claude-sonnet-4-6"
