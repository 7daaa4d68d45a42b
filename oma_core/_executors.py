"""Executors: where the agent runs of a team's tasks happen (this process, a Ray cluster, ...).

The core keeps the task graph: its validation, dependency order, task retries, results,
usage and budgets (``oma_core.teams``). An executor only runs one task's agent run somewhere
and hands back its progress events and its ``RunResult``. Executors are plugins: a
distribution returns ``ExecutorSpec``s from ``oma_register_executors``, and
``OpenMultiAgent(executor=NAME, executor_options={...})`` selects one. The built-in "local"
executor (``oma_core.default_plugins.local_executor``) is the asyncio path: each task is a
``run_agent`` on the caller's event loop.

An executor's life, top to bottom: ``ExecutorSpec.factory(options)`` builds it when the
``OpenMultiAgent`` is made (cheap: nothing is imported or started yet); for each team run the
orchestrator enters ``executor.session(context)``, which yields a ``TaskRunner``; the team
runner awaits ``runner(TaskRun)`` once per attempt of each task; the session closes when the
team run ends (also when it is cancelled).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from .retry import DEFAULT_POLICY

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._results import RunResult
    from .budgets import Budget, CostEstimator
    from .progress import ProgressEvent
    from .retry import RetryPolicy

__all__ = [
    "EXECUTOR_FEATURES",
    "ExecutionContext",
    "Executor",
    "ExecutorSpec",
    "PLAIN_DEFAULTS",
    "RunDefaults",
    "TaskRun",
    "TaskRunner",
]

#: What an executor may declare in ``ExecutorSpec.supports``:
#:
#: - ``progress``: a run's progress events reach the driver's observers as they happen;
#: - ``shared_budget``: a ``Budget`` shared by the team run is charged atomically by every run;
#: - ``cancel``: cancelling the team run stops the runs in flight;
#: - ``evaluation``: online evaluation samples the runs (``OpenMultiAgent(evaluation=...)``);
#: - ``shared_providers``: one provider instance serves every task of a team run (a scripted
#:   queue plays in order across tasks); without it each run builds its own provider.
EXECUTOR_FEATURES = frozenset(
    {"progress", "shared_budget", "cancel", "evaluation", "shared_providers"}
)


@attrs.frozen
class TaskRun:
    """One attempt of one team task: run ``config`` on the text ``prompt``.

    ``task`` is the task's title; ``attempt`` counts from 1 (a task retried under its
    ``TaskSpec.max_retries`` is run again with the next number).
    """

    config: AgentConfig
    prompt: str
    task: str
    attempt: int = 1


#: Runs one attempt and returns its ``RunResult``; raises only ``CancelledError``.
TaskRunner = Callable[[TaskRun], Awaitable["RunResult"]]


@attrs.frozen(kw_only=True)
class RunDefaults:
    """The orchestrator's settings for every run, as picklable data.

    A remote worker builds its own ``OpenMultiAgent(**defaults.keywords())`` from these, so a
    run there is retried, capped and timed out as it would be in the driver.
    """

    retry_policy: RetryPolicy
    max_token_budget: int | float | None = None
    max_cost_budget: float | None = None
    estimate_cost: CostEstimator | None = None
    timeout: float | None = None
    call_timeout: float | None = None
    trace_content: bool = False

    def keywords(self) -> dict[str, Any]:
        """The ``OpenMultiAgent`` keyword arguments these defaults stand for."""
        return attrs.asdict(self, recurse=False)


#: An ``OpenMultiAgent`` with nothing set: ``RunSettings.resolve`` recognises it by identity.
PLAIN_DEFAULTS = RunDefaults(retry_policy=DEFAULT_POLICY)


@attrs.frozen(kw_only=True)
class ExecutionContext:
    """What an executor gets for one team run.

    - ``run_local``: the in-process path, a ``run_agent`` on this event loop with the team
      run's shared providers and budget (the local executor is this and nothing more);
    - ``emit``: delivers a progress event that happened elsewhere to the run's observers
      (``on_progress``, the ``oma_progress`` hooks), awaiting async ones; call it in the
      order the events happened, before the run's ``RunResult`` is returned;
    - ``defaults``: what a remote run needs to be run like a local one;
    - ``budget``: the ``Budget`` the team run shares (``run_tasks(..., budget=)``), or None;
      an executor that runs elsewhere charges it atomically, keeps ``used_tokens`` and
      ``used_cost`` on this object current as runs charge it, and exact when the session ends.
    """

    run_local: TaskRunner
    emit: Callable[[ProgressEvent], Awaitable[None]]
    defaults: RunDefaults
    budget: Budget | None = None


@runtime_checkable
class Executor(Protocol):
    """What an ``ExecutorSpec.factory`` returns."""

    def session(self, context: ExecutionContext) -> AbstractAsyncContextManager[TaskRunner]:
        """Open the executor for one team run; yield the function that runs each attempt.

        Leaving the context (at the end of the team run, or when it is cancelled) stops
        whatever is still running and releases what the session opened. Connect or start
        anything expensive on the first attempt, not on entry: a ``run_team`` whose plan
        fails, or that only plans, runs no task.
        """
        ...


def _features(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class ExecutorSpec:
    """An executor a plugin offers, returned from ``oma_register_executors``.

    ``name`` is what ``OpenMultiAgent(executor=...)`` names; ``factory`` receives
    ``executor_options`` (a mapping) when the ``OpenMultiAgent`` is built and returns an
    ``Executor``; it must be cheap and import nothing heavy (import the cluster's library in
    ``session``). ``supports`` declares features from ``EXECUTOR_FEATURES``; the orchestrator
    refuses a configuration that needs one the executor lacks, rather than drop it.
    """

    name: str
    factory: Callable[[Mapping[str, Any]], Executor]
    supports: frozenset[str] = attrs.field(default=frozenset(), converter=_features)
    description: str = ""
