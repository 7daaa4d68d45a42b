# mypy: disable-error-code="empty-body"
"""Hook specifications for oma plugins; every hook is named ``oma_*``.

A plugin is a module (or any object) whose functions are marked with ``oma_core.hookimpl``
and carry one of the names below; it is found through the ``oma`` entry-point group and loaded
by ``oma_core.plugins.PluginHost``. A hook implementation may accept fewer arguments than the
specification lists, never others (pluggy refuses the plugin).

Three kinds of hooks:

- *collect*: every implementation is called and the lists they return are joined;
- *chain*: the agent calls the implementations one after another, each receiving what the
  previous one returned (see ``oma_before_run``);
- *observe*: every implementation is called with an event; what it returns is ignored and one
  that raises is counted and skipped, never failing the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .capabilities import BackendSpec, ProviderSpec

__all__ = [
    "hookspec",
    "oma_before_run",
    "oma_evaluation_result",
    "oma_progress",
    "oma_register_backends",
    "oma_register_providers",
    "oma_register_scorers",
]

hookspec = pluggy.HookspecMarker("oma")

# -------------------------------------------------------------------------------------------
# Registration hooks: called when plugins load, to learn what each plugin offers
# -------------------------------------------------------------------------------------------


@hookspec
def oma_register_providers() -> Sequence[ProviderSpec]:
    """Return the model providers this plugin offers.

    Called once per plugin when the plugin loads (to check what it returns) and again when the
    host first needs its providers; the results are cached until a plugin is registered or
    unregistered. Collect hook: the lists of every plugin are joined into one table keyed by
    ``ProviderSpec.name``. When two plugins register the same name, the one pluggy calls first
    (the one registered last) wins and ``oma plugins`` notes the other as shadowed.

    Keep it cheap: build ``ProviderSpec`` objects only. The SDK is imported by
    ``ProviderSpec.factory``, which the agent calls the first time the provider is used.

    :returns: a list of ``oma_core.ProviderSpec``. A plugin that raises here, or returns
        anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_backends() -> Sequence[BackendSpec]:
    """Return the external agent backends this plugin offers (a subprocess CLI, an ACP agent).

    Collect hook, called like ``oma_register_providers`` and combined the same way, keyed by
    ``BackendSpec.kind``: the value ``AgentConfig.backend["kind"]`` names. ``BackendSpec.factory``
    receives the rest of that mapping when the agent first runs.

    :returns: a list of ``oma_core.BackendSpec``. A plugin that raises here, or returns
        anything else, is unregistered and reported as a load failure.
    """


@hookspec
def oma_register_scorers() -> Sequence[Any]:
    """Return online-evaluation scorers shipped by this plugin.

    A scorer is a callable (sync or async) that receives an ``oma_core.EvalCase`` and returns a
    float or an ``oma_core.Score``. Collect hook: the lists of every plugin are joined, in
    pluggy's call order, and offered next to the scorers of ``OnlineEvaluationConfig``.

    :returns: a list of scorer callables. A plugin that raises here, or returns a
        non-callable, is unregistered and reported as a load failure.
    """


# -------------------------------------------------------------------------------------------
# Run hooks: called by the agent while it runs
# -------------------------------------------------------------------------------------------


@hookspec
def oma_before_run(ctx: Any) -> Any | Mapping[str, Any] | None:
    """Rewrite the input of a run before the first model call.

    Chain hook: the agent calls the implementations one by one in pluggy's order (the plugin
    registered last first, ``tryfirst``/``trylast`` respected), then the agent's own
    ``AgentConfig.before_run``; each receives the previous one's result. The agent gets the
    implementations in that order from ``PluginHost.before_run_hooks()``. An implementation may
    be ``async def``: the agent awaits it.

    Called once per run, after the input was validated and copied, before the first model call
    (invalid input runs no hook at all).
    A hook that raises, or returns something that is not a valid rewrite, fails the run (a
    failed ``RunResult``, or an ``error`` event from ``stream``); it never raises from ``run``.

    :param ctx: an ``oma_core.BeforeRunContext`` with ``messages`` (a tuple of immutable
        messages), ``prompt`` (the text blocks of the latest user message joined with no
        separator; empty for an image-only turn) and ``agent`` (the agent's config).
    :returns: ``None`` (unchanged), a ``ctx`` changed with ``attrs.evolve``, or a mapping with
        ``messages`` and/or ``prompt``. New messages are validated and replace the input; a new
        prompt replaces the first text block of the latest user turn.
    """


@hookspec
def oma_progress(event: Any) -> None:
    """Observe a run's progress: ``agent_start``, ``agent_complete``, ``task_start``, ...

    Observe hook: every implementation is called in pluggy's order as the event happens, after
    the ``on_progress`` observer of ``OpenMultiAgent``. An ``async def`` implementation is
    awaited with a time limit before ``run_agent`` returns. What it returns is otherwise
    ignored; one that raises or times out is counted and skipped, so a failing observer never
    fails a run. Events carry the input unredacted, like the input
    itself: a plugin that ships them elsewhere redacts them first.

    :param event: an ``oma_core.ProgressEvent`` (``type``, ``agent``, ``task``, ``data``).
    """


@hookspec
def oma_evaluation_result(result: Any) -> None:
    """Receive the result of one online evaluation: where evaluation results go.

    Observe hook: called once per scored sample, after every scorer of that sample finished,
    off the run's critical path. What it returns is ignored; one that raises is counted in
    ``evaluation.stats().failed`` and skipped. The payloads in ``result`` follow the
    ``store_payloads`` policy of ``OnlineEvaluationConfig``.

    :param result: an ``oma_core.evaluation.EvalResult``: ``run_id``, ``agent``, ``status``,
        ``input`` and ``output`` as stored, ``metadata``, ``scores`` (scorer name -> ``Score``)
        and ``errors`` (scorer name -> error text of a scorer that failed).
    """
