"""``AgentConfig.thinking`` on the Messages API, per Claude family, through the real Agent and
the fake service (which refuses what the documentation says each model refuses): the wire body
for each level and a budget (checked against the SDK's ``MessageCreateParams``), local refusals
before any request, the sampling settings a model refuses left out with a note, and a thinking
tool loop whose signed and redacted reasoning goes back byte for byte."""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic
import pytest
from anthropic.types import message_create_params
from fake_anthropic import FakeAnthropic
from oma_anthropic import CAPABILITIES
from oma_anthropic.thinking import LEVEL_BUDGETS, MODEL_RULES, rules_for

from oma_core import Agent, AgentConfig, tool
from oma_core.capabilities import UnsupportedSettingError

PARAMS = pydantic.TypeAdapter(message_create_params.MessageCreateParamsNonStreaming)


def agent(server: FakeAnthropic, model: str, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "anthropic",
        "model": model,
        "base_url": server.url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    return Agent(AgentConfig(**{**values, **config}))


async def sent(server: FakeAnthropic, model: str, **config: Any) -> dict[str, Any]:
    server.reply_text("ok")
    async with agent(server, model, **config) as a:
        result = await a.run("hi")
    assert result.success, result.status
    body: dict[str, Any] = server.requests[-1].json
    PARAMS.validate_python(body)  # the SDK's own type of the body
    return body


ADAPTIVE = {"type": "adaptive"}


@pytest.mark.parametrize(
    ("model", "thinking", "wire", "effort", "max_tokens"),
    [
        # Opus 4.7 and later: adaptive only, a level is an effort; off leaves thinking out
        ("claude-opus-4-7", "low", ADAPTIVE, "low", 4096),
        ("claude-opus-4-7", "medium", ADAPTIVE, "medium", 4096),
        ("claude-opus-5", "high", ADAPTIVE, "high", 4096),
        ("claude-opus-4-7", "off", None, None, 4096),
        ("claude-mythos-5", "high", ADAPTIVE, "high", 4096),
        # Opus/Sonnet 4.6: a level is an effort, a budget is manual thinking
        ("claude-sonnet-4-6", "high", ADAPTIVE, "high", 4096),
        ("claude-sonnet-4-6", 5000, {"type": "enabled", "budget_tokens": 5000}, None, 9096),
        ("claude-opus-4-6", "off", {"type": "disabled"}, None, 4096),
        # 4.5 and older: manual thinking only; a level is a budget, added to the default
        ("claude-sonnet-4-5", "low", {"type": "enabled", "budget_tokens": 2048}, None, 4096),
        ("claude-haiku-4-5", "medium", {"type": "enabled", "budget_tokens": 8192}, None, 12288),
        ("claude-opus-4-5", "high", {"type": "enabled", "budget_tokens": 16384}, None, 20480),
        ("claude-3-7-sonnet-latest", 1024, {"type": "enabled", "budget_tokens": 1024}, None, 4096),
        ("claude-sonnet-4-5", "off", {"type": "disabled"}, None, 4096),
        ("claude-3-5-haiku-latest", "off", None, None, 4096),
    ],
)
async def test_each_level_and_a_budget_reach_the_wire(
    server: FakeAnthropic,
    model: str,
    thinking: object,
    wire: Any,
    effort: str | None,
    max_tokens: int,
) -> None:
    body = await sent(server, model, thinking=thinking)
    assert body.get("thinking") == wire
    assert body.get("output_config", {}).get("effort") == effort
    assert body["max_tokens"] == max_tokens


async def test_no_thinking_sends_none(server: FakeAnthropic) -> None:
    body = await sent(server, "claude-sonnet-4-6")
    assert not {"thinking", "output_config"} & set(body)


async def test_an_effort_joins_structured_output_in_output_config(server: FakeAnthropic) -> None:
    server.reply_text('{"n": 1}')
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with agent(server, "claude-opus-4-7", thinking="medium", output_type=schema) as a:
        result = await a.run("hi")
    assert result.success, result.status
    config = server.requests[0].json["output_config"]
    assert config["effort"] == "medium" and config["format"]["type"] == "json_schema"


@pytest.mark.parametrize(
    ("model", "thinking", "config", "setting", "reason"),
    [
        ("claude-3-5-haiku-latest", "low", {}, "thinking", "cannot think"),
        ("claude-3-haiku-20240307", 2048, {}, "thinking", "cannot think"),
        ("claude-opus-4-7", 8000, {}, "thinking", "not a token budget"),
        ("claude-mythos-preview", "off", {}, "thinking", "always thinks"),
        ("claude-sonnet-4-5", 500, {}, "thinking", "at least 1024"),
        ("claude-sonnet-4-5", 8000, {"max_tokens": 8000}, "max_tokens", "above the thinking"),
        ("claude-sonnet-4-5", "medium", {"max_tokens": 4000}, "max_tokens", "8192 tokens"),
    ],
)
async def test_what_a_model_cannot_take_is_refused_before_any_request(
    server: FakeAnthropic,
    model: str,
    thinking: object,
    config: dict[str, Any],
    setting: str,
    reason: str,
) -> None:
    async with agent(server, model, thinking=thinking, **config) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError), result.status
    assert (error.provider, error.setting, error.model) == ("Anthropic Messages", setting, model)
    assert reason in str(error)
    assert server.requests == []


