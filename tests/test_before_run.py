"""before_run hooks: package hooks then the agent's own, chained, with prompt rewrites."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, BeforeRunContext, PluginHost, hookimpl
from oma_core._before_run import prompt_of, replace_prompt
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


async def test_an_image_only_turn_has_an_empty_prompt(host: PluginHost) -> None:
    seen: list[BeforeRunContext] = []
    agent, _ = make(host, seen.append)
    await agent.run([{"role": "user", "content": [image(PNG_A)]}])
    assert seen[0].prompt == ""
    assert isinstance(seen[0].messages[0].content[0], ImageBlock)


async def test_returning_none_leaves_the_input_unchanged(host: PluginHost) -> None:
    agent, provider = make(host, lambda ctx: None)
    await agent.run("hello")
    assert provider.text_of() == "hello"


async def test_messages_then_prompt_rewrite_keeps_non_text_blocks_in_order(
    host: PluginHost,
) -> None:
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


async def test_a_prompt_rewrite_via_evolve_replaces_the_first_text_block(host: PluginHost) -> None:
    agent, provider = make(host, lambda ctx: attrs.evolve(ctx, prompt=ctx.prompt.upper()))
    await agent.run([{"role": "user", "content": [text("a"), image(PNG_A), text("b")]}])
    content = provider.requests[0].messages[0].content
    assert [block.type for block in content] == ["text", "image"]
    assert content[0] == TextBlock("AB")


async def test_a_prompt_for_a_turn_without_text_is_prepended(host: PluginHost) -> None:
    agent, provider = make(host, lambda ctx: {"prompt": "describe"})
    await agent.run([{"role": "user", "content": [image(PNG_A)]}])
    content = provider.requests[0].messages[0].content
    assert [block.type for block in content] == ["text", "image"]
    assert content[0] == TextBlock("describe")


async def test_a_prompt_for_a_conversation_without_user_turn_appends_one(
    host: PluginHost,
) -> None:
    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": [text("hi")]}], "prompt": "go"}

    agent, provider = make(host, hook)
    await agent.run("x")
    assert provider.requests[0].messages[-1] == LLMMessage("user", (TextBlock("go"),))


async def test_async_hooks_are_awaited(host: PluginHost) -> None:
    async def hook(ctx: BeforeRunContext) -> dict[str, str]:
        return {"prompt": "from async"}

    agent, provider = make(host, hook)
    await agent.run("x")
    assert provider.text_of() == "from async"


async def test_a_prompt_rewrite_reaches_the_provider_but_history_keeps_the_turn(
    host: PluginHost,
) -> None:
    agent, provider = make(host, lambda ctx: {"prompt": "rewritten"})
    await agent.prompt("original")
    assert provider.text_of() == "rewritten"
    assert agent.get_history()[0] == LLMMessage("user", (TextBlock("original"),))


async def test_a_hook_that_raises_fails_the_run(host: PluginHost) -> None:
    def hook(ctx: BeforeRunContext) -> None:
        raise RuntimeError("hook broke")

    agent, provider = make(host, hook)
    result = await agent.run("x")
    assert result.status.code == "error"
    assert isinstance(result.status.error, HookError)
    assert "hook broke" in str(result.status.error)
    assert provider.requests == []


async def test_a_hook_returning_invalid_messages_fails_the_run(host: PluginHost) -> None:
    agent, provider = make(host, lambda ctx: {"messages": [{"role": "user", "content": []}]})
    result = await agent.run("x")
    assert isinstance(result.status.error, InvalidMessageError)
    assert provider.requests == []


@pytest.mark.parametrize("value", [42, {"prompt": 3}, {"mesages": []}])
async def test_a_hook_returning_garbage_fails_the_run(host: PluginHost, value: object) -> None:
    agent, provider = make(host, lambda ctx: value)
    result = await agent.run("x")
    assert isinstance(result.status.error, HookError)
    assert provider.requests == []


async def test_a_failing_hook_in_stream_yields_error_then_done(host: PluginHost) -> None:
    agent, _ = make(host, lambda ctx: 1 / 0)
    events = [event async for event in agent.stream("x")]
    assert [event.type for event in events] == ["error", "done"]


async def test_a_failing_hook_in_prompt_leaves_history_alone(host: PluginHost) -> None:
    agent, _ = make(host, lambda ctx: 1 / 0)
    result = await agent.prompt("x")
    assert not result.success and agent.get_history() == []


class Shout:
    """A package hook that upper-cases the prompt."""

    @hookimpl
    def oma_before_run(self, ctx: BeforeRunContext) -> BeforeRunContext:
        return attrs.evolve(ctx, prompt=ctx.prompt.upper() + "!")


async def test_package_hooks_run_before_the_agents_own(host: PluginHost) -> None:
    host.register(Shout(), name="shout")
    seen: list[str] = []

    def own(ctx: BeforeRunContext) -> None:
        seen.append(ctx.prompt)

    agent, provider = make(host, own)
    await agent.run("hi")
    assert seen == ["HI!"]
    assert provider.text_of() == "HI!"


async def test_hook_context_messages_are_immutable_copies(host: PluginHost) -> None:
    seen: list[BeforeRunContext] = []
    agent, _ = make(host, seen.append)
    caller = [{"role": "user", "content": [text("x")]}]
    await agent.run(caller)
    assert isinstance(seen[0].messages, tuple)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        seen[0].messages[0].content[0].text = "y"  # type: ignore[misc]


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
