"""Agent.run: what a run sends to the provider and what its RunResult holds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from _builders import (
    CostlyProvider,
    Recorder,
    add,
    assistant_text,
    assistant_turn,
    builtin_host,
    make,
    make_replying_ok,
    named_image,
    reference_conversation,
    scripted_agent,
    sent_dicts,
    start,
    stream_events,
    text_block,
    text_msg,
    tool_call_turn,
    user_turn,
    vision_agent,
)

from oma_core import (
    Agent,
    AgentConfig,
    ImageBlock,
    LLMMessage,
    OpenMultiAgent,
    PluginHost,
    ProviderError,
    RunResult,
    RunStatus,
    TextBlock,
    Usage,
    dump_messages,
    image_url,
    load_messages,
)
from oma_core.providers import ProviderResponse
from oma_core.testing import ScriptedProvider


async def test_run_with_a_string_sends_one_user_text_message(host: PluginHost) -> None:
    agent, provider = scripted_agent(["hello"])
    result = await agent.run("What is shown?")
    assert isinstance(result, RunResult)
    assert result.success and result.output == "hello"
    assert result.status == RunStatus("ok", None) or (
        result.status.code == "ok" and result.status.error is None
    )
    assert sent_dicts(provider) == [user_turn("What is shown?")]

    agent, provider = make(host, "hello")
    result = await agent.run("hi")
    assert result.success and result.status.code == "ok" and result.status.error is None
    assert result.output == "hello"
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("hi"),)),)

    agent, provider = vision_agent(["a", "b"])
    await agent.run("What is shown?")
    await agent.run([user_turn("What is shown?")])
    first, second = provider.requests
    assert first.messages == (LLMMessage("user", (TextBlock("What is shown?"),)),)
    assert first.messages == second.messages


async def test_run_with_messages_sends_the_complete_conversation(host: PluginHost) -> None:
    conv = [user_turn("a", named_image("x.png")), assistant_turn("b"), user_turn("c")]
    agent, provider = scripted_agent(["ok"])
    await agent.run(conv)
    assert sent_dicts(provider) == conv

    agent, provider = make(host, "ok", system_prompt="be brief")
    conversation = [text_msg("user", "q1"), text_msg("assistant", "a1"), text_msg("user", "q2")]
    await agent.run(conversation)
    request = provider.requests[0]
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert request.system_prompt == "be brief"


def test_run_sync_and_prompt_sync_wrap_the_async_calls() -> None:
    agent, provider = scripted_agent(["a", "b"])
    assert agent.run_sync("x").output == "a"
    assert agent.prompt_sync("y").output == "b"
    assert len(agent.get_history()) == 2
    assert len(provider.requests) == 2


async def test_run_result_messages_are_the_produced_turns_only(host: PluginHost) -> None:
    agent, _ = scripted_agent([tool_call_turn("add", {"a": 2, "b": 3}), "five"], tools=[add])
    result = await agent.run([user_turn("2+3?")])
    assert isinstance(result.messages, list)
    dumped = dump_messages(result.messages)
    assert [m["role"] for m in dumped] == ["assistant", "user", "assistant"]
    assert dumped[0]["content"][0]["type"] == "tool_use"
    tool_result = dumped[1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "c1"
    assert "5" in json.dumps(tool_result["content"])
    assert not tool_result.get("is_error", False)
    assert dumped[2] == assistant_turn("five")
    assert result.output == "five"

    agent, _ = make(host, "answer")
    conversation = [text_msg("user", "q1"), text_msg("assistant", "a1"), text_msg("user", "q2")]
    result = await agent.run(conversation)
    assert result.messages == [LLMMessage("assistant", (TextBlock("answer"),))]
    assert isinstance(result.messages, list)


async def test_run_result_usage_is_a_usage_with_token_counts() -> None:
    agent, _ = scripted_agent(["ok"])
    result = await agent.run("x")
    assert isinstance(result.usage, Usage)
    assert isinstance(result.usage.input_tokens, int)
    assert isinstance(result.usage.output_tokens, int)


async def test_a_provider_failure_is_a_failed_result_holding_the_exception_not_raised(
    host: PluginHost,
) -> None:
    boom = ProviderError("bad request", status_code=400)
    agent, _ = scripted_agent([boom])
    result = await agent.run("x")
    assert result.success is False
    assert isinstance(result.status, RunStatus)
    assert result.status.code == "error"
    assert result.status.error is boom

    agent, _ = make(host, ProviderError("bad request", status_code=400))
    result = await agent.run("hi")
    assert not result.success
    assert result.status.code == "error"
    assert isinstance(result.status.error, ProviderError)


async def test_run_usage_sums_every_model_call(host: PluginHost) -> None:
    class TwoCalls(CostlyProvider):
        def _response(self) -> ProviderResponse:
            self.tool_calls = self.calls == 0
            return super()._response()

    provider = TwoCalls()
    result = await Agent(AgentConfig(name="v", provider=provider, tools=[add])).run("go")
    assert result.success and provider.calls == 2
    assert result.usage == Usage(200, 200)

    def noop() -> str:
        return ""

    turn = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "noop", "input": {}}],
    }
    agent, _ = make(host, turn, "done", tools=[noop])
    recorder = Recorder()
    result = await start(agent, "hi", observers=(recorder,))
    per_call = [e[1] for e in recorder.log if e[0] == "after_call"]
    assert result.usage == per_call[0] + per_call[1]


async def test_run_agent_accepts_the_reference_conversation_with_a_base64_image() -> None:
    oma = OpenMultiAgent(plugins=builtin_host())
    result = await oma.run_agent(
        AgentConfig(name="vision", model="claude-sonnet-4-6"), reference_conversation()
    )
    assert result.success
    # echo describes every message it received: all three turns and the image arrived
    assert "Keep answers concise." in result.output
    assert "Understood." in result.output
    assert "image/png" in result.output and "base64" in result.output


async def test_run_stream_and_run_agent_send_the_complete_conversation() -> None:
    conversation = reference_conversation()
    expected = load_messages(conversation)
    agent, provider = vision_agent(["1", "2"])
    await agent.run(conversation)
    await stream_events(agent, conversation)
    oma_provider = ScriptedProvider(["3"])
    oma = OpenMultiAgent(plugins=builtin_host())
    await oma.run_agent(AgentConfig(name="v", provider=oma_provider), conversation)
    assert [r.messages for r in provider.requests] == [expected, expected]
    assert oma_provider.requests[0].messages == expected


async def test_messages_and_blocks_may_be_objects_or_dicts_mixed_freely() -> None:
    agent, provider = vision_agent(["ok"])
    message = LLMMessage("user", (TextBlock("from an object"),))
    await agent.run(
        [message, assistant_text("r"), user_turn(image_url("https://example.com/a.png"), "t")]
    )
    sent = provider.requests[0].messages
    assert sent[0] == message
    assert isinstance(sent[2].content[0], ImageBlock)


async def test_one_input_built_once_runs_on_several_agents_at_once() -> None:
    shared = [image_url("https://example.com/diagram.png"), text_block("Explain this diagram.")]
    snapshot = list(shared)
    providers = [ScriptedProvider([f"answer {i}"]) for i in range(3)]
    agents = [
        Agent(AgentConfig(name=f"a{i}", provider=p), plugins=builtin_host())
        for i, p in enumerate(providers)
    ]
    results = await asyncio.gather(*(agent.prompt(shared) for agent in agents))
    assert [r.output for r in results] == ["answer 0", "answer 1", "answer 2"]
    assert shared == snapshot
    assert len({p.requests[0].messages for p in providers}) == 1


async def test_run_reports_usage(host: PluginHost) -> None:
    agent, _ = make(host, "four")
    result = await agent.run("abcd")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


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


@pytest.mark.parametrize("call", [lambda a: a.run_sync("x"), lambda a: a.prompt_sync("x")])
def test_sync_wrappers_return_the_result_outside_a_loop(
    host: PluginHost, call: Callable[[Agent], RunResult]
) -> None:
    agent, provider = make_replying_ok(host, "sync")
    result = call(agent)
    assert result.success and result.output == "sync"
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("x"),)),)
