"""Token and cost budgets: soft caps checked before and after every model call.

A ``Budget`` is a ledger. The orchestrator gives each run its own ledger for the per-run caps
(``max_token_budget``/``max_cost_budget``, the lowest setting wins) and also charges any
``Budget`` passed as ``budget=``, which several runs may share; they reach the run as
``RunSettings.budgets``. The built-in plugin ``oma_core.default_plugins.budgets`` enforces
them: the outermost ``oma_model_call`` wrapper. Before a call: a spent ledger
stops the run, and the call's ``max_tokens`` is clamped to the tokens left. After a call (also a
failed or cut-short one): the usage is charged, and a ledger over its cap stops the run — after
the answer that arrived was handed on, so the run's result keeps it. So a run may overshoot by
at most one call.

Reported usage is trusted only when it is sane. Missing, negative or non-numeric counts are
replaced by an estimate (``estimate_tokens`` of the request plus characters / 4 of the system
prompt and of the text that arrived), so bad usage reporting never switches a budget off. An
``estimate_cost`` that raises, or returns anything but a finite number >= 0 (``"0.01"``, NaN,
None), prices the call as unlimited: a cost cap is never silently switched off. A
call whose outcome is unknown — a timeout, a dropped connection, an error mid-stream, the run
cancelled from outside while the call was in flight — is charged at least that estimate of its
input, never zero: the service may have done (and billed) the work. A call the service
answered with an HTTP error status before any output (a 4xx such as 400 or 429, or a 5xx such
as 500, 503 or 529: providers do not bill those) or that never left oma (invalid or
unsupported input, a budget stop) costs nothing, as ``RunResult.usage`` reports.

Ledgers are updated synchronously in the event loop (no ``await`` between check and charge),
so concurrent runs sharing a ``Budget`` never lose an update.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from .errors import BudgetExceededError
from .providers import Usage

__all__ = ["Budget", "CostContext", "CostEstimator", "Price"]


def _limit(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{attribute.name} must be a number >= 0 or None, got {value!r}")
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{attribute.name} must not be NaN")


@attrs.define(eq=False)
class Budget:
    """A token and/or cost cap, with what has been spent against it so far.

    Pass one object as ``budget=`` to several ``run_agent`` calls to share it between them.
    ``used_tokens`` and ``used_cost`` only grow; ``remaining_tokens`` is None without a cap.
    """

    max_tokens: int | float | None = attrs.field(default=None, validator=_limit)
    max_cost: float | None = attrs.field(default=None, validator=_limit)
    used_tokens: int = 0
    used_cost: float = 0.0

    @property
    def remaining_tokens(self) -> int | None:
        if self.max_tokens is None:
            return None
        return max(0, math.floor(self.max_tokens - self.used_tokens))

    def exhausted(self) -> BudgetExceededError | None:
        """The error to stop with if nothing is left (checked before a call)."""
        if self.max_tokens is not None and self.used_tokens >= self.max_tokens:
            return BudgetExceededError("tokens", self.max_tokens, self.used_tokens)
        if self.max_cost is not None and self.used_cost >= self.max_cost:
            return BudgetExceededError("cost", self.max_cost, self.used_cost)
        return None

    def exceeded(self) -> BudgetExceededError | None:
        """The error to stop with if a cap has been passed (checked after a call)."""
        if self.max_tokens is not None and self.used_tokens > self.max_tokens:
            return BudgetExceededError("tokens", self.max_tokens, self.used_tokens)
        if self.max_cost is not None and self.used_cost > self.max_cost:
            return BudgetExceededError("cost", self.max_cost, self.used_cost)
        return None

    def charge(self, tokens: int, cost: float = 0.0) -> None:
        """Add what one call spent (synchronous: atomic within the event loop)."""
        self.used_tokens += max(0, tokens)
        if math.isfinite(cost) and cost > 0:
            self.used_cost += cost


@attrs.frozen
class CostContext:
    """What ``estimate_cost(usage, ctx)`` knows about the call it prices."""

    agent: str
    provider: str
    model: str | None
    run_id: str | None


CostEstimator = Callable[[Usage, CostContext], float]


def _rate(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


@attrs.frozen
class Price:
    """A model's published rates in USD per million tokens, as an ``estimate_cost``.

    ``Price(3, 15, cache_read=0.3, cache_write=3.75)`` prices Claude Sonnet's 5-minute cache:
    of a call's ``input_tokens``, the ``cache_read_tokens`` are priced at ``cache_read`` and
    the ``cache_write_tokens`` at ``cache_write``, the rest at ``input``; every output token
    (reasoning included, a part of it) at ``output``. A cache rate left None is priced as
    input: never below what the call may have cost. Pass it as
    ``OpenMultiAgent(estimate_cost=Price(...))``; docs/budgets.md lists the services' rates.
    """

    input: float = attrs.field(validator=_rate)
    output: float = attrs.field(validator=_rate)
    cache_read: float | None = attrs.field(default=None, validator=_rate)
    cache_write: float | None = attrs.field(default=None, validator=_rate)

    def __call__(self, usage: Usage, ctx: CostContext | None = None) -> float:
        """The cost of ``usage`` in USD (``ctx`` is unused: one price, one model)."""
        read = max(0, usage.cache_read_tokens)
        write = max(0, usage.cache_write_tokens)
        plain = max(0, usage.input_tokens - read - write)
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        cost = (
            plain * self.input
            + read * read_rate
            + write * write_rate
            + max(0, usage.output_tokens) * self.output
        )
        return cost / 1_000_000
