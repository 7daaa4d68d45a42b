"""The driver's side: the ``ray`` executor and its session for one team run.

For each attempt the session starts ``oma_ray._worker.run_attempt`` as a Ray generator task
(Ray's own retries off: ``max_retries=0``, so the task's ``TaskSpec`` retry policy is the only
one and attempts are counted once), hands each progress event it streams to the driver's
observers as it arrives, adds up the usage of its completed calls, and returns its
``RunResult``. The agents' configs (and any media they carry) go into Ray's object store once
per team run (``ray.put``) and every task that uses one reads the same object.

Faults: cancelling the driver's run cancels the Ray task (``ray.cancel``); a worker that dies
mid-task (killed, out of memory, its node lost) ends the attempt with a retryable
``WorkerLostError`` and the tokens its completed calls spent, so the task runs again on
another worker if its ``max_retries`` allows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs

from oma_core import AgentConfig, RunResult, RunStatus, Usage
from oma_core.errors import PluginError, WorkerLostError
from oma_core.toolkit import ExecutionContext, TaskRun, TaskRunner

__all__ = ["RayExecutor", "RayExecutorStats"]

_OPTIONS = frozenset({"address", "init_options", "task_options", "send_api_keys"})


@attrs.define
class RayExecutorStats:
    """What the executor did (for tests, benchmarks and logs): attempts started, objects put
    in the object store, completed calls whose usage reached the driver, workers lost, and
    the seconds spent waiting for ``ray.init``."""

    attempts: int = 0
    objects_put: int = 0
    calls_metered: int = 0
    workers_lost: int = 0
    init_seconds: float = 0.0


class RayExecutor:
    """``executor_options``: ``address`` (a Ray cluster's address, e.g. ``"auto"`` or
    ``"ray://head:10001"``; none: the cluster this process is connected to, else a local one
    started on first use), ``init_options`` (more ``ray.init`` keywords, e.g. ``runtime_env``),
    ``task_options`` (``.options()`` of each task, e.g. ``{"num_cpus": 0.25}``),
    ``send_api_keys`` (default False: an ``AgentConfig`` with ``api_key`` set is refused, since
    its key would be copied into the object store; workers take keys from their environment).
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise PluginError(
                f"unknown option(s) for the ray executor: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_OPTIONS))})",
                name="ray",
            )
        self.address: str | None = options.get("address")
        self.init_options: dict[str, Any] = dict(options.get("init_options") or {})
        task_options = dict(options.get("task_options") or {})
        if "max_retries" in task_options or "retry_exceptions" in task_options:
            raise PluginError(
                "the ray executor keeps Ray's task retries off (TaskSpec.max_retries retries "
                "a task); remove max_retries/retry_exceptions from task_options",
                name="ray",
            )
        self.task_options = task_options
        self.send_api_keys = bool(options.get("send_api_keys", False))
        self.stats = RayExecutorStats()
        self._remote: Any = None
        self._ledger_class: Any = None

    def _ray(self) -> Any:
        """Ray, imported and connected on first use (never when plugins load)."""
        import ray

        if not ray.is_initialized():
            started = time.perf_counter()
            ray.init(address=self.address, **self.init_options)
            self.stats.init_seconds += time.perf_counter() - started
        if self._remote is None:
            from ._budget import BudgetLedger
            from ._worker import run_attempt

            self._remote = ray.remote(run_attempt).options(
                num_returns="streaming", max_retries=0, **self.task_options
            )
            self._ledger_class = ray.remote(num_cpus=0)(BudgetLedger)
        return ray

    @asynccontextmanager
    async def session(self, context: ExecutionContext) -> AsyncIterator[TaskRunner]:
        budget = context.budget
        caps = (None, None) if budget is None else (budget.max_tokens, budget.max_cost)
        defaults = context.defaults  # small: sent with each task
        shared: dict[int, tuple[AgentConfig, Any]] = {}
        # Ray is connected (and the budget's actor started) by the first attempt, not here:
        # a team run that runs no task (a plan that fails, plan_only) touches no cluster.
        started: list[tuple[Any, Any]] = []
        starting = asyncio.Lock()

        async def start() -> tuple[Any, Any]:
            async with starting:
                if not started:
                    ray = await asyncio.to_thread(self._ray)
                    ledger = None
                    if budget is not None:
                        ledger = self._ledger_class.remote(
                            budget.max_tokens, budget.max_cost, budget.used_tokens, budget.used_cost
                        )
                    started.append((ray, ledger))
            return started[0]

        def config_ref(ray: Any, config: AgentConfig) -> Any:
            kept = shared.get(id(config))
            if kept is None:
                if config.api_key is not None and not self.send_api_keys:
                    raise PluginError(
                        f"agent {config.name!r} has an api_key, which the ray executor would "
                        "copy to the cluster's object store; give the workers the key in their "
                        "environment (api_key=None), or pass executor_options="
                        '{"send_api_keys": True}',
                        name="ray",
                    )
                kept = shared[id(config)] = (config, ray.put(config))
                self.stats.objects_put += 1
            return kept[1]

        def follow_budget(state: tuple[int, float]) -> None:
            # Charges from several workers arrive in any order; the ledger only grows.
            if budget is not None:
                budget.used_tokens = max(budget.used_tokens, state[0])
                budget.used_cost = max(budget.used_cost, state[1])

        async def sync_budget(ledger: Any) -> None:
            if ledger is not None:
                follow_budget(await ledger.state.remote())

        async def run(attempt: TaskRun) -> RunResult:
            ray, ledger = started[0] if started else await start()
            self.stats.attempts += 1
            config = config_ref(ray, attempt.config)
            stream = self._remote.remote(
                config, attempt.prompt, attempt.task, defaults, ledger, caps
            )
            spent = Usage()
            try:
                async for ref in stream:
                    for kind, value in await ref:
                        if kind == "event":
                            await context.emit(value)
                        elif kind == "usage":
                            spent = spent + value
                            self.stats.calls_metered += 1
                        elif kind == "budget":
                            follow_budget(value)
                        else:
                            result: RunResult = value
                            return result
            except asyncio.CancelledError:
                ray.cancel(stream)
                raise
            except _lost_worker_errors(ray) as error:
                self.stats.workers_lost += 1
                lost = WorkerLostError(
                    f"the Ray worker running task {attempt.task!r} (attempt {attempt.attempt}) "
                    f"died: {type(error).__name__}",
                    executor="ray",
                    worker=None,
                )
            except ray.exceptions.RayTaskError as error:
                raise error.as_instanceof_cause() from None
            # A lost worker's last charge may not have been streamed: ask the ledger.
            await sync_budget(ledger)
            return RunResult(False, "", [], spent, RunStatus("error", lost))

        try:
            yield run
        finally:
            if started:
                ray, ledger = started[0]
                await sync_budget(ledger)
                if ledger is not None:
                    ray.kill(ledger)


def _lost_worker_errors(ray: Any) -> tuple[type[BaseException], ...]:
    errors = ray.exceptions
    return tuple(
        getattr(errors, name)
        for name in (
            "WorkerCrashedError",
            "NodeDiedError",
            "LocalRayletDiedError",
            "ObjectLostError",
            "OwnerDiedError",
        )
        if hasattr(errors, name)
    )
