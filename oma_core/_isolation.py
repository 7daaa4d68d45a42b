"""Calling code the core does not own (observers, scorers, sinks) so that its failure is contained.

A progress observer, a scorer or an evaluation sink that raises, hangs or cancels itself must not
fail the run it watches. The rules, in one place:

- an ``Exception`` raised by the callback (or by what it returns, when that is awaitable) is
  caught and returned as the outcome's ``error``;
- an awaitable result is awaited within ``limit`` seconds (None: no limit); running out is
  ``timed_out``, not an error of the callback's;
- a ``CancelledError`` the callback raised itself is its own failure, but one that comes from
  outside (the task running it was asked to stop) propagates: isolation never swallows a
  cancellation of the caller.

The caller counts and logs; it logs the error's type only (an error text may quote the input).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Outcome", "being_cancelled", "contained", "settle"]


class Outcome:
    """What a contained call ended with: a ``value``, an ``error``, or ``timed_out``."""

    __slots__ = ("error", "timed_out", "value")

    def __init__(
        self, value: Any = None, error: BaseException | None = None, timed_out: bool = False
    ) -> None:
        self.value = value
        self.error = error
        self.timed_out = timed_out

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


async def contained(callback: Callable[[Any], Any], argument: Any, limit: float | None) -> Outcome:
    """``callback(argument)``, sync or async, contained as above."""
    try:
        returned = callback(argument)
    except (Exception, asyncio.CancelledError) as error:  # raised before any await: its own
        return Outcome(error=error)
    return await settle(returned, limit)


async def settle(outcome: Awaitable[Any] | Any, limit: float | None) -> Outcome:
    """Await ``outcome`` (what a callback returned) when it is awaitable, contained as above.

    The callback's synchronous part is the caller's to run inside ``try`` (so that a sync
    observer stays synchronous); this is the part after it.
    """
    if not inspect.isawaitable(outcome):
        return Outcome(outcome)
    try:
        value = await (outcome if limit is None else asyncio.wait_for(outcome, limit))
    except TimeoutError:
        return Outcome(timed_out=True)
    except asyncio.CancelledError as error:
        if being_cancelled():
            raise
        return Outcome(error=error)  # the callback raised it itself: its own failure
    except Exception as error:
        return Outcome(error=error)
    return Outcome(value)


def being_cancelled() -> bool:
    """Whether the running task was asked to stop (as opposed to code raising CancelledError)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
