"""What oma copies and when: loading copies the caller's data once; loaded messages cannot be
changed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from _builders import (
    PNG,
    URL_SOURCE,
    agent_config,
    assistant,
    assistant_text,
    assistant_turn,
    b64_source,
    builtin_host,
    evaluated_case,
    full_conversation,
    make,
    make_orchestrator,
    make_replying_ok,
    named_image,
    png_block,
    png_image,
    reference_conversation,
    scripted_agent,
    sent_dicts,
    text,
    text_block,
    text_msg,
    three_turn_conversation,
    tool_call,
    tool_use,
    url_source,
    user,
    user_turn,
    video,
    vision_agent,
)

from oma_core import (
    Agent,
    AgentConfig,
    OpenMultiAgent,
    PluginHost,
    RunResult,
    StreamEvent,
    ToolUseBlock,
    dump_messages,
    image_base64,
    load_messages,
)
from oma_core.messages import ImageBlock, LLMMessage, TextBlock
from oma_core.testing import ScriptedProvider


async def _drain(value: Awaitable[RunResult] | AsyncIterator[StreamEvent]) -> RunResult:
    """The result of a pending run or stream."""
    if isinstance(value, AsyncIterator):
        events = [event async for event in value]
        assert [e.type for e in events].count("done") == 1
        result: RunResult = events[-1].data
        return result
    return await value


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "look"}, png_image()]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "s", "input": {"q": ["a"]}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]


def _mutate(conversation: list[dict[str, Any]]) -> None:
    """Change every layer the caller owns: the list, a text, an image's data, a tool input."""
    conversation[0]["content"][0]["text"] = "changed"
    conversation[0]["content"][1]["source"]["data"] = "AAAA"
    conversation[0]["content"][1]["source"]["media_type"] = "image/gif"
    conversation[1]["content"][0]["input"]["q"].append("b")
    conversation[1]["content"][0]["input"]["extra"] = 1
    conversation.append({"role": "assistant", "content": [{"type": "text", "text": "injected"}]})


def test_mutating_the_callers_data_after_loading_changes_nothing() -> None:
    tags = ["a"]
    data = [user(text("before"), {"type": "image", "source": dict(URL_SOURCE)})]
    data.append(assistant(tool_call({"tags": tags, "opts": {"k": 1}})))
    loaded = load_messages(data)
    snapshot = repr(loaded)
    data[0]["content"][0]["text"] = "after"
    data[0]["content"][1]["source"]["url"] = "file:///etc/passwd"
    data[0]["content"].append(text("extra"))
    data[1]["content"][0]["input"]["opts"]["k"] = 2
    tags.append("b")
    data.clear()
    assert repr(loaded) == snapshot

    data = full_conversation()
    messages = load_messages(data)
    before = dump_messages(messages)
    data[0]["content"][0]["text"] = "changed"
    data[0]["content"].append(text("more"))
    data[0]["content"][1]["source"]["url"] = "https://evil.example/x.png"
    data[1]["content"][3]["input"]["nested"]["list"].append("more")
    data[1]["content"][3]["input"]["factor"] = 99
    data[2]["content"][0]["content"][0]["text"] = "changed"
    data[2]["content"][0]["content"].clear()
    data.append(user(text("extra")))
    assert dump_messages(messages) == before


