"""The built-in budget middleware: every model call of a run with budgets is checked and charged.

The outermost ``oma_model_call`` wrapper (``tryfirst``): before a call it refuses when a ledger
of ``RunSettings.budgets`` is spent and clamps ``max_tokens`` to what is left; after it (also a
failed or cut-short one) it charges what the call cost, and a ledger past its cap stops the run
— after the answer that arrived was handed on, so the result keeps it. See ``oma_core.budgets``
for the ledgers and the charging rules.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs

from .._usage import charged_usage
from ..budgets import CostContext
from ..errors import BudgetExceededError
from ..hookspecs import hookimpl
from ..messages import text_of
from ..providers import ResponseComplete, TextDelta

if TYPE_CHECKING:
    from .._calls import CallEvent, ModelCall, RunContext
    from ..providers import ProviderRequest, Usage

__all__ = ["oma_model_call"]


@hookimpl(wrapper=True, tryfirst=True)
def oma_model_call(call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
    """Outermost wrapper: refuse a call when a ledger is spent, clamp ``max_tokens`` to what is
    left, charge what the call cost (also when it failed or was cut short), and stop the run
    after a call that passed a cap — once the answer that arrived has been handed on."""
    events = yield
    if not run.settings.budgets:
        return events
    return _budgeted(events, call, run)


async def _budgeted(
    events: AsyncGenerator[CallEvent, None], call: ModelCall, run: RunContext
) -> AsyncGenerator[CallEvent, None]:
    ledgers = run.settings.budgets
    left: int | None = None
    for ledger in ledgers:
        spent = ledger.exhausted()
        if spent is not None:
            raise _stopped(run, spent)
        remaining = ledger.remaining_tokens
        if remaining is not None:
            left = remaining if left is None else min(left, remaining)
    request = call.request
    if left is not None and (request.max_tokens is None or request.max_tokens > left):
        call.request = request = attrs.evolve(request, max_tokens=max(1, left))
    arrived = 0
    response: Any = None
    try:
        async with aclosing(events) as inner:
            async for event in inner:
                kind = type(event)
                if kind is TextDelta:
                    arrived += len(event.text)  # type: ignore[union-attr]
                elif kind is ResponseComplete:
                    response = event.response  # type: ignore[union-attr]
                yield event
    except BaseException as error:  # failed, cut short, or cancelled from outside
        if response is None:
            _charge(run, call, charged_usage(request, None, arrived=arrived, error=error))
        else:
            _charge(run, call, _response_usage(request, response, arrived))
        raise
    if response is not None:
        _charge(run, call, _response_usage(request, response, arrived))
    for ledger in ledgers:
        passed = ledger.exceeded()
        if passed is not None:
            raise _stopped(run, passed)


def _response_usage(request: ProviderRequest, response: Any, arrived: int) -> Usage:
    if not arrived:  # a whole reply (``complete``): its text stands for what arrived
        arrived = len(text_of(response.message))
    return charged_usage(request, response.usage, arrived=arrived)


def _charge(run: RunContext, call: ModelCall, usage: Usage) -> None:
    """Add ``usage`` to every ledger (synchronously: atomic within the event loop)."""
    cost = 0.0
    estimator = run.settings.estimate_cost
    if estimator is not None and usage.total_tokens:
        context = CostContext(
            agent=run.config.name,
            provider=run.config.provider_name,
            model=call.request.model or run.config.model,
            run_id=run.run_id,
        )
        try:
            priced: object = estimator(usage, context)
        except Exception:
            priced = None
        # Only a real, finite number >= 0 is a price (a str like "0.01" is not): anything else
        # counts as unlimited, so a broken estimator can never switch a cost cap off.
        if (
            isinstance(priced, int | float)
            and not isinstance(priced, bool)
            and math.isfinite(priced)
            and priced >= 0
        ):
            cost = float(priced)
        else:
            cost = math.inf
    for ledger in run.settings.budgets:
        if ledger.max_cost is None:
            ledger.charge(usage.total_tokens)
        elif cost == math.inf:
            ledger.charge(usage.total_tokens)
            ledger.used_cost = math.inf
        else:
            ledger.charge(usage.total_tokens, cost)


def _stopped(run: RunContext, error: BudgetExceededError) -> BudgetExceededError:
    """Report the first stop of a run as a ``budget_exceeded`` progress event."""
    emit = run.settings.progress
    if emit is not None and not run.state.get("budgets.reported"):
        run.state["budgets.reported"] = True
        emit("budget_exceeded", {"kind": error.kind, "limit": error.limit, "used": error.used})
    return error
