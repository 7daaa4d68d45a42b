"""Checking what one plugin brings, as it loads: its hook options and its registrations.

A plugin may wrap the middleware hooks only, and implement a hook the core calls one
implementation at a time once; its registration hooks are each called alone, through pluggy
(a subset hook caller), and what they return is checked here, so that a broken plugin is
reported when it loads (``PluginHost.failures``) and never reaches a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import attrs
import pluggy

from . import hookspecs
from ._executors import EXECUTOR_FEATURES, ExecutorSpec
from .capabilities import BackendSpec, ProviderSpec
from .errors import PluginError
from .tools import ToolsetSpec

__all__ = ["HOOK_NAMES", "HookFault", "Offered", "Origin", "check_hooks", "error_text", "probe"]

#: What one plugin's registration hooks returned: providers, backends, scorers, executors,
#: toolset kinds.
Offered: TypeAlias = tuple[
    list[ProviderSpec], list[BackendSpec], list[Any], list[ExecutorSpec], list[ToolsetSpec]
]

#: Every hook oma specifies.
HOOK_NAMES = frozenset(name for name in vars(hookspecs) if name.startswith("oma_"))


@attrs.frozen
class Origin:
    """Where a plugin came from: its distribution and version (None for one registered in
    code), and whether it is one of oma's built-ins."""

    distribution: str | None
    version: str | None
    builtin: bool


class HookFault(Exception):
    """A registration hook raised or returned something unusable."""


def error_text(exc: BaseException) -> str:
    """An error as a failure records it: its type, and its text if it has one."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_hooks(pm: pluggy.PluginManager, plugin: object) -> None:
    """Hook wrappers are for the middleware hooks only, and a plugin implements a hook the
    core calls one implementation at a time once (so that it is one step of the chain, one
    observer). Read from pluggy's own records of the registered ``plugin``."""
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.name not in HOOK_NAMES:
            continue  # check_pending reported it
        own = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
        if caller.name in hookspecs.WRAPPABLE:
            continue
        if any(impl.wrapper or impl.hookwrapper for impl in own):
            raise PluginError(
                f"{caller.name} cannot be a hook wrapper in oma (only "
                f"{', '.join(sorted(hookspecs.WRAPPABLE))} can)"
            )
        if len(own) > 1:
            raise PluginError(f"{caller.name} is implemented twice in one plugin (once is allowed)")


def probe(pm: pluggy.PluginManager, plugin_name: str) -> Offered:
    """Call one plugin's registration hooks and check what they return."""
    providers = _call_own(pm, plugin_name, "oma_register_providers", ProviderSpec)
    backends = _call_own(pm, plugin_name, "oma_register_backends", BackendSpec)
    scorers = _call_own(pm, plugin_name, "oma_register_scorers", None)
    executors = _call_own(pm, plugin_name, "oma_register_executors", ExecutorSpec)
    toolsets = _call_own(pm, plugin_name, "oma_register_toolsets", ToolsetSpec)
    return providers, backends, scorers, executors, toolsets


def _call_own(
    pm: pluggy.PluginManager, plugin_name: str, hook: str, kind: type[Any] | None
) -> list[Any]:
    """Call one plugin's implementation of a registration hook, through pluggy (a hook caller
    without the other plugins), and check what it returns."""
    others = [plugin for name, plugin in pm.list_name_plugin() if name != plugin_name]
    caller = pm.subset_hook_caller(hook, remove_plugins=[p for p in others if p is not None])
    try:
        returned = caller()
    except Exception as exc:
        raise HookFault(f"{hook} raised {error_text(exc)}") from exc
    results: list[Any] = []
    for value in returned:
        if not isinstance(value, Iterable) or isinstance(value, str | bytes | Mapping):
            raise HookFault(f"{hook} must return a list, got {type(value).__name__}")
        for item in value:
            ok = callable(item) if kind is None else isinstance(item, kind)
            if not ok:
                wanted = "a callable" if kind is None else kind.__name__
                raise HookFault(f"{hook} must return a list of {wanted}, got {type(item).__name__}")
            if kind is not None:
                _check_spec(hook, item)
            results.append(item)
    return results


def _check_spec(hook: str, spec: ProviderSpec | BackendSpec | ExecutorSpec | ToolsetSpec) -> None:
    """A spec the core could not use is the plugin's fault, reported when it loads."""
    from .capabilities import Capabilities

    name = spec.kind if isinstance(spec, BackendSpec | ToolsetSpec) else spec.name
    if not isinstance(name, str) or not name:
        raise HookFault(f"{hook} returned a spec without a name")
    if not callable(spec.factory):
        raise HookFault(f"{hook}: the factory of {name!r} is not callable")
    if isinstance(spec, ProviderSpec) and not isinstance(spec.capabilities, Capabilities):
        raise HookFault(
            f"{hook}: provider {name!r} declares no capabilities (a Capabilities is required)"
        )
    if isinstance(spec, ExecutorSpec) and not spec.supports <= EXECUTOR_FEATURES:
        unknown = ", ".join(sorted(spec.supports - EXECUTOR_FEATURES))
        raise HookFault(
            f"{hook}: executor {name!r} declares unknown features ({unknown}); known: "
            f"{', '.join(sorted(EXECUTOR_FEATURES))}"
        )
