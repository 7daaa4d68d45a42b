"""PluginHost: finds plugins through the ``oma`` entry-point group and isolates their failures.

Entry points are loaded once, one plugin at a time. A plugin that fails to import, to
register, to pass pluggy's hook validation or to return sensible registrations is unregistered,
recorded in ``PluginHost.failures`` and skipped: a broken plugin never breaks oma. The built-in
plugins (``oma_core.default_plugins``) always load.

Environment switches, read when a host is created:

- ``OMA_LOAD_PLUGINS=a,b`` loads only those external plugins (an empty value loads none);
- ``OMA_DISABLE_PLUGINS=a,b`` blocks some;
- ``OMA_PREFER_PLUGINS=name=distribution,...`` settles a name clash (below).

A plugin is named by its entry-point name or its distribution name (``oma-x`` and ``oma_x``
are the same name).

Name clashes are never silent. When two distributions offer the same provider name (or
backend, executor or toolset kind), the one chosen in ``OMA_PREFER_PLUGINS`` (or
``PluginHost(prefer=...)``) wins; else the one named for it (``oma-ollama`` for ``ollama``)
beats the others (a preset of a generic wire, such as oma-openai's ``ollama``); else the name
is ambiguous: using it raises ``AmbiguousNameError`` naming both owners and how to choose.
Each clash is a ``PluginClashWarning`` when plugins load (unless a preference settled it) and
is listed by ``oma plugins``. A plugin registered in code (``register``) is an explicit
choice: it beats any distribution's.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import threading
import warnings
from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
import pluggy

from . import __version__, hookspecs
from ._discovery import (
    HOOK_NAMES,
    HookFault,
    Offered,
    Origin,
    check_hooks,
    error_text,
    probe,
)
from ._executors import Executor, ExecutorSpec
from ._hints import not_registered
from ._hook_calls import HookCall, Hooks, call_order
from ._wraps import Manager
from .capabilities import BackendSpec, ProviderSpec
from .errors import PluginError
from .tools import Toolset, ToolsetSpec, is_toolset

if TYPE_CHECKING:
    from .providers import Provider, ProviderSettings

__all__ = [
    "AmbiguousNameError",
    "HookCall",
    "Hooks",
    "NameClash",
    "PluginClashWarning",
    "PluginFailure",
    "PluginHost",
    "PluginInfo",
]

#: The entry-point group, and pluggy's project name.
ENTRY_POINT_GROUP = "oma"

_Spec = TypeVar("_Spec", ProviderSpec, BackendSpec)
#: The setting that settles name clashes: ``name=distribution`` pairs, comma-separated.
PREFER_VARIABLE = "OMA_PREFER_PLUGINS"


class AmbiguousNameError(PluginError):
    """Two distributions offer this provider name (or backend, executor or toolset kind),
    neither is named for it, and nothing chose one.

    ``kind`` is "provider", "backend", "executor" or "toolset"; ``owners`` the distributions,
    sorted. The message says how to choose: ``OMA_PREFER_PLUGINS=name=distribution`` or
    ``PluginHost(prefer={name: distribution})``.
    """

    code = "AMBIGUOUS_NAME"

    def __init__(
        self, message: str, *, name: str, kind: str = "provider", owners: tuple[str, ...] = ()
    ) -> None:
        self.kind = kind
        self.owners = tuple(owners)
        super().__init__(message, name=name)


class PluginClashWarning(UserWarning):
    """Two distributions offer the same name: which one wins, or that neither does."""


@attrs.frozen
class NameClash:
    """Two or more distributions offering one name, and how it was settled.

    ``kind`` is "provider", "backend", "executor" or "toolset"; ``owners`` the distributions,
    sorted; ``winner`` the one whose spec is used (None: ambiguous); ``reason`` is "chosen"
    (``OMA_PREFER_PLUGINS`` or ``prefer=``), "dedicated" (the distribution named for it) or
    "ambiguous".
    """

    kind: str
    name: str
    owners: tuple[str, ...]
    winner: str | None
    reason: str

    def describe(self) -> str:
        """One sentence: who offers the name, who wins and why, and how to choose."""
        what = _KIND_LABELS[self.kind]
        owners = " and ".join(self.owners) if len(self.owners) == 2 else ", ".join(self.owners)
        head = f"{what} {self.name!r} is offered by {owners}"
        if self.reason == "chosen":
            return f"{head}: {self.winner} wins, as {PREFER_VARIABLE} (or prefer=) chooses"
        if self.reason == "dedicated":
            other = next(owner for owner in self.owners if owner != self.winner)
            return (
                f"{head}: {self.winner} wins, being named for it; to use {other}'s, set "
                f"{PREFER_VARIABLE}={self.name}={other}"
            )
        choices = " or ".join(f"{PREFER_VARIABLE}={self.name}={owner}" for owner in self.owners)
        return (
            f"{head}, and none is named for it: choose one with {choices} (in code: "
            f"PluginHost(prefer={{{self.name!r}: {self.owners[0]!r}}}))"
        )


_KIND_LABELS = {
    "provider": "provider",
    "backend": "backend kind",
    "executor": "executor",
    "toolset": "toolset kind",
}


@attrs.frozen
class PluginFailure:
    """A plugin that was skipped: its name, its distribution and what went wrong.

    ``stage`` is "import", "register", "validate" or "hook"; ``error`` is the error's text.
    """

    name: str
    distribution: str | None
    stage: str
    error: str


@attrs.frozen
class PluginInfo:
    """What ``oma plugins`` shows about one loaded plugin."""

    name: str
    distribution: str | None
    version: str | None
    builtin: bool
    providers: tuple[str, ...]
    backends: tuple[str, ...]
    scorers: int
    hooks: tuple[str, ...]
    executors: tuple[str, ...] = ()
    toolsets: tuple[str, ...] = ()


@attrs.define
class _Registry:
    """What the registration hooks returned, merged; rebuilt when the set of plugins changes."""

    key: tuple[tuple[str, int], ...]
    count: int = attrs.field(init=False)
    #: The plugin manager's ``generation`` this was checked against (-1: none).
    generation: int = attrs.field(init=False, default=-1)
    providers: dict[str, ProviderSpec] = attrs.Factory(dict)
    provider_owner: dict[str, str] = attrs.Factory(dict)
    backends: dict[str, BackendSpec] = attrs.Factory(dict)
    backend_owner: dict[str, str] = attrs.Factory(dict)
    scorers: list[Any] = attrs.Factory(list)
    executors: dict[str, ExecutorSpec] = attrs.Factory(dict)
    executor_owner: dict[str, str] = attrs.Factory(dict)
    toolsets: dict[str, ToolsetSpec] = attrs.Factory(dict)
    toolset_owner: dict[str, str] = attrs.Factory(dict)
    by_plugin: dict[str, Offered] = attrs.Factory(dict)
    shadowed: list[str] = attrs.Factory(list)
    clashes: list[NameClash] = attrs.Factory(list)
    #: (kind, name) -> the clash that left the name without a winner.
    ambiguous: dict[tuple[str, str], NameClash] = attrs.Factory(dict)
    calls: dict[str, list[HookCall]] = attrs.Factory(dict)

    def __attrs_post_init__(self) -> None:
        self.count = len(self.key)


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def _preferences(given: Mapping[str, str] | None) -> dict[str, str]:
    """``OMA_PREFER_PLUGINS`` (``name=distribution,...``), then ``given`` over it; values
    normalised like plugin names. A malformed item is a ``PluginError`` naming it."""
    chosen: dict[str, str] = {}
    for item in os.environ.get(PREFER_VARIABLE, "").split(","):
        if not item.strip():
            continue
        name, equals, owner = item.partition("=")
        if not equals or not name.strip() or not owner.strip():
            raise PluginError(
                f"{PREFER_VARIABLE} holds {item.strip()!r}; expected name=distribution "
                f"(e.g. {PREFER_VARIABLE}=ollama=oma-ollama), comma-separated",
                name=PREFER_VARIABLE,
            )
        chosen[name.strip()] = _norm(owner)
    for name, owner in (given or {}).items():
        chosen[name] = _norm(owner)
    return chosen


def _env_names(variable: str) -> set[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return {_norm(part) for part in value.split(",") if part.strip()}


class PluginHost:
    """The set of loaded plugins and what they offer.

    ``PluginHost()`` builds a fresh host (reading ``OMA_LOAD_PLUGINS``,
    ``OMA_DISABLE_PLUGINS`` and ``OMA_PREFER_PLUGINS`` now); ``PluginHost.default()`` is the
    process-wide one the agent uses, created on first use. ``load_entrypoints=False`` loads the
    built-ins only (for tests that register in-process plugins with ``register``).
    ``prefer`` settles name clashes (``{"ollama": "oma-ollama"}``: name -> distribution or
    entry-point name), over ``OMA_PREFER_PLUGINS``.
    """

    _default: ClassVar[PluginHost | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self, *, load_entrypoints: bool = True, prefer: Mapping[str, str] | None = None
    ) -> None:
        self._prefer = _preferences(prefer)
        # The clashes already reported, so each is one warning per host.
        self._warned: set[NameClash] = set()
        self.pm: pluggy.PluginManager = Manager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        #: The hooks, typed (``host.hooks.run(run)``, ``host.hooks.progress()``, ...).
        self.hooks = Hooks(self.pm, self.hook_calls)
        self.failures: list[PluginFailure] = []
        self._origins: dict[str, Origin] = {}
        # What each plugin's registration hooks returned, asked once when it loaded.
        self._offered: dict[str, Offered] = {}
        self._registry: _Registry | None = None
        self._lock = threading.RLock()
        self._load_builtins()
        if load_entrypoints:
            self._load_entrypoints()

    # -- the shared instance -----------------------------------------------------------------

    @classmethod
    def default(cls) -> PluginHost:
        """The process-wide host, loading entry points on first use."""
        host = cls._default
        if host is None:
            with cls._default_lock:
                host = cls._default
                if host is None:
                    host = cls._default = cls()
        return host

    @classmethod
    def set_default(cls, host: PluginHost | None) -> PluginHost | None:
        """Replace the process-wide host (``None``: build a new one on next use); for tests.

        Returns the previous one so a test can put it back.
        """
        with cls._default_lock:
            previous, cls._default = cls._default, host
        return previous

    # -- pluggy --------------------------------------------------------------------------------

    @property
    def hook(self) -> pluggy.HookRelay:
        """pluggy's hook relay: ``host.hook.oma_register_scorers()`` (untyped; the core calls
        hooks through ``hooks``)."""
        return self.pm.hook

    def register(self, plugin: object, name: str | None = None) -> str:
        """Register an in-process plugin (a module, class or instance) and return its name.

        Unlike entry-point plugins, a plugin registered here that fails validation raises
        ``PluginError`` (it is left unregistered): the caller asked for it explicitly.
        """
        with self._lock:
            failure = self._add(plugin, name, Origin(None, None, builtin=False))
            if isinstance(failure, PluginFailure):
                raise PluginError(
                    f"plugin {failure.name!r} failed to {_STAGE_VERB[failure.stage]}: "
                    f"{failure.error}",
                    name=failure.name,
                )
            return failure

    def unregister(self, plugin: object | None = None, name: str | None = None) -> None:
        """Unregister a plugin by object or name."""
        with self._lock:
            if name is None and plugin is not None:
                name = self.pm.get_name(plugin)
            self.pm.unregister(plugin=plugin, name=name)
            if name is not None:
                self._origins.pop(name, None)
                self._offered.pop(name, None)
            self._registry = None

    # -- what plugins offer --------------------------------------------------------------------

    def provider_specs(self) -> dict[str, ProviderSpec]:
        """Every registered provider, by name, sorted by name."""
        return dict(self._collected().providers)

    def provider_spec(self, name: str) -> ProviderSpec:
        """The provider registered as ``name``; ``PluginError`` names the available ones
        (``AmbiguousNameError`` when two distributions offer it and nothing chose one)."""
        return self._lookup(self._collected().providers, name, "provider", "providers")

    def build_provider(self, spec: ProviderSpec, settings: ProviderSettings) -> Provider:
        """Call ``spec.factory`` and check its product implements the provider interface.

        The factory runs on first use (it imports the SDK), so a product without
        ``complete``/``stream`` is reported then, as a ``PluginError`` naming the plugin.
        """
        provider = spec.factory(settings)
        if not (
            callable(getattr(provider, "complete", None))
            or callable(getattr(provider, "stream", None))
        ):
            owner = self._collected().provider_owner.get(spec.name, "?")
            raise PluginError(
                f"plugin {owner!r}: the factory of provider {spec.name!r} returned a "
                f"{type(provider).__name__}, which has neither complete() nor stream()",
                name=owner,
            )
        return provider

    def backend_specs(self) -> dict[str, BackendSpec]:
        """Every registered external-agent backend, by kind, sorted by kind."""
        return dict(self._collected().backends)

    def backend_spec(self, kind: str) -> BackendSpec:
        """The backend registered as ``kind``; ``PluginError`` names the available ones."""
        return self._lookup(self._collected().backends, kind, "backend kind", "backends")

    def executor_specs(self) -> dict[str, ExecutorSpec]:
        """Every registered executor, by name, sorted by name."""
        return dict(self._collected().executors)

    def executor_spec(self, name: str) -> ExecutorSpec:
        """The executor registered as ``name``; ``PluginError`` names the available ones and
        the closest match (an executor is named by hand, in code or on the command line)."""
        registry = self._collected()
        self._unambiguous(registry, "executor", name)
        table = registry.executors
        if name not in table:
            close = difflib.get_close_matches(name, list(table), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PluginError(
                f"unknown executor {name!r}{hint}; available executors: "
                f"{', '.join(table) or 'none'}{self._failure_hint()}",
                name=name,
            )
        return table[name]

    def build_executor(self, spec: ExecutorSpec, options: Mapping[str, Any]) -> Executor:
        """Call ``spec.factory(options)`` and check its product has ``session``.

        A product without it is a ``PluginError`` naming the plugin, when the
        ``OpenMultiAgent`` that selects the executor is built.
        """
        executor = spec.factory(options)
        if not callable(getattr(executor, "session", None)):
            owner = self._collected().executor_owner.get(spec.name, "?")
            raise PluginError(
                f"plugin {owner!r}: the factory of executor {spec.name!r} returned a "
                f"{type(executor).__name__}, which has no session()",
                name=owner,
            )
        return executor

    def toolset_specs(self) -> dict[str, ToolsetSpec]:
        """Every registered toolset kind, by kind, sorted by kind."""
        return dict(self._collected().toolsets)

    def toolset_spec(self, kind: str) -> ToolsetSpec:
        """The toolset kind registered as ``kind``; ``NotRegisteredError`` names the available
        ones and, for a kind of this repository whose plugin is missing, what to install."""
        registry = self._collected()
        self._unambiguous(registry, "toolset", kind)
        table = registry.toolsets
        spec = table.get(kind)
        if spec is None:
            raise not_registered(str(kind), table, kind="toolset", note=self._failure_hint())
        return spec

    def build_toolset(self, kind: str, config: Mapping[str, Any]) -> Toolset:
        """A toolset of ``kind`` from its plain configuration (``spec.factory(config)``);
        a product without an async ``list_tools`` is a ``PluginError`` naming the plugin."""
        spec = self.toolset_spec(kind)
        toolset = spec.factory(config)
        if not is_toolset(toolset):
            owner = self._collected().toolset_owner.get(spec.kind, "?")
            raise PluginError(
                f"plugin {owner!r}: the factory of toolset kind {spec.kind!r} returned a "
                f"{type(toolset).__name__}, which has no async list_tools()",
                name=owner,
            )
        return toolset

    def scorers(self) -> list[Any]:
        """The online-evaluation scorers plugins ship, in pluggy's call order."""
        return list(self._collected().scorers)

    def hook_calls(self, hook: str) -> list[HookCall]:
        """The implementations of ``hook``, one per plugin, in the order pluggy calls them.

        For hooks the core calls one implementation at a time (``oma_before_run``, and the
        observe hooks, so that one failing implementation does not stop the others). Each is
        called through pluggy (``HookCall``); the order is pluggy's own
        (``HookCaller.get_hookimpls``, read from the end). The list is kept until a plugin is
        registered or unregistered, so asking is cheap.
        """
        if hook not in HOOK_NAMES:
            raise PluginError(f"unknown hook {hook!r}", name=hook)
        registry = self._collected()
        calls = registry.calls.get(hook)
        if calls is None:
            calls = registry.calls[hook] = call_order(self.pm, hook)
        return list(calls)

    def before_run_hooks(self) -> list[HookCall]:
        """The ``oma_before_run`` implementations in call order; the agent chains them."""
        return self.hook_calls("oma_before_run")

    def plugin_info(self) -> list[PluginInfo]:
        """One record per loaded plugin, built-ins first, for ``oma plugins``.

        A provider or backend shadowed by another plugin's is listed under the winner only,
        and an ambiguous one (``clashes``) under none.
        """
        registry = self._collected()
        infos = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            origin = self._origins.get(name, Origin(None, None, builtin=False))
            offered = registry.by_plugin.get(name, ([], [], [], [], []))
            providers, backends, scorers, executors, toolsets = offered
            hooks = sorted(hc.name for hc in self.pm.get_hookcallers(plugin) or [])
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=origin.distribution,
                    version=origin.version,
                    builtin=origin.builtin,
                    providers=tuple(
                        spec.name
                        for spec in providers
                        if registry.provider_owner.get(spec.name) == name
                    ),
                    backends=tuple(
                        spec.kind
                        for spec in backends
                        if registry.backend_owner.get(spec.kind) == name
                    ),
                    scorers=len(scorers),
                    hooks=tuple(hooks),
                    executors=tuple(
                        spec.name
                        for spec in executors
                        if registry.executor_owner.get(spec.name) == name
                    ),
                    toolsets=tuple(
                        spec.kind
                        for spec in toolsets
                        if registry.toolset_owner.get(spec.kind) == name
                    ),
                )
            )
        # Built-ins in the order they were registered, then the others by name.
        infos.sort(key=lambda info: (not info.builtin, "" if info.builtin else info.name))
        return infos

    def shadowed(self) -> list[str]:
        """Notes on providers or backends hidden by another plugin's of the same name, within
        one distribution or by a plugin registered in code (clashes between distributions
        are ``clashes``)."""
        return list(self._collected().shadowed)

    def clashes(self) -> list[NameClash]:
        """Every name two or more distributions offer, with the winner (None: ambiguous)."""
        return list(self._collected().clashes)

    # -- loading -------------------------------------------------------------------------------

    def _load_builtins(self) -> None:
        from .default_plugins import DEFAULT_PLUGINS

        for module_name in DEFAULT_PLUGINS:
            module = importlib.import_module(module_name)
            result = self._add(module, module_name, Origin("oma-core", __version__, builtin=True))
            if isinstance(result, PluginFailure):  # pragma: no cover - a bug in oma itself
                raise PluginError(result.error, name=module_name)

    def _load_entrypoints(self) -> None:
        only = _env_names("OMA_LOAD_PLUGINS")
        blocked = _env_names("OMA_DISABLE_PLUGINS") or set()
        seen: set[tuple[str, str]] = set()
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if (ep.name, ep.value) in seen:  # the same distribution found twice on sys.path
                continue
            seen.add((ep.name, ep.value))
            dist = ep.dist
            dist_name = dist.metadata["Name"] if dist is not None else None
            names = {_norm(ep.name)} | ({_norm(dist_name)} if dist_name else set())
            if (only is not None and not names & only) or names & blocked:
                continue
            origin = Origin(dist_name, dist.version if dist is not None else None, False)
            self._load_entrypoint(ep, origin)

    def _load_entrypoint(self, ep: metadata.EntryPoint, origin: Origin) -> None:
        if self.pm.has_plugin(ep.name):
            self._fail(ep.name, origin, "register", f"the name {ep.name!r} is already taken")
            return
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:  # any import-time fault of a third party
            self._fail(ep.name, origin, "import", error_text(exc))
            return
        result = self._add(plugin, ep.name, origin)
        if isinstance(result, PluginFailure):
            self.failures.append(result)

    def _fail(self, name: str, origin: Origin, stage: str, error: str) -> None:
        self.failures.append(PluginFailure(name, origin.distribution, stage, error))

    def _add(self, plugin: object, name: str | None, origin: Origin) -> str | PluginFailure:
        """Register, validate and probe one plugin; on any fault leave it unregistered."""
        label = name or getattr(plugin, "__name__", None) or repr(plugin)
        try:
            registered = self.pm.register(plugin, name=name)
        except Exception as exc:  # PluginValidationError (bad signature), name clash, ...
            return PluginFailure(label, origin.distribution, "register", error_text(exc))
        if registered is None:  # blocked in pluggy
            return PluginFailure(label, origin.distribution, "register", "plugin is blocked")
        self._registry = None
        try:
            self.pm.check_pending()  # a misspelt hook name
            check_hooks(self.pm, plugin)
            offered = probe(self.pm, registered)
        except Exception as exc:
            self.pm.unregister(plugin=plugin)
            stage = "hook" if isinstance(exc, HookFault) else "validate"
            return PluginFailure(registered, origin.distribution, stage, error_text(exc))
        self._offered[registered] = offered
        self._origins[registered] = origin
        return registered

    # -- collecting ----------------------------------------------------------------------------

    def _collected(self) -> _Registry:
        """What the plugins offer. Every run asks, so the check is cheap: the host's own
        register/unregister drop the cache, and a plugin registered on ``pm`` directly, past
        the host, changes the count."""
        registry = self._registry
        pm = self.pm
        if registry is not None:
            if isinstance(pm, Manager):  # it counts its changes: nothing to list
                if registry.generation == pm.generation:
                    return registry
            elif registry.count == len(pm.list_name_plugin()):
                return registry
        with self._lock:
            generation = pm.generation if isinstance(pm, Manager) else -1
            key = tuple((name, id(plugin)) for name, plugin in pm.list_name_plugin())
            if self._registry is None or self._registry.key != key:
                self._registry = self._collect(key)
            elif generation != self._registry.generation:  # e.g. call monitoring turned on
                self._registry.calls = {}  # the hook calls follow it (``caller_of``)
            self._registry.generation = generation
            return self._registry

    def _collect(self, key: tuple[tuple[str, int], ...]) -> _Registry:
        registry = _Registry(key)
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:
                continue
            offered = self._offered.get(name)
            if offered is None:  # registered on ``pm`` directly, past the host: ask it now
                try:
                    offered = self._offered[name] = probe(self.pm, name)
                except HookFault as exc:
                    origin = self._origins.get(name, Origin(None, None, builtin=False))
                    self._fail(name, origin, "hook", error_text(exc))
                    continue
            registry.by_plugin[name] = offered
        # pluggy's order: the plugin registered last first, so it leads each list of claims.
        claims: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        for name in reversed(list(registry.by_plugin)):
            providers, backends, scorers, executors, toolsets = registry.by_plugin[name]
            for kind, specs in (
                ("provider", providers),
                ("backend", backends),
                ("executor", executors),
                ("toolset", toolsets),
            ):
                for spec in specs:
                    claims.setdefault((kind, _spec_key(spec)), []).append((name, spec))
            registry.scorers.extend(scorers)
        tables: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
            "provider": (registry.providers, registry.provider_owner),
            "backend": (registry.backends, registry.backend_owner),
            "executor": (registry.executors, registry.executor_owner),
            "toolset": (registry.toolsets, registry.toolset_owner),
        }
        for (kind, claimed), entries in claims.items():
            winner, clash = self._settle(kind, claimed, [plugin for plugin, _ in entries])
            if clash is not None:
                registry.clashes.append(clash)
                self._report(clash)
            if winner is None:
                if clash is not None:
                    registry.ambiguous[kind, claimed] = clash
                continue
            table, owners = tables[kind]
            table[claimed] = dict(entries)[winner]
            owners[claimed] = winner
            if clash is None:
                registry.shadowed.extend(
                    f"{_KIND_LABELS[kind]} {claimed!r} of plugin {plugin!r} is shadowed by "
                    f"plugin {winner!r}"
                    for plugin, _ in entries
                    if plugin != winner
                )
        registry.clashes.sort(key=lambda clash: (clash.kind, clash.name))
        registry.providers = dict(sorted(registry.providers.items()))
        registry.backends = dict(sorted(registry.backends.items()))
        registry.executors = dict(sorted(registry.executors.items()))
        registry.toolsets = dict(sorted(registry.toolsets.items()))
        return registry

    def _settle(
        self, kind: str, claimed: str, plugins: list[str]
    ) -> tuple[str | None, NameClash | None]:
        """Which of ``plugins`` (in pluggy's order) offers ``claimed``, and the clash between
        distributions if there is one (the winner None when it leaves the name ambiguous)."""
        if len(plugins) == 1:
            return plugins[0], None
        origins = {name: self._origins.get(name, Origin(None, None, False)) for name in plugins}
        in_code = [name for name in plugins if origins[name].distribution is None]
        if in_code:  # registered in code: the caller's explicit choice
            return in_code[0], None
        # Each distribution's plugin that pluggy calls first speaks for it.
        by_dist: dict[str, str] = {}
        for name in plugins:
            by_dist.setdefault(str(origins[name].distribution), name)
        if len(by_dist) == 1:
            return plugins[0], None
        owners = tuple(sorted(by_dist))
        chosen = self._prefer.get(claimed)
        picked = [d for d in owners if chosen in (_norm(d), _norm(by_dist[d]))]
        if picked:
            return by_dist[picked[0]], NameClash(kind, claimed, owners, picked[0], "chosen")
        named = {_norm(claimed), "oma-" + _norm(claimed)}
        dedicated = [d for d in owners if _norm(d) in named]
        if len(dedicated) == 1:
            winner = dedicated[0]
            return by_dist[winner], NameClash(kind, claimed, owners, winner, "dedicated")
        return None, NameClash(kind, claimed, owners, None, "ambiguous")

    def _report(self, clash: NameClash) -> None:
        """A warning per clash and host, but for one a preference settled."""
        if clash.reason == "chosen" or clash in self._warned:
            return
        self._warned.add(clash)
        warnings.warn(clash.describe(), PluginClashWarning, stacklevel=_outside_oma())

    def _unambiguous(self, registry: _Registry, kind: str, name: str) -> None:
        clash = registry.ambiguous.get((kind, name))
        if clash is not None:
            raise AmbiguousNameError(clash.describe(), name=name, kind=kind, owners=clash.owners)

    def _lookup(self, table: Mapping[str, _Spec], key: str, what: str, plural: str) -> _Spec:
        spec = table.get(key)
        if spec is None:
            kind = "provider" if plural == "providers" else "backend"
            self._unambiguous(self._collected(), kind, key)
            raise not_registered(str(key), table, kind=kind, note=self._failure_hint())
        return spec

    def _failure_hint(self) -> str:
        if not self.failures:
            return ""
        names = ", ".join(sorted({failure.name for failure in self.failures}))
        return f" (plugins that failed to load: {names}; see `oma plugins`)"


_STAGE_VERB = {
    "import": "import",
    "register": "register",
    "validate": "validate",
    "hook": "register its providers",
}


def _outside_oma() -> int:
    """The ``stacklevel`` of the first caller outside ``oma_core``, for its caller: a warning
    then points at the line of the program that first used the plugins."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the caller of this function
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
        level += 1
    return level


def _spec_key(spec: ProviderSpec | BackendSpec | ExecutorSpec | ToolsetSpec) -> str:
    """The name a spec is looked up by: a provider's or executor's name, a backend's or
    toolset's kind."""
    return spec.kind if isinstance(spec, BackendSpec | ToolsetSpec) else spec.name
