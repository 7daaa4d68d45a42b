"""``MCPToolset``: an MCP server's tools as oma tools, over stdio, streamable HTTP or SSE.

One connection per event loop, started on first use (``list_tools`` or ``async with``) in a
task of its own, so the SDK's transport and session contexts are entered and left in one
task whatever task first needed them. Runs that share the toolset object share the server.

What cannot leak: the connection is closed by ``aclose`` (or leaving ``async with``), and at
the latest when its event loop ends — ``asyncio.run`` cancels the connection's task, which
then closes the session and stops the server the SDK's way: stdin closed, a grace period,
then the process group terminated and killed (``_stdio``; on Linux the server runs under a
subreaper, ``_supervise``, so children that left the group go with it too). A server that
dies is noticed at once (its exit ends the requests it had) and restarted on the next use,
at most ``max_restarts`` times in a row, after a delay that doubles each time; a call
answered after a restart clears the count (a server that crashed three times over a day of
healthy calls is still restarted the fourth time).

Every request has a deadline: a tool call ``timeout``, any other ``request_timeout`` (the
session's default). An error code is read as the spec and the SDK define it: only a lost
transport (the process gone, stdout closed, the HTTP session forgotten) is an exit; a
server's ``-32000`` or ``-32001`` is its own error, and a timeout is the SDK's own clock
running out.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import os
import shlex
import shutil
import subprocess
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

import attrs
import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from oma_core import AgentConfig, Budget, LLMMessage
from oma_core.errors import BackendError, ToolError
from oma_core.messages import ContentBlock
from oma_core.processes import (
    argument_values,
    child_environment,
    configured_values,
    header_values,
    redact,
    url_values,
)
from oma_core.toolkit import ToolOutput
from oma_core.tools import Tool

from ._client import ClientFeatures, ElicitationCallback, progress_callback
from ._http import HttpLink, http_server
from ._listing import MAX_TOOLS, offered_tools
from ._resources import (
    Prompt,
    Resource,
    ResourceTemplate,
    prompt,
    prompt_messages,
    request_error,
    resource,
    resource_blocks,
    resource_template,
)
from ._results import DEFAULT_MAX_MEDIA_BYTES, DEFAULT_MAX_RESULT_BYTES, tool_output
from ._stdio import MAX_LINE_BYTES, StdioLink, stdio_server

__all__ = ["MCPServerError", "MCPToolset"]

_log = logging.getLogger("oma.mcp")

#: tools/list pages read at most (a server that always answers with a next cursor is cut here)
MAX_PAGES = 100

#: the longest wait before a restart, however many came before
MAX_RESTART_DELAY = 30.0

#: how the toolset waits before a restart (one name, so tests can see the delays)
_sleep = asyncio.sleep

#: what the SDK says for an HTTP error reply that is not JSON-RPC
_HTTP_STAND_IN = "Server returned an error response"

#: the supervisor a stdio server runs under on Linux (see its module)
_SUPERVISOR = Path(__file__).with_name("_supervise.py")


class MCPServerError(BackendError):
    """An MCP server could not be started, initialised or listed; ``backend`` names it."""

    code = "MCP_SERVER_ERROR"


@attrs.frozen
class _Stdio:
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str | None]
    cwd: str | None

    def label(self) -> str:
        """The command line as errors show it: credentials in it, and the values ``env``
        gives the server, blanked out."""
        line = shlex.join([Path(self.command).name, *self.args])
        return redact(line, configured_values(self.env))


HttpTransport = Literal["streamable-http", "sse"]
"""The HTTP transports of MCP, named as the SDK's ``MCPServer.run`` names them."""


