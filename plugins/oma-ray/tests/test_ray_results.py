"""Results and errors cross from the workers intact: the same ``RunResult`` and the same error
(type, message, every field) as the local executor gives, end to end through pickle."""

from __future__ import annotations

from typing import Any

from ray_parts import Raising, ToolLoop, noop, refuse

from oma_core import AgentConfig, OpenMultiAgent, PluginHost, ProviderError, TaskSpec, Team
from oma_core.errors import HookError, MaxTurnsExceededError


def _public(error: BaseException | None) -> Any:
    assert error is not None
    return type(error), str(error), vars(error)


async def test_every_kind_of_run_error_crosses_from_a_worker_intact(
    executor_options: dict[str, Any],
) -> None:
    limited = ProviderError("slow down", status_code=429, provider="Acme", retry_after=2.5)
    team = Team(
        "t",
        [
            AgentConfig("limited", provider=Raising(limited), max_retries=0),
            AgentConfig("hooked", before_run=refuse),
            AgentConfig("looping", provider=ToolLoop("noop", rounds=5), tools=[noop], max_turns=2),
            AgentConfig("fine"),
        ],
    )
    tasks = [TaskSpec(a.name, f"Run {a.name}.", assignee=a.name) for a in team.agents]
    outcomes = []
    for executor, options in (("local", {}), ("ray", executor_options)):
        oma = OpenMultiAgent(
            plugins=PluginHost.default(), executor=executor, executor_options=options
        )
        outcomes.append(await oma.run_tasks(team, tasks))
    local, on_ray = outcomes

    kinds = {t: type(r.error) for t, r in on_ray.tasks.items()}
    assert kinds == {
        "limited": ProviderError,
        "hooked": HookError,
        "looping": MaxTurnsExceededError,
        "fine": type(None),
    }
    for title in ("limited", "hooked", "looping"):
        assert _public(on_ray.tasks[title].error) == _public(local.tasks[title].error)
        ray_result, local_result = on_ray.tasks[title].result, local.tasks[title].result
        assert ray_result is not None and local_result is not None
        assert (ray_result.output, ray_result.messages, ray_result.usage) == (
            local_result.output,
            local_result.messages,
            local_result.usage,
        )
        assert ray_result.status.code == local_result.status.code
    limited_error = on_ray.tasks["limited"].error
    assert isinstance(limited_error, ProviderError)
    assert (limited_error.status_code, limited_error.retry_after) == (429, 2.5)
    fine = on_ray.tasks["fine"].result
    assert fine is not None and fine == local.tasks["fine"].result
