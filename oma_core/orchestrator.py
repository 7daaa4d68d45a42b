"""OpenMultiAgent: runs agents with orchestration — progress, budgets, retries, timeouts,
tracing and online evaluation — alone (``run_agent``) or as a team (``run_tasks``,
``run_team``).

One orchestrated run, top to bottom: ``run_agent`` resolves the run's ``RunSettings`` once
(``RunSettings.resolve``: ``OpenMultiAgent``'s defaults, the ``AgentConfig``'s, ``settings=``,
the call's keywords), adds where its progress, spans and evaluation sample go, builds a fresh
``Agent`` made for that one run and returns ``agent.run(input, settings=...)`` — which
validates and copies the input at the call. Everything else of the run (progress events, the
run span, the evaluation sample, closing what the run made) is middleware on ``oma_run``.

Token and cost caps given as numbers apply per run and the lowest of the orchestrator's and
the call's wins; a ``Budget`` passed as ``budget=`` is shared by every run it is passed to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, overload

import attrs

from ._approvals import Approval, ApprovalRequest
from ._delivery import ProgressDispatcher, RunEmitter
from ._durable import (
    LEASE_SECONDS,
    Recorder,
    config_head,
    continued_budget,
    handing,
    open_run,
    recorded_usage,
)
from ._executors import (
    PLAIN_DEFAULTS,
    ExecutionContext,
    Executor,
    RunDefaults,
    TaskRun,
    TaskRunner,
)
from ._pool import Closables, ProviderPool
from ._settings import (
    NO_OVERRIDES,
    NO_SETTINGS,
    RunOverrides,
    RunSettings,
    check_seconds,
    new_run_id,
)
from ._team_durable import (
    TEAM_KINDS,
    TeamRecorder,
    child_run_id,
    child_spent,
    open_team_run,
    run_kind,
    team_head,
)
from .agent import Agent, AgentConfig, RunResult
from .budgets import Budget, CostEstimator
from .default_plugins.local_executor import LocalExecutor
from .errors import UsageError
from .evaluation import Evaluator, OnlineEvaluationConfig
from .messages import LLMMessage, prompt_of, user_text
from .progress import ProgressEvent, ProgressObserver, ProgressStats
from .providers import Usage
from .redaction import detached_error
from .retry import DEFAULT_POLICY, RetryPolicy
from .stores import RunStore, open_store
from .tracing import get_tracer

if TYPE_CHECKING:
    from .plugins import PluginHost
    from .teams import Emit, RunAgent, TaskSpec, Team, TeamJournal, TeamRunResult

__all__ = ["Approval", "ApprovalRequest", "OpenMultiAgent"]

_log = logging.getLogger("oma.orchestrator")
#: How many one-off agents (one per config object) an ``OpenMultiAgent`` keeps for reuse.
_AGENTS_KEPT = 256


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
    an unknown name is a ``PluginError`` here. ``store`` makes ``run_agent``, ``run_tasks``
    and ``run_team`` runs durable (see ``resume``): a ``RunStore``, ``"memory"``,
    ``"sqlite"``, ``"sqlite:PATH"`` or a store plugin's URL
    (``oma_core.stores.open_store``); None, the default, keeps nothing.
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
        store: RunStore | str | None = None,
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
        defaults = RunDefaults(
            retry_policy=self._retry,
            max_token_budget=max_token_budget,
            max_cost_budget=max_cost_budget,
            estimate_cost=estimate_cost,
            timeout=timeout,
            call_timeout=call_timeout,
            trace_content=trace_content,
        )
        # Compared field by field but the policy by identity: its seams (sleep, random) are
        # not part of its equality.
        plain = defaults == PLAIN_DEFAULTS and self._retry is DEFAULT_POLICY
        self._defaults = PLAIN_DEFAULTS if plain else defaults
        self._plugins = plugins
        self._store = open_store(store, host=plugins)
        #: Who this object is to a store's leases: one worker.
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._providers = ProviderPool() if share_providers else None
        self._toolsets = Closables()  # the toolsets its runs used (MCP servers): shared
        self._tracer_provider = tracer_provider
        self._tracer_cache: Any | None = None
        # (host, its plugin generation, on_progress) and the observers they made.
        self._observers_kept: tuple[tuple[Any, Any, Any], list[ProgressObserver]] | None = None
        self._progress = ProgressDispatcher(observer_timeout)
        self._evaluating = evaluation is not None
        self.evaluation = Evaluator(
            evaluation or OnlineEvaluationConfig(),
            plugins,
            estimate_cost=estimate_cost,
            tracer_provider=tracer_provider,
            trace_content=trace_content,
        )
        self._executors: dict[str, Executor] = {}
        self._agents: dict[int, tuple[AgentConfig, Agent]] = {}
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
        durable = self._store is not None
        if durable and run_id is None:  # a durable run's id is known before it starts
            run_id = (settings.run_id if settings is not None else None) or new_run_id()
        keywords: tuple[object, ...] = (
            *(run_id, metadata, max_retries, retry_delay, retry_backoff),
            *(max_token_budget, max_cost_budget, budget, timeout, call_timeout),
        )
        if keywords.count(None) == len(keywords):  # nothing given: the common case, kept free
            return self._run(
                config, input, settings or NO_SETTINGS, NO_OVERRIDES, self._providers, self._agents
            )
        call = RunOverrides(
            run_id=run_id,
            metadata=metadata,
            max_retries=max_retries,
            retry_delay=retry_delay,
            retry_backoff=retry_backoff,
            max_token_budget=max_token_budget,
            max_cost_budget=max_cost_budget,
            budget=budget,
            timeout=timeout,
            call_timeout=call_timeout,
        )
        run = self._run(config, input, settings or NO_SETTINGS, call, self._providers, self._agents)
        if not durable:
            return run
        assert self._store is not None and run_id is not None
        recorder = Recorder(self._store, run_id, config_head(config), budget=budget)
        if config.backend is not None:  # checkpointed as it starts and as it ends
            assert isinstance(input, str)  # else the run refused it: a backend takes text
            return self._recorded(run, recorder, (user_text(input),))
        return self._recorded(run, recorder)

    @overload
    async def resume(
        self,
        run_id: str,
        *,
        config: AgentConfig | None = None,
        team: Team,
        approvals: Mapping[str, bool | Approval] | None = None,
        tasks: Iterable[TaskSpec] | None = None,
        budget: Budget | None = None,
    ) -> TeamRunResult: ...

    @overload
    async def resume(
        self,
        run_id: str,
        *,
        config: AgentConfig | None = None,
        team: None = None,
        approvals: Mapping[str, bool | Approval] | None = None,
        tasks: Iterable[TaskSpec] | None = None,
        budget: Budget | None = None,
    ) -> RunResult | TeamRunResult: ...

    async def resume(
        self,
        run_id: str,
        *,
        config: AgentConfig | None = None,
        team: Team | None = None,
        approvals: Mapping[str, bool | Approval] | None = None,
        tasks: Iterable[TaskSpec] | None = None,
        budget: Budget | None = None,
    ) -> RunResult | TeamRunResult:
        """Continue the durable run ``run_id`` from its last checkpoint.

        A tool whose result was checkpointed is not run again; one interrupted while running
        is run again with the same call id (``current_tool_call().id``). Usage is summed over
        both lives. A finished run returns its stored result. ``approvals`` decides the calls
        a suspended run waits for (``{call_id: True | False | Approval(...)}``; the first
        decision stored wins). ``config`` gives what a checkpoint cannot hold (tools,
        provider objects, output types); ``ResumeMissingError`` names what is missing. A
        finished run's ``structured`` output is validated again against ``config``'s output
        type; without one it is None (``output`` holds its text).
        The shared ``Budget`` the run was given (``budget=``) goes on from what its
        checkpoints say was spent: rebuilt from them, or ``budget`` given again (its caps
        win; charged up to that spend when it counts less).
        Raises ``UnknownRunError``, ``CheckpointError``, ``UnknownApprovalError``,
        ``ApprovalMismatchError`` or ``LeaseHeldError`` (another worker resumes it now).

        A team run (``run_tasks``, ``run_team``) returns a ``TeamRunResult``: finished tasks
        are read back, not rerun; a task under way resumes from its own run's checkpoint.
        ``team`` gives its team again (needed when its agents have tools or provider
        objects; rebuilt from the checkpoint otherwise), ``tasks`` a ``run_tasks`` plan whose
        tasks have output types or prompt builders, ``config`` a ``run_team`` run's own
        coordinator. The approvals of a team run go to the task runs that asked for them.
        """
        store = self._store
        if store is None:
            raise UsageError("resume needs a run store: OpenMultiAgent(store=...)")
        kind, _ = await run_kind(store, run_id)
        if kind in TEAM_KINDS:
            return await self._resume_team(run_id, team, tasks, config, approvals, budget)
        if team is not None or tasks is not None:
            raise UsageError(f"run {run_id!r} is an agent run: team= and tasks= are for team runs")
        opened = await open_run(store, run_id)
        output_type = None if config is None else config.output_type
        if opened.finished:
            await opened.decide(store, approvals)
            return await opened.result(store, output_type)
        await store.acquire(run_id, self._owner, LEASE_SECONDS)
        try:
            opened = await open_run(store, run_id)  # as it is now that no one else resumes it
            await opened.decide(store, approvals)
            if opened.finished:
                return await opened.result(store, output_type)
            chosen = opened.config(config)
            shared = continued_budget(opened.state.get("budget"), budget)
            recorder = Recorder(
                store,
                run_id,
                config_head(chosen),
                restored=opened.state,
                decisions=await store.decisions(run_id),
                lease=self._owner,
                budget=shared,
            )
            call = RunOverrides(run_id=run_id, budget=shared)
            kept = await opened.input(store)  # what observers see; the run reads its own
            given: str | Sequence[Any] = kept
            if chosen.backend is not None:  # its input as it was given: text
                given = prompt_of(kept)
                await self._from_start(chosen, run_id)
            spent = self._spent(chosen, run_id, recorded_usage(opened.state))
            run = self._run(chosen, given, spent, call, self._providers, self._agents)
            return await self._recorded(run, recorder)
        finally:
            await store.release(run_id, self._owner)

    async def _from_start(self, config: AgentConfig, run_id: str) -> None:
        """An external agent's run resumed: it runs again from its start (its first life's
        steps were the backend's, not checkpointed); ``run_resumed`` with ``from_start`` and
        a log line say so."""
        kind = config.provider_name
        note = (
            f"run {run_id} of the external agent {kind!r} had no checkpoint of its steps: "
            "it runs again from its start"
        )
        _log.warning("%s", note)
        data = {"turns": 0, "tool_calls": 0, "from_start": True, "message": note}
        await self._emit_event(ProgressEvent("run_resumed", config.name, None, data, run_id))

    async def _resume_team(
        self,
        run_id: str,
        team: Team | None,
        tasks: Iterable[TaskSpec] | None,
        coordinator: AgentConfig | None,
        approvals: Mapping[str, bool | Approval] | None,
        given: Budget | None,
    ) -> TeamRunResult:
        """``resume`` of a team run: its plan and finished tasks read back, the rest run
        (``run_resumed`` said first, with each task's state as the checkpoint holds it)."""
        store = self._store
        assert store is not None
        await store.acquire(run_id, self._owner, LEASE_SECONDS)
        try:
            _, state = await run_kind(store, run_id)  # as it is now no one else resumes it
            opened = await open_team_run(store, run_id, state)
            await opened.decide(store, approvals)
            if opened.finished:  # read back as it ended; its team is not needed
                return await opened.result(store, tasks)
            chosen = opened.team(team)
            executor = str(state.get("executor") or self.executor)
            plan = opened.plan(tasks) if opened.kind == "tasks" else ()
            lead = opened.coordinator(coordinator) if opened.kind == "team" else None
            budget = await opened.budget(store, given)
            info: dict[str, Any] = {}
            if opened.kind == "team":
                info = {"goal": state["goal"], "coordinator": state.get("coordinator")}
            journal = self._journal(run_id, opened.kind, chosen, executor, state, info, budget)
            statuses = {title: task["status"] for title, task in dict(state["tasks"]).items()}
            await self._emit_run("run_resumed", run_id, {"tasks": statuses})
            if opened.kind == "tasks":
                return await self._tasks(chosen, plan, budget, executor, journal)
            return await self._team(chosen, str(state["goal"]), lead, budget, executor, journal)
        finally:
            await store.release(run_id, self._owner)

    def _journal(
        self,
        run_id: str | None,
        kind: str,
        team: Team,
        executor: str,
        restored: Mapping[str, Any] | None,
        info: Mapping[str, Any],
        budget: Budget | None,
    ) -> TeamRecorder | None:
        """The journal of a team run with a store (None without one)."""
        if self._store is None:
            return None
        local = type(self._executor(executor)) is LocalExecutor
        return TeamRecorder(
            self._store,
            run_id or new_run_id(),
            kind,
            team_head(team),
            local=local,
            restored=restored,
            info={**info, "executor": executor},
            budget=budget,
        )

    def _spent(self, config: AgentConfig, run_id: str, usage: Usage | None) -> RunSettings:
        """The settings of a resumed run whose earlier lives spent ``usage``: a ledger with
        the per-run caps charged with it, so the caps count both lives (the run's own fresh
        ledger counts this life alone; the lower room wins)."""
        tokens, cost = self.max_token_budget, self.max_cost_budget
        if usage is None or (tokens is None and cost is None):
            return NO_SETTINGS
        used_cost = 0.0
        if self.estimate_cost is not None and usage.total_tokens:
            from .budgets import CostContext

            provider = config.provider if isinstance(config.provider, str) else "object"
            context = CostContext(config.name, provider, config.model, run_id)
            try:  # the usage priced as one call: prices are linear in tokens
                used_cost = float(self.estimate_cost(usage, context))
            except Exception:
                used_cost = math.inf  # as the budget middleware does: never a cap switched off
        ledger = Budget(max_tokens=tokens, max_cost=cost, used_tokens=usage.total_tokens)
        ledger.used_cost = used_cost
        return RunSettings(budgets=(ledger,))

    async def _recorded(
        self,
        run: Coroutine[Any, Any, RunResult],
        recorder: Recorder,
        begun: tuple[LLMMessage, ...] | None = None,
    ) -> RunResult:
        """A durable run: ``run`` awaited with ``recorder`` handed to it, then its last
        checkpoint (cancelled, the last checkpoint stays: ``resume`` goes on from it). An
        external agent's run (``begun``: its input) is checkpointed as it starts, since it
        reports no steps."""
        if begun is not None:
            try:
                await recorder.begun(begun)
            except BaseException:
                run.close()  # never started: nothing to say it was not awaited
                raise
        with handing(recorder):
            result = await run
        await recorder.finish(result)
        return attrs.evolve(result, run_id=recorder.run_id)

    async def run_tasks(
        self,
        team: Team,
        tasks: Iterable[TaskSpec],
        *,
        budget: Budget | None = None,
        executor: str | None = None,
        run_id: str | None = None,
    ) -> TeamRunResult:
        """Run a caller's plan on ``team``; each task is one ``run_agent`` on its assignee.

        ``budget`` is shared by every task's run; ``executor`` names where the runs happen
        for this call (default: the one ``OpenMultiAgent(executor=...)`` chose). With a run
        store the team run is durable under ``run_id`` (one is made when None;
        ``TeamRunResult.run_id``): see ``resume``.
        """
        name = executor or self.executor
        journal = self._journal(run_id, "tasks", team, name, None, {}, budget)
        return await self._tasks(team, tasks, budget, executor, journal)

    async def _tasks(
        self,
        team: Team,
        tasks: Iterable[TaskSpec],
        budget: Budget | None,
        executor: str | None,
        journal: TeamRecorder | None,
    ) -> TeamRunResult:
        from . import teams

        chosen = self._executor(executor) if executor is not None else None
        if (executor or self.executor) != "local" or journal is not None:
            tasks = teams.check_plan(team, tasks)  # a bad plan opens no cluster session
        async with self._team_session(chosen, budget, journal) as (run_agent, run_task):
            result = await teams.run_tasks(
                team,
                tasks,
                run_agent=run_agent,
                run_task=run_task,
                emit=self._team_emit(),
                journal=journal,
            )
        return result if journal is None else await self._finished(journal, result)

    async def _finished(self, journal: TeamRecorder, result: TeamRunResult) -> TeamRunResult:
        """A durable team run's last checkpoint; ``run_suspended`` when it waits for
        decisions (the task runs that wait said ``approval_requested`` each)."""
        result = await journal.finish(result)
        if result.pending:
            calls = [request.call_id for request in result.pending]
            await self._emit_run("run_suspended", journal.run_id, {"pending": calls})
        return result

    async def run_team(
        self,
        team: Team,
        goal: str,
        *,
        coordinator: AgentConfig | None = None,
        plan_only: bool = False,
        budget: Budget | None = None,
        executor: str | None = None,
        run_id: str | None = None,
    ) -> TeamRunResult:
        """Ask a coordinator for a plan for ``goal``, run it, then ask for the final answer.

        The coordinator runs here; the tasks on the executor. ``budget`` is shared by every
        run of the team run, the coordinator's included. With a run store the team run is
        durable under ``run_id`` (one is made when None), its plan saved once made: see
        ``resume``. A ``plan_only`` run keeps nothing.
        """
        journal = None
        if not plan_only and self._store is not None:
            lead = None if coordinator is None else config_head(coordinator)
            info = {"goal": goal, "coordinator": lead}
            name = executor or self.executor
            journal = self._journal(run_id, "team", team, name, None, info, budget)
        return await self._team(team, goal, coordinator, budget, executor, journal, plan_only)

    async def _team(
        self,
        team: Team,
        goal: str,
        coordinator: AgentConfig | None,
        budget: Budget | None,
        executor: str | None,
        journal: TeamRecorder | None,
        plan_only: bool = False,
    ) -> TeamRunResult:
        from . import teams

        chosen = self._executor(executor) if executor is not None else None
        async with self._team_session(chosen, budget, journal) as (run_agent, run_task):
            result = await teams.run_team(
                team,
                goal,
                coordinator=coordinator,
                plan_only=plan_only,
                run_agent=run_agent,
                emit=self._team_emit(),
                run_task=run_task,
                journal=journal,
            )
        return result if journal is None else await self._finished(journal, result)

    async def aclose(self) -> None:
        """Score the queued evaluation cases, then close the providers runs shared on this loop
        and the toolsets (MCP servers) its runs used.

        Shared providers and toolsets are closed when the event loop shuts down anyway; call
        this (or use ``async with OpenMultiAgent(...)``) to close them sooner. The object stays
        usable: later runs make new providers and start the toolsets again.
        """
        try:
            await self.evaluation.flush()
        finally:
            try:
                if self._providers is not None:
                    await self._providers.aclose()
            finally:
                await self._toolsets.aclose()

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

    def _run(
        self,
        config: AgentConfig,
        input: str | Sequence[Any],
        given: RunSettings,
        call: RunOverrides,
        pool: ProviderPool | None,
        agents: dict[int, tuple[AgentConfig, Agent]],
        task: str | None = None,
    ) -> Coroutine[Any, Any, RunResult]:
        """The run's settings, resolved once, and where its progress, spans and sample go;
        then ``Agent.run`` of an agent made for this one run (it checks the input, now).
        ``task``: the team task the run is (its title, in the settings and the metadata)."""
        if task is not None:
            given = RunSettings(task=task, metadata={"task": task})
        settings = RunSettings.resolve(self._defaults, config, given, call)
        observers = self._observers()
        tracer = self._tracer()
        if observers or tracer is not None or self._evaluating:
            run_id = settings.run_id
            if run_id is None:  # resolve left the settings as given: the run needs an id now
                run_id = new_run_id()
            progress = (  # ``self._progress.emitter(...)``, one call fewer on the run's path
                RunEmitter(self._progress, observers, config.name, settings.task, run_id)
                if observers
                else None
            )
            evaluator = self.evaluation if self._evaluating else None
            if settings is NO_SETTINGS:  # built, not evolved: the common case, kept cheap
                settings = RunSettings(
                    run_id=run_id, progress=progress, tracer=tracer, evaluator=evaluator
                )
            else:
                settings = attrs.evolve(
                    settings, run_id=run_id, progress=progress, tracer=tracer, evaluator=evaluator
                )
        return self._agent(config, pool, agents).run(input, settings=settings)  # type: ignore[return-value]

    def _agent(
        self,
        config: AgentConfig,
        pool: ProviderPool | None,
        agents: dict[int, tuple[AgentConfig, Agent]],
    ) -> Agent:
        """The agent for runs of ``config``: made for one run at a time (it keeps nothing
        between runs; what a run makes, the run closes), so one serves every run of that
        config object. ``agents`` holds them by config (ours, or a team run's own)."""
        held = agents.get(id(config))
        if held is not None and held[0] is config:
            return held[1]
        agent = Agent(
            config,
            plugins=self._host(),
            provider_pool=pool,
            close_after_run=True,
            toolset_owner=self._toolsets,
        )
        if len(agents) >= _AGENTS_KEPT:
            agents.clear()
        agents[id(config)] = (config, agent)  # the config is kept: its id is not reused
        return agent

    # -- what runs share -----------------------------------------------------------------------

    def _host(self) -> PluginHost:
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
        return self._plugins

    def _observers(self) -> list[ProgressObserver]:
        """``on_progress`` then the ``oma_progress`` hooks (the host keeps that list).

        Asked for every run, so the answer is kept until a plugin is registered or
        unregistered: the host's plugin manager counts those changes (``generation``)."""
        host = self._host()
        generation = getattr(host.pm, "generation", None)
        on_progress = self.on_progress
        kept = self._observers_kept
        if (
            kept is not None
            and generation is not None
            and kept[0] == (host, generation, on_progress)
        ):
            return kept[1]
        try:
            hooks: list[ProgressObserver] = list(host.hooks.progress())
        except Exception as error:  # a broken plugin host must not break runs
            _log.warning("could not list oma_progress hooks: %s", type(error).__name__)
            hooks = []
        observers = [on_progress, *hooks] if on_progress is not None else hooks
        self._observers_kept = ((host, generation, on_progress), observers)
        return observers

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
    async def _team_session(
        self, executor: Executor | None, budget: Budget | None, journal: TeamJournal | None = None
    ) -> AsyncIterator[tuple[RunAgent, TaskRunner | None]]:
        """One team run: its ``run_agent`` (tasks and coordinator share providers), and the
        runner of its tasks on the executor (``executor``, else the default one) — None for
        the built-in local executor, whose session only hands back that ``run_agent``."""
        run_agent, pools = self._team_run_agent(budget, journal is not None)
        chosen = executor or self._executor(self.executor)
        try:
            if type(chosen) is LocalExecutor:
                yield run_agent, None
                return

            def run_local(run: TaskRun) -> Awaitable[RunResult]:
                return run_agent(run.config, run.prompt, run.task)

            context = ExecutionContext(
                run_local=run_local, emit=self._emit_event, defaults=self._defaults, budget=budget
            )
            async with chosen.session(context) as run_task:
                yield run_agent, run_task
        finally:
            if pools:
                await pools[0].aclose()

    async def _emit_event(self, event: ProgressEvent) -> None:
        """Deliver an event that happened elsewhere (an executor's worker) to our observers."""
        observers = self._observers()
        if not observers:
            return
        pending: list[asyncio.Task[None]] = []
        self._progress.emit(event, observers, pending)
        if pending:
            await self._progress.drain(pending)

    def _team_run_agent(
        self, budget: Budget | None, durable: bool = False
    ) -> tuple[RunAgent, list[ProviderPool]]:
        """A ``run_agent`` for one team run whose tasks and coordinator share providers, and
        the pool it made (an empty list until a run needs one; the caller closes it).

        A provider named in a config is one provider for the whole team run (a scripted
        queue plays in order across its tasks; an SDK client keeps its connections), made
        on first use. A config holding a provider object, or naming a backend, uses no pool:
        its runs take the ``OpenMultiAgent``'s own agents, as ``run_agent`` does. In a
        ``durable`` team run each run has the id of its child run (``child_run_id``).
        """
        pools: list[ProviderPool] = []
        agents: dict[int, tuple[AgentConfig, Agent]] = {}
        shared = NO_OVERRIDES if budget is None else RunOverrides(budget=budget)  # checked

        def run_agent(config: AgentConfig, prompt: str, task: str | None) -> Awaitable[RunResult]:
            child = child_run_id() if durable else None
            if child is not None:
                return run_child(config, prompt, task, child)
            if config.backend is not None or not isinstance(config.provider, str):
                return self._run(
                    config, prompt, NO_SETTINGS, shared, self._providers, self._agents, task
                )
            if not pools:
                pools.append(ProviderPool(every_provider=True))
            return self._run(config, prompt, NO_SETTINGS, shared, pools[0], agents, task)

        def run_child(
            config: AgentConfig, prompt: str, task: str | None, child: str
        ) -> Awaitable[RunResult]:
            call = RunOverrides(run_id=child, budget=budget)
            spent = self._spent(config, child, child_spent())
            if spent is not NO_SETTINGS:
                spent = attrs.evolve(spent, task=task, metadata={"task": task})
                task = None  # given in the settings
            if not isinstance(config.provider, str):
                return self._run(config, prompt, spent, call, self._providers, self._agents, task)
            if not pools:
                pools.append(ProviderPool(every_provider=True))
            return self._run(config, prompt, spent, call, pools[0], agents, task)

        return run_agent, pools

    def _team_emit(self) -> Emit | None:
        """Where a team run reports its task events: None when nobody listens as it starts."""
        return self._emit_team if self._observers() else None

    async def _emit_run(self, kind: str, run_id: str, data: dict[str, Any]) -> None:
        """A team run's own event (``run_suspended``, ``run_resumed``): no agent, no task,
        the team run's id."""
        await self._emit_event(ProgressEvent(kind, None, None, data, run_id=run_id))

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
