"""Newline-delimited JSON-RPC on an agent's pipes, with a size limit and a garbage filter.

The acp package's own stdio framing logs and skips a line that is not JSON and reads a line of
any length into memory; its receive loop trusts the envelope (an id ``[2]`` is unhashable and
ends the connection; an id ``true`` answers request 1). This transport (the package's
``Transport`` seam) hands on only valid JSON-RPC 2.0 messages, skipping and counting the
rest, and ends the connection cleanly, recording why, when a message passes
``max_message_bytes`` — without ever buffering more than about twice that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

__all__ = ["LineTransport", "envelope_problem"]

_log = logging.getLogger("oma_acp")


class LineTransport:
    """Moves JSON-RPC messages over a child's stdout (in) and stdin (out).

    ``skipped_lines`` counts lines that were not a JSON-RPC 2.0 message (not JSON, not an
    object, or a malformed envelope: see ``envelope_problem``); ``failure`` says why the
    stream ended early (None: plain end of file). ``ended`` is set once ``receive`` has
    returned None.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_message_bytes: int
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._max = max_message_bytes
        self._send_lock = asyncio.Lock()
        self.skipped_lines = 0
        self.failure: str | None = None
        self.ended = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        async with self._send_lock:
            self._writer.write(data + b"\n")
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                self.ended.set()
                return None
            if not line.strip():
                continue
            try:
                message: object = json.loads(line)
            except ValueError:
                self.skipped_lines += 1
                continue
            if not isinstance(message, dict):
                problem = "not an object"
            elif (found := envelope_problem(message)) is None:
                return message
            else:
                problem = found
            self.skipped_lines += 1
            _log.debug("skipped a message from the agent: %s", problem)  # never its content

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # end of file; maybe a last unterminated line
            line = exc.partial
            if not line:
                return None
        except asyncio.LimitOverrunError:
            self.failure = f"the agent sent a message larger than max_message_bytes={self._max}"
            return None
        if len(line.rstrip(b"\r\n")) > self._max:
            self.failure = f"the agent sent a message larger than max_message_bytes={self._max}"
            return None
        return line


def envelope_problem(message: dict[str, Any]) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response; None if it is.

    Ids must be strings, integers or null (not booleans, which Python takes for 0 and 1, nor
    fractions, which the spec advises against); a request's ``method`` a string and its
    ``params`` an object or array (or null, as the acp package itself sends); a response has
    exactly one of ``result`` and ``error``, the error ``{"code": integer, "message": string}``.
    """
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0" member'
    has_id = "id" in message
    if has_id and not _is_id(message["id"]):
        return "an id that is not a string, an integer or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "a method that is not a string"
        if not isinstance(message.get("params"), dict | list | None):
            return "params that are neither an object nor an array"
        return None
    if not has_id:
        return "neither a method nor an id"
    if ("result" in message) == ("error" in message):
        return "a response without exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if (
            not isinstance(error, dict)
            or not _is_int(error.get("code"))
            or not isinstance(error.get("message"), str)
        ):
            return "an error that is not an object with an integer code and a string message"
    elif message["id"] is None:
        return "a result with a null id"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or _is_int(value)
