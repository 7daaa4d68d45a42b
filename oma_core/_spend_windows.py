"""Rate budgets for online evaluation: what scoring may spend per minute and per hour.

``Spending`` holds one sliding window per cap (cost or tokens, per minute or per hour) and
decides, case by case, whether a case may be scored: a case is admitted only if every window
has room for what a case is expected to cost (the average of the cases settled so far), and
it runs with a ``Budget`` ledger capped at what is left, so the budget middleware stops a
model call that would go further (at most one call over, as for any ledger). Cases being
scored reserve their expected cost, so concurrent workers do not all spend the same room.

Memory is fixed: a window keeps at most ``_SLOTS + 1`` buckets (a bucket is ``span / _SLOTS``
seconds), never one entry per case. A charge counts for at least ``span`` seconds and at most
one bucket longer, so no ``span`` seconds ever see more than the cap (plus the one-call
overshoot). Time comes from an injected monotonic clock: no sleeping, no wall clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from .budgets import Budget

__all__ = ["Spending"]

#: Buckets per window: a minute in seconds, an hour in minutes.
_SLOTS = 60


class _Window:
    """What was charged in the last ``span`` seconds (bucketed), against one cap."""

    def __init__(self, span: float, cap: float, unit: str) -> None:
        self.width = span / _SLOTS
        self.cap = cap
        self.unit = unit  # "cost" or "tokens": which part of a charge counts here
        self.buckets: deque[list[float]] = deque()  # [index, amount], oldest first
        self.total = 0.0

    def spent(self, now: float) -> float:
        current = math.floor(now / self.width)
        buckets = self.buckets
        while buckets and buckets[0][0] < current - _SLOTS:
            self.total -= buckets.popleft()[1]
        if not buckets:
            self.total = 0.0  # no float drift survives an empty window
        return self.total

    def charge(self, now: float, amount: float) -> None:
        if not amount > 0:
            return
        if math.isinf(amount):  # an unpriceable call (a broken estimator): the window is full
            amount = max(self.cap, 1.0)
        self.spent(now)
        current = math.floor(now / self.width)
        if self.buckets and self.buckets[-1][0] == current:
            self.buckets[-1][1] += amount
        else:
            self.buckets.append([current, amount])
        self.total += amount


class Spending:
    """The evaluation's rate budgets; None of them set means no ``Spending`` at all."""

    def __init__(
        self,
        *,
        cost_per_minute: float | None,
        cost_per_hour: float | None,
        tokens_per_minute: int | None,
        tokens_per_hour: int | None,
        clock: Callable[[], float],
    ) -> None:
        windows = []
        for span, cap, unit in (
            (60.0, cost_per_minute, "cost"),
            (3600.0, cost_per_hour, "cost"),
            (60.0, tokens_per_minute, "tokens"),
            (3600.0, tokens_per_hour, "tokens"),
        ):
            if cap is not None:
                windows.append(_Window(span, float(cap), unit))
        self._windows = tuple(windows)
        self._clock = clock
        self._reserved = {"cost": 0.0, "tokens": 0.0}
        self._settled = 0
        self._settled_spent = {"cost": 0.0, "tokens": 0.0}

    def spent_out(self) -> bool:
        """Whether a window has no room now for a case as costly as the average one (checked
        as a case is queued: cheap, and what is in flight is not counted)."""
        now = self._clock()
        for window in self._windows:
            spent = window.spent(now)
            if spent >= window.cap or spent + self.expected(window.unit) > window.cap:
                return True
        return False

    def expected(self, unit: str) -> float:
        """What a case is expected to spend: the average of the cases settled so far."""
        return self._settled_spent[unit] / self._settled if self._settled else 0.0

    def admit(self) -> tuple[Budget, float, float] | None:
        """A ledger for one case and what it reserved (cost, tokens), or None: no room."""
        now = self._clock()
        cost, tokens = self.expected("cost"), self.expected("tokens")
        room = {"cost": math.inf, "tokens": math.inf}
        for window in self._windows:
            taken = window.spent(now) + self._reserved[window.unit]
            want = cost if window.unit == "cost" else tokens
            if taken >= window.cap or taken + want > window.cap:
                return None
            room[window.unit] = min(room[window.unit], window.cap - taken)
        self._reserved["cost"] += cost
        self._reserved["tokens"] += tokens
        ledger = Budget(
            max_tokens=None if math.isinf(room["tokens"]) else math.floor(room["tokens"]),
            max_cost=None if math.isinf(room["cost"]) else room["cost"],
        )
        return ledger, cost, tokens

    def settle(self, ledger: Budget, cost: float, tokens: float) -> None:
        """Release a case's reservation and charge what its ledger recorded, now."""
        now = self._clock()
        self._reserved["cost"] = max(0.0, self._reserved["cost"] - cost)
        self._reserved["tokens"] = max(0.0, self._reserved["tokens"] - tokens)
        spent = {"cost": ledger.used_cost, "tokens": float(ledger.used_tokens)}
        for window in self._windows:
            window.charge(now, spent[window.unit])
        self._settled += 1
        if math.isfinite(spent["cost"]):
            self._settled_spent["cost"] += spent["cost"]
        self._settled_spent["tokens"] += spent["tokens"]
