# mypy: disable-error-code="empty-body"
"""Hook specifications for oma plugins; every hook is named ``oma_*``.

A plugin is a module (or any object) whose functions are marked with ``oma_core.hookimpl``
and carry one of the names below; it is found through the ``oma`` entry-point group and loaded
by ``oma_core.plugins.PluginHost``. A hook implementation may accept fewer arguments than the
specification lists, never others (pluggy refuses the plugin).

Four kinds of hooks (each hook says who implements it and when it runs):

- *collect*: called once per plugin when it loads; the lists they return are joined;
- *chain*: the agent calls the implementations one after another, each receiving what the
  previous one returned (see ``oma_before_run``);
- *observe*: every implementation is called with an event; what it returns is ignored and one
  that raises is counted and skipped, never failing the run;
- *wrap*: middleware around a whole run (``oma_run``) or one call (``oma_model_call``,
  ``oma_tool_call``). The hook is called through pluggy with ``firstresult``: one
  built-in implementation (``trylast``) does the work, and hook wrappers
  (``@hookimpl(wrapper=True)``) around it each receive the inner result from ``yield`` and
  return it, or something wrapping it. Wrappers compose in pluggy's order: ``tryfirst``
  outermost, ``trylast`` innermost, and among equals the plugin registered last outermost.
  They are the only hooks that may be wrappers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ._calls import CallEvents, ModelCall, RunContext, RunEvents, ToolInvocation
    from ._config import BeforeRunContext
    from ._eval_types import EvalResult
    from ._executors import ExecutorSpec
    from ._run_store import StoreSpec
    from .capabilities import BackendSpec, ProviderSpec
    from .messages import ToolResultBlock
    from .progress import ProgressEvent
    from .tools import ToolsetSpec

__all__ = [
    "hookimpl",
    "hookspec",
    "oma_before_run",
    "oma_evaluation_result",
    "oma_model_call",
    "oma_progress",
    "oma_register_backends",
    "oma_register_executors",
    "oma_register_providers",
    "oma_register_scorers",
    "oma_register_stores",
    "oma_register_toolsets",
    "oma_run",
    "oma_tool_call",
]

#: The hooks an implementation may wrap (``@hookimpl(wrapper=True)``); the others may not.
WRAPPABLE = frozenset({"oma_run", "oma_model_call", "oma_tool_call"})

#: Marks the specifications below.
hookspec = pluggy.HookspecMarker("oma")
#: Marks a plugin's hook implementations: ``@hookimpl def oma_register_providers(): ...``
#: (also ``oma_core.hookimpl``).
hookimpl = pluggy.HookimplMarker("oma")

# -------------------------------------------------------------------------------------------
# Registration hooks: called when plugins load, to learn what each plugin offers
# -------------------------------------------------------------------------------------------


@hookspec
def oma_register_providers() -> Sequence[ProviderSpec]:
    """Return the model providers this plugin offers.

    Implemented by provider plugins. Called once per plugin, when the plugin loads; what it
    returns is checked then and kept. Collect hook: the lists of every plugin are joined into
    one table keyed by ``ProviderSpec.name``. When two distributions register the same name,
    the one ``OMA_PREFER_PLUGINS`` chooses wins, else the one named for it (``oma-ollama`` for
    ``ollama``), else the name is ambiguous (``AmbiguousNameError`` when used); each clash is a
    ``PluginClashWarning`` and is listed by ``oma plugins`` (``PluginHost.clashes``).

    Keep it cheap: build ``ProviderSpec`` objects only. The SDK is imported by
    ``ProviderSpec.factory``, which the agent calls the first time the provider is used.

    :returns: a list of ``oma_core.ProviderSpec``. A plugin that raises here, or returns
        anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_backends() -> Sequence[BackendSpec]:
    """Return the external agent backends this plugin offers (a subprocess CLI, an ACP agent).

    Implemented by backend plugins (oma-process, oma-acp). Collect hook, called like
    ``oma_register_providers`` and combined the same way, keyed by ``BackendSpec.kind``: the
    value ``AgentConfig.backend["kind"]`` names. ``BackendSpec.factory`` receives the rest of
    that mapping when the agent first runs.

    :returns: a list of ``oma_core.BackendSpec``. A plugin that raises here, or returns
        anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_executors() -> Sequence[ExecutorSpec]:
    """Return the executors this plugin offers: where a team's task runs happen (oma-ray).

    Implemented by executor plugins. Collect hook, called like ``oma_register_providers`` and
    combined the same way, keyed by ``ExecutorSpec.name``: the value
    ``OpenMultiAgent(executor=...)`` names. ``ExecutorSpec.factory`` receives
    ``executor_options`` when the ``OpenMultiAgent`` is built; it must import nothing heavy
    (the cluster's library is imported when a team run opens the executor's session).

    :returns: a list of ``oma_core.toolkit.ExecutorSpec``. A plugin that raises here, or
        returns anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_toolsets() -> Sequence[ToolsetSpec]:
    """Return the kinds of toolset this plugin offers: tools listed at run time (oma-mcp).

    Implemented by toolset plugins. Collect hook, called like ``oma_register_providers`` and
    combined the same way, keyed by ``ToolsetSpec.kind``: the name a configuration uses
    (``"mcp"`` for the ``mcp`` section of AGENTS.json and ``oma run --mcp``).
    ``ToolsetSpec.factory`` receives one toolset's plain configuration (a mapping) and returns
    a ``Toolset``; it must start nothing (the toolset starts on first use).

    :returns: a list of ``oma_core.toolkit.ToolsetSpec``. A plugin that raises here, or
        returns anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_scorers() -> Sequence[Any]:
    """Return online-evaluation scorers shipped by this plugin.

    Implemented by evaluation packages. Called once per plugin, when it loads. A scorer is a
    callable (sync or async) that receives an ``oma_core.EvalCase`` and returns a float or an
    ``oma_core.Score``. Collect hook: the lists of every plugin are joined, in
    pluggy's call order, and offered next to the scorers of ``OnlineEvaluationConfig``.

    :returns: a list of scorer callables. A plugin that raises here, or returns a
        non-callable, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_stores() -> Sequence[StoreSpec]:
    """Return the run stores this plugin offers, by URL scheme (oma-postgres: ``postgresql``).

    Implemented by store plugins. Collect hook, called when a store URL is first resolved
    (``OpenMultiAgent(store="postgresql://...")``, ``oma_core.stores.open_store``), each
    plugin's implementation alone: one that raises or returns anything else is skipped. The
    first plugin in pluggy's call order to claim a scheme serves it. The spec's factory
    receives the whole URL and must connect to nothing (a store connects on first use).

    :returns: a list of ``oma_core.stores.StoreSpec``.
    """


