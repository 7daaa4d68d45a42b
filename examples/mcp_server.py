"""A small MCP server for the docs and the tests: one text tool and one image tool.

    python examples/mcp_server.py             # MCP over stdin/stdout (what oma starts)
    python examples/mcp_server.py --http 8000 # streamable HTTP at http://127.0.0.1:8000/mcp

Written with the official ``mcp`` SDK's server API (``MCPServer``, formerly FastMCP); oma-mcp
depends on that SDK, so it is installed with it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import Image, MCPServer

CAT = Path(__file__).with_name("cat.png")

server = MCPServer("oma-example")


@server.tool()
def shout(text: str) -> str:
    """Return the text in capital letters."""
    return text.upper()


@server.tool()
def cat_picture() -> Image:
    """A photo of a cat (PNG)."""
    return Image(data=CAT.read_bytes(), format="png")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
