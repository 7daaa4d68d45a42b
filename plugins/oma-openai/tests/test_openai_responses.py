"""The Responses API's behaviour, through the fake service's ``POST /v1/responses`` and each
transport (the official ``openai`` SDK on httpx and aiohttp, and the direct transport).

Which API a provider speaks; a tool loop with reasoning, whose reasoning items (with their
``encrypted_content``) come back unchanged, in order, each followed by the item that followed
it (the fake refuses anything else, as the service does); usage with cached and reasoning
tokens; structured output in ``text.format``; streaming events; errors and retries;
``AgentConfig.thinking`` as ``reasoning.effort``; the sampling settings reasoning models refuse.
Bodies are checked against the SDK's own request types (``openai.types.responses``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import attrs
import httpx
import pydantic
import pytest
from fake_openai import API_KEY, Reply
from fake_responses import FakeResponses
from hypothesis import given, settings
from hypothesis import strategies as st
from oma_openai import make_provider, preset
from oma_openai.provider import OpenAIChatProvider
from openai.types.responses import (
    EasyInputMessageParam,
    FunctionToolParam,
    ResponseFunctionToolCallParam,
    ResponseOutputMessageParam,
    ResponseReasoningItemParam,
)
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from openai.types.responses.response_input_item_param import FunctionCallOutput
from openai_builders import request

from oma_core import Agent, AgentConfig, ProviderError, ReasoningBlock, Usage, tool
from oma_core.errors import PluginError
from oma_core.testing.fake_server import HTTPError
from oma_core.toolkit import (
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

# -- the SDK's types ------------------------------------------------------------------------

_ITEM_TYPES: dict[str, Any] = {
    "reasoning": ResponseReasoningItemParam,
    "function_call": ResponseFunctionToolCallParam,
    "function_call_output": FunctionCallOutput,
}
_CREATE = pydantic.TypeAdapter(ResponseCreateParamsNonStreaming)


def _keys(typed: Any) -> frozenset[str]:
    return frozenset(typed.__required_keys__ | typed.__optional_keys__)


def assert_sdk_shape(body: Mapping[str, Any]) -> None:
    """``body`` validates as the SDK's ``ResponseCreateParams`` and names no field the SDK's
    types do not have (pydantic ignores unknown keys of a TypedDict: checked here)."""
    _CREATE.validate_python({k: v for k, v in body.items() if k != "stream"})
    assert set(body) <= _keys(ResponseCreateParamsNonStreaming) | {"stream"}, set(body)
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "message":
            typed = ResponseOutputMessageParam if "id" in item else EasyInputMessageParam
        else:
            typed = _ITEM_TYPES[kind]
        pydantic.TypeAdapter(typed).validate_python(item)
        assert set(item) <= _keys(typed), (kind, set(item) - _keys(typed))
        if kind == "reasoning":
            assert set(item) <= {"type", "id", "summary", "encrypted_content"}
    for spec in body.get("tools") or ():
        assert set(spec) <= _keys(FunctionToolParam), spec


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeResponses]:
    with FakeResponses(mode="strict") as srv:
        yield srv  # type: ignore[misc]
        assert srv.handler_errors == []


@pytest.fixture
async def provider(server: FakeResponses, transport: str) -> AsyncIterator[OpenAIChatProvider]:
    made = _provider(server.base_url, transport=transport, api="responses")
    yield made
    await made.aclose()
    assert await server.async_wait_idle(timeout=30), "a connection was left open"


def _provider(base_url: str | None, name: str = "openai", **options: Any) -> OpenAIChatProvider:
    settings = ProviderSettings(base_url=base_url, api_key=API_KEY, options=options)
    return make_provider(preset(name), settings)


def _agent(server: FakeResponses, transport: str, **config: Any) -> Agent[Any]:
    options = {"transport": transport, "api": "responses", **config.pop("provider_options", {})}
    values: dict[str, Any] = {"provider": "openai", "model": "gpt-5.2",
                              "base_url": server.base_url, "api_key": API_KEY,
                              "retry_delay": 0.001, "provider_options": options}  # fmt: skip
    return Agent(AgentConfig("responses", **{**values, **config}))


def _lookup(q: str) -> str:
    return f"the answer to {q}"


LOOKUP = tool(_lookup, name="lookup", description="Look a question up.")


# -- which API --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "base_url", "options", "api"),
    [
        ("openai", None, {}, "responses"),
        ("openai", "https://api.openai.com/v1", {}, "responses"),
        ("openai", None, {"api": "chat"}, "chat"),
        ("openai", "http://127.0.0.1:9/v1", {}, "chat"),  # another host: Chat Completions
        ("openai", "http://127.0.0.1:9/v1", {"api": "responses"}, "responses"),
        ("deepseek", None, {}, "chat"),  # a preset: Chat Completions on its own host too
        ("groq", None, {}, "chat"),
    ],
)
def test_openai_on_its_own_host_speaks_the_responses_api_by_default(
    name: str, base_url: str | None, options: dict[str, Any], api: str
) -> None:
    assert _provider(base_url, name, **options).api == api


def test_an_unknown_api_is_refused_naming_the_option() -> None:
    with pytest.raises(PluginError, match=r'provider_options\["api"\]'):
        _provider(None, api="assistants")


@pytest.mark.parametrize(("api", "path"), [("responses", "/v1/responses"),
                                           ("chat", "/v1/chat/completions")])  # fmt: skip
async def test_the_api_chosen_is_the_path_requested(
    server: FakeResponses, transport: str, api: str, path: str
) -> None:
    made = _provider(server.base_url, transport=transport, api=api)
    try:
        response = await made.complete(request("Hi"))
    finally:
        await made.aclose()
    assert [r.path for r in server.requests] == [path]
    assert response.message.content[0].text == "Hello from the fake service."  # type: ignore[union-attr]


# -- a tool loop with reasoning ---------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_reasoning_items_come_back_unchanged_in_order_with_their_following_items(
    server: FakeResponses, transport: str, streaming: bool
) -> None:
    """Two reasoning turns of a tool loop, then the next question: each reasoning item goes
    back as the service sent it, right before the item that followed it."""
    server.reply(Reply(text=None, reasoning="Paris first.\n\nThen Lyon.",
                       tool_calls=(("call_a", "lookup", '{"q": "Paris"}'),)))  # fmt: skip
    server.reply(Reply(text=None, reasoning="Now Lyon.",
                       tool_calls=(("call_b", "lookup", '{"q": "Lyon"}'),)))  # fmt: skip
    server.reply(Reply(text="Both sunny.", reasoning="Both answered."))
    server.reply(Reply(text="Rain tomorrow."))
    async with _agent(server, transport, tools=[LOOKUP], thinking="high") as agent:
        first = await _outcome(agent, "Weather in Paris and Lyon?", streaming)
        assert first.success, first.status.error
        history = [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Lyon?"}]}
        ]
        second = await _outcome(
            agent, [*history, *first.messages, {"role": "user", "content": [
                {"type": "text", "text": "And tomorrow?"}]}], streaming
        )  # fmt: skip
    assert second.success, second.status.error
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert_sdk_shape(body)
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert list(server.issued) == ["rs_1", "rs_2", "rs_3"]
    kinds = [(i.get("type", "message"), i.get("id")) for i in bodies[3]["input"]]
    assert kinds == [
        ("message", None),
        ("reasoning", "rs_1"), ("function_call", "fc_1_0"), ("function_call_output", None),
        ("reasoning", "rs_2"), ("function_call", "fc_2_0"), ("function_call_output", None),
        ("reasoning", "rs_3"), ("message", "msg_3"),
        ("message", None),
    ]  # fmt: skip
    for item in bodies[3]["input"]:
        if item.get("type") == "reasoning":
            encrypted, _ = server.issued[item["id"]]
            assert item["encrypted_content"] == encrypted  # byte for byte
    reasoning = [b for m in first.messages for b in m.content if isinstance(b, ReasoningBlock)]
    assert [b.text for b in reasoning] == ["Paris first.\n\nThen Lyon.", "Now Lyon.",
                                           "Both answered."]  # fmt: skip
    assert {b.provider for b in reasoning} == {"openai"}
    summary = bodies[3]["input"][1]["summary"]
    assert summary == [{"type": "summary_text", "text": "Paris first."},
                       {"type": "summary_text", "text": "Then Lyon."}]  # fmt: skip


async def test_the_fake_refuses_a_reasoning_item_without_its_following_item(
    server: FakeResponses,
) -> None:
    """The service's 400, which the plugin must never cause: the fake answers it too."""
    server.reply(Reply(text=None, reasoning="think",
                       tool_calls=(("call_a", "lookup", "{}"),)))  # fmt: skip
    made = _provider(server.base_url, api="responses")
    try:
        reply = await made.complete(request("Hi", model="o4-mini"))
    finally:
        await made.aclose()
    block = reply.message.content[0]
    assert isinstance(block, ReasoningBlock) and block.signature is not None
    item = json.loads(block.signature)["openai_reasoning_item"]
    body = {"model": "o4-mini", "store": False, "input": [
        {"role": "user", "content": "Hi"}, item,
        {"type": "function_call_output", "call_id": "call_a", "output": "x"}]}  # fmt: skip
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{server.base_url}/responses", json=body,
                                   headers={"authorization": f"Bearer {API_KEY}"})  # fmt: skip
    assert answer.status_code == 400
    assert "without its required following item" in answer.json()["error"]["message"]


