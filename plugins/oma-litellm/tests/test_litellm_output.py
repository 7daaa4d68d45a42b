"""Structured output through the bridge: handed to LiteLLM in OpenAI's form (``response_format``
``json_schema``, or a function that ``tool_choice`` forces), and on the ``openai/`` route the
very body that reaches the wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import attrs
import pytest
from fake_chat_completions import FakeChatCompletions
from fake_messages import FakeMessages
from oma_litellm import CAPABILITIES, create_provider
from oma_litellm.mapping import build_body, strict_ready

from oma_core import load_messages
from oma_core.toolkit import (
    OutputRequest,
    Provider,
    ProviderRequest,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolDefinition,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "kind": {"type": "string", "enum": ["invoice", "receipt"]},
        "lines": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "kind", "lines"],
    "additionalProperties": False,
}
VALUE = {"name": "ACME", "kind": "invoice", "lines": ["bolt"]}
MESSAGES = [{"role": "user", "content": "extract the fields"}]
LOOKUP = ToolDefinition("lookup", "Look a word up.", {"type": "object"})
STREAM_FIELDS = {"stream": True, "stream_options": {"include_usage": True}}


@pytest.fixture
def messages_server(fake_server_factory: Callable[..., Any]) -> FakeMessages:
    return fake_server_factory(FakeMessages)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeChatCompletions) -> AsyncIterator[Provider]:
    built = create_provider(ProviderSettings(base_url=server.base_url, api_key="test-key"))
    yield built
    await built.aclose()


def _request(
    mode: Literal["native", "tool"], *, tools: tuple[ToolDefinition, ...] = ()
) -> ProviderRequest:
    output = OutputRequest(SCHEMA, "final_result", mode, description="The invoice's fields.")
    messages = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "extract the fields"}]}]
    )
    return ProviderRequest(model="openai/gpt-fake", messages=messages, tools=tools, output=output)


NATIVE_BODY: dict[str, Any] = {
    "model": "gpt-fake",
    "messages": MESSAGES,
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "final_result",
            "schema": SCHEMA,
            "strict": True,
            "description": "The invoice's fields.",
        },
    },
}
FINAL_RESULT = {
    "type": "function",
    "function": {
        "name": "final_result",
        "description": "The invoice's fields.",
        "parameters": SCHEMA,
    },
}
TOOL_BODY: dict[str, Any] = {
    "model": "gpt-fake",
    "messages": MESSAGES,
    "tools": [FINAL_RESULT],
    "tool_choice": {"type": "function", "function": {"name": "final_result"}},
}


def test_the_bridge_declares_native_tool_and_prompted_output() -> None:
    assert CAPABILITIES.output_modes == {"native", "tool", "prompted"}


class TestNative:
    async def test_complete_hands_over_a_json_schema_response_format(
        self, server: FakeChatCompletions, provider: Provider
    ) -> None:
        server.reply_text(json.dumps(VALUE))
        request = _request("native")
        response = await provider.complete(request)
        assert server.requests[0].json == NATIVE_BODY == provider.render(request)
        assert json.loads(response.message.content[0].text) == VALUE  # type: ignore[union-attr]

    async def test_stream_hands_over_the_same_fields(
        self, server: FakeChatCompletions, provider: Provider
    ) -> None:
        server.reply_text(json.dumps(VALUE))
        events = [e async for e in provider.stream(_request("native"))]
        assert server.requests[0].json == {**NATIVE_BODY, **STREAM_FIELDS}
        assert json.loads("".join(e.text for e in events if isinstance(e, TextDelta))) == VALUE
        assert isinstance(events[-1], ResponseComplete)


class TestStrict:
    def test_a_schema_keeping_openai_s_strict_rules_is_sent_strict(self) -> None:
        assert strict_ready(SCHEMA)
        assert build_body(_request("native"))["response_format"]["json_schema"]["strict"] is True

    @pytest.mark.parametrize(
        "schema",
        [
            {**SCHEMA, "required": ["name"]},  # an optional property
            {k: v for k, v in SCHEMA.items() if k != "additionalProperties"},  # an open object
            {"type": "array", "items": {"type": "object", "properties": {"a": {}}}},
            {"anyOf": [{"type": "object", "properties": {}, "additionalProperties": True}]},
        ],
    )
    def test_any_other_schema_is_sent_not_strict_rather_than_refused_by_the_route(
        self, schema: dict[str, Any]
    ) -> None:
        assert not strict_ready(schema)
        output = OutputRequest(schema, "final_result", "native")
        request = attrs.evolve(_request("native"), output=output)
        assert build_body(request)["response_format"]["json_schema"]["strict"] is False


class TestTool:
    async def test_complete_forces_the_output_function(
        self, server: FakeChatCompletions, provider: Provider
    ) -> None:
        server.reply_tool_call("call_1", "final_result", VALUE)
        request = _request("tool")
        response = await provider.complete(request)
        assert server.requests[0].json == TOOL_BODY == provider.render(request)
        (call,) = response.message.content
        assert (call.name, call.plain_input()) == ("final_result", VALUE)  # type: ignore[union-attr]
        assert response.stop_reason == "tool_use"

    async def test_stream_forces_it_too(
        self, server: FakeChatCompletions, provider: Provider
    ) -> None:
        server.reply_tool_call("call_1", "final_result", VALUE)
        events = [e async for e in provider.stream(_request("tool"))]
        assert server.requests[0].json == {**TOOL_BODY, **STREAM_FIELDS}
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [(c.name, c.plain_input()) for c in calls] == [("final_result", VALUE)]

    async def test_with_tools_of_the_agent_s_own_any_tool_is_required(
        self, server: FakeChatCompletions, provider: Provider
    ) -> None:
        server.reply_tool_call("call_1", "final_result", VALUE)
        await provider.complete(_request("tool", tools=(LOOKUP,)))
        body = server.requests[0].json
        assert [t["function"]["name"] for t in body["tools"]] == ["lookup", "final_result"]
        assert body["tool_choice"] == "required"  # the model may call the agent's tools first


class TestOnTheAnthropicRoute:
    """LiteLLM translates the OpenAI form for Anthropic's Messages API (``fake_messages``)."""

    @pytest.fixture
    async def anthropic(self, messages_server: FakeMessages) -> AsyncIterator[Provider]:
        built = create_provider(ProviderSettings(base_url=messages_server.url, api_key="test-key"))
        yield built
        await built.aclose()

    @staticmethod
    def _on_route(mode: Literal["native", "tool"]) -> ProviderRequest:
        request = _request(mode)
        return ProviderRequest(
            model="anthropic/claude-fake", messages=request.messages, output=request.output
        )

    async def test_tool_mode_reaches_it_as_a_forced_tool(
        self, messages_server: FakeMessages, anthropic: Provider
    ) -> None:
        messages_server.reply_tool_use("toolu_1", "final_result", VALUE)
        response = await anthropic.complete(self._on_route("tool"))
        body = messages_server.requests[0].json
        assert body["tool_choice"] == {"type": "tool", "name": "final_result"}
        assert [(t["name"], t["input_schema"]) for t in body["tools"]] == [("final_result", SCHEMA)]
        (call,) = response.message.content
        assert (call.name, call.plain_input()) == ("final_result", VALUE)  # type: ignore[union-attr]

    async def test_native_mode_reaches_it_as_litellm_s_json_tool_and_returns_text(
        self, messages_server: FakeMessages, anthropic: Provider
    ) -> None:
        # LiteLLM's own translation of response_format for this route: a forced tool of its
        # own, whose arguments it hands back as the reply's text
        messages_server.reply_tool_use("toolu_1", "json_tool_call", VALUE)
        response = await anthropic.complete(self._on_route("native"))
        body = messages_server.requests[0].json
        assert body["tool_choice"] == {"type": "tool", "name": "json_tool_call"}
        assert [t["input_schema"] for t in body["tools"]] == [SCHEMA]
        assert json.loads(response.message.content[0].text) == VALUE  # type: ignore[union-attr]