def test_a_loaded_tool_input_cannot_be_mutated() -> None:
    block = load_messages([assistant(tool_call({"tags": ["a"], "opts": {"k": 1}}))])[0].content[0]
    with pytest.raises(TypeError):
        block.input["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        block.input["opts"]["k"] = 2
    with pytest.raises(AttributeError):
        block.input["tags"].append("b")
    assert block.input == {"tags": ("a",), "opts": {"k": 1}}


@pytest.mark.parametrize("data", ["QUJDRA==", "QUJDREU=", "QUJD"])
def test_a_complete_media_string_is_shared_not_copied(data: str) -> None:
    data = "".join([data])  # a str object of the test's own
    source = {"type": "base64", "media_type": "image/png", "data": data}
    loaded = load_messages([user({"type": "image", "source": source})])
    assert loaded[0].content[0].source.data is data


def test_mutating_a_dump_changes_nothing() -> None:
    messages = load_messages(full_conversation())
    dumped = dump_messages(messages)
    dumped[1]["content"][3]["input"]["nested"]["list"].append("x")
    dumped[0]["content"].clear()
    assert dump_messages(messages) == full_conversation()


def test_tool_input_of_a_loaded_message_cannot_be_changed_through_the_caller() -> None:
    inner = {"a": [1]}
    (message,) = load_messages([assistant(tool_use({"inner": inner}))])
    inner["a"].append(2)
    inner["b"] = 1
    assert dump_messages([message])[0]["content"][0]["input"] == {"inner": {"a": [1]}}


def test_media_strings_are_shared_not_copied() -> None:
    data = "QUJD" * 250_000
    url = "https://example.com/" + "a" * 1000 + ".mp4"
    messages = load_messages(
        [user(video(b64_source(data, "video/mp4")), video(url_source(url, "video/mp4")))]
    )
    assert messages[0].content[0].source.data is data
    assert messages[0].content[1].source.url is url


def test_objects_keep_their_media_strings() -> None:
    data = "QUJD" * 1000
    block = image_base64(data, "image/png")
    assert block.source.data is data


def test_loaded_tool_input_is_read_only() -> None:
    (message,) = load_messages([assistant(tool_use({"a": {"b": [1]}}))])
    block = message.content[0]
    with pytest.raises(TypeError):
        block.input["x"] = 1  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        block.input["a"]["b"].append(2)
    assert block.input["a"]["b"][0] == 1


def test_tool_input_mutators_all_refuse() -> None:
    import copy
    import pickle

    block = ToolUseBlock(id="t", name="f", input={"l": [1, 2], "d": {"k": 1}})
    lst, dct = block.input["l"], block.input["d"]
    for attempt in (
        lambda: lst.append(3),
        lambda: lst.extend([3]),
        lambda: lst.insert(0, 3),
        lambda: lst.pop(),
        lambda: lst.remove(1),
        lambda: lst.clear(),
        lambda: lst.sort(),
        lambda: lst.reverse(),
        lambda: lst.__setitem__(0, 9),
        lambda: lst.__delitem__(0),
        lambda: dct.update(k=2),
        lambda: dct.pop("k"),
        lambda: dct.popitem(),
        lambda: dct.setdefault("z", 1),
        lambda: dct.clear(),
        lambda: dct.__setitem__("k", 2),
        lambda: dct.__delitem__("k"),
        lambda: dct.__ior__({"k": 2}),
        lambda: dct.__init__({"k": 3}),
    ):
        with pytest.raises((TypeError, AttributeError)):
            attempt()
    local = block.input["l"]
    local += [3]
    assert block.input == {"l": [1, 2], "d": {"k": 1}}
    assert copy.deepcopy(block) == block
    assert pickle.loads(pickle.dumps(block)) == block
    assert block.input["l"] == (1, 2)


async def test_mutating_input_after_run_is_called_changes_nothing(host: PluginHost) -> None:
    conv = [user_turn("orig", named_image("a.png"))]
    agent, provider = scripted_agent(["ok"])
    coro = agent.run(conv)
    conv[0]["content"][0]["text"] = "changed"
    conv[0]["content"][1]["source"]["url"] = "https://evil.example/b.png"
    conv.append(assistant_turn("extra"))
    await coro
    assert sent_dicts(provider) == [user_turn("orig", named_image("a.png"))]

    agent, provider = make(host, "ok")
    conversation = [text_msg("user", "q")]
    pending = agent.run(conversation)
    conversation.append(text_msg("assistant", "injected"))
    conversation[0]["content"][0]["text"] = "changed"
    await pending
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("q"),)),)


async def test_mutating_input_after_stream_is_called_changes_nothing() -> None:
    conv = [user_turn("orig")]
    agent, provider = scripted_agent(["ok"])
    events = agent.stream(conv)
    conv[0]["content"][0]["text"] = "changed"
    async for _ in events:
        pass
    assert sent_dicts(provider) == [user_turn("orig")]


