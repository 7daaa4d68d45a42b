"""Progress events (``ProgressEvent``), how their delivery went (``ProgressStats``), and the
events from inside a run. Delivery itself is ``_delivery``; its rules, the same for every
observer (``on_progress`` and the ``oma_progress`` hooks):

- each observer gets its own copy of the event (dicts and lists in ``data`` are fresh per
  observer; messages are immutable and shared), so nothing an observer does to an event
  reaches the run, the provider, the scorers or the next observer;
- a sync observer is called in order, as the event happens; an async one (a coroutine
  function, or any callable returning an awaitable) is started at once and awaited with a
  time limit before ``run_agent`` returns;
- an observer that raises or outlives the limit is counted (``ProgressStats``) and skipped:
  it never fails or stalls a run.

Events reach in-process observers unredacted, like the input itself.

A run's own events (``agent_start``, ``error``, ``agent_complete``, and ``warning`` for a tool
that returned an error result) come from a built-in plugin, ``default_plugins/progress``, on the
``oma_run`` / ``oma_tool_call`` hooks; ``retry`` is reported by the run as a back-off wait
begins, ``fallback`` as it turns to a fallback model, ``budget_exceeded`` by the budgets
middleware; a durable run's ``approval_requested``, ``run_suspended`` and ``run_resumed`` by
the run. All report to ``RunSettings.progress``.
A tool reports ``tool_progress`` itself, with ``report_tool_progress`` (from ``_tool_context``:
the call being run is known there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ._tool_context import report_tool_progress

__all__ = ["ProgressEvent", "ProgressObserver", "ProgressStats", "report_tool_progress"]


#: A progress observer: called with each event; may be a coroutine function.
ProgressObserver = Callable[["ProgressEvent"], object]


@attrs.frozen
class ProgressEvent:
    """Something that happened in a run.

    ``type`` is one of ``agent_start``, ``agent_complete``, ``retry``, ``budget_exceeded``,
    ``warning``, ``error``, ``tool_progress``, ``fallback`` (``{"from", "to", "error",
    "skipped"}``: the model that failed (or a fallback that cannot carry a later turn,
    handing over), the fallback model that answers now or None, the redacted error, and the
    fallbacks skipped, each ``{"model", "reason"}``), the durable
    run's ``approval_requested`` (an ``ApprovalRequest``'s JSON), ``run_suspended``
    (``{"pending": [call ids]}``) and ``run_resumed`` (``{"turns": n, "tool_calls": n}``; an
    external agent's run, which runs again from its start, adds ``"from_start": True`` and a
    ``"message"``), a durable team run's own ``run_suspended`` and ``run_resumed``
    (``{"tasks": {title: state}}``, with no agent and no task), and ``task_*`` for teams;
    ``agent`` is the agent's name; ``task`` the task title (None for ``run_agent``);
    ``data`` what the type carries, e.g. ``{"prompt": str}`` or ``{"messages":
    tuple[LLMMessage, ...]}`` for ``agent_start``; ``run_id`` the run it belongs to.
    """

    type: str
    agent: str | None
    task: str | None = None
    data: dict[str, Any] = attrs.field(factory=dict)
    run_id: str | None = None


@attrs.define
class ProgressStats:
    """How delivery went: events ``delivered`` to observers, observers that ``failed`` (raised)
    and that ``timed_out`` (async ones past ``observer_timeout``)."""

    delivered: int = 0
    failed: int = 0
    timed_out: int = 0