# -------------------------------------------------------------------------------------------
# Run hooks: called by the agent while it runs
# -------------------------------------------------------------------------------------------


@hookspec
def oma_before_run(ctx: BeforeRunContext) -> BeforeRunContext | Mapping[str, Any] | None:
    """Rewrite the input of a run before the first model call.

    Implemented by packages that add context, redact or route. Chain hook: the agent calls the
    implementations one by one in pluggy's order (the plugin registered last first,
    ``tryfirst``/``trylast`` respected), then the agent's own ``AgentConfig.before_run``; each
    receives the previous one's result. The agent gets them in that order from
    ``PluginHost.hook_calls("oma_before_run")``: one pluggy call per plugin, since pluggy has no
    chain of its own. An implementation may be ``async def``: the agent awaits it before the
    next one runs. One plugin implements it once.

    Called once per run, after the input was validated and copied, before the first model call
    (invalid input runs no hook at all).
    A hook that raises, or returns something that is not a valid rewrite, fails the run (a
    failed ``RunResult``, or an ``error`` event from ``stream``); it never raises from ``run``.

    :param ctx: an ``oma_core.agent.BeforeRunContext`` with ``messages`` (a tuple of immutable
        messages), ``prompt`` (the text blocks of the latest user message joined with no
        separator; empty for an image-only turn) and ``agent`` (the agent's config).
    :returns: ``None`` (unchanged), a ``ctx`` changed with ``attrs.evolve``, or a mapping with
        ``messages`` and/or ``prompt``. New messages are validated and replace the input; a new
        prompt replaces the first text block of the latest user turn.
    """


@hookspec
def oma_progress(event: ProgressEvent) -> None:
    """Observe a run's progress: ``agent_start``, ``agent_complete``, ``task_start``, ...

    Implemented by packages that show or ship progress (a dashboard, a log). Called by
    ``OpenMultiAgent`` for every event of its runs and team runs. Observe hook: every
    implementation is called in pluggy's order as the event happens, after the ``on_progress``
    observer of ``OpenMultiAgent``. An ``async def`` implementation is
    awaited with a time limit before ``run_agent`` returns. What it returns is otherwise
    ignored; one that raises or times out is counted and skipped, so a failing observer never
    fails a run. Events carry the input unredacted, like the input
    itself: a plugin that ships them elsewhere redacts them first.

    :param event: an ``oma_core.ProgressEvent`` (``type``, ``agent``, ``task``, ``data``).
    """


