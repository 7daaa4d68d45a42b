"""RetryPolicy: the ladder, equal jitter, Retry-After, which errors are retried (the one loop
that uses it, the runner's, is tested through the agent in test_retries.py)."""

from __future__ import annotations

import asyncio
import email.utils
import math

import pytest

from oma_core.errors import (
    BudgetExceededError,
    InvalidMessageError,
    ProviderError,
    RunTimeoutError,
    UnsupportedContentBlockError,
)
from oma_core.http import parse_retry_after
from oma_core.retry import RetryPolicy


class FakeSleep:
    """Records waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def policy(**kwargs: object) -> RetryPolicy:
    kwargs.setdefault("sleep", FakeSleep())
    return RetryPolicy(**kwargs)  # type: ignore[arg-type]


NOW = 1_700_000_000.0


def test_defaults_match_the_contract() -> None:
    p = RetryPolicy()
    assert (p.max_retries, p.delay, p.backoff, p.max_delay, p.max_retry_after) == (
        2,
        0.5,
        2.0,
        30.0,
        60.0,
    )


def test_nominal_delay_grows_by_backoff() -> None:
    p = policy(delay=0.5, backoff=2.0)
    assert [p.nominal_delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]


def test_nominal_delay_is_capped_at_max_delay() -> None:
    p = policy(delay=1.0, backoff=10.0, max_delay=30.0)
    assert p.nominal_delay(3) == 30.0
    assert p.nominal_delay(10_000) == 30.0  # no OverflowError


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.999999, 1.0])
def test_equal_jitter_stays_between_half_and_full_nominal(draw: float) -> None:
    p = policy(delay=2.0, random=lambda: draw)
    wait = p.delay_for(1, ProviderError("busy", status_code=503))
    assert 1.0 <= wait <= 2.0
    assert wait == pytest.approx(1.0 + draw * 1.0)


def test_jittered_wait_never_exceeds_the_cap() -> None:
    p = policy(delay=5.0, backoff=3.0, max_delay=7.0, random=lambda: 1.0)
    assert p.delay_for(6) == 7.0


def test_override_replaces_only_the_given_settings() -> None:
    p = RetryPolicy().override(max_retries=5, delay=None, backoff=3.0)
    assert (p.max_retries, p.delay, p.backoff) == (5, 0.5, 3.0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_retries", -1),
        ("max_retries", 1.5),
        ("delay", -0.1),
        ("delay", math.inf),
        ("backoff", 0.5),
        ("max_delay", math.nan),
    ],
)
def test_nonsense_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        RetryPolicy(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ProviderError("x", status_code=429), True),
        (ProviderError("x", status_code=408), True),
        (ProviderError("x", status_code=409), True),
        (ProviderError("x", status_code=500), True),
        (ProviderError("x", status_code=529), True),
        (ProviderError("connection reset", retryable=True), True),
        (RunTimeoutError("call", 1.0), True),
        (ProviderError("x", status_code=400), False),
        (ProviderError("x", status_code=401), False),
        (ProviderError("x", status_code=404), False),
        (RunTimeoutError("run", 1.0), False),
        (InvalidMessageError("messages", "is bad"), False),
        (UnsupportedContentBlockError("Anthropic Messages", "video"), False),
        (BudgetExceededError("tokens", 10, 11), False),
        (RuntimeError("a bug"), False),
        (asyncio.CancelledError(), False),
    ],
)
def test_which_errors_are_retried(error: BaseException, retryable: bool) -> None:
    assert RetryPolicy().is_retryable(error) is retryable


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "2.5"}, 2.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # ms wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),  # garbage ms: fall back
        ({"retry-after": email.utils.formatdate(NOW + 12, usegmt=True)}, 12.0),
        ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"retry-after": "120"}, 120.0),  # large: returned, the policy decides
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "-1"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after_table(headers: dict[str, str], expected: float | None) -> None:
    value = parse_retry_after(headers, now=NOW)
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("retry_after", "used"),
    [
        (3.0, 3.0),
        (0.0, 0.0),
        (60.0, 60.0),
        (61.0, None),
        (-1.0, None),
        (math.inf, None),
        (math.nan, None),
        (None, None),
    ],
)
def test_sane_retry_after_replaces_the_ladder(
    retry_after: float | None, used: float | None
) -> None:
    p = policy(delay=0.5, random=lambda: 1.0)
    error = ProviderError("slow down", status_code=429, retry_after=retry_after)
    assert p.delay_for(1, error) == (0.5 if used is None else used)
