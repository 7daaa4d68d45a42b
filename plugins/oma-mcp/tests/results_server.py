"""An MCP server (the SDK's ``MCPServer``) whose tools return what the results tests need:
outsized text and images, an image of an odd type, an image repeated in ``structuredContent``
(as server-filesystem's ``read_media_file`` does), and secrets echoed back.

Run as ``python results_server.py [ARG...]`` (stdio; the arguments are only echoed by
``leak``) or ``python results_server.py http PORT`` (streamable HTTP at 127.0.0.1).
"""

from __future__ import annotations

import base64
import os
import sys

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("results")


def _png(size: int) -> str:
    """``size`` bytes starting as a PNG does, base64."""
    return base64.b64encode(PNG + bytes(max(size - len(PNG), 0))).decode()


@server.tool()
def big_text(size: int) -> str:
    """``size`` characters of text."""
    return "x" * size


@server.tool()
def big_image(size: int) -> types.CallToolResult:
    """A line of text, an image of ``size`` bytes, another line."""
    return types.CallToolResult(
        content=[
            types.TextContent(text="before"),
            types.ImageContent(data=_png(size), mime_type="image/png"),
            types.TextContent(text="after"),
        ]
    )


@server.tool()
def images(sizes: list[int]) -> types.CallToolResult:
    """One image of each size."""
    return types.CallToolResult(
        content=[types.ImageContent(data=_png(size), mime_type="image/png") for size in sizes]
    )


@server.tool()
def odd_image() -> types.CallToolResult:
    """A good image, an image typed ``image/x-evil``, and a line of text."""
    return types.CallToolResult(
        content=[
            types.ImageContent(data=_png(len(PNG)), mime_type="image/png"),
            types.ImageContent(data=_png(len(PNG)), mime_type="image/x-evil"),
            types.TextContent(text="two pictures"),
        ]
    )


@server.tool()
def media_file(size: int) -> types.CallToolResult:
    """An image of ``size`` bytes, shaped as server-filesystem's ``read_media_file`` answers:
    the image in ``content`` and again in ``structuredContent``."""
    item = {"type": "image", "data": _png(size), "mimeType": "image/png"}
    return types.CallToolResult(
        content=[types.ImageContent(data=item["data"], mime_type="image/png")],
        structured_content={"content": [item]},
    )


@server.tool()
def sized_media(size: int) -> types.CallToolResult:
    """An image, and ``structuredContent`` holding it beside facts the content lacks."""
    data = _png(size)
    return types.CallToolResult(
        content=[types.ImageContent(data=data, mime_type="image/png")],
        structured_content={"path": "/srv/cat.png", "size": size, "data": data},
    )


@server.tool()
def leak(
    variables: list[str], headers: list[str], fail: bool, ctx: Context, rpc: bool = False
) -> str:
    """The values of ``variables`` in the server's environment, of ``headers`` in this call's
    HTTP request, and the server's arguments; as an error result when ``fail``, as a
    JSON-RPC error when ``rpc``."""
    found = {name: os.environ.get(name, "<unset>") for name in variables}
    sent = ctx.headers or {}
    found |= {name: str(sent.get(name.lower(), "<none>")) for name in headers}
    text = f"config: {found!r}; argv: {sys.argv[1:]!r}"
    if rpc:
        raise MCPError(-32099, f"upstream refused {text}")
    if fail:
        raise ToolError(f"cannot connect with {text}")
    return text


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
