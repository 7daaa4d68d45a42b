"""ScriptedProvider: queued responses played in order, for tests and demos."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from _builders import add, assistant_turn, scripted_agent

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    ProviderError,
    TextBlock,
    ToolUseBlock,
    load_messages,
)
from oma_core.plugins import PluginHost
from oma_core.testing import Delayed, ScriptedProvider
from oma_core.toolkit import (
    ProviderRequest,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolDefinition,
)


def request(text: str = "hi", **kwargs: object) -> ProviderRequest:
    message = LLMMessage(role="user", content=(TextBlock(text),))
    return ProviderRequest(model="m", messages=(message,), **kwargs)  # type: ignore[arg-type]


TOOL_TURN = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
    ],
}


async def test_text_responses_are_played_in_order() -> None:
    provider = ScriptedProvider(["one", "two"])
    first = await provider.complete(request())
    second = await provider.complete(request())
    assert first.message == LLMMessage(role="assistant", content=(TextBlock("one"),))
    assert second.message.content == (TextBlock("two"),)
    assert provider.remaining == 0


async def test_requests_are_recorded_with_messages_system_prompt_and_tools() -> None:
    tool = ToolDefinition("weather", "Weather", {"type": "object"})
    provider = ScriptedProvider(["ok"])
    await provider.complete(request("hello", system_prompt="S", tools=(tool,)))
    (seen,) = provider.requests
    assert seen.messages == (LLMMessage(role="user", content=(TextBlock("hello"),)),)
    assert (seen.system_prompt, seen.tools) == ("S", (tool,))
    assert provider.text_of() == "hello"


async def test_an_assistant_dict_with_tool_use_is_loaded_and_streamed_as_a_tool_call() -> None:
    provider = ScriptedProvider([TOOL_TURN])
    events = [event async for event in provider.stream(request())]
    call = ToolUseBlock("call_1", "weather", {"city": "Paris"})
    assert [e for e in events if isinstance(e, ToolCall)] == [ToolCall(call)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look."
    assert isinstance(events[-1], ResponseComplete)
    assert events[-1].response.stop_reason == "tool_use"


async def test_an_llm_message_response_is_played_as_given() -> None:
    message = LLMMessage(role="assistant", content=(TextBlock("as is"),))
    assert (await ScriptedProvider([message]).complete(request())).message is message


async def test_stream_yields_text_in_several_chunks_then_the_response() -> None:
    provider = ScriptedProvider(["a longer answer, in pieces"])
    events = [event async for event in provider.stream(request())]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "a longer answer, in pieces"
    assert isinstance(events[-1], ResponseComplete)


async def test_an_exception_is_raised_when_reached_and_the_queue_goes_on() -> None:
    boom = ProviderError("overloaded", status_code=529)
    provider = ScriptedProvider([boom, "recovered"])
    with pytest.raises(ProviderError) as info:
        await provider.complete(request())
    assert info.value is boom
    assert (await provider.complete(request())).message.content == (TextBlock("recovered"),)
    assert len(provider.requests) == 2


async def test_an_exhausted_queue_raises_a_clear_non_retryable_error() -> None:
    provider = ScriptedProvider(["only"])
    await provider.complete(request())
    with pytest.raises(ProviderError, match="no responses left") as info:
        await provider.complete(request())
    assert info.value.retryable is False


async def test_usage_is_deterministic() -> None:
    first = await ScriptedProvider(["same answer"]).complete(request("q"))
    second = await ScriptedProvider(["same answer"]).complete(request("q"))
    assert first.usage == second.usage
    assert first.usage.input_tokens > 0
    assert first.usage.output_tokens == 3  # ceil(11 / 4)


def test_a_user_message_is_refused_as_a_scripted_response() -> None:
    with pytest.raises(ValueError, match="must be an assistant message"):
        ScriptedProvider([{"role": "user", "content": [{"type": "text", "text": "x"}]}])


def test_an_unknown_response_type_is_refused() -> None:
    with pytest.raises(TypeError, match="got int"):
        ScriptedProvider([42])


async def test_aclose_sets_closed() -> None:
    provider = ScriptedProvider([])
    assert not provider.closed
    await provider.aclose()
    assert provider.closed


async def test_an_agent_on_the_scripted_provider_plays_the_script() -> None:
    config = AgentConfig(name="a", provider="scripted", provider_options={"responses": ["hello"]})
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("x")
    assert result.output == "hello"


async def test_a_delay_and_response_object_in_the_options_is_a_delayed_answer() -> None:
    """JSON (a plan file) has no Delayed: {"delay", "response"} stands for one."""

    def agent(response: dict[str, object]) -> Agent:
        options = {"responses": [response]}
        config = AgentConfig(name="a", provider="scripted", provider_options=options)
        return Agent(config, plugins=PluginHost(load_entrypoints=False))

    assert (await agent({"delay": 0.001, "response": "late"}).run("x")).output == "late"
    # Any other key makes it an ordinary (here: invalid) assistant message, not a delay.
    assert not (await agent({"delay": 0.001, "response": "x", "n": 2}).run("x")).success


async def test_scripted_plays_strings_messages_and_dicts_in_order() -> None:
    message = load_messages([assistant_turn("from object")])[0]
    agent, provider = scripted_agent(["one", message, assistant_turn("from dict")])
    outputs = [(await agent.run("x")).output for _ in range(3)]
    assert outputs == ["one", "from object", "from dict"]
    assert len(provider.requests) == 3


async def test_scripted_raises_an_exception_instance_when_reached() -> None:
    boom = ProviderError("nope", status_code=400)
    agent, _ = scripted_agent(["first", boom])
    assert (await agent.run("x")).success
    result = await agent.run("y")
    assert result.status.error is boom


async def test_scripted_delayed_waits_before_answering() -> None:
    agent, _ = scripted_agent([Delayed(0.2, "late")])
    start = time.monotonic()
    result = await agent.run("x")
    assert result.output == "late"
    assert time.monotonic() - start >= 0.19

    provider = ScriptedProvider([Delayed(0.05, "late")])
    loop = asyncio.get_running_loop()
    start = loop.time()
    response = await provider.complete(request())
    assert loop.time() - start >= 0.045
    assert response.message.content == (TextBlock("late"),)


async def test_an_exhausted_script_raises_an_error_that_says_so() -> None:
    agent, _ = scripted_agent(["only"])
    await agent.run("x")
    result = await agent.run("y")
    assert not result.success
    assert re.search(r"exhaust|no more|ran out|empty", str(result.status.error), re.I)


async def test_scripted_records_messages_system_prompt_and_tools() -> None:
    agent, provider = scripted_agent(["ok"], system_prompt="be brief", tools=[add])
    await agent.run("x")
    (request,) = provider.requests
    assert isinstance(request.messages, tuple)
    assert all(isinstance(m, LLMMessage) for m in request.messages)
    assert request.system_prompt == "be brief"
    assert [t.name for t in request.tools] == ["add"]


async def test_the_registered_scripted_provider_reads_provider_options_responses() -> None:
    agent = Agent(
        AgentConfig(name="s", provider="scripted", provider_options={"responses": ["a", "b"]})
    )
    assert (await agent.run("x")).output == "a"
    assert (await agent.run("y")).output == "b"

    spec = PluginHost(load_entrypoints=False).provider_spec("scripted")
    provider = spec.factory(ProviderSettings(options={"responses": ["hi"]}))
    assert isinstance(provider, ScriptedProvider)
    assert provider.remaining == 1