@pytest.mark.parametrize(
    ("model", "thinking", "options", "kept", "notes"),
    [
        ("claude-opus-4-7", None, {"top_k": 5}, {}, ["temperature", "top_k"]),
        ("claude-opus-5", "high", {"top_p": 0.9}, {}, ["temperature", "top_p"]),
        ("claude-sonnet-4-5", None, {"top_p": 0.9}, {"temperature": 0.3}, ["top_p"]),
        ("claude-sonnet-4-6", "low", {"top_p": 0.95}, {"top_p": 0.95}, ["temperature"]),
        ("claude-3-7-sonnet-latest", 2048, {"top_k": 3}, {}, ["temperature", "top_k"]),
        ("claude-3-7-sonnet-latest", None, {"top_k": 3}, {"temperature": 0.3, "top_k": 3}, []),
    ],
)
async def test_a_refused_sampling_setting_is_left_out_with_a_note(
    server: FakeAnthropic,
    caplog: pytest.LogCaptureFixture,
    model: str,
    thinking: object,
    options: dict[str, Any],
    kept: dict[str, Any],
    notes: list[str],
) -> None:
    with caplog.at_level(logging.WARNING, logger="oma_anthropic"):
        body = await sent(
            server, model, thinking=thinking, temperature=0.3, provider_options=options
        )
    assert {k: body[k] for k in ("temperature", "top_p", "top_k") if k in body} == kept
    left_out = [r.getMessage() for r in caplog.records if r.name == "oma_anthropic"]
    assert [line.split(": ")[1] for line in left_out] == [f"{n} left out" for n in notes]
    assert all(line.startswith(f"{model}: ") and "\n" not in line for line in left_out)


def test_the_families_are_declared_and_the_first_match_wins() -> None:
    assert CAPABILITIES.thinking and CAPABILITIES.models == MODEL_RULES
    assert rules_for("claude-mythos-preview").thinking == "always"  # type: ignore[union-attr]
    assert rules_for("claude-3-7-sonnet-latest").thinking == "optional"  # type: ignore[union-attr]
    assert rules_for("claude-3-5-sonnet-latest").thinking == "never"  # type: ignore[union-attr]
    assert rules_for("claude-test") is None
    assert set(LEVEL_BUDGETS) == {"low", "medium", "high"}


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_thinking_tool_loop_sends_the_reasoning_back_byte_for_byte(
    server: FakeAnthropic, streaming: bool
) -> None:
    signature, redacted = "EqQBCgIYAhIM+/=ü" * 30, "EmwKAhgBEgy3va3pzix/+=="
    first = [
        {"type": "thinking", "thinking": "I should look it up.\n", "signature": signature},
        {"type": "redacted_thinking", "data": redacted},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Oslo"}},
    ]
    server.reply(*first, stop_reason="tool_use")
    server.reply({"type": "text", "text": "Sunny."})
    async with agent(server, "claude-sonnet-4-6", thinking="high", tools=[lookup]) as a:
        if streaming:
            async with a.stream("weather in Oslo?") as stream:
                events = [e async for e in stream]
            result = events[-1].data
            reasoning = "".join(str(e.data) for e in events if e.type == "reasoning")
            assert reasoning == "I should look it up.\n"
        else:
            result = await a.run("weather in Oslo?")
    assert result.success and result.output == "Sunny.", result.status
    assert len(server.requests) == 2
    second = server.requests[1]
    assert second.json["thinking"] == ADAPTIVE
    assert second.json["messages"][1] == {"role": "assistant", "content": first}
    raw = second.body.decode()  # the signature's very characters, as the SDK encodes them
    assert json.dumps(signature) in raw or json.dumps(signature, ensure_ascii=False) in raw
