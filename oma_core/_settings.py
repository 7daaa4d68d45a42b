"""``RunSettings``: everything one run is run with, beyond its agent's config.

``Agent.run(input, settings=...)`` takes one; ``OpenMultiAgent.run_agent`` resolves one per run
with ``RunSettings.resolve`` — the one place where precedence lives: the orchestrator's
defaults, then the agent's config, then the ``settings`` given, then the call's keywords
(``RunOverrides``) — and hands it to the agent. The run's loop reads the limits (``retry``,
``timeout``, ``call_timeout``); the built-in middleware reads the rest (``budgets``,
``progress``, ``tracer``, ``evaluator``) from ``RunContext``, the same way a third-party
plugin reads ``metadata``.

To add a per-run setting: add a field here, read it where it takes effect (the loop, or a
middleware through ``run.settings``), and pass it as
``run_agent(..., settings=RunSettings(x=...))``: two files.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._executors import PLAIN_DEFAULTS

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._executors import RunDefaults
    from .budgets import Budget, CostEstimator
    from .retry import RetryPolicy

__all__ = ["ProgressEmitter", "RunOverrides", "RunSettings", "check_seconds", "new_run_id"]

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


def _cap(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value < 0
    ):
        raise ValueError(f"{attribute.name} must be a number >= 0 or None, got {value!r}")


def _output_type(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        from ._output import output_spec

        output_spec(value)


def _output_mode(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and value not in ("native", "tool", "prompted"):
        raise ValueError(f'output_mode must be "native", "tool", "prompted" or None, got {value!r}')


def _run_id(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"run_id must be a str, got {type(value).__name__}")


def _shared_budget(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    from .budgets import Budget

    if value is not None and not isinstance(value, Budget):
        raise TypeError(f"budget must be a Budget, got {type(value).__name__}")


def _copied_metadata(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The caller's metadata, deep-copied: mutating it after the call changes nothing."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(value).__name__}")
    import copy

    return copy.deepcopy(dict(value))


@attrs.frozen(kw_only=True)
class RunOverrides:
    """The per-run keywords of ``OpenMultiAgent.run_agent``: the most specific settings.

    Checked when built (that is, when ``run_agent`` is called). Numeric caps make a ledger of
    the run; ``budget`` is a ``Budget`` shared with whatever else it is passed to.
    """

    run_id: str | None = attrs.field(default=None, validator=_run_id)
    metadata: Mapping[str, Any] | None = attrs.field(default=None, converter=_copied_metadata)
    max_retries: int | None = None
    retry_delay: float | None = None
    retry_backoff: float | None = None
    max_token_budget: int | float | None = attrs.field(default=None, validator=_cap)
    max_cost_budget: float | None = attrs.field(default=None, validator=_cap)
    budget: Budget | None = attrs.field(default=None, validator=_shared_budget)
    timeout: float | None = attrs.field(default=None, validator=_seconds)
    call_timeout: float | None = attrs.field(default=None, validator=_seconds)


#: No keywords given: ``resolve`` recognises it and does no work.
NO_OVERRIDES = RunOverrides()


def _lowest(first: float | None, second: float | None) -> float | None:
    if first is None:
        return second
    return first if second is None else min(first, second)


def _given(first: Any, second: Any) -> Any:
    """The first that is set (not None)."""
    return first if first is not None else second


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
      ``tracer``/``trace_content``: OpenTelemetry spans for the run and each call, and
      whether spans carry the (redacted) content; ``evaluator``: where the run's online
      evaluation sample goes (set by ``OpenMultiAgent``).
    """

    run_id: str | None = None
    task: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_metadata)
    retry: RetryPolicy | None = None
    timeout: float | None = None
    call_timeout: float | None = None
    budgets: tuple[Budget, ...] = attrs.field(default=(), converter=_budgets)
    estimate_cost: CostEstimator | None = attrs.field(default=None, eq=False)
    progress: ProgressEmitter | None = attrs.field(default=None, eq=False, repr=False)
    tracer: Any | None = attrs.field(default=None, eq=False, repr=False)
    trace_content: bool = False
    #: Where the run's online-evaluation sample goes (``OpenMultiAgent``'s evaluator, with
    #: ``submit``); None: the run is not sampled.
    evaluator: Any | None = attrs.field(default=None, eq=False, repr=False)
    #: At most this many tool calls in the run; past it, a call is answered with an error
    #: result (the tool does not run) so the model finishes without tools. None: no cap.
    max_tool_calls: int | None = None
    #: This run's output type, in place of ``AgentConfig.output_type`` (same kinds, checked
    #: when the settings are built); None: the agent's own. Read by the run's loop.
    output_type: Any = None
    #: This run's output mode ("native", "tool", "prompted"), in place of
    #: ``AgentConfig.output_mode``; None: the config's, else the best the provider declares.
    output_mode: str | None = None

    def __attrs_post_init__(self) -> None:
        # The fields' checks, in their order, each only for a value given (one call rather
        # than one per field: settings are built per run, and most leave these unset).
        if self.timeout is not None:
            check_seconds("timeout", self.timeout)
        if self.call_timeout is not None:
            check_seconds("call_timeout", self.call_timeout)
        if self.max_tool_calls is not None:
            _optional_count(self, _FIELD_MAX_TOOL_CALLS, self.max_tool_calls)
        if self.output_type is not None:
            _output_type(self, _FIELD_OUTPUT_TYPE, self.output_type)
        if self.output_mode is not None:
            _output_mode(self, _FIELD_OUTPUT_MODE, self.output_mode)

    def output(self, config: AgentConfig) -> tuple[Any, str | None]:
        """The run's output type and wanted output mode: these settings' where set, else the
        config's (the one place this precedence lives; the run's loop and ``oma render``
        read it)."""
        output_type = self.output_type if self.output_type is not None else config.output_type
        mode = self.output_mode if self.output_mode is not None else config.output_mode
        return output_type, mode

    @classmethod
    def resolve(
        cls,
        defaults: RunDefaults,
        config: AgentConfig,
        given: RunSettings,
        call: RunOverrides,
    ) -> RunSettings:
        """One run's settings; the only place where precedence lives. From least to most
        specific: ``defaults`` (the orchestrator's), ``config`` (the agent's: its retry
        settings), ``given`` (``settings=``), ``call`` (the call's keywords). Numeric caps
        are the lowest of the orchestrator's and the call's, as a ledger of this run; a
        shared ``Budget`` and ``given.budgets`` are added as they are. The run id is the
        call's, the given one, or a new one.

        Nothing set anywhere returns ``given`` itself: the agent's own defaults are the
        settings (the common case, kept free).
        """
        if call is NO_OVERRIDES and defaults is PLAIN_DEFAULTS and given is NO_SETTINGS:
            return given
        token_cap = _lowest(defaults.max_token_budget, call.max_token_budget)
        cost_cap = _lowest(defaults.max_cost_budget, call.max_cost_budget)
        budgets: list[Budget] = []
        if token_cap is not None or cost_cap is not None:
            from .budgets import Budget

            budgets.append(Budget(max_tokens=token_cap, max_cost=cost_cap))  # this run's own
        if call.budget is not None:
            budgets.append(call.budget)
        budgets.extend(given.budgets)
        estimate_cost = _given(given.estimate_cost, defaults.estimate_cost)
        if estimate_cost is None and any(b.max_cost is not None for b in budgets):
            raise ValueError("a cost budget needs OpenMultiAgent(estimate_cost=...) to price calls")
        policy = given.retry or config.retry_policy(defaults.retry_policy)
        policy = policy.override(
            max_retries=call.max_retries, delay=call.retry_delay, backoff=call.retry_backoff
        )
        return attrs.evolve(
            given,
            run_id=call.run_id or given.run_id or new_run_id(),
            metadata=_given(call.metadata, given.metadata),
            retry=policy,
            timeout=_given(call.timeout, _given(given.timeout, defaults.timeout)),
            call_timeout=_given(
                call.call_timeout, _given(given.call_timeout, defaults.call_timeout)
            ),
            budgets=tuple(budgets),
            estimate_cost=estimate_cost,
            trace_content=given.trace_content or defaults.trace_content,
        )


_FIELD_MAX_TOOL_CALLS = attrs.fields(RunSettings).max_tool_calls
_FIELD_OUTPUT_TYPE = attrs.fields(RunSettings).output_type
_FIELD_OUTPUT_MODE = attrs.fields(RunSettings).output_mode

#: Nothing given: the settings a plain ``Agent.run`` runs with.
NO_SETTINGS = RunSettings()