@attrs.frozen
class _Http:
    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    transport: HttpTransport = "streamable-http"

    def label(self) -> str:
        """The URL as errors show it: no user info, query or fragment."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port is not None else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class MCPToolset:
    """An MCP server as an oma toolset: ``AgentConfig(tools=[..., server])``.

    Build one with ``MCPToolset.stdio(command, args)``, ``MCPToolset.http(url)`` or
    ``MCPToolset.from_config({...})``. ``prefix`` ("fs" → ``fs_read_file``) keeps its tool
    names apart from other servers' and the agent's own; ``timeout`` bounds each tool call
    (seconds; the call is then cancelled on the server; None: no bound), ``request_timeout``
    every other request (``tools/list``, ping...), ``init_timeout`` the start up to the
    answer to ``initialize``; ``max_message_bytes`` bounds one message from the server (a
    stdio line, an HTTP reply or event; a longer one fails, on stdio it ends the
    connection); ``max_restarts`` and
    ``restart_delay`` bound how a crashed server is started again: at most ``max_restarts``
    times in a row, the delay doubling each time; a call answered after a restart starts the
    count (and the delay) afresh. The server's environment
    is the allow-listed part of oma's (``PATH``, ``HOME``, locale...) plus ``env``: no key of
    the parent reaches it unless named there (a value of None copies that one variable).
    ``max_result_bytes`` (text, UTF-8) and ``max_media_bytes`` (decoded) cap what one tool
    result passes on to the model; past them it says what was dropped.
    """

    def __init__(
        self,
        transport: _Stdio | _Http,
        *,
        prefix: str | None = None,
        name: str | None = None,
        timeout: float | None = 60.0,
        init_timeout: float = 30.0,
        request_timeout: float | None = 30.0,
        max_message_bytes: int = MAX_LINE_BYTES,
        max_restarts: int = 3,
        restart_delay: float = 0.5,
        roots: Sequence[str | Path] | None = None,
        sampling: AgentConfig | None = None,
        sampling_max_tokens: int = 1024,
        max_samples: int = 20,
        sampling_budget: Budget | None = None,
        elicitation: ElicitationCallback | None = None,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES,
    ) -> None:
        for option, value in (
            ("max_result_bytes", max_result_bytes),
            ("max_media_bytes", max_media_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ToolError(f"an MCP toolset's {option} must be an int >= 0, got {value!r}")
        if prefix is not None and (not isinstance(prefix, str) or not prefix):
            raise ToolError(f"an MCP toolset's prefix must be a non-empty str, got {prefix!r}")
        if (
            isinstance(max_message_bytes, bool)
            or not isinstance(max_message_bytes, int)
            or max_message_bytes <= 0
        ):
            raise ToolError(
                "an MCP toolset's max_message_bytes must be a whole number of bytes > 0, got "
                f"{max_message_bytes!r}"
            )
        self._transport = transport
        self.prefix = prefix
        self.name = name or transport.label()
        self.timeout = timeout
        self.init_timeout = init_timeout
        self.request_timeout = request_timeout
        self.max_message_bytes = max_message_bytes
        self.max_restarts = max_restarts
        self.restart_delay = restart_delay
        self._features = ClientFeatures(  # what the server may ask of oma: _client.py
            roots=roots,
            sampling=sampling,
            sampling_max_tokens=sampling_max_tokens,
            max_samples=max_samples,
            sampling_budget=sampling_budget,
            elicitation=elicitation,
        )
        self.max_result_bytes = max_result_bytes
        self.max_media_bytes = max_media_bytes
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _State] = (
            weakref.WeakKeyDictionary()
        )

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server run as a child process speaking MCP on its stdin and stdout."""
        if not isinstance(command, str) or not command:
            raise ToolError(f"an MCP server's command must be a non-empty str, got {command!r}")
        if isinstance(args, str):
            raise ToolError("args must be a list of strings, not one str (use shlex.split)")
        transport = _Stdio(command, tuple(args), dict(env or {}), None if cwd is None else str(cwd))
        return cls(transport, **options)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        transport: HttpTransport = "streamable-http",
        **options: Any,
    ) -> MCPToolset:
        """A server at ``url`` speaking MCP's streamable HTTP transport, or with
        ``transport="sse"`` the SDK's older HTTP+SSE one (``url`` is then the SSE endpoint,
        ``.../sse``), kept for servers that speak only that."""
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            raise ToolError(f"an MCP server's url must be an http(s) URL, got {url!r}")
        if transport not in get_args(HttpTransport):
            choices = ", ".join(repr(t) for t in get_args(HttpTransport))
            raise ToolError(
                f"an MCP server's transport must be one of {choices}, got {transport!r}"
            )
        return cls(_Http(url, dict(headers or {}), transport), **options)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MCPToolset:
        """From plain data, as a command line or a JSON file gives it: ``{"command": str,
        "args": [...], "env": {...}, "cwd": str}`` or ``{"url": str, "headers": {...},
        "transport": "streamable-http" | "sse"}``,
        each with optional ``prefix``, ``name``, ``timeout``, ``init_timeout``,
        ``request_timeout``, ``max_message_bytes``, ``max_restarts``, ``restart_delay``."""
        options = {k: config[k] for k in _OPTIONS if k in config}
        unknown = set(config) - {
            "command",
            "args",
            "env",
            "cwd",
            "url",
            "headers",
            "transport",
            *_OPTIONS,
        }
        if unknown:
            raise ToolError(f"unknown MCP server settings: {', '.join(sorted(unknown))}")
        if "command" in config and "url" not in config:
            if "transport" in config:
                raise ToolError('"transport" is for a server at a "url", not a "command"')
            return cls.stdio(
                config["command"],
                config.get("args", ()),
                config.get("env"),
                config.get("cwd"),
                **options,
            )
        if "url" in config and "command" not in config:
            transport = config.get("transport", "streamable-http")
            return cls.http(config["url"], config.get("headers"), transport, **options)
        raise ToolError('an MCP server config needs exactly one of "command" and "url"')

    def __repr__(self) -> str:
        return f"MCPToolset({self.name!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (e.g. sent to a worker process), a toolset keeps its settings, not its
        connections: the copy starts its own server on first use."""
        state = dict(self.__dict__)
        del state["_states"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._states = weakref.WeakKeyDictionary()

    # -- the toolset protocol ----------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        """The server's tools (prefixed), listed once and again after it says its list
        changed or it was restarted. Starts the server on first use."""
        state = self._state()
        while True:
            connection = await self._connected(state)
            if state.tools is not None and state.listed_by is connection and not state.stale:
                return state.tools
            state.stale = False  # a change announced while listing marks it stale again
            try:
                listed = await self._list(connection)
            except MCPError as error:
                if connection.alive():
                    raise MCPServerError(
                        f"MCP server {self.name!r} refused tools/list: {error}", backend=self.name
                    ) from None
                await self._lost(state, connection)
                continue  # restarted (within its bounds), or raises
            state.tools = offered_tools(self.name, self.prefix, listed, self.call)
            state.listed_by = connection
            return state.tools

    async def _list(self, connection: _Connection) -> list[types.Tool]:
        """The server's listing, page after page: at most ``MAX_PAGES`` pages, and no page
        after one that brings it past ``MAX_TOOLS`` (what is offered is cut there)."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await connection.session().list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) > MAX_TOOLS:
                break
        return tools

    async def call(self, tool_name: str, arguments: Mapping[str, Any]) -> ToolOutput:
        """Call the server's tool ``tool_name`` (its own name, unprefixed); every failure is
        an error result the model reads."""
        state = self._state()
        try:
            connection = await self._connected(state)
        except MCPServerError as error:
            return ToolOutput(_scrubbed(str(error), self), is_error=True)
        for attempt in (1, 2):
            limit = math.inf if self.timeout is None else self.timeout
            started = asyncio.get_running_loop().time()
            try:
                result = await connection.session().call_tool(
                    tool_name,
                    dict(arguments),
                    read_timeout_seconds=limit,
                    progress_callback=progress_callback(),  # as tool_progress events
                )
            except MCPError as error:
                elapsed = asyncio.get_running_loop().time() - started
                if connection.alive():  # an answer (the SDK's own timeout is one)
                    return _call_error(tool_name, connection.told(error), elapsed, limit, self)
                expired = connection.session_expired()
                await self._lost(state, connection)
                if expired and attempt == 1:  # the server forgot the session: a new one
                    try:
                        connection = await self._connected(state)
                    except MCPServerError as restart:
                        return ToolOutput(_scrubbed(str(restart), self), is_error=True)
                    continue
                return ToolOutput(
                    f"MCP server {self.name!r} {connection.ended()} during the call to "
                    f"{tool_name!r}; it is started again for the next call",
                    is_error=True,
                )
            break
        if state.connection is connection:
            state.starts = 1  # answered: a later crash is the first in a row again
        return tool_output(
            tool_name,
            result,
            secrets=_secrets(self),
            max_result_bytes=self.max_result_bytes,
            max_media_bytes=self.max_media_bytes,
        )

    # -- lifetime ----------------------------------------------------------------------------

    async def __aenter__(self) -> MCPToolset:
        await self._connected(self._state())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the server this loop started (the next use starts it again). Two closes at
        once (the owner's and the caller's) both return when the server has stopped."""
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            return
        try:
            if state.connection is not None:
                await state.connection.close()
        finally:
            if self._states.get(loop) is state:
                del self._states[loop]

    def _state(self) -> _State:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _State()
        return state

    async def _connected(self, state: _State) -> _Connection:
        """The live connection, started (or restarted, within bounds) under the state's lock."""
        connection = state.connection
        if connection is not None and connection.alive():
            return connection
        async with state.lock:
            connection = state.connection
            if connection is not None and connection.alive():
                return connection
            if connection is not None:  # died since: stop what is left of it
                await self._lost(state, connection)
            if state.starts > 0:
                if state.starts > self.max_restarts:
                    last = f" (the last time it {state.ended})" if state.ended else ""
                    raise MCPServerError(
                        f"MCP server {self.name!r} stopped {state.starts} times{last}; it is not "
                        f"started again (max_restarts={self.max_restarts})",
                        backend=self.name,
                    )
                delay = self.restart_delay * 2 ** (state.starts - 1)
                await _sleep(min(delay, MAX_RESTART_DELAY))
            state.starts += 1
            connection = _Connection(self, state)
            await connection.start()
            state.connection = connection
            return connection

    async def _lost(self, state: _State, connection: _Connection) -> None:
        if state.connection is connection:
            state.connection = None
            state.stale = True
        await connection.close()
        state.ended = _scrubbed(connection.ended(), self)

    # -- resources and prompts (_resources.py) -----------------------------------------------

    async def list_resources(self) -> list[Resource]:
        """The server's resources (``resources/list``, every page). Starts the server."""
        pages = await self._pages("resources/list", lambda s, p: s.list_resources(params=p))
        return [resource(item) for page in pages for item in page.resources]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (``resources/templates/list``, every page)."""
        pages = await self._pages(
            "resources/templates/list", lambda s, p: s.list_resource_templates(params=p)
        )
        return [resource_template(item) for page in pages for item in page.resource_templates]

    async def read_resource(self, uri: str) -> list[ContentBlock]:
        """The resource at ``uri`` as oma content blocks (``TextBlock``, ``ImageBlock``,
        ``AudioBlock``, ``DocumentBlock``); a refusal raises ``MCPRequestError``."""
        result = await self._ask("resources/read", repr(uri), lambda s: s.read_resource(uri))
        return resource_blocks(result)

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompt templates (``prompts/list``, every page)."""
        pages = await self._pages("prompts/list", lambda s, p: s.list_prompts(params=p))
        return [prompt(item) for page in pages for item in page.prompts]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> tuple[LLMMessage, ...]:
        """Prompt ``name`` filled in with ``arguments``, as oma messages (ready for
        ``Agent.run``); a refusal (unknown prompt, missing argument) raises
        ``MCPRequestError``."""
        values = {str(k): str(v) for k, v in (arguments or {}).items()}
        result = await self._ask("prompts/get", repr(name), lambda s: s.get_prompt(name, values))
        return prompt_messages(result)

    async def _pages(self, method: str, page: Callable[[ClientSession, Any], Any]) -> list[Any]:
        pages: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)

            def one(session: ClientSession, params: Any = params) -> Any:
                return page(session, params)

            pages.append(await self._ask(method, "", one))
            cursor = pages[-1].next_cursor
            if not cursor:
                break
        return pages

    async def _ask(self, method: str, about: str, request: Callable[[ClientSession], Any]) -> Any:
        """One request on the live connection (started if need be); the server's error
        answer raises ``MCPRequestError``, a server that died meanwhile is restarted next."""
        state = self._state()
        connection = await self._connected(state)
        try:
            return await request(connection.session())
        except MCPError as error:
            if not connection.alive() or error.code == types.CONNECTION_CLOSED:
                await self._lost(state, connection)
            raise request_error(self.name, method, about, error) from None


