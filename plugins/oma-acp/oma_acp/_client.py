"""oma's side of an ACP connection: session updates become events, permission requests get
answered by the policy, and file reads and writes stay inside the working directory.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import json
import logging
import os
import stat
from collections.abc import Sequence
from typing import Any, TextIO

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    WriteTextFileResponse,
)
from acp.schema import PermissionOption as _AcpPermissionOption

from oma_core.toolkit import (
    BackendEvent,
    BackendToolCall,
    BackendToolResult,
    ReasoningDelta,
    TextDelta,
)

from ._options import AcpOptions
from ._permissions import PermissionOption, PermissionRequest

__all__ = ["OmaClient", "PolicyFailed", "Turn", "confine"]

_log = logging.getLogger("oma_acp")


class PolicyFailed(Exception):
    """The ``permission`` callable raised; the turn fails with it as the cause."""


class Turn:
    """The events of one prompt turn, in order, and whether it is being cancelled."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[BackendEvent | PolicyFailed] = asyncio.Queue()
        self.cancelled = asyncio.Event()
        self.output: list[str] = []
        self._open_tools: set[str] = set()
        self._closed_tools: set[str] = set()

    def put(self, update: Any) -> None:
        """Map one ``session/update`` onto backend events (other kinds are ignored)."""
        if isinstance(update, AgentMessageChunk):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                self.output.append(text)
                self.events.put_nowait(TextDelta(text))
        elif isinstance(update, AgentThoughtChunk):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                self.events.put_nowait(ReasoningDelta(text))
        elif isinstance(update, ToolCallStart):
            if update.tool_call_id not in self._open_tools:
                self._open_tools.add(update.tool_call_id)
                self.events.put_nowait(
                    BackendToolCall(update.tool_call_id, update.title, update.raw_input)
                )
            self._maybe_finish(update.tool_call_id, update.status, update.content, update)
        elif isinstance(update, ToolCallProgress):
            self._maybe_finish(update.tool_call_id, update.status, update.content, update)

    def _maybe_finish(self, call_id: str, status: Any, content: Any, update: Any) -> None:
        if status not in ("completed", "failed") or call_id in self._closed_tools:
            return
        self._closed_tools.add(call_id)
        text = _tool_text(content, getattr(update, "raw_output", None))
        self.events.put_nowait(BackendToolResult(call_id, text, is_error=status == "failed"))


def _tool_text(content: Sequence[Any] | None, raw_output: Any) -> str:
    """The readable result of a tool call: its text content, else its raw output as JSON."""
    parts: list[str] = []
    for item in content or ():
        inner = getattr(item, "content", None)
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            parts.append(text)
        elif getattr(item, "type", None) == "diff":
            parts.append(f"edited {getattr(item, 'path', '')}")
        elif getattr(item, "type", None) == "terminal":
            parts.append(f"terminal {getattr(item, 'terminal_id', '')}")
    if parts:
        return "\n".join(parts)
    if raw_output is None:
        return ""
    if isinstance(raw_output, str):
        return raw_output
    try:
        return json.dumps(raw_output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(raw_output)


class OmaClient:
    """The ACP ``Client`` oma offers an agent. Turns are attached per session id."""

    def __init__(self, options: AcpOptions) -> None:
        self._options = options
        self._turns: dict[str, Turn] = {}

    def attach(self, session_id: str, turn: Turn) -> None:
        self._turns[session_id] = turn

    def detach(self, session_id: str, turn: Turn) -> None:
        if self._turns.get(session_id) is turn:
            del self._turns[session_id]

    # -- the Client protocol ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn = self._turns.get(session_id)
        if turn is not None:
            turn.put(update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: Any,
        options: list[_AcpPermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        turn = self._turns.get(session_id)
        if turn is None or turn.cancelled.is_set():
            return _cancelled()
        request = PermissionRequest(
            session_id=session_id,
            tool_call_id=tool_call.tool_call_id,
            title=tool_call.title,
            kind=tool_call.kind,
            input=tool_call.raw_input,
            options=tuple(PermissionOption(o.option_id, o.name, o.kind) for o in options),
        )
        decision = asyncio.ensure_future(self._decide(request, turn))
        cancelled = asyncio.ensure_future(turn.cancelled.wait())
        try:
            await asyncio.wait({decision, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not decision.done():
                decision.cancel()
        if turn.cancelled.is_set() or decision.cancelled():
            return _cancelled()
        option_id = decision.result()
        if option_id is None:
            return _cancelled()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        if self._options.fs == "none":
            raise RequestError.method_not_found("fs/read_text_file")
        resolved = confine(self._options.cwd, path)
        content = await asyncio.to_thread(
            _read_text, resolved, line, limit, self._options.max_message_bytes // 2
        )
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        if self._options.fs != "read-write":
            raise RequestError.method_not_found("fs/write_text_file")
        resolved = confine(self._options.cwd, path)
        await asyncio.to_thread(_write_text, resolved, content)
        return WriteTextFileResponse()

    # -- the permission policy -------------------------------------------------------------

    async def _decide(self, request: PermissionRequest, turn: Turn) -> str | None:
        policy = self._options.permission
        if policy == "allow":
            return _pick(request.options, ("allow_once", "allow_always"))
        if policy == "reject":
            return _pick(request.options, ("reject_once", "reject_always"))
        assert callable(policy)
        try:
            answer = policy(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # the turn fails with it; the agent hears "cancelled"
            failure = PolicyFailed(f"the permission callable raised {type(exc).__name__}")
            failure.__cause__ = exc
            turn.events.put_nowait(failure)
            return None
        if answer is None:
            return None
        if answer not in {o.id for o in request.options}:
            turn.events.put_nowait(
                PolicyFailed(f"the permission callable chose an unknown option {answer!r}")
            )
            return None
        return str(answer)


def _pick(options: Sequence[PermissionOption], kinds: Sequence[str]) -> str | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option.id
    return None


def _cancelled() -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def confine(root: str, path: str) -> str:
    """``path`` with symlinks resolved, if it lies inside ``root`` (itself resolved)."""
    candidate = path if os.path.isabs(path) else os.path.join(root, path)
    resolved = os.path.realpath(candidate)
    if resolved != root and os.path.commonpath([resolved, root]) != root:
        raise RequestError(
            -32602, "path is outside the session's working directory", {"path": path}
        )
    return resolved


def _read_text(path: str, line: int | None, limit: int | None, max_bytes: int) -> str:
    try:
        with _open_regular(path, os.O_RDONLY) as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                raise RequestError(-32602, "file is too large to send", {"path": path})
            text = handle.read()
    except OSError as exc:
        raise RequestError.resource_not_found(path) from exc
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = None if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])


def _write_text(path: str, content: str) -> None:
    try:
        with _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as handle:
            handle.write(content)
    except OSError as exc:
        raise RequestError(
            -32603, f"cannot write the file: {exc.strerror}", {"path": path}
        ) from exc


def _open_regular(path: str, flags: int) -> TextIO:
    """Open ``path`` (already resolved by ``confine``) as a UTF-8 text file, if it is a regular
    file: never through a symlink swapped in since the check, never a FIFO or device that
    would block a worker thread forever."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        if flags == os.O_RDONLY:
            return open(fd, encoding="utf-8", errors="replace")
        return open(fd, "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
