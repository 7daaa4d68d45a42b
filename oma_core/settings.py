"""``RunSettings``: everything one run is run with, beyond its agent's config.

``Agent.run(input, settings=...)`` takes one; ``OpenMultiAgent.run_agent`` resolves one per run
(its own defaults, then the agent's config, then the call's arguments) and hands it to the
agent. The run's loop reads the limits (``retry``, ``timeout``, ``call_timeout``); the built-in
call middleware reads the rest (``budgets``, ``progress``, ``tracer``) from ``RunContext``, the
same way a third-party plugin reads ``metadata``.

To add a per-run setting: add a field here, read it where it takes effect (the loop, or a
middleware through ``run.settings``), and pass it as
``run_agent(..., settings=RunSettings(x=...))``.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .budgets import Budget, CostEstimator
    from .retry import RetryPolicy

__all__ = ["ProgressEmitter", "RunSettings", "check_seconds", "new_run_id"]

#: ``emit(event_type, data)``: reports one progress event of the run it was made for.
ProgressEmitter = Callable[[str, dict[str, Any]], None]


#: Run ids are this process's random prefix and a counter: unique, unguessable across
#: processes, and cheap (every run needs one, middleware and progress events carry it).
_RUN_PREFIX = os.urandom(10).hex()
_run_numbers = itertools.count(1)


def new_run_id() -> str:
    """A fresh run id: 20 random hex digits of this process, then the run's number."""
    return f"{_RUN_PREFIX}{next(_run_numbers):012x}"


def check_seconds(name: str, value: object) -> None:
    """Refuse a time limit that is not a finite number of seconds > 0 (None: no limit)."""
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a number of seconds > 0 or None, got {value!r}")


def _seconds(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    check_seconds(attribute.name, value)


def _optional_count(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{attribute.name} must be an int >= 0 or None, got {value!r}")


def _metadata(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, first: every run resolves its settings
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(value).__name__}")
    return value


def _budgets(value: Iterable[Budget]) -> tuple[Budget, ...]:
    return value if type(value) is tuple else tuple(value)


@attrs.frozen(kw_only=True)
class RunSettings:
    """The settings of one run (all optional; the defaults run an agent plainly).

    - ``run_id``: the run's id (one is made when None); ``task``: the team task it runs;
      ``metadata``: the caller's data, handed to middleware and evaluation as given;
    - ``retry``: the ladder (None: the agent config's over the defaults); ``timeout`` bounds
      the run and ``call_timeout`` each model call (seconds);
    - ``budgets``: the ledgers every model call is charged to (a per-run one for numeric caps,
      and any shared ``Budget``); ``estimate_cost`` prices a call for cost caps;
    - ``progress``: where the run's progress events go (set by ``OpenMultiAgent``);
      ``tracer``/``trace_content``: OpenTelemetry spans for each call, and whether spans
      carry the (redacted) content.
    """

    run_id: str | None = None
    task: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_metadata)
    retry: RetryPolicy | None = None
    timeout: float | None = attrs.field(default=None, validator=_seconds)
    call_timeout: float | None = attrs.field(default=None, validator=_seconds)
    budgets: tuple[Budget, ...] = attrs.field(default=(), converter=_budgets)
    estimate_cost: CostEstimator | None = attrs.field(default=None, eq=False)
    progress: ProgressEmitter | None = attrs.field(default=None, eq=False, repr=False)
    tracer: Any | None = attrs.field(default=None, eq=False, repr=False)
    trace_content: bool = False
    #: At most this many tool calls in the run; past it, a call is answered with an error
    #: result (the tool does not run) so the model finishes without tools. None: no cap.
    max_tool_calls: int | None = attrs.field(default=None, validator=_optional_count)
