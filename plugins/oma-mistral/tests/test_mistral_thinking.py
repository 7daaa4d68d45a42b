"""``AgentConfig.thinking`` as ``reasoning_effort``, per Mistral family, through the real Agent
and the fake service (which refuses an effort the reasoning documentation does not give for
the model): the wire for each level, local refusals before any request, ``thinking`` chunks
streamed as reasoning, and a thinking tool loop whose reasoning goes back as the same chunk."""

from __future__ import annotations

from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral, Reply
from oma_mistral import CAPABILITIES
from oma_mistral.thinking import MODEL_RULES, rules_for

from oma_core import Agent, AgentConfig, LLMMessage, ReasoningBlock, TextBlock, tool
from oma_core.capabilities import UnsupportedSettingError
from oma_core.messages import user_text


def agent(server: FakeMistral, model: str, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "mistral",
        "model": model,
        "base_url": server.base_url,
        "api_key": API_KEY,
        "max_retries": 0,
    }
    return Agent(AgentConfig(**{**values, **config}))


@pytest.mark.parametrize(
    ("model", "thinking", "effort"),
    [
        ("mistral-small-latest", "high", "high"),
        ("mistral-small-2603", "off", "none"),
        ("mistral-medium-3-5", "high", "high"),
        ("mistral-large-4", "low", "low"),
        ("mistral-large-4-0", "medium", "medium"),
        ("mistral-large-4", "off", "none"),
        ("magistral-medium-latest", "high", None),  # it reasons at its own depth
        ("codestral-latest", "off", None),
        ("mistral-small-latest", None, None),
    ],
)
async def test_each_level_reaches_the_wire(
    server: FakeMistral, model: str, thinking: object, effort: str | None
) -> None:
    async with agent(server, model, thinking=thinking) as a:
        result = await a.run("hi")
    assert result.success, result.status
    assert server.requests[-1].json.get("reasoning_effort") == effort


@pytest.mark.parametrize(
    ("model", "thinking", "reason"),
    [
        ("mistral-small-latest", "low", '"high" or "none"'),
        ("mistral-medium-3-5", "medium", '"high" or "none"'),
        ("mistral-large-4", 4096, "not a token budget"),
        ("mistral-test", 4096, "not a token budget"),
        ("magistral-small-latest", "off", "always thinks"),
        ("codestral-latest", "high", "cannot think"),
        ("pixtral-large-latest", "low", "cannot think"),
    ],
)
async def test_what_a_model_cannot_take_is_refused_before_any_request(
    server: FakeMistral, model: str, thinking: object, reason: str
) -> None:
    async with agent(server, model, thinking=thinking) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError), result.status
    assert (error.provider, error.setting, error.model) == ("Mistral", "thinking", model)
    assert reason in str(error)
    assert server.requests == []


def test_the_families_are_declared() -> None:
    assert CAPABILITIES.thinking and CAPABILITIES.models == MODEL_RULES
    assert rules_for("magistral-medium-2509").thinking == "always"  # type: ignore[union-attr]
    assert rules_for("devstral-medium-latest").thinking == "never"  # type: ignore[union-attr]
    assert rules_for("mistral-test") is None


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_thinking_tool_loop_sends_the_reasoning_back(
    server: FakeMistral, streaming: bool
) -> None:
    thought = "I should look it up: «Oslo».\n"
    server.reply(
        Reply(text="", thinking=thought, tool_calls=(("abcDEF123", "lookup", '{"city":"Oslo"}'),)),
        Reply(text="Sunny."),
    )
    async with agent(server, "mistral-medium-3-5", thinking="high", tools=[lookup]) as a:
        if streaming:
            async with a.stream("weather in Oslo?") as stream:
                events = [e async for e in stream]
            result = events[-1].data
            assert "".join(str(e.data) for e in events if e.type == "reasoning") == thought
        else:
            result = await a.run("weather in Oslo?")
    assert result.success and result.output == "Sunny.", result.status
    assert ReasoningBlock(thought, provider="mistral") in result.messages[0].content
    second = server.requests[1].json
    assert second["reasoning_effort"] == "high"
    assistant = second["messages"][1]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": thought}]}
    ]
    assert assistant["tool_calls"][0]["id"] == "abcDEF123"


async def test_another_provider_s_reasoning_stays_out(server: FakeMistral) -> None:
    conversation = [
        user_text("hi"),
        LLMMessage(
            "assistant",
            [ReasoningBlock("theirs", signature="sig", provider="anthropic"), TextBlock("a")],
        ),
        user_text("more"),
    ]
    async with agent(server, "mistral-small-latest") as a:
        result = await a.run(conversation)
    assert result.success, result.status
    assert server.requests[0].json["messages"][1] == {"role": "assistant", "content": "a"}
