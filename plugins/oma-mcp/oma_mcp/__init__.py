"""oma-mcp: tools from MCP servers, on the official ``mcp`` SDK's client session.

``AgentConfig(tools=[MCPToolset.stdio("python", ["server.py"])])`` offers the server's tools to
the model and calls them through oma's tool-call middleware; images and other media they
return pass the core's checks. See the "MCP servers" page of the docs.

Registered as the ``mcp`` plugin: it registers the ``mcp`` toolset kind
(``oma_register_toolsets``), which ``oma run --mcp``, the ``mcp`` section of AGENTS.json and
``oma mcp list`` build their servers with. Names load on first access: finding plugins never
imports the SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oma_core import hookimpl
from oma_core.toolkit import ToolsetSpec

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = [
    "Elicitation",
    "MCPRequestError",
    "MCPServerError",
    "MCPToolset",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "oma_register_toolsets",
    "tool_output",
]

_EXPORTS = {
    "MCPServerError": "_toolset",
    "MCPToolset": "_toolset",
    "tool_output": "_results",
    "Elicitation": "_client",
    **dict.fromkeys(
        ("MCPRequestError", "Prompt", "PromptArgument", "Resource", "ResourceTemplate"),
        "_resources",
    ),
}

if TYPE_CHECKING:  # pragma: no cover - what type checkers see
    from ._client import Elicitation
    from ._resources import (
        MCPRequestError,
        Prompt,
        PromptArgument,
        Resource,
        ResourceTemplate,
    )
    from ._results import tool_output
    from ._toolset import MCPServerError, MCPToolset


def _from_config(config: Mapping[str, Any]) -> Any:
    """``MCPToolset.from_config``, imported (with the SDK) only when a toolset is built."""
    from ._toolset import MCPToolset

    return MCPToolset.from_config(config)


@hookimpl
def oma_register_toolsets() -> list[ToolsetSpec]:
    """The ``mcp`` toolset kind: ``{"command": ..., "args": [...]}`` or ``{"url": ...}``."""
    return [
        ToolsetSpec(
            "mcp",
            _from_config,
            "an MCP server's tools: {command, args, env, cwd} (stdio) or {url, headers, transport}",
        )
    ]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oma_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