async def test_reasoning_another_provider_signed_is_left_out_and_unknown_origin_refused(
    provider: OpenAIChatProvider, server: FakeResponses
) -> None:
    turn = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    foreign = ReasoningBlock("theirs", signature="EqkBsig", provider="anthropic")
    said = {"type": "text", "text": "Hello"}
    history = [*turn, {"role": "assistant", "content": [foreign, said]}, *turn]
    await provider.complete(request(history))
    body = server.requests[0].json
    assert "EqkBsig" not in server.requests[0].body.decode()
    assert [i.get("type", "message") for i in body["input"]] == ["message"] * 3
    unknown = ReasoningBlock("whose?", signature="EqkBsig")
    history[1] = {"role": "assistant", "content": [unknown, said]}
    with pytest.raises(Exception, match="unknown origin"):
        await provider.complete(request(history))
    assert len(server.requests) == 1


# -- usage ------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_usage_counts_cached_and_reasoning_tokens(
    provider: OpenAIChatProvider, server: FakeResponses, streaming: bool
) -> None:
    server.reply(Reply(text="counted", reasoning="hm", prompt_tokens=1200, completion_tokens=340,
                       cached_tokens=1024, reasoning_tokens=300))  # fmt: skip
    if streaming:
        events = [e async for e in provider.stream(request("Hi"))]
        assert isinstance(events[-1], ResponseComplete)
        response = events[-1].response
    else:
        response = await provider.complete(request("Hi"))
    assert response.usage == Usage(1200, 340, cache_read_tokens=1024, reasoning_tokens=300)


