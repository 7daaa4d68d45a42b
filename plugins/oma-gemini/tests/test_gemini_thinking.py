"""``AgentConfig.thinking`` as ``thinkingConfig``, per Gemini family, through the real Agent and
the fake service (which refuses what the documentation says each model refuses): the wire
body for each level and a budget (checked against ``google-genai``'s own types), local
refusals before any request, thought summaries streamed as reasoning, and a thinking tool loop
whose thought signature goes back byte for byte; on Gemini 3 a call with no signature gets
the documented dummy value."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from genai_types import assert_google_genai_takes
from oma_gemini import CAPABILITIES
from oma_gemini.thinking import DUMMY_SIGNATURE, LEVEL_BUDGETS, MODEL_RULES, rules_for

from oma_core import Agent, AgentConfig, LLMMessage, ReasoningBlock, TextBlock, ToolUseBlock, tool
from oma_core.capabilities import UnsupportedSettingError
from oma_core.messages import ToolResultBlock, user_text


def agent(server: FakeGemini, model: str, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "gemini",
        "model": model,
        "base_url": server.base_url,
        "api_key": API_KEY,
        "max_retries": 0,
    }
    return Agent(AgentConfig(**{**values, **config}))


async def sent(server: FakeGemini, model: str, **config: Any) -> dict[str, Any]:
    async with agent(server, model, **config) as a:
        result = await a.run("hi")
    assert result.success, result.status
    body: dict[str, Any] = server.requests[-1].json
    assert_google_genai_takes(body)
    return body


def thinking_of(body: dict[str, Any]) -> Any:
    return body.get("generationConfig", {}).get("thinkingConfig")


@pytest.mark.parametrize(
    ("model", "thinking", "wire"),
    [
        # Gemini 3: a level as thinkingLevel, a budget as thinkingBudget (backward compatible)
        ("gemini-3-pro-preview", "low", {"thinkingLevel": "low", "includeThoughts": True}),
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "medium", "includeThoughts": True}),
        ("gemini-3.1-pro-preview", "high", {"thinkingLevel": "high", "includeThoughts": True}),
        ("gemini-3-flash-preview", 4096, {"thinkingBudget": 4096, "includeThoughts": True}),
        ("gemini-3.1-pro-preview", "medium", {"thinkingLevel": "medium", "includeThoughts": True}),
        ("gemini-3.5-flash", "low", {"thinkingLevel": "low", "includeThoughts": True}),
        # the Flash models' least is "minimal": "off" is sent as it (the Pro models refuse it)
        ("gemini-3-flash-preview", "off", {"thinkingLevel": "minimal"}),
        ("gemini-3.1-flash-lite", "off", {"thinkingLevel": "minimal"}),
        # Gemini 2.5: a budget only; a level is a budget
        ("gemini-2.5-pro", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192, "includeThoughts": True}),
        ("gemini-2.5-flash-lite", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("gemini-2.5-pro", 32768, {"thinkingBudget": 32768, "includeThoughts": True}),
        ("gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini-2.5-flash-lite", "off", {"thinkingBudget": 0}),
        # a model that cannot think: "off" sends nothing
        ("gemini-2.0-flash", "off", None),
    ],
)
async def test_each_level_and_a_budget_reach_the_wire(
    server: FakeGemini, model: str, thinking: object, wire: Any
) -> None:
    assert thinking_of(await sent(server, model, thinking=thinking)) == wire


async def test_no_thinking_sends_none_and_the_request_s_replaces_the_options(
    server: FakeGemini,
) -> None:
    assert thinking_of(await sent(server, "gemini-2.5-flash")) is None
    options = {"generationConfig": {"thinkingConfig": {"thinkingBudget": 99}, "topK": 3}}
    body = await sent(server, "gemini-3-pro-preview", thinking="low", provider_options=options)
    assert body["generationConfig"] == {
        "topK": 3,
        "thinkingConfig": {"thinkingLevel": "low", "includeThoughts": True},
    }


@pytest.mark.parametrize(
    ("model", "thinking", "reason"),
    [
        ("gemini-2.0-flash", "low", "cannot think"),
        ("gemini-1.5-pro", 2048, "cannot think"),
        ("gemini-3-pro-preview", "off", "always thinks"),
        ("gemini-3.1-pro-preview", "off", "always thinks"),
        ("gemini-2.5-pro", "off", "always thinks"),
        ("gemini-2.5-pro", 100, "128 to 32768"),
        ("gemini-2.5-flash", 30000, "1 to 24576"),
        ("gemini-2.5-flash-lite", 256, "512 to 24576"),
    ],
)
async def test_what_a_model_cannot_take_is_refused_before_any_request(
    server: FakeGemini, model: str, thinking: object, reason: str
) -> None:
    async with agent(server, model, thinking=thinking) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError), result.status
    assert (error.provider, error.setting, error.model) == ("Google Gemini", "thinking", model)
    assert reason in str(error)
    assert server.requests == []


async def test_off_on_a_flash_model_and_medium_on_3_pro_are_sent_with_a_note(
    server: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="oma_gemini"):
        off = thinking_of(await sent(server, "gemini-3-flash-preview", thinking="off"))
        medium = thinking_of(await sent(server, "gemini-3-pro-preview", thinking="medium"))
    assert off == {"thinkingLevel": "minimal"}
    assert medium == {"thinkingLevel": "high", "includeThoughts": True}
    assert 'thinking="off" is sent as thinkingLevel "minimal"' in caplog.text
    assert 'takes no thinkingLevel "medium"; thinking="medium" is sent as "high"' in caplog.text


def test_the_families_are_declared_and_the_first_match_wins() -> None:
    assert CAPABILITIES.thinking and CAPABILITIES.models == MODEL_RULES
    assert rules_for("gemini-3-flash-preview").thinking == "optional"  # type: ignore[union-attr]
    assert rules_for("gemini-3.1-pro-preview").thinking == "always"  # type: ignore[union-attr]
    assert rules_for("gemini-2.5-flash-lite").thinking == "optional"  # type: ignore[union-attr]
    assert rules_for("gemini-2.0-flash-001").thinking == "never"  # type: ignore[union-attr]
    assert rules_for("gemini-test") is None
    assert set(LEVEL_BUDGETS) == {"low", "medium", "high"}


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_thinking_tool_loop_sends_the_signature_back_byte_for_byte(
    server: FakeGemini, streaming: bool
) -> None:
    signature = base64.b64encode(bytes(range(256)) * 2 + b"!").decode()  # with "+", "/", "="
    server.reply(
        Reply(
            text="",
            thoughts="I should look it up.",
            calls=(("c1", "lookup", {"city": "Oslo"}),),
            signature=signature,
        ),
        Reply(text="Sunny."),
    )
    async with agent(server, "gemini-3-pro-preview", thinking="high", tools=[lookup]) as a:
        if streaming:
            async with a.stream("weather in Oslo?") as stream:
                events = [e async for e in stream]
            result = events[-1].data
            reasoning = "".join(str(e.data) for e in events if e.type == "reasoning")
            assert reasoning == "I should look it up."
        else:
            result = await a.run("weather in Oslo?")
    assert result.success and result.output == "Sunny.", result.status
    assert len(server.requests) == 2
    second = server.requests[1].json
    assert_google_genai_takes(second)
    assert second["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "I should look it up.", "thought": True},
            {
                "functionCall": {"id": "c1", "name": "lookup", "args": {"city": "Oslo"}},
                "thoughtSignature": signature,
            },
        ],
    }
    assert json.dumps(signature) in server.requests[1].body.decode()
    kept = [b for m in result.messages for b in m.content if isinstance(b, ReasoningBlock)]
    assert ReasoningBlock("", signature=signature, provider="gemini") in kept


def _history(*call_blocks: Any) -> list[LLMMessage]:
    return [
        user_text("weather?"),
        LLMMessage(
            "assistant",
            [*call_blocks, ToolUseBlock("c1", "lookup", {"city": "Oslo"}), TextBlock("")],
        ),
        LLMMessage("user", [ToolResultBlock("c1", "sunny")]),
    ]


@pytest.mark.parametrize(
    ("model", "blocks", "expected"),
    [
        # a call from another provider, or written by hand: the documented dummy on Gemini 3
        ("gemini-3-pro-preview", (), DUMMY_SIGNATURE),
        (
            "gemini-3-flash-preview",
            (ReasoningBlock("why", signature="anthropic-sig", provider="anthropic"),),
            DUMMY_SIGNATURE,
        ),
        # Gemini's own signature is never replaced
        (
            "gemini-3-pro-preview",
            (ReasoningBlock("", signature="gemini-sig", provider="gemini"),),
            "gemini-sig",
        ),
        # Gemini 2.5 does not validate signatures: none is invented
        ("gemini-2.5-flash", (), None),
    ],
)
async def test_a_call_without_a_signature_gets_the_documented_dummy_on_gemini_3(
    server: FakeGemini, model: str, blocks: tuple[Any, ...], expected: str | None
) -> None:
    server.reply(Reply(text="Sunny."))
    async with agent(server, model) as a:
        result = await a.run(_history(*blocks))
    assert result.success, result.status  # the fake refuses an unsigned call on Gemini 3
    body = server.requests[0].json
    assert_google_genai_takes(body)
    parts = body["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts if "functionCall" in p] == [expected]
    assert "anthropic-sig" not in server.requests[0].body.decode()


async def test_the_fake_refuses_an_unsigned_gemini_3_call(server: FakeGemini) -> None:
    """The check the dummy answers is real: the same body without it is a 400."""
    server.reply(Reply(text="Sunny."))
    async with agent(server, "gemini-3-pro-preview") as a:
        await a.run(_history())
    body = server.requests[0].json
    del body["contents"][1]["parts"][0]["thoughtSignature"]
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{server.base_url}/models/gemini-3-pro-preview:generateContent",
            json=body,
            headers={"x-goog-api-key": API_KEY},
        )
    assert reply.status_code == 400
    assert "thought_signature" in reply.json()["error"]["message"]
