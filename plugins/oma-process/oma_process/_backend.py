"""The process backend: one fresh subprocess per run, prompt in, stdout streamed out.

The command runs without a shell, in its own process group, with an allow-listed
environment. stdout and stderr are drained concurrently (a chatty child never deadlocks on a
full pipe); a timeout, a cancellation, too much output or a command that closes stdout and
does not exit within ``exit_grace`` stops the whole group.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any

from oma_core.errors import BackendError, RunTimeoutError
from oma_core.processes import (
    StderrTail,
    child_environment,
    close_pipes,
    configured_values,
    describe_exit,
    prompt_fragments,
    stop_process_group,
    wait_exit,
)
from oma_core.toolkit import BackendEvent, BackendRequest, BackendResult, TextDelta

from ._options import ProcessOptions

__all__ = ["ProcessBackend", "compose_prompt"]

_CHUNK = 65536
#: How long output may still trickle in once the command's group was stopped.
_QUIET = 0.25


def compose_prompt(request: BackendRequest) -> str:
    """The text a CLI receives: the system prompt and the user text, joined by a blank line."""
    if request.system_prompt:
        return f"{request.system_prompt}\n\n{request.prompt}"
    return request.prompt


class ProcessBackend:
    """Runs ``command *args`` once per turn. Stateless: ``continue_session`` changes nothing.

    ``spawn_count`` counts the processes started, for callers who want to check that
    nothing ran.
    """

    kind = "process"
    display_name = "Process"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = ProcessOptions.from_mapping(options)
        self.spawn_count = 0
        self._running: set[asyncio.subprocess.Process] = set()
        self._closed = False

    def __repr__(self) -> str:
        return f"ProcessBackend(command={self.options.command!r})"

    async def run(self, request: BackendRequest) -> AsyncIterator[BackendEvent]:
        """Run one turn; see the module docstring. Closing the generator early stops the child."""
        if self._closed:
            raise BackendError("process backend: the backend is closed", backend=self.kind)
        opts = self.options
        # Encoded before the spawn: a prompt that cannot be delivered starts nothing.
        data = self._encode(compose_prompt(request))
        argv: list[str | bytes] = [opts.command, *opts.args]
        if opts.input == "argument":
            argv.append(data)  # the exact UTF-8 bytes, whatever the locale
        limit = _effective_timeout(opts.timeout, request.timeout)
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        prompts = (request.system_prompt, request.prompt)  # what no error may show
        process = await self._spawn(argv)
        self._running.add(process)
        stderr = StderrTail(opts.max_stderr_bytes)
        helpers = [asyncio.create_task(stderr.drain(_stream(process.stderr)))]
        if opts.input == "stdin":
            helpers.append(asyncio.create_task(_feed(process, data)))
        leftovers = asyncio.create_task(_stop_leftovers(process, opts.kill_grace))
        try:
            stdout = _Stdout(_stream(process.stdout), leftovers, loop)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            parts: list[str] = []
            received = 0
            while True:
                chunk = await stdout.read(deadline)
                if chunk is None:
                    raise RunTimeoutError("run", limit or 0.0)
                received += len(chunk)
                if received > opts.max_output_bytes:
                    raise BackendError(
                        f"process backend: {self._name} wrote more than max_output_bytes="
                        f"{opts.max_output_bytes} to stdout; the process was stopped",
                        backend=self.kind,
                    )
                text = decoder.decode(chunk, final=not chunk)
                if text:
                    parts.append(text)
                    yield TextDelta(text)
                if not chunk:
                    break
            # stdout is closed; a command that does not exit after it gets exit_grace seconds.
            exited = await _before(deadline, wait_exit(process, opts.exit_grace), loop)
            if exited is None:
                raise RunTimeoutError("run", limit or 0.0)
            if not exited:
                raise await self._lingered(process, stderr, helpers, prompts)
            await _before(deadline, _settle(helpers, leftovers), loop)
            if self._closed:  # aclose() stopped it meanwhile: not the command's own failure
                raise BackendError(
                    "process backend: the backend was closed during the run", backend=self.kind
                )
            if process.returncode != 0:
                raise self._failure(process.returncode or 0, stderr, prompts)
            yield BackendResult(output="".join(parts))
        finally:
            leftovers.cancel()
            for task in helpers:
                task.cancel()
            if process.stdin is not None:
                process.stdin.close()
            try:
                await stop_process_group(process, opts.kill_grace)
            finally:
                await asyncio.gather(leftovers, *helpers, return_exceptions=True)
                close_pipes(process)
                self._running.discard(process)

    async def aclose(self) -> None:
        """Stop every process a run left running (e.g. a generator that was never closed)."""
        self._closed = True
        running = list(self._running)
        await asyncio.gather(
            *(stop_process_group(p, self.options.kill_grace) for p in running),
            return_exceptions=True,
        )

    @property
    def _name(self) -> str:
        return os.path.basename(self.options.command)

    def _encode(self, prompt: str) -> bytes:
        """The prompt as UTF-8, refused with ``BackendError`` when it cannot be delivered."""
        try:
            data = prompt.encode("utf-8")
        except UnicodeEncodeError:
            pass  # its .object is the whole prompt: the error is raised outside, without it
        else:
            if self.options.input == "argument" and b"\0" in data:
                raise BackendError(
                    "process backend: a prompt containing a NUL byte cannot be passed as an "
                    "argument",
                    backend=self.kind,
                )
            return data
        raise BackendError(
            "process backend: the prompt is not valid Unicode (it contains a lone surrogate)",
            backend=self.kind,
        )

    async def _spawn(self, argv: list[str | bytes]) -> asyncio.subprocess.Process:
        opts = self.options
        try:
            process = await _started(
                asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE
                    if opts.input == "stdin"
                    else asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=child_environment(opts.env),
                    cwd=opts.cwd,
                    start_new_session=True,
                ),
                opts.kill_grace,
            )
        except (OSError, ValueError) as exc:
            reason = self._start_failure(exc)
        else:
            self.spawn_count += 1
            return process
        # Raised out here, the error holds no reference to the OSError (nor its argv).
        raise BackendError(
            f"process backend: cannot start {self._name!r}: {reason}", backend=self.kind
        )

    def _start_failure(self, exc: OSError | ValueError) -> str:
        """Why the spawn failed, in words (a missing cwd reads like a missing binary)."""
        cwd = self.options.cwd
        if isinstance(exc, ValueError):
            return "an argument contains a NUL byte"
        if cwd is not None and not os.path.isdir(cwd):
            return f"cwd is not a directory: {cwd}"
        return exc.strerror or str(exc)

    async def _lingered(
        self,
        process: asyncio.subprocess.Process,
        stderr: StderrTail,
        helpers: list[asyncio.Task[None]],
        prompts: tuple[str | None, ...],
    ) -> BackendError:
        """The error for a command that closed stdout but did not exit: its group is stopped
        first, so that the stderr tail is complete."""
        await stop_process_group(process, self.options.kill_grace)
        await asyncio.wait(helpers, timeout=_QUIET)
        how = (
            f"closed stdout but had not exited exit_grace={self.options.exit_grace:g} s later;"
            " its process group was stopped"
        )
        return self._error(how, stderr, prompts)

    def _failure(
        self, returncode: int, stderr: StderrTail, prompts: tuple[str | None, ...]
    ) -> BackendError:
        how, exit_code, signal_number = describe_exit(returncode)
        return self._error(how, stderr, prompts, exit_code=exit_code, signal=signal_number)

    def _error(
        self,
        how: str,
        stderr: StderrTail,
        prompts: tuple[str | None, ...],
        exit_code: int | None = None,
        signal: int | None = None,
    ) -> BackendError:
        """A failure of the command, with its stderr tail: without terminal control, and
        without the values ``env`` gives the child or the prompt it was sent."""
        secrets = configured_values(self.options.env) + prompt_fragments(*prompts)
        tail = stderr.text(secrets)
        message = f"process backend: {self._name} {how}"
        if tail:
            last = tail[-500:]
            message += f"; stderr ends with: {last}"
        return BackendError(
            message,
            backend=self.kind,
            exit_code=exit_code,
            signal=signal,
            stderr_tail=tail,
        )


def _effective_timeout(option: float | None, request: float | None) -> float | None:
    """The shorter of the backend's own limit and the run's remaining time."""
    limits = [t for t in (option, request) if t is not None]
    return min(limits) if limits else None


async def _before(deadline: float | None, awaitable: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """Await ``awaitable`` until ``deadline``; None when the deadline passed first."""
    if deadline is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, max(deadline - loop.time(), 0.0))
    except TimeoutError:
        return None


def _stream(stream: asyncio.StreamReader | None) -> asyncio.StreamReader:
    assert stream is not None  # created with PIPE
    return stream


class _Stdout:
    """The command's stdout, read to its end — or, once the command has exited and its group
    was stopped, until it goes quiet: a writer that left the group (``setsid``) and still
    holds the pipe cannot keep the run going."""

    def __init__(
        self,
        stream: asyncio.StreamReader,
        group_stopped: asyncio.Task[None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._stream = stream
        self._group_stopped = group_stopped
        self._loop = loop
        self._cutoff: float | None = None

    async def read(self, deadline: float | None) -> bytes | None:
        """The next chunk; ``b""`` at the end; None when ``deadline`` passed first."""
        loop = self._loop
        if self._cutoff is None:
            read = asyncio.ensure_future(self._stream.read(_CHUNK))
            try:
                remaining = None if deadline is None else max(deadline - loop.time(), 0.0)
                done, _ = await asyncio.wait(
                    {read, self._group_stopped},
                    timeout=remaining,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                if not read.done():
                    read.cancel()  # unread data stays in the stream's buffer
                    await asyncio.wait({read})
            if not read.cancelled():
                return read.result()
            if not done:
                return None
            self._cutoff = loop.time() + _QUIET
        stop = self._cutoff if deadline is None else min(deadline, self._cutoff)
        try:
            return await asyncio.wait_for(self._stream.read(_CHUNK), max(stop - loop.time(), 0.0))
        except TimeoutError:
            if deadline is not None and deadline < self._cutoff:
                return None
            return b""


async def _started(
    spawn: Coroutine[Any, Any, asyncio.subprocess.Process], grace: float
) -> asyncio.subprocess.Process:
    """The started process, or, when the run is cancelled while it starts, its group stopped.

    asyncio answers a cancelled spawn by killing the leader alone: a child the command had
    already forked (in its own session, as here) would outlive the run.
    """
    task = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # a spawn that failed started nothing
            process = await task
            await stop_process_group(process, grace)
            close_pipes(process)
        raise


async def _settle(helpers: list[asyncio.Task[None]], group_stopped: asyncio.Task[None]) -> None:
    """Let stderr's drain and stdin's feed finish; once the group was stopped, give them
    ``_QUIET`` seconds more (a pipe held open outside the group never closes)."""
    finished: asyncio.Future[Any] = asyncio.gather(*helpers, return_exceptions=True)
    await asyncio.wait([finished, group_stopped], return_when=asyncio.FIRST_COMPLETED)
    if not finished.done():
        await asyncio.wait({finished}, timeout=_QUIET)


async def _stop_leftovers(process: asyncio.subprocess.Process, grace: float) -> None:
    """Once the command has exited, give what it started ``grace`` seconds, then stop its
    group: a background child holding stdout open must not keep the run going forever."""
    await wait_exit(process, None)
    await asyncio.sleep(grace)
    await stop_process_group(process, grace)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the prompt to stdin and close it; a child that stops reading early is fine."""
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        stdin.close()
        await stdin.wait_closed()
