"""``AgentConfig.thinking`` through the bridge, as LiteLLM documents it (``reasoning_effort``, a
budget as ``thinking``), against the fake Chat Completions and Messages APIs on LiteLLM's
``openai/`` and ``anthropic/`` routes: what reaches each wire, a local refusal for a model
LiteLLM's map does not list as reasoning, ``reasoning_content`` read as reasoning, and a
thinking tool loop on the Anthropic route whose signed and redacted thinking goes back (as
``thinking_blocks``) byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions, Reply
from fake_messages import FakeMessages, MessagesReply
from oma_litellm import CAPABILITIES

from oma_core import Agent, AgentConfig, LLMMessage, ReasoningBlock, TextBlock, tool
from oma_core.capabilities import UnsupportedSettingError

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


@pytest.fixture
def messages_server(fake_server_factory: Callable[..., Any]) -> FakeMessages:
    return fake_server_factory(FakeMessages)  # type: ignore[no-any-return]


def agent(url: str, model: str, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "bridge",
        "provider": "litellm",
        "model": model,
        "base_url": url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    return Agent(AgentConfig(**{**values, **config}))


async def run(a: Agent, prompt: str, streaming: bool) -> tuple[Any, str]:
    if not streaming:
        return await a.run(prompt), ""
    async with a.stream(prompt) as stream:
        events = [e async for e in stream]
    reasoning = "".join(str(e.data) for e in events if e.type == "reasoning")
    return events[-1].data, reasoning


def test_thinking_and_reasoning_are_declared() -> None:
    assert CAPABILITIES.thinking
    assert CAPABILITIES.mode("reasoning", "assistant") is not None


@pytest.mark.parametrize(
    ("thinking", "effort"), [("low", "low"), ("medium", "medium"), ("high", "high")]
)
async def test_a_level_is_reasoning_effort_on_the_openai_route(
    server: FakeChatCompletions, thinking: str, effort: str
) -> None:
    server.reply(Reply(text="ok"))
    async with agent(server.base_url, "openai/o4-mini", thinking=thinking) as a:
        result = await a.run("hi")
    assert result.success, result.status
    assert server.requests[0].json["reasoning_effort"] == effort


async def test_a_budget_and_a_level_on_the_anthropic_route(messages_server: FakeMessages) -> None:
    """LiteLLM turns ``thinking`` and ``reasoning_effort`` into Anthropic's ``thinking``."""
    model = "anthropic/claude-sonnet-4-5-20250929"
    for thinking, budget in ((3000, 3000), ("low", 1024)):
        messages_server.reply_text("ok")
        async with agent(messages_server.url, model, thinking=thinking) as a:
            result = await a.run("hi")
        assert result.success, result.status
        sent = messages_server.requests[-1].json
        assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget}
        assert sent["max_tokens"] > budget


async def test_off_sends_reasoning_effort_none(server: FakeChatCompletions) -> None:
    server.reply(Reply(text="ok"))
    async with agent(server.base_url, "openai/gpt-fake", thinking="off") as a:
        result = await a.run("hi")
    assert result.success, result.status
    assert server.requests[0].json["reasoning_effort"] == "none"


@pytest.mark.parametrize("thinking", ["high", 4096])
async def test_a_model_the_map_does_not_list_as_reasoning_is_refused_before_any_request(
    server: FakeChatCompletions, thinking: object
) -> None:
    async with agent(server.base_url, "openai/gpt-4o-mini", thinking=thinking) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError), result.status
    assert (error.provider, error.setting, error.model) == (
        "LiteLLM bridge",
        "thinking",
        "openai/gpt-4o-mini",
    )
    assert "supports_reasoning" in str(error)
    assert server.requests == []


@STREAMING
async def test_reasoning_content_is_reasoning(server: FakeChatCompletions, streaming: bool) -> None:
    server.reply(Reply(text="42", reasoning="Six times seven."))
    async with agent(server.base_url, "openai/o4-mini") as a:
        result, streamed = await run(a, "hi", streaming)
    assert result.success and result.output == "42", result.status
    assert result.messages[0].content[0] == ReasoningBlock("Six times seven.", provider="litellm")
    if streaming:
        assert streamed == "Six times seven."


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@STREAMING
async def test_a_thinking_tool_loop_sends_the_thinking_back_byte_for_byte(
    messages_server: FakeMessages, streaming: bool
) -> None:
    signature, redacted = "EqQBCgIYAhIM+/=ü" * 30, "EmwKAhgBEgy3va3pzix/+=="
    first = (
        {"type": "thinking", "thinking": "I should look it up.", "signature": signature},
        {"type": "redacted_thinking", "data": redacted},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Oslo"}},
    )
    messages_server.reply(MessagesReply(first, stop_reason="tool_use"))
    messages_server.reply_text("Sunny.")
    model = "anthropic/claude-sonnet-4-5-20250929"
    async with agent(messages_server.url, model, thinking=2048, tools=[lookup]) as a:
        result, streamed = await run(a, "weather in Oslo?", streaming)
    assert result.success and result.output == "Sunny.", result.status
    if streaming:
        assert streamed == "I should look it up."
    assert result.messages[0].content[:2] == (
        ReasoningBlock("I should look it up.", signature=signature, provider="litellm"),
        ReasoningBlock("", redacted_data=redacted, provider="litellm"),
    )
    second = messages_server.requests[1].json
    assert second["messages"][1]["content"][:2] == list(first[:2])
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_thinking_blocks_do_not_reach_a_route_that_takes_none(
    server: FakeChatCompletions,
) -> None:
    """A conversation moved from the ``anthropic/`` route to ``openai/``: LiteLLM leaves the
    signed thinking out of the OpenAI-shaped wire."""
    conversation = [
        LLMMessage("user", [TextBlock("q")]),
        LLMMessage(
            "assistant", [ReasoningBlock("t", signature="sig", provider="litellm"), TextBlock("a")]
        ),
        LLMMessage("user", [TextBlock("more")]),
    ]
    server.reply(Reply(text="ok"))
    async with agent(server.base_url, "openai/gpt-fake") as a:
        result = await a.run(conversation)
    assert result.success, result.status
    assert server.requests[0].json["messages"][1] == {"role": "assistant", "content": "a"}
