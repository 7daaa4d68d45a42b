"""A real MCP server (the SDK's low-level ``Server``) that lists whatever tools a JSON file
holds, as raw tool objects: ``python listing_server.py TOOLS.json``. Any call answers with
the name it was called by and its arguments, so a test sees which name reached the server.

The SDK's server API refuses odd names and schemas; this one passes them on as a hostile or
careless server would (each item is read by ``mcp_types.Tool``, which checks only types).
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

with open(sys.argv[1], encoding="utf-8") as _file:
    TOOLS = [types.Tool.model_validate(item) for item in json.load(_file)]


async def list_tools(
    ctx: object, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = f"called {params.name!r} with {json.dumps(params.arguments, sort_keys=True)}"
    return types.CallToolResult(content=[types.TextContent(text=text)])


server = Server("listing", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