# -- structured output ------------------------------------------------------------------------


@attrs.frozen
class Forecast:
    city: str
    celsius: int


async def test_native_output_is_a_json_schema_in_text_format(
    server: FakeResponses, transport: str
) -> None:
    server.reply(Reply(text='{"city": "Paris", "celsius": 21}'))
    async with _agent(server, transport, output_type=Forecast, output_mode="native") as agent:
        result = await agent.run("Weather in Paris?")
    assert result.success, result.status.error
    assert result.structured == Forecast("Paris", 21)
    body = server.requests[0].json
    assert_sdk_shape(body)
    spec = body["text"]["format"]
    assert (spec["type"], spec["strict"]) == ("json_schema", True)
    assert spec["schema"]["properties"].keys() == {"city", "celsius"}
    assert spec["schema"]["additionalProperties"] is False
    assert "response_format" not in body


# -- streaming events -------------------------------------------------------------------------


async def test_a_stream_gives_text_reasoning_and_argument_pieces(
    provider: OpenAIChatProvider, server: FakeResponses
) -> None:
    arguments = json.dumps({"q": "the weather in Paris today", "n": 3})
    server.reply(Reply(text="Looking it up now, one moment.", reasoning="First.\n\nSecond part.",
                       tool_calls=(("call_s", "lookup", arguments),)))  # fmt: skip
    events = [e async for e in provider.stream(request("Weather?", model="gpt-5.2"))]
    assert_sdk_shape(server.requests[0].json)
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    text = [e.text for e in events if isinstance(e, TextDelta)]
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(reasoning) > 2 and "".join(reasoning) == "First.\n\nSecond part."
    assert len(text) > 2 and "".join(text) == "Looking it up now, one moment."
    assert len(pieces) > 2 and "".join(p.arguments for p in pieces) == arguments
    assert {(p.index, p.name, p.id) for p in pieces} == {(0, "lookup", "call_s")}
    [call] = [e.block for e in events if isinstance(e, ToolCall)]
    assert (call.id, call.name, dict(call.input)) == ("call_s", "lookup", json.loads(arguments))
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    assert [b.type for b in final.response.message.content] == ["reasoning", "text", "tool_use"]
    assert final.response.stop_reason == "tool_use"


async def test_an_agent_stream_shows_reasoning_as_reasoning_events(
    server: FakeResponses, transport: str
) -> None:
    server.reply(Reply(text="Sunny.", reasoning="Thinking it over."))
    async with _agent(server, transport, thinking="low") as agent, agent.stream("Hi") as events:
        seen = [e async for e in events]
    assert "".join(e.data for e in seen if e.type == "reasoning") == "Thinking it over."
    assert seen[-1].data.output == "Sunny."


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_429_and_5xx_are_retried_and_400_is_not(
    server: FakeResponses, transport: str, streaming: bool
) -> None:
    server.enqueue(HTTPError(429, retry_after_ms=5), HTTPError(503))
    async with _agent(server, transport, max_retries=2) as agent:
        result = await _outcome(agent, "Hi", streaming)
    assert result.success and len(server.requests) == 3
    server.reset()
    server.enqueue(HTTPError(400, message="Invalid 'input'."))
    async with _agent(server, transport, max_retries=2) as agent:
        failed = await _outcome(agent, "Hi", streaming)
    error = failed.status.error
    assert isinstance(error, ProviderError) and len(server.requests) == 1
    assert (error.status_code, error.retryable) == (400, False)
    assert "Invalid 'input'." in error.message


