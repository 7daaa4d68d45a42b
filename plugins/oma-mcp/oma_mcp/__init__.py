"""oma-mcp: tools from MCP servers, on the official ``mcp`` SDK's client session.

``AgentConfig(tools=[MCPToolset.stdio("python", ["server.py"])])`` offers the server's tools to
the model and calls them through oma's tool-call middleware; images and other media they
return pass the core's checks. See the "MCP servers" page of the docs.
"""

from __future__ import annotations

from ._results import tool_output
from ._toolset import MCPServerError, MCPToolset

__all__ = ["MCPServerError", "MCPToolset", "tool_output"]