async def test_mutating_blocks_after_prompt_is_called_changes_nothing(host: PluginHost) -> None:
    blocks = [text_block("orig")]
    agent, provider = scripted_agent(["ok"])
    coro = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks.append(text_block("more"))
    await coro
    assert sent_dicts(provider) == [user_turn("orig")]
    assert dump_messages(agent.get_history())[0] == user_turn("orig")

    agent, provider = make(host, "ok")
    blocks = [{"type": "text", "text": "look"}, png_image()]
    pending = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks.append({"type": "text", "text": "more"})
    await pending
    assert provider.text_of() == "look"
    assert len(provider.requests[0].messages[0].content) == 2

    agent, provider = make_replying_ok(host)
    blocks = [{"type": "text", "text": "look"}, png_image()]
    pending = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks[1]["source"]["data"] = "AAAA"
    blocks.append({"type": "text", "text": "more"})
    await pending
    (turn, _reply) = agent.get_history()
    assert turn == provider.requests[0].messages[0]
    assert turn.content[0] == TextBlock("look")
    assert getattr(turn.content[1], "source").data == PNG  # noqa: B009


async def test_mutating_input_after_run_agent_is_called_changes_nothing() -> None:
    conv = [user_turn("orig")]
    provider = ScriptedProvider(["ok"])
    oma = OpenMultiAgent()
    coro = oma.run_agent(AgentConfig(name="a", provider=provider), conv)
    conv[0]["content"][0]["text"] = "changed"
    await coro
    assert dump_messages(provider.requests[0].messages) == [user_turn("orig")]

    provider = ScriptedProvider(["ok"])
    conversation = three_turn_conversation()
    coro = make_orchestrator().run_agent(agent_config(provider), conversation)
    conversation[2]["content"][0]["text"] = "mutated"
    conversation.append({"role": "assistant", "content": [{"type": "text", "text": "x"}]})
    await coro
    assert provider.requests[0].messages == load_messages(three_turn_conversation())


async def test_mutating_the_history_list_after_construction_changes_nothing() -> None:
    history = [user_turn("old"), assistant_turn("older")]
    agent, provider = scripted_agent(["r"], history=history)
    history[0]["content"][0]["text"] = "changed"
    history.clear()
    await agent.prompt("q")
    assert sent_dicts(provider) == [user_turn("old"), assistant_turn("older"), user_turn("q")]


async def test_mutating_the_callers_data_after_the_call_does_not_change_the_run() -> None:
    agent, provider = vision_agent(["ok"])
    tool_call: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "zoom", "input": {"factor": [2]}}],
    }
    result_turn = user_turn({"type": "tool_result", "tool_use_id": "t1", "content": "zoomed"})
    png_image = png_block("url")
    conversation = [user_turn("look", png_image), tool_call, result_turn]
    expected = dump_messages(load_messages(conversation))
    pending = agent.run(conversation)
    # mutate arrays, blocks, the image source and the tool input before the run starts
    conversation[0]["content"].append(text_block("injected"))
    png_image["source"]["url"] = "https://evil.example/b.png"
    tool_call["content"][0]["input"]["factor"].append(99)
    conversation.append(user_turn("later"))
    assert (await pending).success
    assert dump_messages(provider.requests[0].messages) == expected


@pytest.mark.parametrize("entry", ["run", "stream", "run_agent", "prompt"])
async def test_every_entry_point_copies_its_input_when_called(entry: str) -> None:
    provider = ScriptedProvider(["ok"])
    config = AgentConfig(name="v", provider=provider)
    agent = Agent(config, plugins=builtin_host())
    png_image = png_block("url")
    turn = user_turn("What is shown?", png_image)
    if entry == "run":
        pending: Any = agent.run([turn])
    elif entry == "stream":
        pending = agent.stream([turn])
    elif entry == "run_agent":
        pending = OpenMultiAgent(plugins=builtin_host()).run_agent(config, [turn])
    else:
        pending = agent.prompt(turn["content"])
    turn["content"][0]["text"] = "changed"
    png_image["source"]["url"] = "https://evil.example/x.png"
    turn["content"].clear()
    if entry == "stream":
        async with pending as events:
            kinds = [event.type async for event in events]
        assert kinds[-1] == "done"
    else:
        assert (await pending).success
    sent = dump_messages(provider.requests[0].messages)
    assert sent == [user_turn("What is shown?", png_block("url"))]
    if entry == "prompt":
        assert dump_messages(agent.get_history())[0] == user_turn(
            "What is shown?", png_block("url")
        )


