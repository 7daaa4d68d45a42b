"""OpenMultiAgent: runs agents with orchestration — progress, budgets, retries, timeouts,
tracing and online evaluation — alone (``run_agent``) or as a team (``run_tasks``,
``run_team``).

One orchestrated run, top to bottom: ``run_agent`` builds a fresh ``Agent``, validates and
copies the input (at the call, like ``Agent.run``), and resolves the run's ``RunSettings`` once
(the ladder's defaults, then ``OpenMultiAgent``'s, then the ``AgentConfig``'s, then the
call's). The returned coroutine reports ``agent_start``, opens the run's span, runs the agent
with those settings — where the built-in call middleware enforces the budgets, makes the call
spans and reports retries — then reports the outcome, queues the evaluation sample and
reports ``agent_complete``.

Token and cost caps given as numbers apply per run and the lowest of the orchestrator's and
the call's wins; a ``Budget`` passed as ``budget=`` is shared by every run it is passed to.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
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

from ._delivery import ProgressDispatcher
from ._pool import ProviderPool
from .agent import Agent, AgentConfig, RunResult
from .budgets import Budget, CostEstimator
from .evaluation import Evaluator, OnlineEvaluationConfig
from .executors import ExecutionContext, Executor, RunDefaults, TaskRun, TaskRunner
from .progress import ProgressEvent, ProgressObserver, ProgressStats
from .redaction import detached_error
from .retry import DEFAULT_POLICY, RetryPolicy
from .settings import RunSettings, check_seconds, new_run_id
from .tracing import RunSpan, get_tracer

if TYPE_CHECKING:
    from ._runner import RunInput
    from .plugins import PluginHost
    from .teams import TaskSpec, Team, TeamRunResult

__all__ = ["OpenMultiAgent"]

_log = logging.getLogger("oma.orchestrator")
_NO_SETTINGS = RunSettings()


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


def _lowest(*values: float | None) -> float | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


def _copy_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
    return copy.deepcopy(dict(metadata))


class OpenMultiAgent:
    """Runs agents with progress, budgets, retries, timeouts, tracing and evaluation.

    ``on_progress`` is a sync or async callable receiving ``ProgressEvent``s (the
    ``oma_progress`` hooks receive them too); ``evaluation`` an ``OnlineEvaluationConfig``;
    ``retry_policy`` the base ladder (a seam for tests: its ``sleep`` and ``random``);
    ``tracer_provider`` an OpenTelemetry tracer provider (default: the global one, once the
    application configured it); ``trace_content`` puts the redacted input and output in spans.
    Runs share one provider (SDK client and connection pool) per event loop and settings, for
    providers whose spec says ``shared``; runs with different keys, base URLs or options never
    share one. Connections are reused across runs and stay open until ``await oma.aclose()``
    (or the end of ``async with OpenMultiAgent(...)``), or at the latest until the event loop
    shuts down (``asyncio.run`` closes them before it returns). ``share_providers=False``
    makes each run build and close its own provider, so nothing stays open after a run.
    ``executor`` names where the runs of team tasks happen (an executor plugin: "local", the
    default, on this event loop; "ray" from oma-ray) and ``executor_options`` configures it;
    an unknown name is a ``PluginError`` here.
    """

    def __init__(
        self,
        on_progress: ProgressObserver | None = None,
        evaluation: OnlineEvaluationConfig | None = None,
        *,
        max_retries: int | None = None,
        retry_delay: float | None = None,
        retry_backoff: float | None = None,
        max_token_budget: int | float | None = None,
        max_cost_budget: float | None = None,
        estimate_cost: CostEstimator | None = None,
        plugins: PluginHost | None = None,
        observer_timeout: float | None = 5.0,
        timeout: float | None = None,
        call_timeout: float | None = None,
        retry_policy: RetryPolicy | None = None,
        tracer_provider: Any | None = None,
        trace_content: bool = False,
        share_providers: bool = True,
        executor: str = "local",
        executor_options: Mapping[str, Any] | None = None,
    ) -> None:
        if on_progress is not None and not callable(on_progress):
            raise TypeError("on_progress must be callable")
        if evaluation is not None and not isinstance(evaluation, OnlineEvaluationConfig):
            raise TypeError("evaluation must be an OnlineEvaluationConfig")
        _check_cap("max_token_budget", max_token_budget)
        _check_cap("max_cost_budget", max_cost_budget)
        check_seconds("timeout", timeout)
        check_seconds("call_timeout", call_timeout)
        check_seconds("observer_timeout", observer_timeout)
        if max_cost_budget is not None and estimate_cost is None:
            raise ValueError("max_cost_budget needs estimate_cost(usage, ctx) to price calls")
        self.on_progress = on_progress
        self.max_token_budget = max_token_budget
        self.max_cost_budget = max_cost_budget
        self.estimate_cost = estimate_cost
        self.timeout = timeout
        self.call_timeout = call_timeout
        self.trace_content = trace_content
        self._retry = (retry_policy or DEFAULT_POLICY).override(
            max_retries=max_retries, delay=retry_delay, backoff=retry_backoff
        )
        self._plugins = plugins
        self._providers = ProviderPool() if share_providers else None
        self._tracer_provider = tracer_provider
        self._tracer_cache: Any | None = None
        self._progress = ProgressDispatcher(observer_timeout)
        self._evaluating = evaluation is not None
        self.evaluation = Evaluator(evaluation or OnlineEvaluationConfig(), plugins)
        self._executors: dict[str, Executor] = {}
        self.executor = executor
        self._executor_options = dict(executor_options or {})
        if executor != "local" or executor_options:  # "local" plainly is found on first use
            self._executor(executor)

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
        settings: RunSettings | None = None,
    ) -> Coroutine[Any, Any, RunResult]:
        """Run a fresh agent built from ``config`` on ``input`` (a str or a conversation).

        Validates and copies ``input`` now; the returned coroutine does the run and never
        raises for a failed run (see ``RunResult.status``), only ``CancelledError``. The
        keyword arguments are the common per-run settings; ``settings`` gives any other
        ``RunSettings`` field (the keywords win over it).
        """
        if run_id is not None and not isinstance(run_id, str):
            raise TypeError(f"run_id must be a str, got {type(run_id).__name__}")
        check_seconds("timeout", timeout)
        check_seconds("call_timeout", call_timeout)
        given = settings or _NO_SETTINGS
        call: dict[str, Any] = {
            "run_id": run_id or given.run_id,
            "metadata": given.metadata if metadata is None else _copy_metadata(metadata),
            "timeout": timeout if timeout is not None else given.timeout,
            "call_timeout": call_timeout if call_timeout is not None else given.call_timeout,
        }
        caps = (max_token_budget, max_cost_budget, budget)
        return self._start(
            config, input, given, call, (max_retries, retry_delay, retry_backoff), caps
        )

    async def run_tasks(
        self,
        team: Team,
        tasks: Iterable[TaskSpec],
        *,
        budget: Budget | None = None,
        executor: str | None = None,
    ) -> TeamRunResult:
        """Run a caller's plan on ``team``; each task is one ``run_agent`` on its assignee.

        ``budget`` is shared by every task's run; ``executor`` names where the runs happen
        for this call (default: the one ``OpenMultiAgent(executor=...)`` chose).
        """
        from . import teams

        chosen = self._executor(executor) if executor is not None else None
        if (executor or self.executor) != "local":
            tasks = teams.check_plan(team, tasks)  # a bad plan opens no cluster session
        async with (
            self._team_providers(budget) as run_agent,
            self._executor_session(chosen, run_agent, budget) as run_task,
        ):
            return await teams.run_tasks(team, tasks, run_task=run_task, emit=self._emit_team)

    async def run_team(
        self,
        team: Team,
        goal: str,
        *,
        coordinator: AgentConfig | None = None,
        plan_only: bool = False,
        budget: Budget | None = None,
        executor: str | None = None,
    ) -> TeamRunResult:
        """Ask a coordinator for a plan for ``goal``, run it, then ask for the final answer.

        The coordinator runs here; the tasks on the executor. ``budget`` is shared by every
        run of the team run, the coordinator's included.
        """
        from . import teams

        chosen = self._executor(executor) if executor is not None else None
        async with (
            self._team_providers(budget) as run_agent,
            self._executor_session(chosen, run_agent, budget) as run_task,
        ):
            return await teams.run_team(
                team,
                goal,
                coordinator=coordinator,
                plan_only=plan_only,
                run_agent=run_agent,
                emit=self._emit_team,
                run_task=run_task,
            )

    async def aclose(self) -> None:
        """Score the queued evaluation cases, then close the providers runs shared on this loop.

        Shared providers are closed when the event loop shuts down anyway; call this (or use
        ``async with OpenMultiAgent(...)``) to close them sooner. The object stays usable:
        later runs make new providers.
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

    # -- one run -------------------------------------------------------------------------------

    def _start(
        self,
        config: AgentConfig,
        input: str | Sequence[Any],
        given: RunSettings,
        call: dict[str, Any],
        retry: tuple[int | None, float | None, float | None],
        caps: tuple[int | float | None, float | None, Budget | None],
        pool: ProviderPool | None = None,
    ) -> Coroutine[Any, Any, RunResult]:
        """Check everything a run needs now, at the call; return the run's coroutine."""
        agent = Agent(
            config, plugins=self._plugins, provider_pool=self._providers if pool is None else pool
        )
        checked = agent.check_input(input)
        pending: list[asyncio.Task[None]] = []
        settings = self._settings(config, given, call, retry, caps, pending)
        return self._run(agent, checked, settings, pending)

    def _settings(
        self,
        config: AgentConfig,
        given: RunSettings,
        call: dict[str, Any],
        retry: tuple[int | None, float | None, float | None],
        caps: tuple[int | float | None, float | None, Budget | None],
        pending: list[asyncio.Task[None]],
    ) -> RunSettings:
        """The run's settings, resolved once (one ``RunSettings`` built): the defaults, then
        ours, the config's, the ``settings`` given, the call's keywords (``call``)."""
        max_tokens, max_cost, shared = caps
        _check_cap("max_token_budget", max_tokens)
        _check_cap("max_cost_budget", max_cost)
        if shared is not None and not isinstance(shared, Budget):
            raise TypeError(f"budget must be a Budget, got {type(shared).__name__}")
        token_cap = _lowest(self.max_token_budget, max_tokens)
        cost_cap = _lowest(self.max_cost_budget, max_cost)
        budgets: list[Budget] = []
        if token_cap is not None or cost_cap is not None:
            budgets.append(Budget(max_tokens=token_cap, max_cost=cost_cap))  # this run's own
        if shared is not None:
            budgets.append(shared)
        budgets.extend(given.budgets)
        estimate_cost = given.estimate_cost or self.estimate_cost
        if estimate_cost is None and any(b.max_cost is not None for b in budgets):
            raise ValueError("a cost budget needs OpenMultiAgent(estimate_cost=...) to price calls")
        max_retries, retry_delay, retry_backoff = retry
        policy = given.retry or config.retry_policy(self._retry)
        policy = policy.override(max_retries=max_retries, delay=retry_delay, backoff=retry_backoff)
        observers = self._observers()
        tracer = self._tracer()
        timeout, call_timeout = call["timeout"], call["call_timeout"]
        timeout = timeout if timeout is not None else self.timeout
        call_timeout = call_timeout if call_timeout is not None else self.call_timeout
        if (
            given is _NO_SETTINGS
            and not (
                budgets or observers or call["metadata"] or self.trace_content or estimate_cost
            )
            and self._retry is DEFAULT_POLICY
            and given.retry is None
            and retry == (None, None, None)
            and tracer is timeout is call_timeout is call["run_id"] is None
        ):
            return _NO_SETTINGS  # nothing to add: the agent's own defaults are the settings
        run_id = call["run_id"] or new_run_id()
        changes: dict[str, Any] = {
            "run_id": run_id,
            "metadata": call["metadata"],
            "retry": policy,
            "timeout": timeout,
            "call_timeout": call_timeout,
            "budgets": tuple(budgets),
            "estimate_cost": estimate_cost,
            "progress": (
                self._progress.emitter(observers, pending, config.name, given.task, run_id)
                if observers
                else None
            ),
            "tracer": tracer,
            "trace_content": self.trace_content,
        }
        if given is _NO_SETTINGS:  # the same as evolving it, without copying every field
            return RunSettings(**changes)
        return attrs.evolve(given, **changes)

    async def _run(
        self,
        agent: Agent,
        input: RunInput,
        settings: RunSettings,
        pending: list[asyncio.Task[None]],
    ) -> RunResult:
        emit = settings.progress
        if emit is not None:
            if isinstance(input, str):
                emit("agent_start", {"prompt": input})
            else:
                emit("agent_start", {"messages": input})
        span = None
        if settings.tracer is not None:
            assert settings.run_id is not None
            span = RunSpan(
                settings.tracer,
                agent=agent.config.name,
                provider=agent.config.provider_name,
                model=agent.config.model,
                run_id=settings.run_id,
                trace_content=settings.trace_content,
            )
            span.record_input(input, agent.config.system_prompt)
        token = None if span is None else span.attach()
        try:
            result = await agent.run(input, settings=settings)
        except BaseException as error:
            # Cancelled from outside (or a bug): close what the run opened, then propagate.
            if span is not None:
                cancelled = isinstance(error, asyncio.CancelledError)
                span.finish(None, None if cancelled else detached_error(error))
            await ProgressDispatcher.cancel(pending)
            raise
        finally:
            if token is not None:
                RunSpan.detach(token)
            await _close(agent)
        failure = result.status.error
        if emit is not None and failure is not None:
            emit("error", {"error": failure, "code": result.status.code})
        if span is not None:
            span.finish(result)
        if self._evaluating:
            self.evaluation.submit(
                input,
                result.output,
                run_id=settings.run_id,
                metadata=settings.metadata,
                status=result.status.code,
                agent=agent.config.name,
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

    # -- what runs share -----------------------------------------------------------------------

    def _host(self) -> PluginHost:
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
        return self._plugins

    def _observers(self) -> list[ProgressObserver]:
        """``on_progress`` then the ``oma_progress`` hooks (the host keeps that list)."""
        try:
            hooks: list[ProgressObserver] = list(self._host().hook_calls("oma_progress"))
        except Exception as error:  # a broken plugin host must not break runs
            _log.warning("could not list oma_progress hooks: %s", type(error).__name__)
            hooks = []
        return [self.on_progress, *hooks] if self.on_progress is not None else hooks

    def _tracer(self) -> Any | None:
        # Once a real tracer exists it is kept: OpenTelemetry's global provider is set once.
        if self._tracer_cache is not None:
            return self._tracer_cache
        try:
            self._tracer_cache = get_tracer(self._tracer_provider)
        except Exception as error:  # tracing is never worth failing a run for
            _log.warning("tracing disabled: %s", type(error).__name__)
        return self._tracer_cache

    # -- teams ---------------------------------------------------------------------------------

    def _executor(self, name: str) -> Executor:
        """The executor ``name``, built once per ``OpenMultiAgent`` with ``executor_options``
        when it is the one chosen at construction, with none when a call names another
        (``PluginError`` for an unknown name, a configuration it cannot carry, or a factory's
        bad product)."""
        if not isinstance(name, str):
            raise TypeError(f"executor must be a name (str), got {type(name).__name__}")
        executor = self._executors.get(name)
        if executor is not None:
            return executor
        from .errors import PluginError

        host = self._host()
        spec = host.executor_spec(name)
        if self._evaluating and "evaluation" not in spec.supports:
            raise PluginError(
                f"executor {name!r} does not support online evaluation; run without "
                "evaluation=... or on an executor that supports it",
                name=name,
            )
        options = self._executor_options if name == self.executor else {}
        executor = self._executors[name] = host.build_executor(spec, options)
        return executor

    @contextlib.asynccontextmanager
    async def _executor_session(
        self,
        executor: Executor | None,
        run_agent: Callable[[AgentConfig, str, str | None], Awaitable[RunResult]],
        budget: Budget | None,
    ) -> AsyncIterator[TaskRunner]:
        """Open the team run's executor (``executor``, else the default one) around it."""

        def run_local(run: TaskRun) -> Awaitable[RunResult]:
            return run_agent(run.config, run.prompt, run.task)

        context = ExecutionContext(
            run_local=run_local, emit=self._emit_event, defaults=self._defaults(), budget=budget
        )
        chosen = executor or self._executor(self.executor)
        async with chosen.session(context) as run_task:
            yield run_task

    def _defaults(self) -> RunDefaults:
        return RunDefaults(
            retry_policy=self._retry,
            max_token_budget=self.max_token_budget,
            max_cost_budget=self.max_cost_budget,
            estimate_cost=self.estimate_cost,
            timeout=self.timeout,
            call_timeout=self.call_timeout,
            trace_content=self.trace_content,
        )

    async def _emit_event(self, event: ProgressEvent) -> None:
        """Deliver an event that happened elsewhere (an executor's worker) to our observers."""
        observers = self._observers()
        if not observers:
            return
        pending: list[asyncio.Task[None]] = []
        self._progress.emit(event, observers, pending)
        if pending:
            await self._progress.drain(pending)

    @contextlib.asynccontextmanager
    async def _team_providers(
        self, budget: Budget | None = None
    ) -> AsyncIterator[Callable[..., Awaitable[RunResult]]]:
        """A ``run_agent`` for one team run whose tasks and coordinator share providers.

        An agent is one provider for the whole team run (a scripted queue plays in order
        across its tasks; an SDK client keeps its connections); all are closed at the end.
        """
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
        caps = (None, None, budget)
        pool = ProviderPool(every_provider=True)

        def run_agent(config: AgentConfig, prompt: str, task: str | None) -> Awaitable[RunResult]:
            call = {
                "run_id": None,
                "metadata": {"task": task} if task is not None else {},
                "timeout": None,
                "call_timeout": None,
            }
            nothing = (None, None, None)
            settings = RunSettings(task=task)
            return self._start(config, prompt, settings, call, nothing, caps, pool)

        try:
            yield run_agent
        finally:
            await pool.aclose()

    async def _emit_team(
        self, kind: str, agent: str | None, task: str | None, data: dict[str, Any]
    ) -> None:
        observers = self._observers()
        if not observers:
            return
        pending: list[asyncio.Task[None]] = []
        if isinstance(data.get("error"), BaseException):
            data = {**data, "error": detached_error(data["error"])}
        self._progress.emit(ProgressEvent(kind, agent, task, data), observers, pending)
        if pending:
            await self._progress.drain(pending)


async def _close(agent: Agent) -> None:
    try:
        await agent.aclose()
    except Exception as error:  # closing is best effort; the run's outcome stands
        _log.warning("closing agent %r failed: %s", agent.config.name, type(error).__name__)
