"""The built-in plugins, registered like any other plugin but always loaded."""

from __future__ import annotations

__all__ = ["DEFAULT_PLUGINS"]

#: Modules registered by every ``PluginHost``, under these names, before any entry point.
#: ``transport`` is the innermost call middleware; ``budgets`` (here), ``oma_core.tracing``
#: and ``oma_core.progress`` are the core's own wrappers around it, on the same hooks a
#: third-party plugin uses; ``toolsets`` puts a toolset's tools (an MCP server's) in
#: each call, outermost.
DEFAULT_PLUGINS = (
    "oma_core.default_plugins.echo",
    "oma_core.default_plugins.scripted",
    "oma_core.default_plugins.local_executor",
    "oma_core.default_plugins.transport",
    "oma_core.default_plugins.budgets",
    "oma_core.default_plugins.toolsets",
    "oma_core.tracing",
    "oma_core.progress",
)
