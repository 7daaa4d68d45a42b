"""before_run hooks: package hooks then the agent's own, chained, with prompt rewrites."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from _builders import (
    REFERENCE_PNG,
    assistant_text,
    assistant_turn,
    builtin_host,
    named_image,
    png_block,
    reference_conversation,
    scripted_agent,
    sent_dicts,
    stream_events,
    text_block,
    user_turn,
    vision_agent,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    RunResult,
    dump_messages,
    hookimpl,
    load_messages,
)
from oma_core._before_run import prompt_of, replace_prompt
from oma_core.agent import BeforeRunContext
from oma_core.errors import HookError, InvalidMessageError
from oma_core.messages import ImageBlock, LLMMessage, TextBlock
from oma_core.testing import ScriptedProvider

PNG_A = "iVBORw0KGgo="
PNG_B = "R0lGODlhAQABAAAAACw="


def image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def make(host: PluginHost, hook: Any = None, *responses: object) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses or ("ok",))
    return Agent(AgentConfig(name="a", provider=provider, before_run=hook), plugins=host), provider


async def test_ctx_prompt_joins_the_latest_user_texts_without_separator(host: PluginHost) -> None:
    seen: list[BeforeRunContext] = []
    agent, _ = make(host, seen.append)
    await agent.run(
        [
            {"role": "user", "content": [text("old")]},
            {"role": "assistant", "content": [text("reply")]},
            {"role": "user", "content": [text("first"), image(PNG_A), text("second")]},
        ]
    )
    assert seen[0].prompt == "firstsecond"
    assert len(seen[0].messages) == 3
    assert seen[0].agent.name == "a"


async def test_a_prompt_rewrite_reaches_the_provider_but_history_keeps_the_turn(
    host: PluginHost,
) -> None:
    agent, provider = make(host, lambda ctx: {"prompt": "rewritten"})
    await agent.prompt("original")
    assert provider.text_of() == "rewritten"
    assert agent.get_history()[0] == LLMMessage("user", (TextBlock("original"),))


async def test_hook_context_messages_are_immutable_copies(host: PluginHost) -> None:
    seen: list[BeforeRunContext] = []
    agent, _ = make(host, seen.append)
    caller = [{"role": "user", "content": [text("x")]}]
    await agent.run(caller)
    assert isinstance(seen[0].messages, tuple)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        seen[0].messages[0].content[0].text = "y"  # type: ignore[misc]

    def hook(ctx: Any) -> None:
        assert isinstance(ctx.messages, tuple)
        with pytest.raises((TypeError, AttributeError)):
            ctx.messages[0].content[0].text = "hacked"

    agent, provider = vision_agent(["ok"], before_run=hook)
    result = await agent.run([user_turn("safe")])
    assert result.success
    assert dump_messages(provider.requests[0].messages) == [user_turn("safe")]


_blocks = st.lists(
    st.one_of(
        st.builds(TextBlock, st.text(max_size=5)),
        st.sampled_from([PNG_A, PNG_B]).map(
            lambda data: ImageBlock({"type": "base64", "media_type": "image/png", "data": data})
        ),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=100, deadline=None)
@given(blocks=_blocks, prompt=st.text(max_size=5))
def test_a_rewritten_turn_has_one_text_block_and_keeps_the_rest_in_order(
    blocks: list[Any], prompt: str
) -> None:
    (turn,) = replace_prompt((LLMMessage("user", blocks),), prompt)
    texts = [b for b in turn.content if isinstance(b, TextBlock)]
    assert texts == [TextBlock(prompt)]
    assert [b for b in turn.content if not isinstance(b, TextBlock)] == [
        b for b in blocks if not isinstance(b, TextBlock)
    ]
    assert prompt_of((turn,)) == prompt


async def test_before_run_context_carries_messages_prompt_and_agent() -> None:
    seen: list[Any] = []
    conv = [user_turn("old"), assistant_turn("r"), user_turn("a", named_image("x.png"), "b")]
    agent, _ = scripted_agent(["ok"], before_run=seen.append)
    await agent.run(conv)
    (ctx,) = seen
    assert isinstance(ctx.messages, tuple)
    assert all(isinstance(m, LLMMessage) for m in ctx.messages)
    assert dump_messages(ctx.messages) == conv
    assert ctx.prompt == "ab"
    agent_view = ctx.agent
    name = agent_view.name if hasattr(agent_view, "name") else agent_view.config.name
    assert name == "a"


async def test_before_run_returning_none_leaves_the_input_unchanged(host: PluginHost) -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: None)
    await agent.run([user_turn("t1", "t2")])
    assert sent_dicts(provider) == [user_turn("t1", "t2")]

    agent, provider = make(host, lambda ctx: None)
    await agent.run("hello")
    assert provider.text_of() == "hello"


async def test_before_run_worked_example_replaces_first_text_and_drops_the_others() -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: {"prompt": "new"})
    await agent.run([user_turn(named_image("A.png"), "t1", named_image("B.png"), "t2")])
    assert sent_dicts(provider) == [user_turn(named_image("A.png"), "new", named_image("B.png"))]


async def test_before_run_evolved_context_rewrites_the_prompt(host: PluginHost) -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: attrs.evolve(ctx, prompt="new"))
    await agent.run([user_turn("old"), assistant_turn("r"), user_turn("t1")])
    assert sent_dicts(provider) == [user_turn("old"), assistant_turn("r"), user_turn("new")]

    agent, provider = make(host, lambda ctx: attrs.evolve(ctx, prompt=ctx.prompt.upper()))
    await agent.run([{"role": "user", "content": [text("a"), image(PNG_A), text("b")]}])
    content = provider.requests[0].messages[0].content
    assert [block.type for block in content] == ["text", "image"]
    assert content[0] == TextBlock("AB")


async def test_before_run_prepends_a_text_block_to_a_turn_without_text(host: PluginHost) -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: {"prompt": "new"})
    await agent.run([user_turn(named_image("A.png"))])
    assert sent_dicts(provider) == [user_turn("new", named_image("A.png"))]

    agent, provider = make(host, lambda ctx: {"prompt": "describe"})
    await agent.run([{"role": "user", "content": [image(PNG_A)]}])
    content = provider.requests[0].messages[0].content
    assert [block.type for block in content] == ["text", "image"]
    assert content[0] == TextBlock("describe")

    agent, provider = vision_agent(["ok"], before_run=lambda ctx: {"prompt": "Describe it."})
    await agent.run([user_turn(png_block("url"), png_block())])
    assert dump_messages(provider.requests[0].messages) == [
        user_turn("Describe it.", png_block("url"), png_block())
    ]


async def test_before_run_appends_a_user_turn_when_there_is_none(host: PluginHost) -> None:
    def hook(ctx: Any) -> Mapping[str, Any]:
        return {"messages": [assistant_turn("only")], "prompt": "new"}

    agent, provider = scripted_agent(["ok"], before_run=hook)
    await agent.run("original")
    assert sent_dicts(provider) == [assistant_turn("only"), user_turn("new")]

    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": [text("hi")]}], "prompt": "go"}

    agent, provider = make(host, hook)
    await agent.run("x")
    assert provider.requests[0].messages[-1] == LLMMessage("user", (TextBlock("go"),))


async def test_before_run_prompt_equal_to_the_received_one_changes_nothing() -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: {"prompt": ctx.prompt})
    await agent.run([user_turn("t1", named_image("A.png"), "t2")])
    assert sent_dicts(provider) == [user_turn("t1", named_image("A.png"), "t2")]


async def test_before_run_async_hook_is_awaited(host: PluginHost) -> None:
    async def hook(ctx: Any) -> Mapping[str, Any]:
        await asyncio.sleep(0)
        return {"prompt": "async"}

    agent, provider = scripted_agent(["ok"], before_run=hook)
    await agent.run("x")
    assert sent_dicts(provider) == [user_turn("async")]

    async def hook(ctx: BeforeRunContext) -> dict[str, str]:
        return {"prompt": "from async"}

    agent, provider = make(host, hook)
    await agent.run("x")
    assert provider.text_of() == "from async"


async def test_a_hook_may_return_the_whole_context_as_a_mapping() -> None:
    def hook(ctx: Any) -> Mapping[str, Any]:
        return {"messages": ctx.messages, "prompt": "new", "agent": ctx.agent}

    agent, provider = scripted_agent(["ok"], before_run=hook)
    await agent.run([user_turn("t1", named_image("A.png"), "t2")])
    assert sent_dicts(provider) == [user_turn("new", named_image("A.png"))]


async def test_before_run_receives_a_message_copy_and_the_latest_user_text() -> None:
    seen: list[Any] = []
    agent, _ = vision_agent(["ok"], before_run=seen.append)
    conversation = [
        user_turn("old text"),
        assistant_text("a"),
        user_turn("What is ", png_block("url"), "shown here?"),
    ]
    await agent.run(conversation)
    (ctx,) = seen
    assert ctx.messages == load_messages(conversation)
    assert ctx.prompt == "What is shown here?"


async def test_an_image_only_turn_has_an_empty_prompt_but_full_messages(host: PluginHost) -> None:
    seen: list[Any] = []
    agent, _ = vision_agent(["ok"], before_run=seen.append)
    await agent.run([user_turn("earlier"), assistant_text("a"), user_turn(png_block())])
    assert seen[0].prompt == ""
    assert isinstance(seen[0].messages[-1].content[0], ImageBlock)

    seen: list[BeforeRunContext] = []
    agent, _ = make(host, seen.append)
    await agent.run([{"role": "user", "content": [image(PNG_A)]}])
    assert seen[0].prompt == ""
    assert isinstance(seen[0].messages[0].content[0], ImageBlock)

    seen: list[Any] = []
    agent, _ = scripted_agent(["ok"], before_run=seen.append)
    await agent.run([user_turn(named_image("x.png"))])
    assert seen[0].prompt == ""


async def test_before_run_may_return_the_context_spread_with_changes() -> None:
    def hook(ctx: Any) -> dict[str, Any]:
        return {"messages": ctx.messages, "prompt": ctx.prompt, "agent": ctx.agent}

    agent, provider = vision_agent(["ok"], before_run=hook)
    conversation = reference_conversation()
    assert (await agent.run(conversation)).success
    assert provider.requests[0].messages == load_messages(conversation)


@pytest.mark.parametrize("style", ["evolve", "mapping", "async", "none"])
async def test_before_run_return_forms(style: str) -> None:
    def hook(ctx: Any) -> Any:
        if style == "evolve":
            return attrs.evolve(ctx, prompt="changed")
        if style == "mapping":
            return {"prompt": "changed"}
        return None

    async def async_hook(ctx: Any) -> Any:
        await asyncio.sleep(0)
        return {"prompt": "changed"}

    agent, provider = vision_agent(["ok"], before_run=async_hook if style == "async" else hook)
    await agent.run([user_turn("orig", png_block("url"))])
    expected = "orig" if style == "none" else "changed"
    assert dump_messages(provider.requests[0].messages) == [user_turn(expected, png_block("url"))]


async def test_before_run_on_prompt_sees_history_plus_the_new_turn() -> None:
    seen: list[Any] = []
    agent, _ = vision_agent(
        ["r"], history=[user_turn("old"), assistant_text("a")], before_run=seen.append
    )
    await agent.prompt([png_block("url"), text_block("new question")])
    assert dump_messages(seen[0].messages) == [
        user_turn("old"),
        assistant_text("a"),
        user_turn(png_block("url"), "new question"),
    ]
    assert seen[0].prompt == "new question"

    seen: list[Any] = []
    agent, _ = scripted_agent(
        ["r"], history=[user_turn("old"), assistant_turn("older")], before_run=seen.append
    )
    await agent.prompt([text_block("new"), named_image("n.png")])
    assert dump_messages(seen[0].messages) == [
        user_turn("old"),
        assistant_turn("older"),
        user_turn("new", named_image("n.png")),
    ]
    assert seen[0].prompt == "new"


async def test_returning_messages_replaces_the_complete_input() -> None:
    replacement = [user_turn("a whole new conversation")]
    agent, provider = vision_agent(["ok"], before_run=lambda ctx: {"messages": replacement})
    await agent.run(reference_conversation())
    assert provider.requests[0].messages == load_messages(replacement)


async def test_a_spread_context_with_new_messages_and_the_old_prompt_keeps_the_new_text() -> None:
    def hook(ctx: Any) -> dict[str, Any]:
        return {"agent": ctx.agent, "prompt": ctx.prompt, "messages": [user_turn("replacement")]}

    agent, provider = vision_agent(["ok"], before_run=hook)
    await agent.run("original")
    assert dump_messages(provider.requests[0].messages) == [user_turn("replacement")]


async def test_evolving_only_the_messages_replaces_the_input() -> None:
    def hook(ctx: Any) -> Any:
        return attrs.evolve(
            ctx, messages=load_messages([user_turn("replacement", png_block("url"))])
        )

    agent, provider = vision_agent(["ok"], before_run=hook)
    await agent.run("original")
    assert dump_messages(provider.requests[0].messages) == [
        user_turn("replacement", png_block("url"))
    ]


async def test_messages_are_replaced_first_then_the_prompt_and_non_text_keeps_order(
    host: PluginHost,
) -> None:
    a = png_block("url")
    b = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": REFERENCE_PNG},
    }

    def hook(ctx: Any) -> dict[str, Any]:
        return {
            "messages": [user_turn("ignored"), assistant_text("x"), user_turn(a, "t1", b, "t2")],
            "prompt": "new",
        }

    agent, provider = vision_agent(["ok"], before_run=hook)
    await agent.run("original")
    sent = dump_messages(provider.requests[0].messages)
    assert sent[0] == user_turn("ignored")  # only the latest user turn's text is replaced
    assert sent[-1] == user_turn(a, "new", b)

    replacement = [
        {"role": "user", "content": [image(PNG_A), text("t1"), image(PNG_B), text("t2")]}
    ]

    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"messages": replacement, "prompt": "new"}

    agent, provider = make(host, hook)
    caller_input = [{"role": "user", "content": [text("original")]}]
    await agent.run(caller_input)
    sent = provider.requests[0].messages
    assert len(sent) == 1
    content = sent[0].content
    assert [block.type for block in content] == ["image", "text", "image"]
    assert content[1] == TextBlock("new")
    assert isinstance(content[0], ImageBlock) and content[0].source.data == PNG_A  # type: ignore[union-attr]
    assert isinstance(content[2], ImageBlock) and content[2].source.data == PNG_B  # type: ignore[union-attr]
    assert caller_input == [{"role": "user", "content": [text("original")]}]
    assert replacement[0]["content"][1] == text("t1")

    def hook(ctx: Any) -> Mapping[str, Any]:
        return {
            "messages": [
                user_turn("m1"),
                assistant_turn("m2"),
                user_turn("x", named_image("A.png"), "y"),
            ],
            "prompt": "P",
        }

    agent, provider = scripted_agent(["ok"], before_run=hook)
    await agent.run("original")
    assert sent_dicts(provider) == [
        user_turn("m1"),
        assistant_turn("m2"),
        user_turn("P", named_image("A.png")),
    ]


async def test_a_prompt_rewrite_alone_replaces_the_latest_user_text_blocks() -> None:
    agent, provider = vision_agent(["ok"], before_run=lambda ctx: {"prompt": ctx.prompt.upper()})
    await agent.run(
        [user_turn("first"), assistant_text("a"), user_turn("one ", png_block("url"), "two")]
    )
    sent = dump_messages(provider.requests[0].messages)
    assert sent[0] == user_turn("first")
    assert sent[-1] == user_turn("ONE TWO", png_block("url"))


# -- package hooks, their order with the agent's own hook, and hooks that fail


class _PromptSuffix:
    def __init__(self, suffix: str, log: list[str]) -> None:
        self.suffix = suffix
        self.log = log

    @hookimpl
    def oma_before_run(self, ctx: Any) -> Mapping[str, Any]:
        self.log.append(f"{self.suffix}<-{ctx.prompt}")
        return {"prompt": ctx.prompt + self.suffix}


class Shout:
    """A package hook that upper-cases the prompt."""

    @hookimpl
    def oma_before_run(self, ctx: BeforeRunContext) -> BeforeRunContext:
        return attrs.evolve(ctx, prompt=ctx.prompt.upper() + "!")


async def test_package_hooks_run_in_pluggy_order_then_the_agents_own_hook(host: PluginHost) -> None:
    log: list[str] = []
    suffixes = builtin_host(_PromptSuffix("A", log), _PromptSuffix("B", log))

    def own(ctx: Any) -> Mapping[str, Any]:
        log.append(f"own<-{ctx.prompt}")
        return {"prompt": ctx.prompt + "!"}

    agent, provider = scripted_agent(["ok"], host=suffixes, before_run=own)
    await agent.run("p")
    # pluggy calls the plugin registered last first
    assert log == ["B<-p", "A<-pB", "own<-pBA"]
    assert sent_dicts(provider) == [user_turn("pBA!")]

    order: list[str] = []

    class Package:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> dict[str, Any]:
            order.append("package:" + ctx.prompt)
            return {"prompt": ctx.prompt + " +pkg"}

    def own(ctx: Any) -> dict[str, Any]:
        order.append("agent:" + ctx.prompt)
        return {"prompt": ctx.prompt + " +own"}

    provider = ScriptedProvider(["ok"])
    agent = Agent(
        AgentConfig(name="v", provider=provider, before_run=own), plugins=builtin_host(Package())
    )
    await agent.run("hi")
    assert order == ["package:hi", "agent:hi +pkg"]
    assert provider.requests[0].messages[-1].content == (TextBlock("hi +pkg +own"),)

    host.register(Shout(), name="shout")
    seen: list[str] = []

    def own(ctx: BeforeRunContext) -> None:
        seen.append(ctx.prompt)

    agent, provider = make(host, own)
    await agent.run("hi")
    assert seen == ["HI!"]
    assert provider.text_of() == "HI!"


async def test_a_raising_before_run_hook_fails_the_run_without_raising(host: PluginHost) -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("hook broke")

    agent, provider = scripted_agent(["ok"], before_run=hook)
    result = await agent.run("x")
    assert not result.success
    assert result.status.code == "error"
    assert result.status.error is not None
    assert provider.requests == []

    def hook(ctx: BeforeRunContext) -> None:
        raise RuntimeError("hook broke")

    agent, provider = make(host, hook)
    result = await agent.run("x")
    assert result.status.code == "error"
    assert isinstance(result.status.error, HookError)
    assert "hook broke" in str(result.status.error)
    assert provider.requests == []


async def test_a_package_hook_that_raises_fails_the_run_without_raising() -> None:
    class Broken:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> None:
            raise RuntimeError("package hook broke")

    agent, provider = scripted_agent(["ok"], host=builtin_host(Broken()))
    result = await agent.run("x")
    assert not result.success and provider.requests == []


async def test_a_raising_hook_in_stream_yields_error_then_done(host: PluginHost) -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("hook broke")

    agent, _ = scripted_agent(["ok"], before_run=hook)
    events = [event async for event in agent.stream("x")]
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert isinstance(events[-2].data, BaseException)
    assert isinstance(events[-1].data, RunResult) and not events[-1].data.success

    agent, _ = make(host, lambda ctx: 1 / 0)
    events = [event async for event in agent.stream("x")]
    assert [event.type for event in events] == ["error", "done"]


async def test_an_async_package_hook_is_awaited_and_tryfirst_is_respected() -> None:
    log: list[str] = []

    class Late:
        @hookimpl(trylast=True)
        async def oma_before_run(self, ctx: Any) -> Mapping[str, Any]:
            await asyncio.sleep(0)
            log.append("late")
            return {"prompt": ctx.prompt + "-late"}

    class Early:
        @hookimpl(tryfirst=True)
        def oma_before_run(self, ctx: Any) -> None:
            log.append("early")

    # registered in the order that pluggy would otherwise call last-first
    agent, provider = scripted_agent(["ok"], host=builtin_host(Early(), Late()))
    await agent.run("p")
    assert log == ["early", "late"]
    assert sent_dicts(provider) == [user_turn("p-late")]


async def test_a_hook_returning_invalid_messages_fails_the_run_without_raising(
    host: PluginHost,
) -> None:
    agent, provider = vision_agent(["never"], before_run=lambda ctx: {"messages": [{"role": "x"}]})
    result = await agent.run("hi")
    assert not result.success and provider.requests == []
    events = await stream_events(
        vision_agent(["never"], before_run=lambda ctx: 1 / 0)[0], [user_turn("hi")]
    )
    assert [e.type for e in events] == ["error", "done"]
    assert events[-1].data.success is False

    agent, provider = make(host, lambda ctx: {"messages": [{"role": "user", "content": []}]})
    result = await agent.run("x")
    assert isinstance(result.status.error, InvalidMessageError)
    assert provider.requests == []


@pytest.mark.parametrize("value", [42, {"prompt": 3}, {"mesages": []}])
async def test_a_hook_returning_garbage_fails_the_run(host: PluginHost, value: object) -> None:
    agent, provider = make(host, lambda ctx: value)
    result = await agent.run("x")
    assert result.status.code == "error"
    assert isinstance(result.status.error, HookError)
    assert provider.requests == []


async def test_a_failing_hook_in_prompt_leaves_history_alone(host: PluginHost) -> None:
    agent, _ = make(host, lambda ctx: 1 / 0)
    result = await agent.prompt("x")
    assert not result.success and agent.get_history() == []
