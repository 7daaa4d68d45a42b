"""The one retry ladder: how often and how long the core waits before trying a model call again.

Retries are per model call, never per run, so a tool is never executed twice. Plugins switch
their SDK's own retries off. The ladder: ``delay * backoff ** (n - 1)`` before retry ``n``,
capped at ``max_delay``, with *equal jitter* (the wait is drawn from ``[nominal / 2, nominal]``).
A server's ``retry-after-ms`` / ``retry-after`` replaces the ladder's wait when it is sane
(finite, not negative, at most ``max_retry_after`` seconds, like the OpenAI and Anthropic SDKs).

What is retried: an ``OmaError`` whose ``retryable`` is True (``ProviderError`` for 408, 409,
429, 5xx and connection faults; ``RunTimeoutError("call", ...)``). Never: invalid input,
unsupported blocks, other 4xx, budgets, cancellation, or any exception that is not an
``OmaError``.
"""

from __future__ import annotations

import asyncio
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs

from .errors import OmaError, ProviderError

__all__ = ["DEFAULT_POLICY", "RetryPolicy", "parse_retry_after"]

T = TypeVar("T")


def _non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def _retries(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an int >= 0, got {value!r}")


def _backoff(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 1):
        raise ValueError(f"{attribute.name} must be a finite number >= 1, got {value!r}")


def _sleep(seconds: float) -> Awaitable[object]:
    # looked up at call time, so a test that patches asyncio.sleep makes back-off instant
    return asyncio.sleep(seconds)


@attrs.frozen
class RetryPolicy:
    """Settings of the ladder, plus the sleep and the randomness it runs on.

    ``sleep`` and ``random`` are seams for tests (a fake sleep makes back-off instant and
    observable, a fixed ``random`` makes jitter deterministic); they are not part of equality
    or the repr.
    """

    max_retries: int = attrs.field(default=2, validator=_retries)
    delay: float = attrs.field(default=0.5, validator=_non_negative)
    backoff: float = attrs.field(default=2.0, validator=_backoff)
    max_delay: float = attrs.field(default=30.0, validator=_non_negative)
    max_retry_after: float = attrs.field(default=60.0, validator=_non_negative)
    sleep: Callable[[float], Awaitable[object]] = attrs.field(default=_sleep, eq=False, repr=False)
    random: Callable[[], float] = attrs.field(default=_random.random, eq=False, repr=False)

    def override(
        self,
        *,
        max_retries: int | None = None,
        delay: float | None = None,
        backoff: float | None = None,
    ) -> RetryPolicy:
        """A copy with the settings that are not None replaced (the more specific layer wins)."""
        changes: dict[str, Any] = {}
        if max_retries is not None:
            changes["max_retries"] = max_retries
        if delay is not None:
            changes["delay"] = delay
        if backoff is not None:
            changes["backoff"] = backoff
        return attrs.evolve(self, **changes) if changes else self

    def is_retryable(self, error: BaseException) -> bool:
        """Whether ``error`` is a transient fault of one model call."""
        return isinstance(error, OmaError) and error.retryable is True

    def nominal_delay(self, retry: int) -> float:
        """The ladder's wait before retry number ``retry`` (1-based), before jitter."""
        try:
            nominal = self.delay * self.backoff ** (retry - 1)
        except OverflowError:
            nominal = math.inf
        return min(nominal, self.max_delay)

    def sane_retry_after(self, value: object) -> float | None:
        """``value`` as a wait in seconds if it is one the ladder honours, else None."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        seconds = float(value)
        if not math.isfinite(seconds) or seconds < 0 or seconds > self.max_retry_after:
            return None
        return seconds

    def delay_for(self, retry: int, error: BaseException | None = None) -> float:
        """How long to wait before retry ``retry``: the server's request or the jittered ladder."""
        if isinstance(error, ProviderError):
            honoured = self.sane_retry_after(error.retry_after)
            if honoured is not None:
                return honoured
        nominal = self.nominal_delay(retry)
        return nominal / 2 + self.random() * nominal / 2


#: The ladder's defaults (a frozen value: every run without settings of its own shares it).
DEFAULT_POLICY = RetryPolicy()


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds, from its headers; None if absent or garbage.

    ``retry-after-ms`` (milliseconds) wins over ``retry-after`` (seconds, or an HTTP date,
    compared with ``now``: a POSIX timestamp, the current time by default; a date in the past
    means 0). Negative, infinite and unparsable values give None; large ones are returned as
    they are (the policy decides whether to honour them). Header names match case-insensitively.
    """
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        value = _number(ms)
        if value is not None:
            return value / 1000.0
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    value = _number(raw)
    if value is not None:
        return value
    return _http_date_delay(raw, time.time() if now is None else now)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate
    return value


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except (ValueError, AttributeError):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def _http_date_delay(text: str, now: float) -> float | None:
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        import datetime

        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - now)
