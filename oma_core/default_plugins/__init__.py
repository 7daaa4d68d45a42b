"""The built-in plugins, registered like any other plugin but always loaded."""

from __future__ import annotations

__all__ = ["DEFAULT_PLUGINS"]

#: Modules registered by every ``PluginHost``, under these names, before any entry point.
#: ``run`` is the run itself (the innermost ``oma_run``) and ``transport`` the innermost
#: call; the others are the core's own wrappers around them, on the same hooks a
#: third-party plugin uses. Among wrappers of equal rank the one registered later is outer:
#: around a run, progress is outermost, then evaluation, the span, closing (``trylast``).
DEFAULT_PLUGINS = (
    "oma_core.default_plugins.echo",
    "oma_core.default_plugins.scripted",
    "oma_core.default_plugins.local_executor",
    "oma_core.default_plugins.run",
    "oma_core.default_plugins.transport",
    "oma_core.default_plugins.budgets",
    "oma_core.default_plugins.closing",
    "oma_core.tracing",
    "oma_core.default_plugins.evaluation",
    "oma_core.default_plugins.progress",
)
