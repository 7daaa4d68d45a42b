"""A real MCP server for the tests, on the SDK's own server API (``MCPServer``).

Run as ``python toy_server.py [stdio|http PORT|sse PORT] [--fault=KIND]``. Tools: text, image,
error, slow, crashing, and others the tests need. Faults, for the fault tests: ``exit-on-init``
(exits when the client says hello), ``garbage`` (writes junk to stdout first), ``mute``
(reads requests and never answers), ``stubborn`` (ignores SIGTERM and stdin's end, and has a
``sleep`` child that ignores SIGTERM too: only the group's SIGKILL ends them; the tool
``grandchild`` gives its pid). ``--crash-once=PATH`` makes ``crash`` exit only while
PATH does not exist (it creates it), so a restarted server answers.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_args = dict(arg.removeprefix("--").split("=", 1) for arg in sys.argv if arg.startswith("--"))
_fault = _args.get("fault")
# Faults come before the SDK's import (a second or more): a broken server is quick to break.
if _fault == "garbage":
    sys.stdout.write("this is not JSON-RPC\n{oops\n")
    sys.stdout.flush()
if _fault == "exit-on-init":
    sys.stdin.readline()
    os._exit(4)
_grandchild: subprocess.Popen[bytes] | None = None
if _fault == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child, through exec
    _grandchild = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
if _fault == "mute":
    for _line in sys.stdin:
        pass
    sys.exit(0)

import mcp_types as types  # noqa: E402
from mcp.server.mcpserver import Context, Image, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("toys")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def broken_picture() -> types.CallToolResult:
    """An image whose data is not base64."""
    return types.CallToolResult(
        content=[types.ImageContent(data="not base64!", mime_type="image/png")]
    )


@server.tool()
def mixed() -> types.CallToolResult:
    """Text, audio, an embedded text resource, a blob resource and a link, with structure."""
    wav = base64.b64encode(b"RIFF0000WAVE").decode()
    return types.CallToolResult(
        content=[
            types.TextContent(text="here"),
            types.AudioContent(data=wav, mime_type="audio/wav"),
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="a note"
                )
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///report.pdf",
                    mime_type="application/pdf",
                    blob=base64.b64encode(b"%PDF-1.4").decode(),
                )
            ),
            types.ResourceLink(name="big", uri="https://example.com/big.csv", mime_type="text/csv"),
        ],
        structured_content={"count": 3},
    )


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(reason)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer; writes 'cancelled' to the --marker file when cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        marker = _args.get("marker")
        if marker:
            Path(marker).write_text("cancelled")  # noqa: ASYNC240 - a test marker, tiny
        raise
    return "slept"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    once = _args.get("crash-once")
    if once is None or not Path(once).exists():
        if once is not None:
            Path(once).write_text("crashed")
        os._exit(3)
    return "survived"


@server.tool()
def whoami(name: str) -> str:
    """The value of an environment variable in the server, or '<unset>'."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool 'extra' and tell the client its tool list changed."""
    server.add_tool(lambda: "extra!", name="extra", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header of this call, or '<none>'."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), "<none>"))


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def grandchild() -> int:
    """The pid of the stubborn server's ``sleep`` child (0 for other servers)."""
    return 0 if _grandchild is None else _grandchild.pid


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "sse":  # the SDK's SSE app, run by uvicorn
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
    if _fault == "stubborn":  # stdin ended: stay until killed
        time.sleep(600)


if __name__ == "__main__":
    main()
