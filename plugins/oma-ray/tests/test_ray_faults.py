"""What only a cluster can show: a worker killed mid-task, a budget shared across workers,
media put in the object store once, and Ray imported only when the executor is used."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oma_ray import RayExecutor
from ray_parts import CALL, ToolLoop, attach, hold, noop

from oma_core import (
    AgentConfig,
    Budget,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    TaskSpec,
    Team,
    Usage,
    hookimpl,
    image_base64,
)
from oma_core.errors import PluginError, WorkerLostError
from oma_core.testing import assert_holds_no_secret
from oma_core.toolkit import ExecutorSpec


def _observed(options: Mapping[str, Any]) -> tuple[OpenMultiAgent, list[RayExecutor]]:
    """An orchestrator on the ray executor, keeping the executor so a test can read its stats."""
    built: list[RayExecutor] = []

    def factory(given: Mapping[str, Any]) -> RayExecutor:
        built.append(RayExecutor(given))
        return built[-1]

    class Plugin:
        @hookimpl
        def oma_register_executors(self) -> list[ExecutorSpec]:
            return [ExecutorSpec("observed-ray", factory, supports={"progress", "cancel"})]

    host = PluginHost()
    host.register(Plugin(), name="observed")
    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(
        on_progress=events.append, plugins=host, executor="observed-ray", executor_options=options
    )
    oma.events = events  # type: ignore[attr-defined]
    return oma, built


def _pid(workdir: Path) -> int | None:
    path = workdir / "pid"
    return int(path.read_text()) if path.exists() else None


async def test_a_worker_killed_mid_task_is_retried_and_its_spent_tokens_kept(
    executor_options: dict[str, Any], tmp_path: Path
) -> None:
    oma, (executor,) = _observed(executor_options)
    provider = ToolLoop("hold", arguments={"workdir": str(tmp_path)})
    team = Team("t", [AgentConfig("worker", provider=provider, tools=[hold], max_retries=0)])
    run = asyncio.ensure_future(oma.run_tasks(team, [TaskSpec("job", "Do it.", max_retries=1)]))
    # The first call completed (its usage reached the driver) and the tool is holding.
    for _ in range(2400):  # up to two minutes on a loaded machine
        if _pid(tmp_path) is not None and executor.stats.calls_metered >= 1:
            break
        assert not run.done(), run.result()
        await asyncio.sleep(0.05)
    victim = _pid(tmp_path)
    assert victim is not None and victim != os.getpid() and executor.stats.calls_metered == 1
    (tmp_path / "killed").write_text("yes")
    os.kill(victim, signal.SIGKILL)
    outcome = await asyncio.wait_for(run, 120)

    record = outcome.tasks["job"]
    assert record.status == "completed" and record.attempts == 2
    assert record.output == "finished after 1"
    # attempt 1: the one call before the kill; attempt 2: the tool call and the answer
    assert record.usage == Usage(3 * CALL.input_tokens, 3 * CALL.output_tokens)
    assert executor.stats.workers_lost == 1 and executor.stats.attempts == 2
    (retry,) = [e for e in oma.events if e.type == "task_retry"]  # type: ignore[attr-defined]
    assert isinstance(retry.data["error"], WorkerLostError)
    assert retry.data["error"].retryable and "died" in str(retry.data["error"])


async def test_a_budget_shared_across_workers_is_never_overshot_past_one_call_per_task(
    executor_options: dict[str, Any],
) -> None:
    oma, _ = _observed(executor_options)
    provider = ToolLoop("noop", rounds=2)  # three calls per task
    team = Team("t", [AgentConfig("w", provider=provider, tools=[noop])], max_concurrency=2)
    budget = Budget(max_tokens=32)
    tasks = [TaskSpec(f"t{i}", f"Task {i}.") for i in range(6)]
    outcome = await oma.run_tasks(team, tasks, budget=budget)

    per_call = CALL.input_tokens + CALL.output_tokens
    in_flight = team.max_concurrency
    assert 32 <= budget.used_tokens <= 32 + in_flight * per_call
    stopped = [r for r in outcome.tasks.values() if r.result and r.result.status.code != "ok"]
    assert stopped and {r.result.status.code for r in stopped if r.result} == {"budget_exhausted"}
    assert not outcome.success


async def test_media_a_config_carries_are_put_in_the_object_store_once(
    executor_options: dict[str, Any],
) -> None:
    oma, (executor,) = _observed(executor_options)
    picture = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(2_000_000)).decode()
    agent = AgentConfig("viewer", before_run=attach(image_base64(picture, "image/png")))
    team = Team("t", [agent], max_concurrency=2)
    tasks = [TaskSpec(f"t{i}", f"Look {i}.") for i in range(4)]
    outcome = await oma.run_tasks(team, tasks)

    assert outcome.success
    for record in outcome.tasks.values():
        assert "image image/png base64 2000008 bytes" in record.output
    assert executor.stats.objects_put == 1 and executor.stats.attempts == 4


async def test_a_config_with_an_api_key_is_refused_before_it_reaches_the_cluster(
    executor_options: dict[str, Any],
) -> None:
    oma, (executor,) = _observed(executor_options)
    team = Team("t", [AgentConfig("keyed", api_key="sk-test-do-not-ship")])
    outcome = await oma.run_tasks(team, [TaskSpec("job", "Do it.")])

    record = outcome.tasks["job"]
    assert record.status == "failed" and isinstance(record.error, PluginError)
    assert "send_api_keys" in str(record.error)
    assert_holds_no_secret(record.error, "sk-test-do-not-ship")
    assert executor.stats.objects_put == 0 and executor.stats.attempts == 1


def test_ray_is_imported_only_when_a_task_runs_on_it() -> None:
    code = """
import asyncio, sys
from oma_core import AgentConfig, OpenMultiAgent, PluginHost, TaskSpec, Team
from oma_core.errors import PlanError

oma = OpenMultiAgent(plugins=PluginHost(), executor="ray")
assert "ray" not in sys.modules, "loading plugins or building the executor imported ray"
team = Team("t", [AgentConfig("a")])
try:  # a plan that cannot run is refused before any cluster is touched
    asyncio.run(oma.run_tasks(team, [TaskSpec("x", "X.", depends_on="missing")]))
except PlanError:
    pass
plan = '{"tasks": [{"title": "t1", "description": "Do it.", "assignee": null}]}'
boss = AgentConfig("boss", provider="scripted", provider_options={"responses": [plan]})
planned = asyncio.run(oma.run_team(team, "Goal", coordinator=boss, plan_only=True))
assert planned.success and planned.plan is not None
assert "ray" not in sys.modules, "a run that ran no task imported ray"
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "OMA_LOAD_PLUGINS"}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
