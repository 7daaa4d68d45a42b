"""An MCP server's stdio, held to bounds: the SDK's stdio transport, with what it lacks.

``stdio_server(argv, ...)`` starts the server in a new session (its own process group) and
yields the SDK's stream pair plus a ``StdioLink`` that says whether the process is still
there. Beyond the SDK's transport: a line of stdout is at most ``max_line`` bytes (a longer
one ends the connection; the bytes before its newline are never held past that); a line that
is not JSON-RPC is counted and logged once (a warning on the first, the count when the
connection ends) instead of a traceback each; an answer the SDK cannot read (nested too deep,
say) that still carries its request's id fails that request at once instead of leaving it
unanswered; and the process's exit ends the connection at once (what it wrote before is
still read), even when a child it left holds stdout open.

Stopping keeps the SDK's order: stdin closed, a grace period for the process to exit, then
SIGTERM to the whole process group and SIGKILL after another grace. The group is signalled
even when the process exited on its own: children it left in the group do not outlive it.
A cancellation while stopping skips the waits and kills the group.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

__all__ = ["MAX_LINE_BYTES", "StdioLink", "stdio_server"]

_log = logging.getLogger("oma.mcp")

#: The longest line a server may write (a JSON-RPC message: 8 MiB, as the core's stream limit).
MAX_LINE_BYTES = 8 * 1024 * 1024
#: How long a server has to exit once its stdin is closed.
EXIT_GRACE = 2.0
#: How long a process group has after SIGTERM before SIGKILL.
TERM_GRACE = 2.0
#: How long a killed process group has to be gone (only an unkillable process runs it out).
KILL_GRACE = 2.0
#: How long accepted messages have to reach stdin before it is closed.
FLUSH_GRACE = 0.5
_EOF = "closed its stdout"
#: What the error for an unreadable answer shows of the SDK's complaint.
_EXCERPT = 200


class _Pipes(asyncio.SubprocessProtocol):
    """The process's pipes as asyncio reports them: stdout cut into lines (reading paused
    while lines wait, so at most one read's worth and one partial line are held), stdin's
    flow control, and the process's exit."""

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self.transport: asyncio.SubprocessTransport | None = None
        self.lines: collections.deque[bytes] = collections.deque()
        self.partial = bytearray()
        self.overflow = False
        self.eof = False
        self.exited = False
        self.received = 0
        self.changed = asyncio.Event()
        self._paused = False
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd != 1 or not isinstance(data, bytes):
            return
        self.received += len(data)
        if self.overflow:
            return  # the connection is ending; keep the pipe flowing, hold nothing
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if len(self.partial) + end - start > self.max_line:
                self._overflowed()
                return
            if self.partial:
                self.partial += data[start:end]
                self.lines.append(bytes(self.partial))
                self.partial.clear()
            else:
                self.lines.append(data[start:end])
            start = end + 1
        if len(self.partial) + len(data) - start > self.max_line:
            self._overflowed()
            return
        self.partial += data[start:]
        if self.lines:
            self._pipe(1, pause=True)
        self.changed.set()

    def _overflowed(self) -> None:
        self.overflow = True
        self.partial = bytearray()
        self.lines.clear()
        self._pipe(1, pause=False)
        self.changed.set()

    def taken(self) -> None:
        """The reader took the last waiting line: read on."""
        if not self.lines:
            self._pipe(1, pause=False)

    def _pipe(self, fd: int, *, pause: bool) -> None:
        if self.transport is None or pause == self._paused:
            return
        pipe = self.transport.get_pipe_transport(fd)
        if isinstance(pipe, asyncio.ReadTransport) and not pipe.is_closing():
            if pause:
                pipe.pause_reading()
            else:
                pipe.resume_reading()
            self._paused = pause

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.eof = True
        self._writable.set()
        self.changed.set()

    def process_exited(self) -> None:
        self.exited = True
        self._writable.set()
        self.changed.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def drain(self) -> None:
        await self._writable.wait()


