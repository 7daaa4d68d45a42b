"""The hooks the core calls, typed: ``Hooks`` (``PluginHost.hooks``) and ``HookCall``.

The wrap hooks (``oma_run``, ``oma_model_call``, ``oma_tool_call``) are one pluggy call each,
so pluggy composes the wrappers (``Hooks.for_run``). The chain and observe hooks
(``oma_before_run``, ``oma_progress``, ``oma_evaluation_result``) are called one
implementation at a time, because pluggy has no chain or isolated call of its own (its
maintainers keep that out of its scope): each is a ``HookCall``, pluggy's hook caller for one
plugin (``oma_core._wraps.caller_of``), in the order pluggy keeps them
(``HookCaller.get_hookimpls``, read from the end, as pluggy calls them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from ._wraps import IDLE_WRAPPERS, Manager, caller_of, idle_key, wrap_call

if TYPE_CHECKING:
    from ._calls import CallEvents, RunEvents, RunHooks
    from ._settings import RunSettings
    from .messages import ToolResultBlock

__all__ = ["HookCall", "Hooks", "call_order"]


@attrs.frozen
class HookCall:
    """One plugin's implementation of a hook, called through pluggy, like the hook itself.

    For the hooks the core calls one implementation at a time: ``oma_before_run`` (a chain,
    so that one rewrite feeds the next, an ``async def`` one is awaited before the next runs,
    and a failure names its plugin) and the observe hooks (so that one failing observer does
    not stop the others). Each ``HookCall`` is pluggy's hook caller for this one plugin
    (``oma_core._wraps.caller_of``): pluggy binds the arguments the implementation
    declares and calls it. Positional arguments bind to the specification's argument names.
    """

    plugin: str
    hook: str
    caller: pluggy.HookCaller = attrs.field(repr=False)
    spec_argnames: tuple[str, ...] = attrs.field(repr=False)
    #: What errors call this implementation: "oma_before_run of plugin 'x'".
    label: str = attrs.field(
        init=False,
        repr=False,
        eq=False,
        default=attrs.Factory(lambda call: f"{call.hook} of plugin {call.plugin!r}", True),
    )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        names = self.spec_argnames
        if kwargs or len(args) != 1 or not names:
            bound = dict(zip(names, args, strict=False)) | kwargs
        else:  # one argument, as the core calls every such hook: no merging of dicts
            bound = {names[0]: args[0]}
        # pluggy returns the implementations' results that are not None, as a list.
        results = self.caller(**bound)
        return results[0] if results else None


def call_order(pm: pluggy.PluginManager, hook: str) -> list[HookCall]:
    """The implementations of ``hook`` (no wrappers), one ``HookCall`` each, in the order
    pluggy calls them: pluggy keeps them by priority (``get_hookimpls``) and calls them from
    the end."""
    caller: pluggy.HookCaller = getattr(pm.hook, hook)
    spec_argnames = tuple(caller.spec.argnames) if caller.spec is not None else ()
    return [
        HookCall(impl.plugin_name, hook, caller_of(pm, hook, [impl.plugin]), spec_argnames)
        for impl in reversed(caller.get_hookimpls())
        if not (impl.wrapper or impl.hookwrapper)
    ]


class Hooks:
    """The hooks the core calls, typed (pluggy's relay is untyped): ``for_run`` the run's
    hooks, ``progress`` and ``evaluation_result`` the observers. ``calls(hook)`` is the host's
    kept ``call_order`` of a hook (``PluginHost.hook_calls``)."""

    __slots__ = ("_calls", "_generation", "_plans", "_pm")

    def __init__(self, pm: pluggy.PluginManager, calls: Callable[[str], list[HookCall]]) -> None:
        self._pm = pm
        self._calls = calls
        self._plans: dict[tuple[bool, ...], _RunHooks] = {}
        self._generation = -1

    def for_run(self, settings: RunSettings, target: object) -> RunHooks:
        """The hooks of one run with these settings and this target: ``oma_run``,
        ``oma_model_call`` and ``oma_tool_call`` through pluggy, without the built-in wrappers
        that would do nothing for such a run (``oma_core._wraps``), and the ``oma_before_run``
        chain. One plan per combination of idle wrappers, made on first use and kept until a
        plugin is registered or unregistered."""
        pm = self._pm
        generation = pm.generation if isinstance(pm, Manager) else -2
        if generation != self._generation or generation == -2:
            self._plans = {}
            self._generation = generation
        key = idle_key(settings, target)
        plan = self._plans.get(key)
        if plan is None:
            idle = {name for name, is_idle in zip(IDLE_WRAPPERS, key, strict=True) if is_idle}
            plan = self._plans[key] = _RunHooks(
                wrap_call(pm, "oma_run", idle),
                wrap_call(pm, "oma_model_call", idle),
                wrap_call(pm, "oma_tool_call", idle),
                tuple(self._calls("oma_before_run")),
            )
        return plan

    def progress(self) -> list[HookCall]:
        """The ``oma_progress`` implementations, in pluggy's call order (observers)."""
        return self._calls("oma_progress")

    def evaluation_result(self) -> list[HookCall]:
        """The ``oma_evaluation_result`` implementations, in pluggy's call order (sinks)."""
        return self._calls("oma_evaluation_result")

    def stores(self) -> list[HookCall]:
        """The ``oma_register_stores`` implementations, in pluggy's call order (each called
        alone when a store URL is resolved, so that a broken one is skipped)."""
        return self._calls("oma_register_stores")


@attrs.frozen
class _RunHooks:
    """One run's hooks (``RunHooks``): each wrap hook's pluggy caller (called with keywords)
    and the ``oma_before_run`` chain."""

    run: Callable[..., RunEvents]
    model_call: Callable[..., CallEvents]
    tool_call: Callable[..., Awaitable[ToolResultBlock]]
    before_run_calls: tuple[HookCall, ...]
