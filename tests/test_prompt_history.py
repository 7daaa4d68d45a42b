"""Agent.prompt keeps a history; run, stream and run_agent are fresh; a failed prompt changes
nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from _builders import (
    assistant_text,
    assistant_turn,
    builtin_host,
    make,
    make_replying_ok,
    named_image,
    png_image,
    scripted_agent,
    sent_dicts,
    stream_events,
    text_block,
    text_msg,
    user_turn,
    vision_agent,
)

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    LLMMessage,
    OpenMultiAgent,
    PluginHost,
    ProviderError,
    dump_messages,
    image_url,
)
from oma_core.agent import BeforeRunContext
from oma_core.messages import TextBlock
from oma_core.testing import ScriptedProvider


async def test_run_is_fresh_and_neither_reads_nor_updates_history(host: PluginHost) -> None:
    agent, provider = scripted_agent(
        ["r1", "r2"], history=[user_turn("old"), assistant_turn("older")]
    )
    await agent.run("x")
    assert sent_dicts(provider) == [user_turn("x")]
    assert dump_messages(agent.get_history()) == [user_turn("old"), assistant_turn("older")]
    async for _ in agent.stream("y"):
        pass
    assert sent_dicts(provider, 1) == [user_turn("y")]
    assert len(agent.get_history()) == 2

    seed = [text_msg("user", "old"), text_msg("assistant", "x")]
    agent, provider = make(host, "ok", history=seed)
    await agent.run("new")
    assert len(provider.requests[0].messages) == 1
    assert len(agent.get_history()) == 2

    agent, provider = vision_agent(
        ["r1", "r2"], history=[user_turn("old"), assistant_text("older")]
    )
    await agent.run("fresh")
    await stream_events(agent, [user_turn("also fresh")])
    assert [len(r.messages) for r in provider.requests] == [1, 1]
    assert dump_messages(agent.get_history()) == [user_turn("old"), assistant_text("older")]


async def test_history_seeds_prompt_and_prompt_appends_turn_and_reply() -> None:
    agent, provider = scripted_agent(
        ["r1", "r2"], history=[user_turn("old"), assistant_turn("older")]
    )
    first = await agent.prompt("q1")
    assert first.success
    assert sent_dicts(provider) == [user_turn("old"), assistant_turn("older"), user_turn("q1")]
    await agent.prompt([named_image("p.png"), text_block("q2")])
    assert sent_dicts(provider, 1) == [
        user_turn("old"),
        assistant_turn("older"),
        user_turn("q1"),
        assistant_turn("r1"),
        user_turn(named_image("p.png"), "q2"),
    ]
    assert dump_messages(agent.get_history())[-2:] == [
        user_turn(named_image("p.png"), "q2"),
        assistant_turn("r2"),
    ]


async def test_a_failed_prompt_leaves_history_as_it_was(host: PluginHost) -> None:
    agent, _ = scripted_agent(["r1", ProviderError("bad request", status_code=400)])
    await agent.prompt("q1")
    before = dump_messages(agent.get_history())
    result = await agent.prompt("q2")
    assert not result.success
    assert dump_messages(agent.get_history()) == before

    agent, _ = vision_agent([ProviderError("down", status_code=400)])
    result = await agent.prompt("hello")
    assert not result.success
    assert agent.get_history() == []

    agent, _ = make(host, "ok", ProviderError("boom", status_code=400))
    await agent.prompt("one")
    before = agent.get_history()
    result = await agent.prompt("two")
    assert not result.success
    assert agent.get_history() == before


async def test_invalid_prompt_blocks_raise_as_messages_0_content_and_append_nothing() -> None:
    agent, provider = scripted_agent(["r"])
    with pytest.raises(InvalidMessageError) as info:
        agent.prompt([{"type": "text"}])
    assert str(info.value).startswith("messages[0].content[0]")
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "tool_use", "id": "1", "name": "n", "input": {}}])
    assert agent.get_history() == []
    assert provider.requests == []


async def test_get_history_returns_a_new_list_each_time(host: PluginHost) -> None:
    agent, _ = scripted_agent(["r"])
    await agent.prompt("q")
    history = agent.get_history()
    assert isinstance(history, list)
    assert all(isinstance(m, LLMMessage) for m in history)
    history.clear()
    assert len(agent.get_history()) == 2
    assert agent.get_history() is not agent.get_history()

    agent, _ = make(host, "ok")
    await agent.prompt("one")
    history = agent.get_history()
    history.clear()
    assert len(agent.get_history()) == 2

    agent, _ = vision_agent(["r"])
    await agent.prompt("hi")
    history = agent.get_history()
    history.clear()
    assert len(agent.get_history()) == 2
    assert agent.get_history() is not agent.get_history()


async def test_a_prompt_whose_hook_fails_leaves_history_as_it_was() -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("no")

    agent, _ = scripted_agent(
        ["r"], history=[user_turn("old"), assistant_turn("older")], before_run=hook
    )
    result = await agent.prompt("q")
    assert not result.success
    assert dump_messages(agent.get_history()) == [user_turn("old"), assistant_turn("older")]


async def test_run_agent_is_fresh_and_ignores_config_history() -> None:
    provider = ScriptedProvider(["r"])
    config = AgentConfig(
        name="v", provider=provider, history=[user_turn("old"), assistant_turn("o")]
    )
    await OpenMultiAgent().run_agent(config, "now")
    assert dump_messages(provider.requests[0].messages) == [user_turn("now")]


async def test_prompt_appends_the_turn_and_the_response_to_history(host: PluginHost) -> None:
    agent, provider = vision_agent(["a cat"], history=[user_turn("hi"), assistant_text("hello")])
    result = await agent.prompt([image_url("https://example.com/a.png"), text_block("What is it?")])
    assert result.success
    sent = provider.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]  # history is kept, not replaced
    history = dump_messages(agent.get_history())
    assert history[:2] == [user_turn("hi"), assistant_text("hello")]
    assert history[2]["role"] == "user" and history[2]["content"][0]["type"] == "image"
    assert history[3] == assistant_text("a cat")

    agent, provider = make(host, "first answer", "second answer")
    await agent.prompt("one")
    await agent.prompt([{"type": "text", "text": "two"}, png_image()])
    history = agent.get_history()
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert len(provider.requests[1].messages) == 3
    assert history[2].content[0] == TextBlock("two")


async def test_prompt_takes_a_tuple_of_blocks_as_one_user_turn() -> None:
    agent, provider = vision_agent(["ok"])
    await agent.prompt((text_block("a"), image_url("https://example.com/a.png")))
    (turn,) = provider.requests[0].messages
    assert turn.role == "user" and [b.type for b in turn.content] == ["text", "image"]


@pytest.mark.parametrize(
    ("blocks", "path", "reason"),
    [
        ([], "messages[0].content", "at least one content block"),
        (
            [
                text_block("ok"),
                {
                    "type": "image",
                    "source": {"type": "url", "media_type": "image/png", "url": "file:///x.png"},
                },
            ],
            "messages[0].content[1].source.url",
            "must use HTTP or HTTPS",
        ),
        (
            [text_block("ok"), {"type": "tool_use", "id": "t", "name": "n", "input": {}}],
            "messages[0].content[1]",
            "only assistant messages",
        ),
    ],
)
def test_prompt_checks_its_blocks_as_the_first_messages_content(
    blocks: list[Any], path: str, reason: str
) -> None:
    agent, _ = vision_agent([])
    with pytest.raises(InvalidMessageError, match=re.escape(reason)) as caught:
        agent.prompt(blocks)
    assert caught.value.path == path
    assert str(caught.value).startswith(path)


async def test_history_seeds_prompt_only(host: PluginHost) -> None:
    agent, provider = vision_agent(["p", "r"], history=[user_turn("seed"), assistant_text("ok")])
    await agent.prompt("next")
    await agent.run("alone")
    assert len(provider.requests[0].messages) == 3
    assert len(provider.requests[1].messages) == 1

    seed = [text_msg("user", "earlier"), text_msg("assistant", "noted")]
    agent, provider = make(host, "ok", history=seed)
    seed.append(text_msg("user", "mutated after the agent was built"))
    await agent.prompt("now")
    assert [m.role for m in provider.requests[0].messages] == ["user", "assistant", "user"]


async def test_prompt_cannot_insert_assistant_turns() -> None:
    agent, provider = vision_agent(["never"])
    with pytest.raises(InvalidMessageError):
        agent.prompt([assistant_text("I said so")])
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "tool_use", "id": "t", "name": "n", "input": {}}])
    assert agent.get_history() == [] and provider.requests == []


def test_an_invalid_history_makes_the_agent_constructor_raise(host: PluginHost) -> None:
    with pytest.raises(InvalidMessageError):
        Agent(AgentConfig(name="a", history=[user_turn({"type": "image"})]), plugins=builtin_host())

    config = AgentConfig(name="a", history=[{"role": "user", "content": []}])
    with pytest.raises(InvalidMessageError):
        Agent(config, plugins=host)

    with pytest.raises(InvalidMessageError):
        Agent(AgentConfig(name="a", history=[{"role": "robot", "content": [text_block("x")]}]))


async def test_run_agent_is_a_fresh_one_off_agent_each_time() -> None:
    provider = ScriptedProvider(["a", "b"])
    oma = OpenMultiAgent(plugins=builtin_host())
    config = AgentConfig(
        name="v", provider=provider, history=[user_turn("seed"), assistant_text("k")]
    )
    await oma.run_agent(config, "one")
    await oma.run_agent(config, "two")
    assert [len(r.messages) for r in provider.requests] == [1, 1]


async def test_an_invalid_prompt_is_not_appended_to_history() -> None:
    agent, _ = vision_agent(["r"], history=[user_turn("a"), assistant_text("b")])
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "image", "source": {"type": "url", "url": "file:///x.png"}}])
    assert dump_messages(agent.get_history()) == [user_turn("a"), assistant_text("b")]


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


async def test_a_failed_prompt_after_a_tool_round_leaves_history_as_it_was(
    host: PluginHost,
) -> None:
    def lookup() -> str:
        return "found"

    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {}}],
    }
    agent, _ = make_replying_ok(
        host, "first", call, ProviderError("down", status_code=400), tools=[lookup]
    )
    await agent.prompt("one")
    before = agent.get_history()
    result = await agent.prompt("two")
    assert not result.success and len(result.messages) == 2  # the tool round happened
    assert agent.get_history() == before


async def test_concurrent_prompts_take_turns_and_both_reach_history(host: PluginHost) -> None:
    from oma_core.testing import Delayed

    agent, provider = make_replying_ok(host, Delayed(0.02, "a1"), "b1")
    results = await asyncio.gather(agent.prompt("a"), agent.prompt("b"))
    assert [r.output for r in results] == ["a1", "b1"]
    texts = [m.content[0].text for m in agent.get_history()]  # type: ignore[union-attr]
    assert texts == ["a", "a1", "b", "b1"]
    assert len(provider.requests[1].messages) == 3  # the second prompt saw the first


async def test_prompt_history_keeps_the_callers_turn_when_a_hook_rewrites_messages(
    host: PluginHost,
) -> None:
    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": [{"type": "text", "text": "hooked"}]}]}

    agent, provider = make_replying_ok(host, before_run=hook)
    await agent.prompt([{"type": "text", "text": "mine"}, png_image()])
    assert provider.text_of() == "hooked"
    turn = agent.get_history()[0]
    assert [b.type for b in turn.content] == ["text", "image"]
    assert turn.content[0] == TextBlock("mine")
