"""The body a streaming run sends, for ``oma render``: captured, not rebuilt.

A provider's ``render()`` returns the body ``complete`` sends; a run of the command streams by
default, and a streamed request carries more (OpenAI's ``stream`` and ``stream_options``, say)
that only the provider's ``stream`` knows. So ``streamed_body`` runs the provider's
``stream`` once against a socket of its own on 127.0.0.1: a copy of the agent whose base URL
has that origin (the path kept) and whose key is a placeholder, so the real key goes nowhere.
The socket keeps the first request's body and answers 400, which ends the stream; nothing
leaves the machine. A provider that sends nothing there (it does not take ``base_url``, or
fails before sending) gives None, and ``render`` shows ``render()``'s body with a note.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ..agent import Agent
    from ..plugins import PluginHost
    from ..providers import ProviderRequest

#: The placeholder key the capturing copy of the agent sends (to the loopback socket only).
PLACEHOLDER_KEY = "oma-render-placeholder-key"
#: The longest the provider may take to send its request, in seconds.
TIMEOUT = 30.0
#: The largest body kept.
MAX_BYTES = 64 << 20


class _Capture(ThreadingHTTPServer):
    daemon_threads = True
    bodies: list[bytes]


class _Handler(BaseHTTPRequestHandler):
    server: _Capture

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BYTES))
        self.server.bodies.append(body)
        answer = json.dumps(
            {"error": {"message": "oma render: nothing is sent", "type": "invalid_request_error"}}
        ).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def _capturing() -> Iterator[_Capture]:
    """A loopback HTTP server keeping the bodies POSTed to it, and ``NO_PROXY`` naming it
    (a proxy of the environment must not see the request), for the block."""
    server = _Capture(("127.0.0.1", 0), _Handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, name="oma-render-capture")
    thread.start()
    saved = {name: os.environ.get(name) for name in ("NO_PROXY", "no_proxy")}
    for name, value in saved.items():
        os.environ[name] = ",".join(filter(None, [value, "127.0.0.1"]))
    try:
        yield server
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)


def _base_url(agent: Agent, host: PluginHost, port: int) -> str:
    """The agent's base URL (or its provider's default) with the capture's origin."""
    from urllib.parse import urlsplit

    spec = host.provider_spec(agent.config.provider)
    original = agent.config.base_url or spec.default_base_url or ""
    path = urlsplit(original).path if "://" in original else ""
    return f"http://127.0.0.1:{port}{path}"


async def _drain(agent: Agent, request: ProviderRequest) -> None:
    """Stream ``request`` through ``agent``'s provider to its end (the capture's 400)."""
    events = agent.provider().stream(request)
    try:
        async for _ in events:
            pass
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


async def streamed_body(
    agent: Agent, request: ProviderRequest, host: PluginHost
) -> dict[str, Any] | None:
    """The JSON body ``agent``'s provider sends when it streams ``request``, or None when it
    sends none to the capture (see the module docstring)."""
    from ..agent import Agent

    with _capturing() as server:
        config = attrs.evolve(
            agent.config,
            base_url=_base_url(agent, host, server.server_address[1]),
            api_key=PLACEHOLDER_KEY,
        )
        copy = Agent(config, plugins=host)
        try:
            with suppress(Exception):  # whatever fails here, render() shows the body
                await asyncio.wait_for(_drain(copy, request), TIMEOUT)
        finally:
            await copy.aclose()
        bodies = list(server.bodies)
    if not bodies:
        return None
    try:
        body = json.loads(bodies[0])
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
