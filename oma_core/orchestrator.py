"""OpenMultiAgent: runs agents with orchestration — progress, budgets, retries, timeouts,
tracing and online evaluation — alone (``run_agent``) or as a team (``run_tasks``,
``run_team``).

``run_agent`` validates and copies its input when it is *called* (like ``Agent.run``), so
invalid input raises ``InvalidMessageError`` at the call site, before any progress event,
span or evaluation sample. The returned coroutine runs a fresh ``Agent`` with the
orchestrator's observers plugged in through ``RunControls``.

Settings layer from general to specific: the ladder's defaults, then ``OpenMultiAgent``'s, then
the ``AgentConfig``'s, then the ``run_agent`` call's (retries); token and cost caps given as
numbers apply per run and the lowest of the orchestrator's and the call's wins; a ``Budget``
passed as ``budget=`` is shared by every run it is passed to.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

import attrs

from ._controls import RunControls, RunObserver
from ._pool import ProviderPool
from .agent import Agent, AgentConfig, RunResult, RunStatus
from .budgets import Budget, BudgetObserver, CostContext, CostEstimator
from .errors import BudgetExceededError
from .evaluation import Evaluator, OnlineEvaluationConfig
from .progress import ProgressDispatcher, ProgressEvent, ProgressObserver, ProgressStats
from .redaction import redact_error
from .retry import RetryPolicy
from .tracing import get_tracer

if TYPE_CHECKING:
    from .messages import LLMMessage, ToolResultBlock
    from .plugins import PluginHost
    from .teams import TaskSpec, Team, TeamRunResult
    from .tracing import RunTrace

__all__ = ["OpenMultiAgent"]

_log = logging.getLogger("oma.orchestrator")


def _check_cap(name: str, value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a number >= 0 or None, got {value!r}")


def _check_seconds(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds > 0 or None, got {value!r}")


def _lowest(*values: float | None) -> float | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


def _copy_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
    return copy.deepcopy(dict(metadata))


def _provider_name(config: AgentConfig) -> str:
    if config.backend is not None:
        return str(config.backend.get("kind", "backend"))
    if isinstance(config.provider, str):
        return config.provider
    return str(getattr(config.provider, "name", None) or type(config.provider).__name__)


class _ProgressBridge(RunObserver):
    """Turns what happens inside a run (retries, tool error results) into progress events."""

    def __init__(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        self._emit = emit

    def on_retry(self, attempt: int, delay: float, error: BaseException) -> None:
        self._emit("retry", {"attempt": attempt, "delay": delay, "error": redact_error(error)})

    def after_tool(self, call: Any, result: ToolResultBlock) -> None:
        if result.is_error:
            self._emit(
                "warning",
                {"message": f"tool {call.name!r} returned an error result", "tool": call.name},
            )


def _ignore(error: BudgetExceededError) -> None:
    return None


def _budget_event(
    emit: Callable[[str, dict[str, Any]], None],
) -> Callable[[BudgetExceededError], None]:
    def exceeded(error: BudgetExceededError) -> None:
        emit("budget_exceeded", {"kind": error.kind, "limit": error.limit, "used": error.used})

    return exceeded


@attrs.frozen
class _Prepared:
    """Everything ``run_agent`` checked at call time; the coroutine runs from this."""

    agent: Agent
    input: str | tuple[LLMMessage, ...]
    task: str | None
    run_id: str
    metadata: dict[str, Any]
    retry: RetryPolicy
    budgets: tuple[Budget, ...]
    timeout: float | None
    call_timeout: float | None


class OpenMultiAgent:
    """Runs agents with progress, budgets, retries, timeouts, tracing and evaluation.

    ``on_progress`` is a sync or async callable receiving ``ProgressEvent``s (the
    ``oma_progress`` hooks receive them too); ``evaluation`` an ``OnlineEvaluationConfig``;
    ``retry_policy`` the base ladder (a seam for tests: its ``sleep`` and ``random``);
    ``tracer_provider`` an OpenTelemetry tracer provider (default: the global one, once the
    application configured it); ``trace_content`` puts the redacted input and output in spans.
    ``share_providers=True`` lets runs share one provider (SDK client and connection pool) per
    event loop and settings, for providers whose spec says ``shared``: connections are reused
    across runs and stay open until ``await oma.aclose()``. By default each run makes and
    closes its own, so nothing stays open after ``run_agent`` returns.
    """

    def __init__(
        self,
        on_progress: ProgressObserver | None = None,
        evaluation: OnlineEvaluationConfig | None = None,
        max_retries: int | None = None,
        retry_delay: float | None = None,
        retry_backoff: float | None = None,
        max_token_budget: int | float | None = None,
        max_cost_budget: float | None = None,
        estimate_cost: CostEstimator | None = None,
        plugins: PluginHost | None = None,
        observer_timeout: float | None = 5.0,
        *,
        timeout: float | None = None,
        call_timeout: float | None = None,
        retry_policy: RetryPolicy | None = None,
        tracer_provider: Any | None = None,
        trace_content: bool = False,
        share_providers: bool = False,
    ) -> None:
        if on_progress is not None and not callable(on_progress):
            raise TypeError("on_progress must be callable")
        if evaluation is not None and not isinstance(evaluation, OnlineEvaluationConfig):
            raise TypeError("evaluation must be an OnlineEvaluationConfig")
        _check_cap("max_token_budget", max_token_budget)
        _check_cap("max_cost_budget", max_cost_budget)
        _check_seconds("timeout", timeout)
        _check_seconds("call_timeout", call_timeout)
        _check_seconds("observer_timeout", observer_timeout)
        if max_cost_budget is not None and estimate_cost is None:
            raise ValueError("max_cost_budget needs estimate_cost(usage, ctx) to price calls")
        self.on_progress = on_progress
        self.max_token_budget = max_token_budget
        self.max_cost_budget = max_cost_budget
        self.estimate_cost = estimate_cost
        self.timeout = timeout
        self.call_timeout = call_timeout
        self.trace_content = trace_content
        self._retry = (retry_policy or RetryPolicy()).override(
            max_retries=max_retries, delay=retry_delay, backoff=retry_backoff
        )
        self._plugins = plugins
        self._providers = ProviderPool() if share_providers else None
        self._tracer_provider = tracer_provider
        self._tracer_cache: Any | None = None
        self._observers_host: PluginHost | None = None
        self._observers_impls: list[Any] = []
        self._observers_cache: list[ProgressObserver] = []
        self._observers_for: ProgressObserver | None = None
        self._progress = ProgressDispatcher(observer_timeout)
        self._evaluating = evaluation is not None
        self.evaluation = Evaluator(evaluation or OnlineEvaluationConfig(), plugins)

    # -- the public API ------------------------------------------------------------------------

    def run_agent(
        self,
        config: AgentConfig,
        input: str | Sequence[Any],
        *,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        max_retries: int | None = None,
        retry_delay: float | None = None,
        retry_backoff: float | None = None,
        max_token_budget: int | float | None = None,
        max_cost_budget: float | None = None,
        budget: Budget | None = None,
        timeout: float | None = None,
        call_timeout: float | None = None,
    ) -> Coroutine[Any, Any, RunResult]:
        """Run a fresh agent built from ``config`` on ``input`` (a str or a conversation).

        Validates and copies ``input`` now; the returned coroutine does the run and never
        raises for a failed run (see ``RunResult.status``), only ``CancelledError``.
        """
        prepared = self._prepare(
            config,
            input,
            task=None,
            run_id=run_id,
            metadata=metadata,
            retry=(max_retries, retry_delay, retry_backoff),
            caps=(max_token_budget, max_cost_budget),
            budget=budget,
            timeout=timeout,
            call_timeout=call_timeout,
        )
        return self._execute(prepared)

    async def run_tasks(self, team: Team, tasks: Iterable[TaskSpec]) -> TeamRunResult:
        """Run a caller's plan on ``team``; each task is one ``run_agent`` on its assignee."""
        from . import teams

        async with self._team_providers() as run_agent:
            return await teams.run_tasks(team, tasks, run_agent=run_agent, emit=self._emit_team)

    async def run_team(
        self,
        team: Team,
        goal: str,
        *,
        coordinator: AgentConfig | None = None,
        plan_only: bool = False,
    ) -> TeamRunResult:
        """Ask a coordinator for a plan for ``goal``, run it, then ask for the final answer."""
        from . import teams

        async with self._team_providers() as run_agent:
            return await teams.run_team(
                team,
                goal,
                coordinator=coordinator,
                plan_only=plan_only,
                run_agent=run_agent,
                emit=self._emit_team,
            )

    async def aclose(self) -> None:
        """Score the queued evaluation cases, then close the providers runs shared.

        With ``share_providers=True`` call this (or use ``async with OpenMultiAgent(...)``)
        before the event loop ends. The object stays usable: later runs make new providers.
        """
        try:
            await self.evaluation.flush()
        finally:
            if self._providers is not None:
                await self._providers.aclose()

    async def __aenter__(self) -> OpenMultiAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def progress_stats(self) -> ProgressStats:
        """How progress delivery went: events delivered, observers that failed or timed out."""
        return attrs.evolve(self._progress.stats)

    @property
    def progress(self) -> ProgressStats:
        """The live progress counters (``.delivered``, ``.failed``, ``.timed_out``)."""
        return self._progress.stats

    # -- preparing a run (at call time) --------------------------------------------------------

    def _prepare(
        self,
        config: AgentConfig,
        input: str | Sequence[Any],
        *,
        pool: ProviderPool | None = None,
        task: str | None,
        run_id: str | None,
        metadata: Mapping[str, Any] | None,
        retry: tuple[int | None, float | None, float | None],
        caps: tuple[int | float | None, float | None],
        budget: Budget | None,
        timeout: float | None,
        call_timeout: float | None,
    ) -> _Prepared:
        if not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
        agent = Agent(
            config, plugins=self._plugins, provider_pool=self._providers if pool is None else pool
        )
        checked = agent._check_input(input)
        if run_id is not None and not isinstance(run_id, str):
            raise TypeError(f"run_id must be a str, got {type(run_id).__name__}")
        max_tokens, max_cost = caps
        _check_cap("max_token_budget", max_tokens)
        _check_cap("max_cost_budget", max_cost)
        _check_seconds("timeout", timeout)
        _check_seconds("call_timeout", call_timeout)
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
        token_cap = _lowest(self.max_token_budget, max_tokens)
        cost_cap = _lowest(self.max_cost_budget, max_cost)
        if self.estimate_cost is None and (
            cost_cap is not None or (budget is not None and budget.max_cost is not None)
        ):
            raise ValueError("a cost budget needs OpenMultiAgent(estimate_cost=...) to price calls")
        budgets: list[Budget] = []
        if token_cap is not None or cost_cap is not None:
            budgets.append(Budget(max_tokens=token_cap, max_cost=cost_cap))
        if budget is not None:
            budgets.append(budget)
        max_retries, retry_delay, retry_backoff = retry
        policy = agent._retry_policy(self._retry).override(
            max_retries=max_retries, delay=retry_delay, backoff=retry_backoff
        )
        return _Prepared(
            agent=agent,
            input=checked,
            task=task,
            run_id=run_id if run_id is not None else os.urandom(16).hex(),
            metadata=_copy_metadata(metadata),
            retry=policy,
            budgets=tuple(budgets),
            timeout=timeout if timeout is not None else self.timeout,
            call_timeout=call_timeout if call_timeout is not None else self.call_timeout,
        )

    # -- running -------------------------------------------------------------------------------

    def _host(self) -> PluginHost:
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
            self.evaluation._plugins = self._plugins
        return self._plugins

    def _observers(self) -> list[ProgressObserver]:
        """``on_progress`` then the ``oma_progress`` hooks; rebuilt only when the hooks change
        (a plugin registered or unregistered), so a run without observers pays a list compare."""
        try:
            host = self._host()
            impls = host.pm.hook.oma_progress.get_hookimpls()
            if (
                host is not self._observers_host
                or impls != self._observers_impls
                or self.on_progress is not self._observers_for
            ):
                hooks: list[ProgressObserver] = list(host.hook_calls("oma_progress"))
                self._observers_host, self._observers_impls = host, list(impls)
                self._observers_for = self.on_progress
                self._observers_cache = [self.on_progress, *hooks] if self.on_progress else hooks
        except Exception as error:  # a broken plugin host must not break runs
            _log.warning("could not list oma_progress hooks: %s", type(error).__name__)
            self._observers_host = None
            return [self.on_progress] if self.on_progress is not None else []
        return self._observers_cache

    def _tracer(self) -> Any | None:
        # Once a real tracer exists it is kept: OpenTelemetry's global provider is set once.
        if self._tracer_cache is not None:
            return self._tracer_cache
        try:
            self._tracer_cache = get_tracer(self._tracer_provider)
        except Exception as error:  # tracing is never worth failing a run for
            _log.warning("tracing disabled: %s", type(error).__name__)
        return self._tracer_cache

    async def _execute(self, run: _Prepared) -> RunResult:
        agent = run.agent
        name = agent.config.name
        observers = self._observers()
        pending: list[asyncio.Task[None]] = []
        emit: Callable[[str, dict[str, Any]], None] | None = None
        if observers:
            emit = self._progress.emitter(observers, pending, name, run.task, run.run_id)
            if isinstance(run.input, str):
                emit("agent_start", {"prompt": run.input})
            else:
                emit("agent_start", {"messages": run.input})

        trace = self._start_trace(run)
        run_observers: list[RunObserver] = []
        budgets: BudgetObserver | None = None
        if trace is not None:
            run_observers.append(trace.closer())
        if run.budgets:
            budgets = BudgetObserver(
                run.budgets,
                estimate_cost=self.estimate_cost,
                context=CostContext(
                    agent=name,
                    provider=_provider_name(agent.config),
                    model=agent.config.model,
                    run_id=run.run_id,
                ),
                on_exceeded=_ignore if emit is None else _budget_event(emit),
            )
            run_observers.append(budgets)
        if emit is not None:
            run_observers.append(_ProgressBridge(emit))
        if trace is not None:
            run_observers.append(trace)
        controls = RunControls(
            retry=run.retry,
            timeout=run.timeout,
            call_timeout=run.call_timeout,
            observers=tuple(run_observers),
            run_id=run.run_id,
        )
        try:
            result = await self._run_traced(agent, run, controls, trace)
            await _close(agent)
        except BaseException as error:
            # Cancelled from outside (or a bug): charge the call that was cut short, close
            # what the run opened, then propagate.
            if budgets is not None:
                budgets.charge_in_flight()
            if trace is not None:
                trace.finish(None, None if isinstance(error, asyncio.CancelledError) else error)
            await ProgressDispatcher.cancel(pending)
            await _close(agent)
            raise
        failure = result.status.error
        if failure is not None:
            scrubbed = redact_error(failure)
            if scrubbed is not failure:
                result = attrs.evolve(result, status=RunStatus(result.status.code, scrubbed))
            if emit is not None:
                emit("error", {"error": scrubbed, "code": result.status.code})
        if trace is not None:
            trace.finish(result)
        if self._evaluating:
            self.evaluation.submit(
                run.input,
                result.output,
                run_id=run.run_id,
                metadata=run.metadata,
                status=result.status.code,
                agent=name,
            )
        if emit is not None:
            emit(
                "agent_complete",
                {
                    "success": result.success,
                    "output": result.output,
                    "usage": result.usage,
                    "status": result.status.code,
                },
            )
            if pending:
                await self._progress.drain(pending)
        return result

    def _start_trace(self, run: _Prepared) -> RunTrace | None:
        tracer = self._tracer()
        if tracer is None:
            return None
        from .tracing import RunTrace

        config = run.agent.config
        trace = RunTrace(
            tracer,
            agent=config.name,
            provider=_provider_name(config),
            model=config.model,
            run_id=run.run_id,
            trace_content=self.trace_content,
        )
        trace.start(run.input, config.system_prompt)
        return trace

    async def _run_traced(
        self, agent: Agent, run: _Prepared, controls: RunControls, trace: RunTrace | None
    ) -> RunResult:
        coroutine = agent._start(run.input, controls=controls)
        if trace is None:
            result: RunResult = await coroutine
            return result
        from opentelemetry import context
        from opentelemetry.trace import set_span_in_context

        token = context.attach(set_span_in_context(trace.span))
        try:
            result = await coroutine
        finally:
            context.detach(token)
        return result

    # -- teams ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _team_providers(self) -> AsyncIterator[Callable[..., Awaitable[RunResult]]]:
        """A ``run_agent`` for one team run whose tasks and coordinator share providers.

        An agent is one provider for the whole team run (a scripted queue plays in order
        across its tasks; an SDK client keeps its connections); all are closed at the end.
        """
        pool = ProviderPool(every_provider=True)

        async def run_agent(config: AgentConfig, prompt: str, task: str | None) -> RunResult:
            return await self._task_run(config, prompt, task, pool)

        try:
            yield run_agent
        finally:
            await pool.aclose()

    async def _task_run(
        self, config: AgentConfig, prompt: str, task: str | None, pool: ProviderPool | None
    ) -> RunResult:
        prepared = self._prepare(
            config,
            prompt,
            pool=pool,
            task=task,
            run_id=None,
            metadata={"task": task} if task is not None else None,
            retry=(None, None, None),
            caps=(None, None),
            budget=None,
            timeout=None,
            call_timeout=None,
        )
        return await self._execute(prepared)

    async def _emit_team(
        self, kind: str, agent: str | None, task: str | None, data: dict[str, Any]
    ) -> None:
        observers = self._observers()
        if not observers:
            return
        pending: list[asyncio.Task[None]] = []
        if isinstance(data.get("error"), BaseException):
            data = {**data, "error": redact_error(data["error"])}
        self._progress.emit(ProgressEvent(kind, agent, task, data), observers, pending)
        if pending:
            await self._progress.drain(pending)


async def _close(agent: Agent) -> None:
    try:
        await agent.aclose()
    except Exception as error:  # closing is best effort; the run's outcome stands
        _log.warning("closing agent %r failed: %s", agent.config.name, type(error).__name__)