_OPTIONS = (
    "prefix",
    "name",
    "timeout",
    "init_timeout",
    "request_timeout",
    "max_message_bytes",
    "max_restarts",
    "restart_delay",
    *("roots", "sampling", "sampling_max_tokens", "max_samples", "sampling_budget"),
    "elicitation",
    "max_result_bytes",
    "max_media_bytes",
)


class _State:
    """One event loop's side of a toolset: its connection and what it listed."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.connection: _Connection | None = None
        self.starts = 0  # servers started since the last answered call (the first included)
        self.tools: list[Tool] | None = None
        self.listed_by: _Connection | None = None
        self.stale = False
        self.ended = ""  # how the last connection lost ended, for the give-up error


class _Connection:
    """One server process (or HTTP session) and its ``ClientSession``, owned by one task."""

    def __init__(self, toolset: MCPToolset, state: _State) -> None:
        self._toolset = toolset
        self._state = state
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._link: StdioLink | HttpLink | None = None

    def session(self) -> ClientSession:
        assert self._session is not None
        return self._session

    def alive(self) -> bool:
        """Started and not ended: the process still runs (asked of the kernel), the HTTP
        server still knows the session."""
        return (
            not self._closed
            and self._task is not None
            and not self._task.done()
            and self._session is not None
            and (self._link is None or self._link.running())
        )

    def ended(self) -> str:
        """How the connection ended, as "MCP server NAME ..." goes on ("exited (code 3)")."""
        if self._link is not None and self._link.ended:
            return self._link.ended
        if self._error is not None:
            return f"failed ({_describe(self._error)})"
        return "was stopped"

    def session_expired(self) -> bool:
        """The HTTP server answered that it does not know the session (it restarted)."""
        return isinstance(self._link, HttpLink) and self._link.session_expired()

    def told(self, error: MCPError) -> MCPError:
        """``error`` in the server's words: the SDK answers an HTTP error reply that is not
        JSON-RPC with a stand-in ("Server returned an error response"); the reply's status
        and the start of its body, which the transport kept, say more."""
        link = self._link
        if isinstance(link, HttpLink) and link.failure and error.message == _HTTP_STAND_IN:
            return MCPError(error.code, _scrubbed(link.failure, self._toolset), error.data)
        return error

    async def start(self) -> None:
        toolset = self._toolset
        self._task = asyncio.get_running_loop().create_task(
            self._own(), name=f"oma-mcp {toolset.name}"
        )
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {ready, self._task},
                timeout=toolset.init_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except BaseException:  # cancelled while starting: stop it, then go on cancelling
            ready.cancel()
            await self.close()
            raise
        ready.cancel()
        if self._ready.is_set() and not self._task.done():
            return
        error = self._error
        await self.close()
        if not done:
            reason = f"did not answer initialize within {toolset.init_timeout:g} s"
        elif self._link is not None and self._link.ended and self._link.ended != "was stopped":
            reason = f"it {self._link.ended} before answering initialize"
        elif error is not None:
            reason = _describe(error)
        else:
            reason = "ended during initialize"
        raise MCPServerError(
            f"MCP server {toolset.name!r} could not be started: {_scrubbed(reason, toolset)}",
            backend=toolset.name,
        )

    async def close(self) -> None:
        """End the session and stop the server (bounded by the SDK's shutdown); idempotent."""
        self._closed = True
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if not self._ready.is_set():  # still starting (a hung initialize): cut it short
            task.cancel()
        # wait() leaves the task's outcome alone: a caller cancelled meanwhile stops waiting,
        # the task still finishes the shutdown it started
        await asyncio.wait({task})

    async def _own(self) -> None:
        cancelled = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write, self._link = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        read_timeout_seconds=self._toolset.request_timeout,
                        message_handler=self._on_message,
                        **self._toolset._features.session_options(
                            self._toolset.name, lambda text: _scrubbed(text, self._toolset)
                        ),
                    )
                )
                await session.initialize()
                self._session = session
                self._ready.set()
                try:
                    await self._stop.wait()
                except asyncio.CancelledError:
                    # The loop is ending (asyncio.run cancels every task): leave the
                    # contexts normally, so the SDK stops the server for sure.
                    cancelled = True
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
        except Exception as error:  # reported by start() or the next call
            self._error = error
            _log.debug("MCP server %r ended: %s", self._toolset.name, _describe(error))
        finally:
            self._closed = True
        if cancelled:
            raise asyncio.CancelledError

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The server's ``(read, write, link)``: its process, or its HTTP session."""
        toolset = self._toolset
        transport = toolset._transport
        if isinstance(transport, _Stdio):
            env = child_environment(transport.env)
            return stdio_server(
                _argv(transport, env),
                env=env,
                cwd=transport.cwd,
                errlog=_errlog(),
                name=toolset.name,
                on_end=self._stop.set,
                max_line=toolset.max_message_bytes,
            )
        return http_server(
            transport.url,
            transport.headers,
            transport.transport,
            name=toolset.name,
            max_message=toolset.max_message_bytes,
            on_end=self._stop.set,
        )

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._state.stale = True


