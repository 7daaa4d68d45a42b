"""Newline-delimited JSON-RPC on an agent's pipes, with a size limit and a garbage filter.

The acp package's own stdio framing logs and skips a line that is not JSON and reads a line of
any length into memory. This transport (the package's ``Transport`` seam) counts skipped lines
instead, and ends the connection cleanly, recording why, when a message passes
``max_message_bytes`` — without ever buffering more than about twice that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

__all__ = ["LineTransport"]


class LineTransport:
    """Moves JSON-RPC messages over a child's stdout (in) and stdin (out).

    ``skipped_lines`` counts lines that were not a JSON object; ``failure`` says why the
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
                message = json.loads(line)
            except ValueError:
                self.skipped_lines += 1
                continue
            if not isinstance(message, dict):
                self.skipped_lines += 1
                continue
            return message

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