# -- thinking and model rules -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "thinking", "effort"),
    [("gpt-5.2", "high", "high"), ("o4-mini", "low", "low"), ("gpt-5.2", 2_000, "low"),
     ("gpt-5.2", 10_000, "medium"), ("gpt-5.2", "off", "none"), ("gpt-5", "off", "minimal")],
)  # fmt: skip
async def test_thinking_is_sent_as_reasoning_effort(
    server: FakeResponses, model: str, thinking: str | int, effort: str
) -> None:
    async with _agent(server, "httpx", model=model, thinking=thinking) as agent:
        result = await agent.run("Hi")
    assert result.success, result.status.error
    body = server.requests[0].json
    assert_sdk_shape(body)
    assert body["reasoning"]["effort"] == effort
    assert ("summary" in body["reasoning"]) is (effort not in ("none", "minimal"))


@pytest.mark.parametrize(("model", "thinking"), [("gpt-4o", "high"), ("gpt-4.1-mini", 4096),
                                                 ("o3", "off")])  # fmt: skip
async def test_thinking_a_model_cannot_honour_is_refused_before_any_request(
    server: FakeResponses, model: str, thinking: str | int
) -> None:
    async with _agent(server, "httpx", model=model, thinking=thinking) as agent:
        result = await agent.run("Hi")
    error = result.status.error
    assert error is not None and not result.success
    assert "OpenAI" in str(error) and model in str(error), error
    assert server.requests == []


@pytest.mark.parametrize(
    ("model", "thinking", "kept"),
    [("o3", None, False), ("gpt-5", None, False), ("gpt-5.2", "high", False),
     ("gpt-5.2", None, True), ("gpt-5.2", "off", True), ("gpt-4o", None, True)],
)  # fmt: skip
async def test_sampling_a_reasoning_model_refuses_is_left_out_with_a_note(
    server: FakeResponses,
    caplog: pytest.LogCaptureFixture,
    model: str,
    thinking: str | None,
    kept: bool,
) -> None:
    caplog.set_level(logging.WARNING, logger="oma.openai")
    async with _agent(server, "httpx", model=model, thinking=thinking, temperature=0.3,
                      provider_options={"top_p": 0.9}) as agent:  # fmt: skip
        result = await agent.run("Hi")
    assert result.success, result.status.error  # the fake refuses them as the service does
    body = server.requests[0].json
    assert ("temperature" in body, "top_p" in body) == (kept, kept)
    notes = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert len(notes) == (0 if kept else 2), notes
    assert all(model in n for n in notes)


async def _outcome(agent: Agent[Any], run_input: Any, streaming: bool) -> Any:
    if streaming:
        async with agent.stream(run_input) as events:
            return [e async for e in events][-1].data
    return await agent.run(run_input)


_TURN = st.tuples(st.booleans(), st.booleans(), st.integers(0, 2))


@settings(max_examples=20, deadline=None)
@given(turns=st.lists(_TURN, min_size=1, max_size=4))
async def test_any_history_of_reasoning_text_and_calls_is_accepted_as_sent_back(
    turns: list[tuple[bool, bool, int]],
) -> None:
    """Whatever mix of reasoning, text and calls the service's turns held, the history sent
    back pairs each reasoning item with the item that followed it (the fake answers a 400
    otherwise) and keeps its ``encrypted_content``."""
    with FakeResponses(mode="strict") as fake:
        made = _provider(fake.base_url, api="responses")
        history: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "Go."}]}]
        try:
            for n, (reasons, says, calls) in enumerate(turns):
                ids = tuple((f"call_{n}_{k}", "lookup", f'{{"k": {k}}}') for k in range(calls))
                fake.reply(Reply(text="said" if says or not calls else None, tool_calls=ids,
                                 reasoning=f"turn {n}" if reasons else None))  # fmt: skip
                reply = await made.complete(request(history, model="o4-mini"))
                history.append(reply.message)
                results = [{"type": "tool_result", "tool_use_id": c[0], "content": "ok"}
                           for c in ids]  # fmt: skip
                follow = {"type": "text", "text": "Next."}
                history.append({"role": "user", "content": [*results, follow]})
            await made.complete(request(history, model="o4-mini"))
        finally:
            await made.aclose()
        assert fake.handler_errors == []
    last = fake.requests[-1].json
    assert_sdk_shape(last)
    sent = {i["id"]: i["encrypted_content"] for i in last["input"] if i.get("type") == "reasoning"}
    assert sent == {k: v[0] for k, v in fake.issued.items()}
