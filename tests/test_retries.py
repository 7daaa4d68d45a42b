"""Runs retry transient model-call failures on the ladder, honour Retry-After, and never retry what
cannot succeed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    OpenMultiAgent,
    PluginHost,
    ProviderError,
    tool,
)
from oma_core.testing import ScriptedProvider


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return _assistant({"type": "tool_use", "id": call_id, "name": name, "input": args})


def _agent(
    responses: list[Any], host: PluginHost | None = None, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, **config), plugins=host)
    return agent, provider


def _unavailable() -> ProviderError:
    return ProviderError("unavailable", status_code=503)


def _record_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def fake_sleep(seconds: float, result: Any = None) -> Any:
        waits.append(seconds)
        return result

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    return waits


async def test_default_ladder_retries_twice_with_equal_jitter_from_half_a_second() -> None:
    agent, provider = _agent([_unavailable(), "ok"])
    start = time.monotonic()
    result = await agent.run("x")
    elapsed = time.monotonic() - start
    assert result.success and len(provider.requests) == 2
    # equal jitter on 0.5 s: between 0.25 and 0.5 s
    assert 0.24 <= elapsed <= 0.9


async def test_default_ladder_gives_up_after_two_retries() -> None:
    agent, provider = _agent(
        [_unavailable(), _unavailable(), _unavailable(), "never"], retry_delay=0.01
    )
    result = await agent.run("x")
    assert not result.success and len(provider.requests) == 3
    assert isinstance(result.status.error, ProviderError)


async def test_a_non_retryable_error_is_not_retried() -> None:
    agent, provider = _agent([ProviderError("bad", status_code=400), "never"], retry_delay=0.01)
    result = await agent.run("x")
    assert not result.success and len(provider.requests) == 1


async def test_retry_settings_most_specific_wins() -> None:
    errors = [_unavailable() for _ in range(6)]
    oma = OpenMultiAgent(max_retries=4, retry_delay=0.01)
    # AgentConfig beats the OpenMultiAgent default
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x")
    assert len(provider.requests) == 2
    # the run_agent call beats both
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x", max_retries=0)
    assert len(provider.requests) == 1
    # the OpenMultiAgent default applies when the config says nothing
    provider = ScriptedProvider([*errors, "ok"])
    result = await oma.run_agent(AgentConfig(name="a", provider=provider), "x")
    assert len(provider.requests) == 5 and not result.success


async def test_retry_backoff_multiplies_the_delay() -> None:
    agent, provider = _agent(
        [_unavailable(), _unavailable(), "ok"], retry_delay=0.1, retry_backoff=3.0
    )
    start = time.monotonic()
    assert (await agent.run("x")).success
    elapsed = time.monotonic() - start
    # 0.05..0.1 then 0.15..0.3
    assert 0.2 <= elapsed <= 0.8
    assert len(provider.requests) == 3


async def test_a_server_retry_after_is_honoured() -> None:
    slow = ProviderError("slow down", status_code=429, retry_after=0.4)
    agent, _ = _agent([slow, "ok"], retry_delay=0.01)
    start = time.monotonic()
    assert (await agent.run("x")).success
    assert time.monotonic() - start >= 0.39


def test_retry_after_ms_wins_over_retry_after() -> None:
    from oma_core import parse_retry_after

    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "3"}) == 3.0


async def test_the_ladder_is_capped_at_30_seconds_with_equal_jitter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    errors = [_unavailable() for _ in range(4)]
    agent, provider = _agent([*errors, "ok"], max_retries=4, retry_delay=10.0)
    assert (await agent.run("x")).success
    assert len(provider.requests) == 5
    nominal = [10.0, 20.0, 30.0, 30.0]
    assert len(waits) == 4
    for wait, cap in zip(waits, nominal, strict=True):
        assert cap / 2 <= wait <= cap


async def test_a_retry_after_up_to_60_seconds_is_honoured_and_longer_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    responses = [
        ProviderError("slow", status_code=429, retry_after=45.0),
        ProviderError("slower", status_code=429, retry_after=600.0),
        "ok",
    ]
    agent, _ = _agent(responses, retry_delay=0.5)
    assert (await agent.run("x")).success
    assert waits[0] == 45.0
    assert waits[1] <= 60.0


async def test_a_retried_model_call_never_runs_a_tool_twice() -> None:
    runs: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    agent, provider = _agent(
        [_tool_call("count", {"n": 1}), _unavailable(), _unavailable(), "final"],
        tools=[count],
        retry_delay=0.01,
    )
    result = await agent.run("x")
    assert result.success and result.output == "final"
    assert runs == [1]
    assert len(provider.requests) == 4
