"""Run and call timeouts end a run with status timeout."""

from __future__ import annotations

import time

from oma_core import (
    AgentConfig,
    OpenMultiAgent,
)
from oma_core.testing import Delayed, ScriptedProvider


async def test_a_run_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    start = time.monotonic()
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", timeout=0.1
    )
    assert time.monotonic() - start < 1.5
    assert not result.success and result.status.code == "timeout"


async def test_a_call_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late"), Delayed(2.0, "late"), Delayed(2.0, "x")])
    start = time.monotonic()
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", call_timeout=0.1, max_retries=0
    )
    assert time.monotonic() - start < 1.5
    assert result.status.code == "timeout"


async def test_an_orchestrator_timeout_applies_to_its_runs() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    result = await OpenMultiAgent(timeout=0.1).run_agent(
        AgentConfig(name="v", provider=provider), "x"
    )
    assert result.status.code == "timeout"
