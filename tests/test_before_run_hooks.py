"""Package before_run hooks, their order with the agent's own hook, and hooks that fail."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from _builders import (
    builtin_host,
    scripted_agent,
    sent_dicts,
    stream_events,
    text_block,
    user_turn,
    vision_agent,
)

from oma_core import Agent, AgentConfig, PluginHost, RunResult, TextBlock, hookimpl
from oma_core.agent import BeforeRunContext
from oma_core.errors import HookError, InvalidMessageError
from oma_core.testing import ScriptedProvider


class _PromptSuffix:
    def __init__(self, suffix: str, log: list[str]) -> None:
        self.suffix = suffix
        self.log = log

    @hookimpl
    def oma_before_run(self, ctx: Any) -> Mapping[str, Any]:
        self.log.append(f"{self.suffix}<-{ctx.prompt}")
        return {"prompt": ctx.prompt + self.suffix}


def make(host: PluginHost, hook: Any = None, *responses: object) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses or ("ok",))
    return Agent(AgentConfig(name="a", provider=provider, before_run=hook), plugins=host), provider


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


@pytest.mark.parametrize(
    "returned",
    [42, {"messages": [{"role": "robot", "content": [text_block("x")]}]}, {"prompt": 7}],
    ids=["int", "invalid-messages", "non-string-prompt"],
)
async def test_a_before_run_hook_returning_garbage_fails_the_run(returned: Any) -> None:
    agent, provider = scripted_agent(["ok"], before_run=lambda ctx: returned)
    result = await agent.run("x")
    assert not result.success
    assert result.status.code == "error"
    assert provider.requests == []


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
    assert isinstance(result.status.error, HookError)
    assert provider.requests == []


async def test_a_failing_hook_in_prompt_leaves_history_alone(host: PluginHost) -> None:
    agent, _ = make(host, lambda ctx: 1 / 0)
    result = await agent.prompt("x")
    assert not result.success and agent.get_history() == []
