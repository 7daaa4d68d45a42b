"""A ``Budget`` shared across Ray workers: one actor keeps the ledger and charges atomically.

The driver starts one ``BudgetLedger`` actor per team run that shares a ``Budget``, seeded with
what that budget has spent. Each worker's run charges it through a ``RemoteBudget``: a
``Budget`` whose check before a call reads the actor's figures and whose charge after a call
is one actor call (the actor runs its calls one at a time, so no update is lost). A call is
refused before it starts once the ledger is spent, so as locally a run may overshoot by at
most the one call it has in flight: at most one call per task running at once.
"""

from __future__ import annotations

import math
from typing import Any

from oma_core import Budget, BudgetExceededError

__all__ = ["BudgetLedger", "RemoteBudget"]


class BudgetLedger:
    """The actor's state: caps and what was spent against them (plain Python, made an actor
    with ``ray.remote`` by the driver)."""

    def __init__(
        self,
        max_tokens: float | None,
        max_cost: float | None,
        used_tokens: int,
        used_cost: float,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.used_tokens = used_tokens
        self.used_cost = used_cost

    def state(self) -> tuple[int, float]:
        return self.used_tokens, self.used_cost

    def charge(self, tokens: int, cost: float) -> tuple[int, float]:
        self.used_tokens += max(0, tokens)
        if math.isnan(cost) or cost <= 0:
            return self.state()
        self.used_cost += cost  # inf: an unpriced call makes a cost cap spent, as locally
        return self.state()


class RemoteBudget(Budget):
    """A worker's view of the shared ledger (``Budget``'s interface, figures from the actor).

    ``exhausted()`` (the check before a call) reads the actor's figures; ``charge()`` is one
    atomic actor call whose answer ``exceeded()`` then judges.
    """

    def __init__(self, ledger: Any, max_tokens: float | None, max_cost: float | None) -> None:
        super().__init__(max_tokens=max_tokens, max_cost=max_cost)
        self._ledger = ledger

    def _update(self, state: tuple[int, float]) -> None:
        self.used_tokens, self.used_cost = state

    def exhausted(self) -> BudgetExceededError | None:
        import ray

        self._update(ray.get(self._ledger.state.remote()))
        return super().exhausted()

    def charge(self, tokens: int, cost: float = 0.0) -> None:
        import ray

        self._update(ray.get(self._ledger.charge.remote(tokens, cost)))
