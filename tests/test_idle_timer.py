"""The idle timeout between a stream's chunks (``IdleTimer``: one timer per stream).

Most tests run on an event loop whose clock moves only when the test moves it, so they
say what happens at a time without waiting for it: a wait that passes ``idle`` fails with
the toolkit's ``idle_timeout``, chunks that keep coming do not (however long the stream), and
a cancellation from outside always propagates, whether or not the timer came at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from oma_core.errors import ProviderError
from oma_core.http._bounded import IdleTimer, next_chunk

IDLE = 10.0
MESSAGE = "Svc timed out: nothing came for 10 s in the middle of the reply"


class _ClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is ``now``, moved by the test alone."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def time(self) -> float:
        return self.now


def _on_clock(test: Callable[[_ClockLoop], Awaitable[None]]) -> None:
    loop = _ClockLoop()
    try:
        loop.run_until_complete(test(loop))
    finally:
        loop.close()


async def _turns(n: int = 5) -> None:
    """Let the loop run ``n`` times (nothing here waits on the clock)."""
    for _ in range(n):
        await asyncio.sleep(0)


class _Source:
    """An async iterator of the chunks the test puts (None: the end)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def __aiter__(self) -> _Source:
        return self

    async def __anext__(self) -> bytes:
        chunk = await self.queue.get()
        if chunk is None:
            raise StopAsyncIteration
        return chunk


async def _read_all(timer: IdleTimer, source: Any, got: list[bytes]) -> None:
    try:
        while True:
            got.append(await timer.next(source))
    except StopAsyncIteration:
        pass
    finally:
        timer.close()


def test_chunks_that_keep_coming_never_time_out_however_long_the_stream() -> None:
    async def test(loop: _ClockLoop) -> None:
        source, got = _Source(), list[bytes]()
        reader = asyncio.create_task(_read_all(IdleTimer(IDLE, "Svc"), source, got))
        for _ in range(20):  # 20 gaps of 0.6 idle: 12 idle in all
            await _turns()
            loop.now += 0.6 * IDLE
            await _turns()
            source.queue.put_nowait(b"x")
        source.queue.put_nowait(None)
        await reader
        assert got == [b"x"] * 20

    _on_clock(test)


@pytest.mark.parametrize("before", [0, 3])
def test_a_wait_past_idle_fails_naming_the_idle_timeout(before: int) -> None:
    """After ``before`` chunks (the timer re-armed for each), one wait longer than idle."""

    async def test(loop: _ClockLoop) -> None:
        source, got = _Source(), list[bytes]()
        reader = asyncio.create_task(_read_all(IdleTimer(IDLE, "Svc"), source, got))
        for _ in range(before):
            await _turns()
            loop.now += 0.9 * IDLE
            source.queue.put_nowait(b"x")
        await _turns()
        loop.now += 0.99 * IDLE
        await _turns()
        assert not reader.done(), "timed out before idle had passed"
        loop.now += 0.02 * IDLE
        with pytest.raises(ProviderError) as caught:
            await reader
        assert got == [b"x"] * before
        assert caught.value.message.startswith(MESSAGE)
        assert caught.value.retryable is True
        assert caught.value.__context__ is None and caught.value.__cause__ is None

    _on_clock(test)


def test_the_timers_cancellation_is_taken_back_after_a_timeout() -> None:
    async def test(loop: _ClockLoop) -> None:
        async def read() -> int:
            with pytest.raises(ProviderError):
                await IdleTimer(IDLE, "Svc").next(_Source())
            await _turns()  # a cancellation left behind would be raised here
            task = asyncio.current_task()
            assert task is not None
            return task.cancelling()

        reader = asyncio.create_task(read())
        await _turns()
        loop.now += 2 * IDLE
        assert await reader == 0

    _on_clock(test)


@pytest.mark.parametrize("turns", [None, 0, 1, 2], ids=["alone", "same-turn", "1", "2"])
def test_a_cancellation_from_outside_propagates_even_as_the_timer_comes(
    turns: int | None,
) -> None:
    """Cancelled from outside while waiting: with no timer due (``alone``), or after the
    timer came due and ``turns`` turns of the loop ran (it cancels the task too)."""

    async def test(loop: _ClockLoop) -> None:
        source, got = _Source(), list[bytes]()
        reader = asyncio.create_task(_read_all(IdleTimer(IDLE, "Svc"), source, got))
        await _turns()
        if turns is not None:
            loop.now += 2 * IDLE
            await _turns(turns)
        assert reader.cancel(), "the reader ended before it was cancelled"
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert reader.cancelled()

    _on_clock(test)


def test_a_read_while_the_task_is_being_cancelled_still_times_out() -> None:
    """A read in a cancelled task's clean-up (its cancellation caught, not taken back) is
    held to the idle timeout as any other, as ``asyncio.timeout`` holds it."""

    async def test(loop: _ClockLoop) -> None:
        started = asyncio.Event()

        async def read() -> None:
            try:
                started.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await IdleTimer(IDLE, "Svc").next(_Source())

        reader = asyncio.create_task(read())
        await started.wait()
        reader.cancel()
        await _turns()
        loop.now += 2 * IDLE
        with pytest.raises(ProviderError, match="nothing came for 10 s"):
            await reader

    _on_clock(test)


class ReadTimeout(Exception):
    """Named as httpx's and httpx2's read timeout."""


class SocketTimeoutError(Exception):
    """Named as aiohttp's read timeout."""


class _Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def __aiter__(self) -> _Failing:
        return self

    async def __anext__(self) -> bytes:
        raise self.error


@pytest.mark.parametrize("error", [ReadTimeout("read"), SocketTimeoutError("read")])
async def test_the_librarys_own_read_timeout_is_the_idle_timeout(error: Exception) -> None:
    timer = IdleTimer(IDLE, "Svc")
    with pytest.raises(ProviderError) as caught:
        await timer.next(_Failing(error))
    timer.close()
    assert caught.value.message.startswith(MESSAGE)
    assert caught.value.__context__ is None


@pytest.mark.parametrize("idle", [IDLE, None])
async def test_other_faults_and_the_end_pass_through(idle: float | None) -> None:
    timer = IdleTimer(idle, "Svc")
    with pytest.raises(ConnectionResetError):
        await timer.next(_Failing(ConnectionResetError("reset")))
    with pytest.raises(StopAsyncIteration):
        await next_chunk(_Failing(StopAsyncIteration()), idle, "Svc")
    timer.close()


async def test_a_real_silence_times_out_on_the_real_clock() -> None:
    """The same on the loop's own clock: nothing ever comes (a short idle; nothing waits
    for it but the timer)."""
    with pytest.raises(ProviderError, match=r"nothing came for 0\.05 s"):
        await next_chunk(_Source(), 0.05, "Svc")
