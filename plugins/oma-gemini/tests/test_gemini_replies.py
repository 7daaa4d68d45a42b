"""Gemini's replies as oma's responses: finish reasons, usage, tool calls, thoughts."""

from __future__ import annotations

from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from oma_gemini import create_provider

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    ProviderError,
    ReasoningBlock,
    TextBlock,
    ToolUseBlock,
    Usage,
    load_messages,
)
from oma_core.messages import user_text
from oma_core.toolkit import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
)

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


def _request(conversation: Any = None) -> ProviderRequest:
    conversation = conversation or [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    return ProviderRequest(model="gemini-test", messages=load_messages(conversation))


async def _call(
    server: FakeGemini, streaming: bool, request: ProviderRequest | None = None
) -> tuple[ProviderResponse, list[Any]]:
    provider = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    try:
        if not streaming:
            return await provider.complete(request or _request()), []
        events = [e async for e in provider.stream(request or _request())]
    finally:
        await provider.aclose()
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    return final.response, events[:-1]


async def _error(server: FakeGemini, streaming: bool) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await _call(server, streaming)
    return caught.value


class TestFinishReasons:
    @STREAMING
    async def test_stop_is_end_turn(self, server: FakeGemini, streaming: bool) -> None:
        server.reply(Reply(text="done"))
        response, _ = await _call(server, streaming)
        assert response.stop_reason == "end_turn"
        assert response.message.content == (TextBlock("done"),)

    @STREAMING
    async def test_max_tokens_keeps_the_partial_answer(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(text="cut sh", finish_reason="MAX_TOKENS"))
        response, _ = await _call(server, streaming)
        assert response.stop_reason == "max_tokens"
        assert response.message.content == (TextBlock("cut sh"),)

    @STREAMING
    async def test_a_turn_with_function_calls_is_tool_use(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(text="", calls=(("c1", "lookup", {"q": "x"}),)))
        response, _ = await _call(server, streaming)
        assert response.stop_reason == "tool_use"

    @STREAMING
    @pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "OTHER"])
    async def test_a_withheld_answer_is_an_error_not_a_silent_success(
        self, server: FakeGemini, streaming: bool, reason: str
    ) -> None:
        server.reply(Reply(text="partial", finish_reason=reason))
        error = await _error(server, streaming)
        assert reason in error.message and "withheld" in error.message
        assert error.retryable is False and error.provider == "Google Gemini"

    @STREAMING
    async def test_a_blocked_prompt_is_an_error(self, server: FakeGemini, streaming: bool) -> None:
        server.reply(Reply(block_reason="SAFETY"))
        error = await _error(server, streaming)
        assert "prompt was blocked (SAFETY)" in error.message
        assert error.retryable is False

    @STREAMING
    async def test_a_malformed_function_call_is_retryable(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(text="", finish_reason="MALFORMED_FUNCTION_CALL"))
        error = await _error(server, streaming)
        assert error.retryable is True and "MALFORMED_FUNCTION_CALL" in error.message


class TestUsage:
    @STREAMING
    async def test_comes_from_usage_metadata_with_thinking_counted_as_output(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(prompt_tokens=21, output_tokens=4, thoughts_tokens=30))
        response, _ = await _call(server, streaming)
        assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 34)

    @STREAMING
    async def test_cached_thought_and_tool_use_counts(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        """``promptTokenCount`` counts the cached tokens already; the server tools' input
        (``toolUsePromptTokenCount``) is input too."""
        server.reply(
            Reply(
                prompt_tokens=100,
                output_tokens=4,
                thoughts_tokens=30,
                cached_tokens=60,
                tool_use_tokens=5,
            )
        )
        response, _ = await _call(server, streaming)
        assert response.usage == Usage(105, 34, cache_read_tokens=60, reasoning_tokens=30)


async def test_another_providers_thought_signature_is_not_sent(server: FakeGemini) -> None:
    """A signature Anthropic issued is no ``thoughtSignature``: the model turn goes without
    it; Gemini's own goes back on its part."""
    conversation = [
        user_text("hi"),
        LLMMessage(
            "assistant",
            [
                ReasoningBlock("t", signature="anthropic-sig", provider="anthropic"),
                ReasoningBlock("", signature="gemini-sig", provider="gemini"),
                TextBlock("first"),
            ],
        ),
        user_text("more"),
    ]
    config = AgentConfig(
        "g", provider="gemini", model="gemini-test", base_url=server.base_url, api_key=API_KEY
    )
    async with Agent(config) as agent:
        result = await agent.run(conversation)
    assert result.success, result.status.error
    assert server.requests[0].json["contents"][1] == {
        "role": "model",
        "parts": [{"text": "first", "thoughtSignature": "gemini-sig"}],
    }


class TestToolCalls:
    @STREAMING
    async def test_calls_without_an_id_get_one_that_stream_and_complete_agree_on(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(text="", calls=((None, "a", {"x": 1}), (None, "b", {}))))
        server.reply(Reply(text="", calls=((None, "a", {"x": 1}), (None, "b", {}))))
        first, _ = await _call(server, streaming)
        second, _ = await _call(server, not streaming)
        assert first == second
        calls = [b for b in first.message.content if isinstance(b, ToolUseBlock)]
        assert [c.name for c in calls] == ["a", "b"]
        assert calls[0].id != calls[1].id and all(c.id.startswith("call_") for c in calls)

    async def test_a_stream_emits_each_call_once_complete(self, server: FakeGemini) -> None:
        server.reply(Reply(text="let me look", calls=(("c1", "lookup", {"q": "x"}),)))
        response, events = await _call(server, True)
        assert [type(e) for e in events if not isinstance(e, TextDelta)] == [ToolCall]
        assert events[-1].block == ToolUseBlock("c1", "lookup", {"q": "x"})
        assert response.message.content == (
            TextBlock("let me look"),
            ToolUseBlock("c1", "lookup", {"q": "x"}),
        )


class TestThoughts:
    @STREAMING
    async def test_thought_summaries_are_reasoning(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.reply(Reply(text="answer", thoughts="thinking it over", signature="sig-1"))
        response, events = await _call(server, streaming)
        assert response.message.content == (  # marked as Gemini's: sent back only there
            ReasoningBlock("thinking it over", provider="gemini"),
            ReasoningBlock("", signature="sig-1", provider="gemini"),
            TextBlock("answer"),
        )
        if streaming:
            reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
            assert reasoning == "thinking it over"

    async def test_a_call_s_thought_signature_goes_back_on_that_call(
        self, server: FakeGemini
    ) -> None:
        server.reply(Reply(text="", calls=(("c1", "lookup", {}),), signature="sig-call"))
        response, _ = await _call(server, False)
        assert response.message.content == (
            ReasoningBlock("", signature="sig-call", provider="gemini"),
            ToolUseBlock("c1", "lookup", {}),
        )
        conversation = [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "", "signature": "sig-call"},
                    {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}],
            },
        ]
        await _call(server, False, _request(conversation))
        model_turn = server.requests[1].json["contents"][1]
        assert model_turn == {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "c1", "name": "lookup", "args": {}},
                    "thoughtSignature": "sig-call",
                }
            ],
        }