@hookspec
def oma_evaluation_result(result: EvalResult) -> None:
    """Receive the result of one online evaluation: where evaluation results go.

    Implemented by packages that store evaluation results. Called by ``OpenMultiAgent``'s
    evaluator. Observe hook: called once per scored sample, after every scorer of that sample
    finished, off the run's critical path. What it returns is ignored; one that raises is counted in
    ``evaluation.stats().failed`` and skipped. The payloads in ``result`` follow the
    ``store_payloads`` policy of ``OnlineEvaluationConfig``.

    :param result: an ``oma_core.evaluation.EvalResult``: ``run_id``, ``agent``, ``status``,
        ``input`` and ``output`` as stored, ``metadata``, ``scores`` (scorer name -> ``Score``)
        and ``errors`` (scorer name -> error text of a scorer that failed).
    """


# -------------------------------------------------------------------------------------------
# Middleware: every run, every model call and every tool call of a run passes through these
# -------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def oma_run(run: RunContext) -> RunEvents:
    """Do one run of an agent, as events: middleware around the whole run.

    Wrap hook, called by the agent once per ``run``, ``stream`` and ``prompt`` (and so once
    per ``OpenMultiAgent.run_agent`` and per team task attempt), after the input was
    validated and copied and the target (provider or backend) resolved, before anything else
    happens. The built-in implementation (``trylast``) returns the async iterator of the run's
    ``StreamEvent``s: the ``before_run`` hooks, then the model calls and tool rounds (or the
    external agent's turn); the last event is always ``done``, whose data is the
    ``RunResult``, and a failed streaming run yields an ``error`` event before it. Nothing
    runs before that iterator is iterated; a run never raises for its own failure (a failed
    ``RunResult``), only for cancellation, after cleanup.

    A wrapper (``@hookimpl(wrapper=True)``) gets that iterator from ``yield`` and returns it,
    or an async iterator wrapping it: to report the run (progress events), trace it (the run
    span), score it (online evaluation) or release what it used, look at the events as they
    pass and at ``done`` last. A wrapper passes every event on, in order, ends when the inner
    iterator ends (closing it with ``aclosing``), and lets ``CancelledError`` propagate. The
    core's run progress (``agent_start``, ``error``, ``agent_complete``), run span, evaluation
    sample and the closing of a one-off agent's provider are wrappers of this hook.

    :param run: the ``oma_core.toolkit.RunContext``: ``run_id``, ``config``, ``settings``,
        ``input`` (a str, or the validated messages), ``stream``, ``target``, ``state``.
    :returns: an async iterator of ``oma_core.StreamEvent``, ``done`` last.
    """


@hookspec(firstresult=True)
def oma_model_call(call: ModelCall, run: RunContext) -> CallEvents:
    """Make one model call (one attempt), or one turn of an external agent: middleware.

    Wrap hook, called by the agent for every attempt of every model call of a run, on the
    retry ladder (so a retried call passes through again, with ``call.attempt`` and
    ``call.retry_of`` set) and for every turn of an external backend. The built-in
    implementation (``trylast``) returns the async iterator of the call's events: provider
    events (``TextDelta``, ``ReasoningDelta``, ``ToolCall``) and, for a backend, its tool
    events, with ``ResponseComplete`` last. Nothing is sent before that iterator is iterated.

    A wrapper (``@hookimpl(wrapper=True)``) gets that iterator from ``yield`` and returns it,
    or an async iterator wrapping it: to look at the events (usage, spans, logs), replace
    ``call.request`` before iterating (clamping ``max_tokens``), answer without calling at all
    (a cache: never iterate the inner one), or raise to stop the call (``BudgetExceededError``
    ends the run with status "budget_exhausted"; a retryable ``OmaError`` is retried). A
    wrapper iterates the inner events to their end (or closes them with ``aclosing``), and
    keeps what it needs about the run in ``run.state``. The core's budgets (``tryfirst``),
    tracing and per-call progress events are wrappers of this hook.

    :param call: the ``oma_core.toolkit.ModelCall``: ``request``, ``provider``, ``attempt``, ...
    :param run: the ``oma_core.toolkit.RunContext``: ``run_id``, ``config``, ``settings``
        (budgets, metadata, ...), ``state``.
    :returns: an async iterator of the call's events, ``ResponseComplete`` last.
    """


@hookspec(firstresult=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Awaitable[ToolResultBlock]:
    """Run one tool call the model asked for: middleware, like ``oma_model_call``.

    Wrap hook, called by the agent once per tool call, in the order the model asked for them.
    The built-in implementation (``trylast``) returns an awaitable of the ``ToolResultBlock``
    the model will see (a tool that raises, an unknown tool or invalid arguments give an error
    result, not an exception). A wrapper gets that awaitable from ``yield`` and returns it, or
    an awaitable wrapping it. The core's tool spans and tool warnings are wrappers of this hook.

    :param call: the ``oma_core.toolkit.ToolInvocation``: ``block`` (the ``ToolUseBlock``),
        ``tools``.
    :param run: the ``oma_core.toolkit.RunContext``.
    :returns: an awaitable of the ``ToolResultBlock``.
    """