async def test_mutating_a_run_result_does_not_change_history(host: PluginHost) -> None:
    agent, _ = vision_agent(["reply"])
    result = await agent.prompt("hi")
    result.messages.append(load_messages([user_turn("injected")])[0])
    assert dump_messages(agent.get_history()) == [user_turn("hi"), assistant_text("reply")]

    agent, _ = scripted_agent(["r"])
    result = await agent.prompt("q")
    result.messages.clear() if isinstance(result.messages, list) else None
    assert len(agent.get_history()) == 2

    agent, _ = make_replying_ok(host, "one", "two")
    result = await agent.prompt("q")
    result.messages.clear()
    agent.get_history().clear()
    assert len(agent.get_history()) == 2
    second = await agent.prompt("q2")
    assert second.success and len(agent.get_history()) == 4


async def test_history_messages_cannot_be_changed_through_what_get_history_returns() -> None:
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "zoom", "input": {"xs": [1]}}],
    }
    result_turn = user_turn({"type": "tool_result", "tool_use_id": "t1", "content": "done"})
    agent, _ = vision_agent([], history=[user_turn("go"), call, result_turn, assistant_text("ok")])
    block = agent.get_history()[1].content[0]
    for mutate in (
        lambda: block.input.__setitem__("xs", []),  # type: ignore[union-attr,index]
        lambda: block.input["xs"].append(2),  # type: ignore[union-attr]
        lambda: setattr(block, "name", "other"),
    ):
        with contextlib.suppress(TypeError, AttributeError):
            mutate()
    assert dump_messages(agent.get_history())[1] == call


async def test_a_hook_rewrite_does_not_touch_caller_data_or_the_stored_prompt_turn() -> None:
    agent, provider = vision_agent(["ok"], before_run=lambda ctx: {"prompt": "rewritten"})
    blocks = [png_block("url"), text_block("original")]
    snapshot = json.dumps(blocks)
    result = await agent.prompt(blocks)
    assert result.success
    assert json.dumps(blocks) == snapshot
    assert dump_messages(provider.requests[0].messages)[-1] == user_turn(
        png_block("url"), "rewritten"
    )
    assert dump_messages(agent.get_history())[0] == user_turn(png_block("url"), "original")

    conv = [user_turn("orig")]
    agent, provider = scripted_agent(["ok", "ok2"], before_run=lambda ctx: {"prompt": "rewritten"})
    await agent.run(conv)
    assert conv == [user_turn("orig")]
    await agent.prompt("mine")
    assert sent_dicts(provider, 1) == [user_turn("rewritten")]
    assert dump_messages(agent.get_history())[0] == user_turn("mine")


async def test_evaluation_gets_a_separate_copy_of_structured_input() -> None:
    conversation = reference_conversation()
    case = await evaluated_case(conversation, "full")
    conversation[0]["content"][0]["text"] = "changed afterwards"
    assert json.loads(case.input)[0]["content"][0]["text"] == "Keep answers concise."


async def test_concurrent_runs_on_one_agent_do_not_share_input() -> None:
    agent, provider = vision_agent(["a", "b"])
    await asyncio.gather(agent.run([user_turn("one")]), agent.run([user_turn("two")]))
    texts = sorted(r.messages[0].content[0].text for r in provider.requests)  # type: ignore[union-attr]
    assert texts == ["one", "two"]


async def test_mutating_an_image_source_after_the_call_changes_nothing(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    block = png_image()
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


@pytest.mark.parametrize("method", ["run", "stream"])
async def test_caller_mutation_after_the_call_never_reaches_the_provider(
    host: PluginHost, method: str
) -> None:
    agent, provider = make_replying_ok(host)
    conversation = _conversation()
    pending = getattr(agent, method)(conversation)
    _mutate(conversation)
    assert (await _drain(pending)).success
    sent = provider.requests[0].messages
    assert len(sent) == 3
    assert sent[0].content[0] == TextBlock("look")
    picture = sent[0].content[1]
    assert isinstance(picture, ImageBlock)
    assert (picture.source.media_type, getattr(picture.source, "data", None)) == ("image/png", PNG)
    call = sent[1].content[0]
    assert isinstance(call, ToolUseBlock)
    assert json.loads(json.dumps(call.plain_input())) == {"q": ["a"]}
