"""``AgentConfig.thinking`` for Claude on Bedrock, through the real Agent and the fake Converse
API (which refuses what Bedrock's thinking pages say each model refuses): the
``additionalModelRequestFields`` for each level and a budget (checked against botocore's
service model), local refusals before any request, sampling settings a family refuses left
out with a note, and a thinking tool loop whose signed and redacted reasoning goes back byte
for byte."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from botocore_model import assert_botocore_takes
from fake_bedrock import FakeBedrock
from oma_bedrock import CAPABILITIES
from oma_bedrock.thinking import LEVEL_BUDGETS, MODEL_RULES, rules_for

from oma_core import Agent, AgentConfig, tool
from oma_core.capabilities import UnsupportedSettingError

ADAPTIVE = {"type": "adaptive"}


def effort(level: str) -> dict[str, Any]:
    return {"thinking": ADAPTIVE, "output_config": {"effort": level}}


def budget(tokens: int) -> dict[str, Any]:
    return {"thinking": {"type": "enabled", "budget_tokens": tokens}}


SONNET_45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def agent(server: FakeBedrock, model: str, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "bedrock",
        "model": model,
        "base_url": server.url,
        "max_retries": 0,
    }
    return Agent(AgentConfig(**{**values, **config}))


async def sent(server: FakeBedrock, model: str, **config: Any) -> dict[str, Any]:
    server.reply_text("ok")
    async with agent(server, model, **config) as a:
        result = await a.run("hi")
    assert result.success, result.status
    body: dict[str, Any] = server.requests[-1].json
    assert_botocore_takes(body, "Converse")
    return body


@pytest.mark.parametrize(
    ("model", "thinking", "fields", "max_tokens"),
    [
        ("us.anthropic.claude-opus-4-7", "low", effort("low"), None),
        ("global.anthropic.claude-opus-5", "high", effort("high"), None),
        ("anthropic.claude-opus-4-7", "off", None, None),
        ("anthropic.claude-sonnet-4-6", "medium", effort("medium"), None),
        ("anthropic.claude-sonnet-4-6", 5000, budget(5000), 9096),
        ("anthropic.claude-opus-4-6-v1", "off", {"thinking": {"type": "disabled"}}, None),
        ("us." + SONNET_45, "low", budget(2048), 6144),
        ("anthropic.claude-sonnet-4-20250514-v1:0", "high", budget(16384), 20480),
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", 1024, budget(1024), 5120),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "off", None, None),
        ("amazon.nova-pro-v1:0", "off", None, None),
    ],
)
async def test_each_level_and_a_budget_reach_the_wire(
    server: FakeBedrock, model: str, thinking: object, fields: Any, max_tokens: int | None
) -> None:
    body = await sent(server, model, thinking=thinking)
    assert body.get("additionalModelRequestFields") == fields
    assert body.get("inferenceConfig", {}).get("maxTokens") == max_tokens
    assert server.models[-1] == model


async def test_thinking_joins_the_fields_the_options_give(server: FakeBedrock) -> None:
    options = {"additional_model_request_fields": {"top_k": 5, "output_config": {"x": 1}}}
    body = await sent(
        server, "anthropic.claude-sonnet-4-6", thinking="low", provider_options=options
    )
    assert body["additionalModelRequestFields"] == {
        "top_k": 5,
        "output_config": {"x": 1, "effort": "low"},
        "thinking": ADAPTIVE,
    }


@pytest.mark.parametrize(
    ("model", "thinking", "config", "setting", "reason"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "low", {}, "thinking", "cannot think"),
        ("anthropic.claude-opus-4-7", 8000, {}, "thinking", "not a token budget"),
        ("anthropic.claude-mythos-preview", "off", {}, "thinking", "always thinks"),
        (SONNET_45, 500, {}, "thinking", "at least 1024"),
        (SONNET_45, 8000, {"max_tokens": 8000}, "max_tokens", "above"),
        ("amazon.nova-pro-v1:0", "high", {}, "thinking", "Claude models only"),
        ("deepseek.r1-v1:0", 4096, {}, "thinking", "additional_model_request_fields"),
    ],
)
async def test_what_a_model_cannot_take_is_refused_before_any_request(
    server: FakeBedrock,
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
    assert (error.provider, error.setting, error.model) == ("Amazon Bedrock", setting, model)
    assert reason in str(error)
    assert server.requests == []


@pytest.mark.parametrize(
    ("model", "thinking", "kept", "notes"),
    [
        ("anthropic.claude-opus-4-7", None, {}, ["temperature"]),
        ("anthropic.claude-sonnet-4-6", "low", {}, ["temperature"]),
        ("anthropic.claude-sonnet-4-6", None, {"temperature": 0.3}, []),
        ("amazon.nova-pro-v1:0", None, {"temperature": 0.3}, []),
    ],
)
async def test_a_refused_sampling_setting_is_left_out_with_a_note(
    server: FakeBedrock,
    caplog: pytest.LogCaptureFixture,
    model: str,
    thinking: object,
    kept: dict[str, Any],
    notes: list[str],
) -> None:
    with caplog.at_level(logging.WARNING, logger="oma_bedrock"):
        body = await sent(server, model, thinking=thinking, temperature=0.3)
    inference = body.get("inferenceConfig", {})
    assert {k: v for k, v in inference.items() if k in ("temperature", "topP")} == kept
    left_out = [r.getMessage() for r in caplog.records if r.name == "oma_bedrock"]
    assert [line.split(": ")[1] for line in left_out] == [f"{n} left out" for n in notes]


def test_the_families_are_declared_and_the_first_match_wins() -> None:
    assert CAPABILITIES.thinking and CAPABILITIES.models == MODEL_RULES
    assert rules_for("us.anthropic.claude-mythos-preview").thinking == "always"  # type: ignore[union-attr]
    assert rules_for("anthropic.claude-3-7-sonnet-20250219-v1:0").thinking == "optional"  # type: ignore[union-attr]
    assert rules_for("anthropic.claude-3-5-sonnet-20240620-v1:0").thinking == "never"  # type: ignore[union-attr]
    assert rules_for("amazon.nova-pro-v1:0") is None
    assert set(LEVEL_BUDGETS) == {"low", "medium", "high"}


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_thinking_tool_loop_sends_the_reasoning_back_byte_for_byte(
    server: FakeBedrock, streaming: bool
) -> None:
    signature = "EqQBCgIYAhIM+/=ü" * 30
    redacted = base64.b64encode(bytes(range(256))).decode()
    first = [
        {"reasoningContent": {"reasoningText": {"text": "Look it up.\n", "signature": signature}}},
        {"reasoningContent": {"redactedContent": redacted}},
        {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"city": "Oslo"}}},
    ]
    server.reply(*first, stop_reason="tool_use")
    server.reply({"text": "Sunny."})
    model = "us.anthropic.claude-sonnet-4-6"
    async with agent(server, model, thinking="high", tools=[lookup]) as a:
        if streaming:
            async with a.stream("weather in Oslo?") as stream:
                events = [e async for e in stream]
            result = events[-1].data
            reasoning = "".join(str(e.data) for e in events if e.type == "reasoning")
            assert reasoning == "Look it up.\n"
        else:
            result = await a.run("weather in Oslo?")
    assert result.success and result.output == "Sunny.", result.status
    assert len(server.requests) == 2
    second = server.requests[1].json
    assert_botocore_takes(second, "Converse")
    assert second["additionalModelRequestFields"]["thinking"] == ADAPTIVE
    assert second["messages"][1] == {"role": "assistant", "content": first}
    raw = server.requests[1].body.decode()
    assert json.dumps(signature) in raw or json.dumps(signature, ensure_ascii=False) in raw