class StdioLink:
    """What the connection knows of the process: whether it is still there, and why not."""

    def __init__(self, pipes: _Pipes, pid: int, on_end: Callable[[], None]) -> None:
        self._pipes = pipes
        self.on_end = on_end  # called once the connection has ended
        self.pid = pid
        self.reason: str | None = None  # why the connection ended, once it has
        self.garbage = 0  # lines that were not JSON-RPC

    @property
    def ended(self) -> str | None:
        """Why the connection ended ("exited (code 3)"), once it has; a closed stdout is
        told as the exit that followed it, once that is known."""
        if self.reason == _EOF and self._pipes.exited:
            return _exit_reason(self._pipes)
        return self.reason

    def running(self) -> bool:
        """The process has not exited and its stdout is open. Asks the kernel too (without
        reaping), so a process that has just exited is seen before asyncio reports it."""
        if self.reason is not None or self._pipes.exited or self._pipes.eof:
            return False
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:  # reaped already: gone
            return False
        except (AttributeError, OSError):  # no waitid on this platform
            return True


@contextlib.asynccontextmanager
async def stdio_server(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: Any,
    name: str,
    on_end: Callable[[], None],
    max_line: int = MAX_LINE_BYTES,
) -> AsyncIterator[tuple[Any, Any, StdioLink]]:
    """The server ``argv`` run in a new session, as the SDK's ``(read, write)`` streams and
    its ``StdioLink``; stopped (see the module) when the block is left."""
    loop = asyncio.get_running_loop()
    transport, pipes = await loop.subprocess_exec(
        lambda: _Pipes(max_line),
        *argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    link = StdioLink(pipes, transport.get_pid(), on_end)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    reader = loop.create_task(_read(pipes, read_writer, link, name), name=f"oma-mcp {name} read")
    writer = loop.create_task(_write(pipes, transport, write_reader), name=f"oma-mcp {name} write")
    try:
        yield read_stream, write_stream, link
    finally:
        await _stop(transport, pipes, link, reader, writer, (read_stream, write_stream))
        if link.garbage > 1:
            _log.warning(
                "MCP server %r wrote %d lines on stdout that were not JSON-RPC (ignored)",
                name,
                link.garbage,
            )


async def _read(pipes: _Pipes, send: Any, link: StdioLink, name: str) -> None:
    """Lines to messages until stdout ends, the process exits or a line is too long."""
    exit_mark: int | None = None
    try:
        async with send:
            while True:
                if pipes.exited and exit_mark is None:
                    exit_mark = pipes.received
                if exit_mark is not None and pipes.received - exit_mark > pipes.max_line:
                    link.reason = _exit_reason(pipes)  # a child it left is still writing
                    return
                if pipes.lines:
                    line = pipes.lines.popleft()
                    pipes.taken()
                    message = _message(line, link, name)
                    if message is not None:
                        await send.send(message)
                    continue
                if pipes.overflow:
                    link.reason = (
                        f"wrote a line longer than {pipes.max_line} bytes (max_message_bytes)"
                    )
                    return
                if pipes.eof:
                    link.reason = _EOF
                    return
                if pipes.exited:
                    # What it wrote before exiting is in the pipe: one select pass reads it.
                    seen = pipes.received
                    await asyncio.sleep(0)
                    await asyncio.sleep(0)
                    if pipes.received == seen and not pipes.lines:
                        link.reason = _exit_reason(pipes)
                        return
                    continue
                pipes.changed.clear()
                await pipes.changed.wait()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the session is gone
    finally:
        if link.reason is None:
            link.reason = "was stopped"
        link.on_end()


def _exit_reason(pipes: _Pipes) -> str:
    code = pipes.transport.get_returncode() if pipes.transport is not None else None
    if code is None:
        return "exited"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited (code {code})"


def _message(line: bytes, link: StdioLink, name: str) -> SessionMessage | None:
    """The line as a message; None for a blank or a garbage line (counted, the first logged);
    for an answer the SDK cannot read, an error answer to its request."""
    if not line.strip():
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        answered = _request_id(line)
        if answered is not None:
            text = str(error)
            complaint = text.splitlines()[0][:_EXCERPT] if text else type(error).__name__
            data = types.ErrorData(
                code=types.PARSE_ERROR,
                message=f"the server's answer is not a valid MCP message ({complaint})",
            )
            return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=answered, error=data))
    link.garbage += 1
    if link.garbage == 1:
        _log.warning(
            "MCP server %r wrote a line on stdout that is not JSON-RPC (ignored; later ones "
            "are counted): %r",
            name,
            line[:80],
        )
    return None


