"""The wrap hooks of one run, without the built-in wrappers that would do nothing for it.

A run without progress, evaluator, tracer or budgets, whose target is kept after it, has
built-in wrappers that hand back what they got (``IDLE_WRAPPERS``; ``tests/test_hook_plans.py``
holds them to it). Leaving them out changes nothing but the cost, so each wrap hook of such a
run is pluggy's hook caller of what is left: the host's own when nothing is left out, else a
plain caller of a plugin manager holding only what is left, registered in the host's order
(so pluggy orders them as the host does; pluggy's subset caller would filter the
implementations on every call), or, while pluggy's call monitoring is on, the subset caller
(whose calls the monitor sees). Every call goes through pluggy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pluggy

from . import hookspecs

__all__ = ["IDLE_WRAPPERS", "Manager", "caller_of", "idle_key", "wrap_call"]

#: The built-in wrappers that do nothing for some runs, in the order of ``idle_key``, each
#: idle when its part of the key is true: progress without ``settings.progress``, evaluation
#: without ``settings.evaluator``, the spans without ``settings.tracer``, the budgets without
#: ``settings.budgets``, closing when the run's target is kept after it.
IDLE_WRAPPERS = (
    "oma_core.default_plugins.progress",
    "oma_core.default_plugins.evaluation",
    "oma_core.tracing",
    "oma_core.default_plugins.budgets",
    "oma_core.default_plugins.closing",
)


def idle_key(settings: Any, target: object) -> tuple[bool, ...]:
    """Which of ``IDLE_WRAPPERS`` do nothing for a run with these settings and this target."""
    return (
        settings.progress is None,
        settings.evaluator is None,
        settings.tracer is None,
        not settings.budgets,
        not getattr(target, "close_after_run", False),
    )


class Manager(pluggy.PluginManager):
    """pluggy's plugin manager, counting the changes to what its hooks call (``generation``)
    so that what is planned from them knows when it is stale, and noting call monitoring
    (``monitored``: every call then goes through the host's own callers, to be seen)."""

    generation = 0
    monitored = False

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        self.generation += 1
        return super().register(plugin, name)

    def unregister(self, plugin: Any | None = None, name: str | None = None) -> Any | None:
        self.generation += 1
        return super().unregister(plugin, name)

    def add_hookspecs(self, module_or_class: Any) -> None:
        self.generation += 1
        super().add_hookspecs(module_or_class)

    def add_hookcall_monitoring(self, before: Any, after: Any) -> Callable[[], None]:
        self.generation += 1
        self.monitored = True
        undo = super().add_hookcall_monitoring(before, after)

        def undo_and_count() -> None:
            self.generation += 1
            undo()

        return undo_and_count


def wrap_call(pm: pluggy.PluginManager, hook: str, idle: set[str]) -> pluggy.HookCaller:
    """pluggy's caller of ``hook`` without the ``idle`` built-in wrappers (module names of
    ``IDLE_WRAPPERS``), called with keywords."""
    implementers = [
        (name, plugin)
        for name, plugin in pm.list_name_plugin()
        if plugin is not None and any(c.name == hook for c in pm.get_hookcallers(plugin) or ())
    ]
    removed = [plugin for name, plugin in implementers if _builtin(name, plugin, idle)]
    if not removed:
        caller: pluggy.HookCaller = getattr(pm.hook, hook)
        return caller
    return caller_of(pm, hook, [plugin for _, plugin in implementers if plugin not in removed])


def caller_of(pm: pluggy.PluginManager, hook: str, plugins: list[object]) -> pluggy.HookCaller:
    """pluggy's caller of ``hook`` of ``plugins`` only (registered plugins of ``pm``): a
    plain caller of a plugin manager holding only them, registered in ``pm``'s order (so
    pluggy orders them as ``pm`` does), for pluggy's subset caller filters the
    implementations on every call, and costs about half again as much; while call monitoring
    is on (or ``pm`` does not count its changes), the subset caller, whose calls are seen."""
    if not isinstance(pm, Manager) or pm.monitored:
        kept = {id(plugin) for plugin in plugins}
        others = [p for _, p in pm.list_name_plugin() if p is not None and id(p) not in kept]
        return pm.subset_hook_caller(hook, others)
    own = pluggy.PluginManager(pm.project_name)
    own.add_hookspecs(hookspecs)
    for name, plugin in pm.list_name_plugin():
        if plugin is not None and any(plugin is kept for kept in plugins):
            own.register(plugin, name)
    caller: pluggy.HookCaller = getattr(own.hook, hook)
    return caller


def _builtin(name: str, plugin: object, names: set[str]) -> bool:
    """``plugin`` is one of the built-in plugins ``names`` (the module itself, registered)."""
    return name in names and plugin is sys.modules.get(name)
