"""oma-mcp: tools from MCP servers, on the official ``mcp`` SDK's client session.

``AgentConfig(tools=[MCPToolset.stdio("python", ["server.py"])])`` offers the server's tools to
the model and calls them through oma's tool-call middleware; images and other media they
return pass the core's checks. See the "MCP servers" page of the docs.

Registered as the ``mcp`` plugin (so ``oma plugins`` lists it); it implements no hook yet.
Names load on first access: finding plugins never imports the SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = ["MCPServerError", "MCPToolset", "tool_output"]

_EXPORTS = {"MCPServerError": "_toolset", "MCPToolset": "_toolset", "tool_output": "_results"}

if TYPE_CHECKING:  # pragma: no cover - what type checkers see
    from ._results import tool_output
    from ._toolset import MCPServerError, MCPToolset


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oma_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