def _request_id(line: bytes) -> int | str | None:
    """The id of the answer ``line`` is meant to be (JSON with an id and a result or an
    error), else None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not ("result" in value or "error" in value):
        return None
    answered = value.get("id")
    if isinstance(answered, bool) or not isinstance(answered, int | str):
        return None
    return answered


async def _write(pipes: _Pipes, transport: asyncio.SubprocessTransport, receive: Any) -> None:
    """Messages to stdin lines, waiting for the pipe to take each."""
    stdin = transport.get_pipe_transport(0)
    assert isinstance(stdin, asyncio.WriteTransport)
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async with receive:
            async for message in receive:
                if stdin.is_closing() or pipes.exited:
                    return
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(data.encode() + b"\n")
                await pipes.drain()


async def _stop(
    transport: asyncio.SubprocessTransport,
    pipes: _Pipes,
    link: StdioLink,
    reader: asyncio.Task[None],
    writer: asyncio.Task[None],
    streams: tuple[Any, Any],
) -> None:
    """Close stdin, wait for the exit, then SIGTERM the group and SIGKILL what is left; every
    wait bounded, a cancellation skipping them (and raised again at the end)."""
    cancelled = False
    pgid = link.pid  # the session leader's pid (start_new_session); valid after it is reaped

    async def within(seconds: float, step: Any, *, always: bool = False) -> bool:
        """Whether ``step`` ended within ``seconds``; skipped once cancelled (unless
        ``always``): a cancellation of this task is noted and the stop goes on."""
        nonlocal cancelled
        future = asyncio.ensure_future(step)
        if cancelled and not always:
            future.cancel()
            return False
        try:
            done, _ = await asyncio.wait({future}, timeout=seconds)
        except asyncio.CancelledError:
            cancelled = True
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            done = set()
        if not done:
            future.cancel()
        return bool(done)

    try:
        streams[1].close()  # the writer ends after what it accepted
        flushed = await within(FLUSH_GRACE, writer)
        stdin = transport.get_pipe_transport(0)
        if isinstance(stdin, asyncio.WriteTransport):
            if flushed:
                stdin.close()
            else:
                stdin.abort()
        await within(EXIT_GRACE, _exited(pipes))
        if _group_alive(pgid):  # still running, or children left in its group
            _killpg(pgid, signal.SIGTERM)
            if not await within(TERM_GRACE, _group_gone(pgid)):
                _killpg(pgid, signal.SIGKILL)
                if not await within(KILL_GRACE, _group_gone(pgid), always=True):
                    _log.warning("MCP server process group %d outlived SIGKILL", pgid)
    finally:
        for task in (reader, writer):
            task.cancel()
        await asyncio.gather(reader, writer, return_exceptions=True)
        streams[0].close()
        transport.close()
    if cancelled:
        raise asyncio.CancelledError


async def _exited(pipes: _Pipes) -> None:
    while not pipes.exited:
        pipes.changed.clear()
        await pipes.changed.wait()


async def _group_gone(pgid: int) -> None:
    """Until process group ``pgid`` is gone (a group has no event to wait on: it is probed
    every 10 ms, as the SDK does)."""
    while _group_alive(pgid):  # noqa: ASYNC110 - nothing to wait on but the kernel's answer
        await asyncio.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _killpg(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
