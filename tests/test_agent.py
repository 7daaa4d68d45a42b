"""Agent.run / stream / prompt: input semantics, copying, history and results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_core import Agent, AgentConfig, PluginHost, RunResult, StreamEvent
from oma_core.capabilities import BlockSupport, Capabilities, ProviderSpec
from oma_core.errors import InvalidMessageError, ProviderError, UnsupportedContentBlockError
from oma_core.messages import ImageBlock, LLMMessage, TextBlock, ToolUseBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    Usage,
)
from oma_core.testing import Delayed, ScriptedProvider

PNG = "iVBORw0KGgo="


def make(host: PluginHost, *responses: object, **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    return Agent(AgentConfig(name="a", provider=provider, **config), plugins=host), provider


def text_msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def image(data: str = PNG) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


# -- run -------------------------------------------------------------------------------------


async def test_run_with_a_string_sends_one_user_text_message(host: PluginHost) -> None:
    agent, provider = make(host, "hello")
    result = await agent.run("hi")
    assert result.success and result.status.code == "ok" and result.status.error is None
    assert result.output == "hello"
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("hi"),)),)


async def test_run_result_messages_are_what_the_run_produced(host: PluginHost) -> None:
    agent, _ = make(host, "answer")
    conversation = [text_msg("user", "q1"), text_msg("assistant", "a1"), text_msg("user", "q2")]
    result = await agent.run(conversation)
    assert result.messages == [LLMMessage("assistant", (TextBlock("answer"),))]
    assert isinstance(result.messages, list)


async def test_run_sends_the_complete_conversation(host: PluginHost) -> None:
    agent, provider = make(host, "ok", system_prompt="be brief")
    conversation = [text_msg("user", "q1"), text_msg("assistant", "a1"), text_msg("user", "q2")]
    await agent.run(conversation)
    request = provider.requests[0]
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.system_prompt == "be brief"


async def test_run_reports_usage(host: PluginHost) -> None:
    agent, _ = make(host, "four")
    result = await agent.run("abcd")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


async def test_run_neither_reads_nor_writes_history(host: PluginHost) -> None:
    seed = [text_msg("user", "old"), text_msg("assistant", "x")]
    agent, provider = make(host, "ok", history=seed)
    await agent.run("new")
    assert len(provider.requests[0].messages) == 1
    assert len(agent.get_history()) == 2


async def test_a_provider_failure_is_a_failed_result_not_an_exception(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("bad request", status_code=400))
    result = await agent.run("hi")
    assert not result.success
    assert result.status.code == "error"
    assert isinstance(result.status.error, ProviderError)


async def test_an_empty_conversation_is_refused(host: PluginHost) -> None:
    agent, _ = make(host)
    with pytest.raises(InvalidMessageError):
        agent.run([])


# -- validation and copying at the call site -----------------------------------------------


async def test_invalid_run_input_raises_at_the_call_and_nothing_runs(host: PluginHost) -> None:
    calls: list[object] = []
    agent, provider = make(host, "never", before_run=lambda ctx: calls.append(ctx))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]"):
        agent.run([{"role": "robot", "content": [{"type": "text", "text": "x"}]}])
    with pytest.raises(InvalidMessageError):
        agent.stream([{"role": "user", "content": "not a list"}])
    assert calls == [] and provider.requests == []


async def test_invalid_prompt_input_leaves_hooks_provider_and_history_alone(
    host: PluginHost,
) -> None:
    calls: list[object] = []
    agent, provider = make(host, "never", before_run=lambda ctx: calls.append(ctx))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]\.content"):
        agent.prompt(
            [
                {
                    "type": "image",
                    "source": {
                        "type": "url",
                        "media_type": "image/png",
                        "url": "file:///etc/passwd",
                    },
                }
            ]
        )
    assert calls == [] and provider.requests == [] and agent.get_history() == []


async def test_mutating_the_list_after_the_call_changes_nothing(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    conversation = [text_msg("user", "q")]
    pending = agent.run(conversation)
    conversation.append(text_msg("assistant", "injected"))
    conversation[0]["content"][0]["text"] = "changed"
    await pending
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("q"),)),)


async def test_mutating_an_image_source_after_the_call_changes_nothing(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    block = image()
    pending = agent.run([{"role": "user", "content": [block]}])
    block["source"]["data"] = "AAAA"
    block["source"]["media_type"] = "image/gif"
    await pending
    sent = provider.requests[0].messages[0].content[0]
    assert isinstance(sent, ImageBlock)
    assert sent.source.media_type == "image/png"
    assert getattr(sent.source, "data", None) == PNG


async def test_mutating_a_tool_input_after_the_call_changes_nothing(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    arguments = {"q": "cats", "tags": ["a"]}
    conversation = [
        text_msg("user", "look"),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "s", "input": arguments}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    pending = agent.run(conversation)
    arguments["q"] = "dogs"
    arguments["tags"].append("b")
    await pending
    sent = provider.requests[0].messages[1].content[0]
    assert isinstance(sent, ToolUseBlock)
    assert sent.input["q"] == "cats"
    assert list(sent.input["tags"]) == ["a"]


async def test_mutating_prompt_blocks_after_the_call_changes_nothing(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    blocks = [{"type": "text", "text": "look"}, image()]
    pending = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks.append({"type": "text", "text": "more"})
    await pending
    assert provider.text_of() == "look"
    assert len(provider.requests[0].messages[0].content) == 2


# -- prompt and history ----------------------------------------------------------------------


async def test_prompt_appends_the_turn_and_the_reply(host: PluginHost) -> None:
    agent, provider = make(host, "first answer", "second answer")
    await agent.prompt("one")
    await agent.prompt([{"type": "text", "text": "two"}, image()])
    history = agent.get_history()
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert len(provider.requests[1].messages) == 3
    assert history[2].content[0] == TextBlock("two")


async def test_history_seeds_prompt(host: PluginHost) -> None:
    seed = [text_msg("user", "earlier"), text_msg("assistant", "noted")]
    agent, provider = make(host, "ok", history=seed)
    seed.append(text_msg("user", "mutated after the agent was built"))
    await agent.prompt("now")
    assert [m.role for m in provider.requests[0].messages] == ["user", "assistant", "user"]


def test_an_invalid_history_makes_the_agent_raise(host: PluginHost) -> None:
    config = AgentConfig(name="a", history=[{"role": "user", "content": []}])
    with pytest.raises(InvalidMessageError):
        Agent(config, plugins=host)


async def test_a_failed_prompt_leaves_history_as_it_was(host: PluginHost) -> None:
    agent, _ = make(host, "ok", ProviderError("boom", status_code=400))
    await agent.prompt("one")
    before = agent.get_history()
    result = await agent.prompt("two")
    assert not result.success
    assert agent.get_history() == before


async def test_get_history_returns_a_new_list(host: PluginHost) -> None:
    agent, _ = make(host, "ok")
    await agent.prompt("one")
    history = agent.get_history()
    history.clear()
    assert len(agent.get_history()) == 2


async def test_prompt_refuses_a_whole_message(host: PluginHost) -> None:
    agent, _ = make(host, "ok")
    with pytest.raises(InvalidMessageError):
        agent.prompt({"role": "user", "content": [{"type": "text", "text": "x"}]})  # type: ignore[arg-type]


async def test_max_history_tokens_trims_the_oldest_turns(host: PluginHost) -> None:
    agent, provider = make(host, "a" * 40, "b" * 40, "c", max_history_tokens=30)
    await agent.prompt("x" * 40)
    await agent.prompt("y" * 40)
    await agent.prompt("z" * 40)
    sent = provider.requests[2].messages
    assert sent[-1] == LLMMessage("user", (TextBlock("z" * 40),))
    assert len(sent) < 5
    assert sent[0].role == "user"


# -- stream ------------------------------------------------------------------------------------


async def test_stream_yields_text_then_exactly_one_done(host: PluginHost) -> None:
    agent, _ = make(host, "hello world")
    events = [event async for event in agent.stream("hi")]
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    result = events[-1].data
    assert isinstance(result, RunResult) and result.success
    assert "".join(e.data for e in events if e.type == "text") == "hello world"


async def test_a_failed_stream_yields_error_then_done_without_raising(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("denied", status_code=403))
    events = [event async for event in agent.stream("hi")]
    assert [e.type for e in events] == ["error", "done"]
    assert isinstance(events[0].data, ProviderError)
    assert events[1].data.status.error is events[0].data


class ClosingProvider:
    """Streams many chunks and records whether its stream was closed."""

    name = display_name = "closing"

    def __init__(self, chunks: int = 100) -> None:
        self.chunks = chunks
        self.opened = 0
        self.closed = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return ProviderResponse(LLMMessage("assistant", (TextBlock("x"),)))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.opened += 1
        try:
            for _ in range(self.chunks):
                yield TextDelta("x")
                await asyncio.sleep(0)
            message = LLMMessage("assistant", (TextBlock("x" * self.chunks),))
            yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))
        finally:
            self.closed += 1


async def test_async_with_stream_closes_the_provider_stream_on_early_exit(
    host: PluginHost,
) -> None:
    provider = ClosingProvider()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    async with agent.stream("hi") as events:
        async for event in events:
            assert event.type == "text"
            break
    assert provider.opened == 1 and provider.closed == 1


async def test_a_stream_never_iterated_starts_nothing(host: PluginHost) -> None:
    provider = ClosingProvider()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    async with agent.stream("hi"):
        pass
    assert provider.opened == 0


async def test_cancelling_a_stream_closes_the_provider_stream(host: PluginHost) -> None:
    provider = ClosingProvider(chunks=10_000)
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    seen: list[StreamEvent] = []
    first = asyncio.Event()

    async def consume() -> None:
        async with agent.stream("hi") as events:
            async for event in events:
                seen.append(event)
                first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed == 1


async def test_cancelling_run_propagates(host: PluginHost) -> None:
    agent, _ = make(host, Delayed(30, "late"))
    task = asyncio.create_task(agent.run("hi"))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- providers -----------------------------------------------------------------------------------


def counting_spec(made: list[ProviderSettings], name: str = "counting") -> ProviderSpec:
    def factory(settings: ProviderSettings) -> ScriptedProvider:
        made.append(settings)
        return ScriptedProvider(["from factory"] * 3)

    return ProviderSpec(
        name, "Counting", factory, Capabilities.everything(), default_model="counting-1"
    )


def host_with(spec: ProviderSpec) -> PluginHost:
    from oma_core import hookimpl

    host = PluginHost(load_entrypoints=False)

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [spec]

    host.register(Plugin(), name="counting-plugin")
    return host


async def test_the_provider_is_created_lazily_once_with_its_settings() -> None:
    made: list[ProviderSettings] = []
    host = host_with(counting_spec(made))
    agent = Agent(
        AgentConfig(
            name="a",
            provider="counting",
            base_url="http://127.0.0.1:9",
            api_key="sk-secret",
            provider_options={"x": 1},
        ),
        plugins=host,
    )
    assert made == []
    await agent.run("one")
    result = await agent.run("two")
    assert result.output == "from factory"
    assert len(made) == 1
    assert made[0] == ProviderSettings("http://127.0.0.1:9", "sk-secret", {"x": 1})
    assert agent.provider() is agent.provider()


async def test_the_spec_default_model_is_used() -> None:
    made: list[ProviderSettings] = []
    plugins = host_with(counting_spec(made))
    agent = Agent(AgentConfig(name="a", provider="counting"), plugins=plugins)
    assert agent.build_request("hi").model == "counting-1"


async def test_aclose_closes_the_provider_the_agent_created() -> None:
    made: list[ProviderSettings] = []
    async with Agent(
        AgentConfig(name="a", provider="counting"), plugins=host_with(counting_spec(made))
    ) as agent:
        await agent.run("hi")
        provider = agent.provider()
    assert provider.closed is True


async def test_an_unknown_provider_fails_the_run(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a", provider="nope"), plugins=host)
    result = await agent.run("hi")
    assert result.status.code == "error"
    assert "nope" in str(result.status.error)


def test_the_api_key_never_appears_in_the_repr() -> None:
    config = AgentConfig(name="a", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)


def test_build_request_has_model_messages_system_prompt_and_tools(host: PluginHost) -> None:
    def lookup(q: str) -> str:
        """Find things."""
        return q

    agent, _ = make(host, model="m-1", system_prompt="sys", tools=[lookup])
    request = agent.build_request([text_msg("user", "hi")])
    assert (request.model, request.system_prompt) == ("m-1", "sys")
    assert request.messages == (LLMMessage("user", (TextBlock("hi"),)),)
    assert [t.name for t in request.tools] == ["lookup"]


def test_run_sync_runs_a_script(host: PluginHost) -> None:
    agent, _ = make(host, "sync answer")
    assert agent.run_sync("hi").output == "sync answer"


def test_prompt_sync_keeps_history(host: PluginHost) -> None:
    agent, _ = make(host, "a", "b")
    agent.prompt_sync("one")
    agent.prompt_sync("two")
    assert len(agent.get_history()) == 4


async def test_run_sync_inside_a_running_loop_is_an_error(host: PluginHost) -> None:
    agent, provider = make(host, "never")
    with pytest.raises(RuntimeError, match="running event loop"):
        agent.run_sync("hi")
    assert provider.requests == []


async def test_the_echo_provider_is_the_default(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a"), plugins=host)
    result = await agent.run("ping")
    assert result.success and "ping" in result.output


# -- capabilities -------------------------------------------------------------------------------


async def test_an_unsupported_block_fails_before_the_provider_and_is_not_retried(
    host: PluginHost,
) -> None:
    provider = ScriptedProvider(
        ["never"], display_name="Text Only", capabilities=Capabilities((BlockSupport("text"),))
    )
    agent = Agent(AgentConfig(name="a", provider=provider, max_retries=5), plugins=host)
    result = await agent.run([{"role": "user", "content": [image()]}])
    assert result.status.code == "error"
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error).startswith('Text Only cannot represent the "image" content block')
    assert provider.requests == []


class CompleteOnly:
    """A provider object without ``stream``."""

    name = display_name = "complete-only"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return ProviderResponse(LLMMessage("assistant", (TextBlock("whole"),)), Usage(1, 1))


class StreamOnly:
    """A provider object without ``complete``."""

    name = display_name = "stream-only"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        yield TextDelta("pie")
        yield TextDelta("ces")
        message = LLMMessage("assistant", (TextBlock("pieces"),))
        yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))


async def test_a_provider_without_stream_can_still_be_streamed(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a", provider=CompleteOnly()), plugins=host)
    events = [event async for event in agent.stream("hi")]
    assert [(e.type, e.data) for e in events[:-1]] == [("text", "whole")]
    assert events[-1].data.output == "whole"


async def test_a_provider_without_complete_can_still_be_run(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a", provider=StreamOnly()), plugins=host)
    result = await agent.run("hi")
    assert result.success and result.output == "pieces"


def test_a_provider_that_is_neither_name_nor_provider_is_refused() -> None:
    with pytest.raises(TypeError, match="provider"):
        AgentConfig(name="a", provider=42)


@pytest.mark.parametrize("bad", [None, -5, float("nan"), "12", True])
async def test_a_provider_reporting_bad_usage_counts_does_not_fail_the_run(bad: object) -> None:
    """Usage counts that are missing, negative or not numbers count as 0 in the result."""

    class Sloppy:
        name = display_name = "sloppy"

        async def complete(self, request: object) -> ProviderResponse:
            usage = Usage.__new__(Usage)
            object.__setattr__(usage, "input_tokens", bad)
            object.__setattr__(usage, "output_tokens", 7)
            return ProviderResponse(LLMMessage("assistant", (TextBlock("ok"),)), usage=usage)

    result = await Agent(AgentConfig(name="a", provider=Sloppy())).run("hi")
    assert result.success, result.status.error
    assert result.usage == Usage(0, 7)