def _errlog() -> Any:
    """Where the server's stderr goes: ours, or the process's own when ``sys.stderr`` is not
    a file (a notebook, click's test runner), else nowhere — a server must start anyway."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            continue
    return subprocess.DEVNULL


def _argv(transport: _Stdio, env: Mapping[str, str]) -> list[str]:
    """The server's command line: on Linux under the supervisor (``_supervise``), which
    outlives none of its descendants; elsewhere as it is. A command not found is an error
    here (the supervisor would only see its exec fail)."""
    command = transport.command
    if os.sep in command:
        path = command if transport.cwd is None else os.path.join(transport.cwd, command)
        found = path if os.access(path, os.X_OK) and os.path.isfile(path) else None
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "no such command", command)
    if sys.platform != "linux" or not sys.executable:
        return [command, *transport.args]
    return [sys.executable, "-I", "-S", str(_SUPERVISOR), command, *transport.args]


def _call_error(
    tool_name: str, error: MCPError, elapsed: float, limit: float, toolset: MCPToolset
) -> ToolOutput:
    """An error answer to a call, as the model reads it. The SDK's own timeout is told from a
    server's error with the same code by the time taken: its clock never runs past ours."""
    if error.code == types.REQUEST_TIMEOUT and elapsed >= limit:
        return ToolOutput(
            f"MCP tool {tool_name!r} timed out after {limit:g} s; the call was cancelled on "
            "the server",
            is_error=True,
        )
    failed = f"MCP tool {tool_name!r} failed: {error} (error {error.code})"
    return ToolOutput(_scrubbed(failed, toolset), is_error=True)


def _secrets(toolset: MCPToolset) -> list[str]:
    """What oma gave the server that must not show: the values of its ``env`` and the
    credentials in its arguments, or its headers' values (and the token in each) and the
    credentials in its URL."""
    transport = toolset._transport
    if isinstance(transport, _Stdio):
        return [*configured_values(transport.env), *argument_values(transport.args)]
    return [*header_values(transport.headers), *url_values(transport.url)]


def _scrubbed(text: str, toolset: MCPToolset) -> str:
    """``text`` without credentials, nor the values of the server's ``env``, credential
    arguments or headers."""
    return redact(text, _secrets(toolset))


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        inner = error.exceptions[0] if error.exceptions else error
        return _describe(inner)
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
