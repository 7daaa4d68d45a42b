"""TODO"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from oma_core import (
    AgentConfig,
    Budget,
    OpenMultiAgent,
    TextBlock,
    Usage,
    load_messages,
    tool,
)
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    ToolCall,
)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return _assistant({"type": "tool_use", "id": call_id, "name": name, "input": args})


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class _CostlyProvider:
    """A provider reporting 100 + 100 tokens per call, always calling the ``add`` tool."""

    name = "costly"
    display_name = "Costly"

    def __init__(self, tool_calls: bool = True) -> None:
        self.calls = 0
        self.tool_calls = tool_calls

    def _response(self) -> ProviderResponse:
        self.calls += 1
        if self.tool_calls:
            message = load_messages([_tool_call("add", {"a": 1, "b": 1}, f"c{self.calls}")])[0]
        else:
            message = load_messages([_assistant("fine")])[0]
        return ProviderResponse(message=message, usage=Usage(100, 100))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self._response()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        response = self._response()
        for block in response.message.content:
            if block.type == "tool_use":
                yield ToolCall(block)
            elif isinstance(block, TextBlock):
                yield TextDelta(block.text)
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


def test_budget_defaults() -> None:
    budget = Budget()
    assert budget.max_tokens is None and budget.max_cost is None
    assert Budget(max_tokens=5).max_tokens == 5


async def test_a_per_run_token_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = _CostlyProvider()
    oma = OpenMultiAgent()
    config = AgentConfig(name="v", provider=provider, tools=[add], max_turns=10)
    result = await oma.run_agent(config, "go", max_token_budget=300)
    assert not result.success
    assert result.status.code == "budget_exhausted"
    # soft cap: at most one call past the limit
    assert provider.calls == 2


async def test_an_orchestrator_token_budget_applies_per_run() -> None:
    oma = OpenMultiAgent(max_token_budget=300)
    for _ in range(2):
        provider = _CostlyProvider(tool_calls=False)
        result = await oma.run_agent(AgentConfig(name="v", provider=provider), "go")
        assert result.success


async def test_a_shared_budget_object_spans_runs() -> None:
    budget = Budget(max_tokens=300)
    oma = OpenMultiAgent()
    provider = _CostlyProvider(tool_calls=False)
    config = AgentConfig(name="v", provider=provider)
    first = await oma.run_agent(config, "one", budget=budget)
    second = await oma.run_agent(config, "two", budget=budget)
    assert first.success
    third = await oma.run_agent(config, "three", budget=budget)
    assert third.status.code == "budget_exhausted"
    calls_before_third = 2
    assert provider.calls == calls_before_third
    assert second.status.code in ("ok", "budget_exhausted")


async def test_the_budget_clamps_the_next_calls_max_tokens() -> None:
    seen: list[ProviderRequest] = []

    class Recording(_CostlyProvider):
        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            seen.append(request)
            return await super().complete(request)

        async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
            seen.append(request)
            async for event in super().stream(request):
                yield event

    provider = Recording()
    config = AgentConfig(name="v", provider=provider, tools=[add])
    await OpenMultiAgent().run_agent(config, "go", max_token_budget=300)
    assert len(seen) == 2
    assert seen[1].max_tokens is not None and seen[1].max_tokens <= 100


async def test_a_shared_budget_refuses_a_run_started_past_it() -> None:
    budget = Budget(max_tokens=150)
    oma = OpenMultiAgent()
    provider = _CostlyProvider(tool_calls=False)
    config = AgentConfig(name="v", provider=provider)
    await oma.run_agent(config, "one", budget=budget)
    result = await oma.run_agent(config, "two", budget=budget)
    assert result.status.code == "budget_exhausted"
    assert provider.calls == 1


async def test_a_cost_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = _CostlyProvider()
    oma = OpenMultiAgent(estimate_cost=lambda usage, ctx: usage.input_tokens * 0.01)
    config = AgentConfig(name="v", provider=provider, tools=[add])
    result = await oma.run_agent(config, "go", max_cost_budget=1.5)
    assert result.status.code == "budget_exhausted"
    assert provider.calls == 2
