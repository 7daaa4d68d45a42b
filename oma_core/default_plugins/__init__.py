"""The built-in plugins, registered like any other plugin but always loaded."""

from __future__ import annotations

__all__ = ["DEFAULT_PLUGINS"]

#: Modules registered by every ``PluginHost``, under these names, before any entry point.
DEFAULT_PLUGINS = (
    "oma_core.default_plugins.echo",
    "oma_core.default_plugins.scripted",
)
