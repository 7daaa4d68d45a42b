"""The house's load-bearing walls, checked on the source: which way imports run.

- no import cycle among ``oma_core``'s modules, counting imports under ``TYPE_CHECKING`` too
  (a cycle of type-only imports is still two modules that need each other), and none counting
  the imports inside functions either (a deferred import hides a cycle, it does not remove
  it), but for any named in ``KNOWN_DEFERRED_CYCLES`` (none now);
- every ``oma_core...`` name a docstring points to resolves, and so does every name the hook
  specifications' docstrings point to;
- every hook is called through pluggy: no module calls an implementation by hand
  (``impl.function(...)``, or a hook read off anything but pluggy's relay), and a run calls
  every built-in plugin's implementation from pluggy's own code (reading pluggy's order,
  ``get_hookimpls``, is allowed);
- the message model imports nothing of oma beyond itself and ``errors``;
- a module's underscore names are its own: no module of the core or a plugin reads or calls
  ``x._name`` of another module, imports another's underscore name, or imports a public name
  under an underscore alias;
- what reads block types (the token estimate, the echo provider, the testing kit's media
  rule) derives from ``BLOCK_TYPES`` and handles an entry it has never seen;
- the orchestrator and the team runner use nothing private of the agent;
- a module's name says whether it is API: the public ones are listed, every other starts with
  an underscore; plugins import public modules only;
- the public face is narrow: ``oma_core`` exports at most 60 names, and no name is in two of
  ``oma_core``, ``oma_core.toolkit``, ``oma_core.http`` and ``oma_core.processes``.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

CORE = Path(__file__).parent.parent / "oma_core"


def _modules() -> dict[str, Path]:
    found = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, *, deferred: bool = False) -> set[str]:
    """The core modules ``name`` imports at module level (``if``/``try`` bodies included);
    with ``deferred``, inside functions and classes too."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = base + (node.module.split(".") if node.module else [])
                for alias in node.names:
                    for candidate in (".".join([*module, alias.name]), ".".join(module)):
                        if candidate in MODULES and candidate not in (name, "oma_core"):
                            out.add(candidate)
                            break
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in MODULES and a.name != name)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
            elif deferred and hasattr(node, "body"):
                visit([child for child in ast.walk(node) if isinstance(child, ast.stmt)][1:])

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return out


def _cycle(
    *, deferred: bool = False, allowed: frozenset[frozenset[str]] = frozenset()
) -> list[str] | None:
    graph = {name: _imports(name, deferred=deferred) for name in MODULES}
    for pair in allowed:  # drop the edges of an allowed two-module cycle
        first, second = sorted(pair)
        graph[first].discard(second)
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                found = walk(target)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = walk(node)
            if found:
                return found
    return None


def test_oma_core_has_no_import_cycle() -> None:
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle or [])


#: Two-module cycles through imports inside functions that may remain: none do (the message
#: classes and their parser share ``oma_core._model``; ``RunLogger`` sits beside ``RunLog``).
KNOWN_DEFERRED_CYCLES: frozenset[frozenset[str]] = frozenset()


def test_oma_core_has_no_import_cycle_through_imports_inside_functions() -> None:
    cycle = _cycle(deferred=True, allowed=KNOWN_DEFERRED_CYCLES)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_deferred_cycle_check_sees_an_import_inside_a_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "oma_core.plugins" in _imports("oma_core.evaluation", deferred=True)
    assert "oma_core.plugins" not in _imports("oma_core.evaluation")


_DOC_NAME = re.compile(r"``(oma_core(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _docstrings(tree: ast.Module) -> list[str]:
    nodes = [tree, *ast.walk(tree)]
    found = []
    for node in nodes:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:
                found.append(doc)
    return found


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_every_name_a_docstring_points_to_resolves() -> None:
    broken = set()
    for path in MODULES.values():
        for doc in _docstrings(ast.parse(path.read_text(encoding="utf-8"))):
            for dotted in _DOC_NAME.findall(doc):
                if not _resolves(dotted):
                    broken.add(f"{path.name}: {dotted}")
    assert not broken, sorted(broken)


def test_the_docstring_check_finds_a_name_that_does_not_resolve() -> None:
    assert _resolves("oma_core.toolkit.ModelCall")
    assert not _resolves("oma_core.ModelCallThatIsNot")


def test_the_cycle_check_finds_a_cycle_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _imports

    def with_cycle(name: str, **options: bool) -> set[str]:
        extra = {"oma_core.agent"} if name == "oma_core.messages" else set()
        return real(name, **options) | extra

    monkeypatch.setitem(globals(), "_imports", with_cycle)
    assert _cycle() is not None


@pytest.mark.parametrize(
    "module",
    ["messages", "media", "validation", "serialization", "errors", "_model", "_sources", "_checks"],
)
def test_the_message_model_imports_nothing_else_of_oma(module: str) -> None:
    model = {f"oma_core.{m}" for m in ("messages", "media", "validation", "serialization")}
    model |= {"oma_core.errors", "oma_core._model", "oma_core._sources", "oma_core._checks"}
    assert _imports(f"oma_core.{module}") <= model


@pytest.mark.parametrize("module", ["orchestrator", "teams"])
def test_orchestration_uses_nothing_private_of_the_agent(module: str) -> None:
    tree = ast.parse(MODULES[f"oma_core.{module}"].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("agent", "_runner", "config"):
            assert all(not a.name.startswith("_") for a in node.names), ast.unparse(node)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("agent", "run_agent", "config")
        ):
            assert not node.attr.startswith("_"), ast.unparse(node)


PLUGINS = Path(__file__).parent.parent / "plugins"


#: The public modules: DESIGN.md's layout, two modules applications import beyond it (``teams``:
#: the task graph a team run follows, ``Plan``, ``PromptBuilder``; ``redaction``:
#: ``redact_json`` for an observer shipping events) and the three audience modules of a plugin
#: author (``toolkit``: interfaces; ``http`` and ``processes``: helpers). Every other module's
#: name starts with an underscore, so a module's name says whether it is API.
PUBLIC_MODULES = frozenset(
    {
        *("messages", "media", "validation", "serialization", "errors", "hookspecs"),
        *("plugins", "capabilities", "providers", "backends", "agent", "orchestrator"),
        *("tools", "progress", "evaluation", "budgets", "retry", "tracing"),
        *("teams", "redaction", "stores"),
        *("default_plugins", "testing", "cli"),
        *("toolkit", "http", "processes", "model_families"),
    }
)


def test_every_module_without_an_underscore_is_a_public_module() -> None:
    top = {name.split(".")[1] for name in MODULES if name.count(".") >= 1}
    assert {name for name in top if not name.startswith("_")} == PUBLIC_MODULES


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


@pytest.mark.parametrize(
    "path",
    sorted(PLUGINS.glob("oma-*/oma_*/**/*.py")) + sorted(PLUGINS.glob("oma-*/tests/*.py")),
    ids=lambda p: str(p.relative_to(PLUGINS)),
)
def test_plugins_import_only_public_modules(path: Path) -> None:
    """A plugin package imports public modules of ``oma_core`` only (``oma_core``, the
    toolkit, ``http``, ``processes``, ``errors``...), never a private ``oma_core._name``, nor
    the testing kit or the CLI; its tests may also use the testing kit and drive the CLI."""
    in_tests = "tests" in path.parts
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.level == 0
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for module in modules:
            if module and (module == "oma_core" or module.startswith("oma_core.")):
                kit = module.startswith(("oma_core.testing", "oma_core.cli"))
                ok = _is_public(module) and (in_tests or not kit)
                ok = ok or (in_tests and module == "oma_core.cli")
                assert ok, f"{path.name} imports {module}"


# -- the public face: narrow, and each name in one place -------------------------------------

#: What an application imports (``oma_core``) and the plugin author's three audience modules.
SURFACES = ("oma_core", "oma_core.toolkit", "oma_core.http", "oma_core.processes")


def test_oma_core_exports_at_most_60_names() -> None:
    import oma_core

    assert len(oma_core.__all__) <= 60, len(oma_core.__all__)


@pytest.mark.parametrize("pair", [(a, b) for a in SURFACES for b in SURFACES if a < b])
def test_no_name_is_in_two_surfaces(pair: tuple[str, str]) -> None:
    first, second = (set(importlib.import_module(m).__all__) for m in pair)
    assert not first & second, sorted(first & second)


@pytest.mark.parametrize("surface", SURFACES)
def test_every_name_of_a_surface_loads(surface: str) -> None:
    module = importlib.import_module(surface)
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_oma_core_resolves_no_name_beyond_its_all() -> None:
    """No silent alias: a name that moved raises ``AttributeError`` at its old place."""
    import oma_core

    for moved in ("ModelCall", "Provider", "PluginError", "FilePart", "RunRetryPolicy"):
        with pytest.raises(AttributeError):
            getattr(oma_core, moved)


# -- names the hook specifications point to --------------------------------------------------

#: ``Name``, ``Name.attribute`` and ``Name.method(...)`` in double backticks, Name capitalised.
_HOOKSPEC_NAME = re.compile(r"``([A-Z][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
#: Where a bare name in the hook specifications is looked up: what an application imports,
#: a plugin's interfaces, the error tree, the plugin host, then Python's own
#: (``CancelledError``).
_SURFACES = (
    "oma_core",
    "oma_core.toolkit",
    "oma_core.errors",
    "oma_core.plugins",
    "builtins",
    "asyncio",
)
_CONSTANTS = frozenset({"None", "True", "False"})


def _resolves_bare(dotted: str) -> bool:
    import attrs

    head, *rest = dotted.split(".")
    if dotted in _CONSTANTS:
        return True
    if re.fullmatch(r"OMA_[A-Z_]+", dotted):  # an environment variable: the host reads it
        return f'"{dotted}"' in MODULES["oma_core.plugins"].read_text(encoding="utf-8")
    for surface in _SURFACES:
        target: object = importlib.import_module(surface)
        if not hasattr(target, head):
            continue
        target = getattr(target, head)
        for attribute in rest:
            if hasattr(target, attribute):
                target = getattr(target, attribute)
            elif isinstance(target, type) and attrs.has(target):
                names = {field.name for field in attrs.fields(target)}
                if attribute not in names:
                    return False
                target = object()  # a field: nothing further to follow
            else:
                return False
        return True
    return False


def test_every_name_the_hook_specifications_point_to_resolves() -> None:
    tree = ast.parse(MODULES["oma_core.hookspecs"].read_text(encoding="utf-8"))
    pointed = {name for doc in _docstrings(tree) for name in _HOOKSPEC_NAME.findall(doc)}
    assert pointed, "the check found no name: its pattern is stale"
    broken = sorted(name for name in pointed if not _resolves_bare(name))
    assert not broken, broken


def test_the_hookspec_name_check_finds_a_name_that_does_not_resolve() -> None:
    assert _resolves_bare("ProviderSpec.name")  # an attrs field
    assert _resolves_bare("PluginHost.hook_calls")
    assert not _resolves_bare("PluginHost.hook_callz")
    assert not _resolves_bare("ProviderSpc.name")
    assert not _resolves_bare("ModelCallz")
    assert _resolves_bare("OMA_PREFER_PLUGINS")
    assert not _resolves_bare("OMA_PREFER_PLUGINZ")


# -- hooks go through pluggy -----------------------------------------------------------------


#: Every hook oma specifies.
_HOOKS = frozenset(
    name for name in vars(importlib.import_module("oma_core.hookspecs")) if name.startswith("oma_")
)


def _hand_calls(source: str) -> list[str]:
    """Where ``source`` calls a hook implementation by hand: any ``X.function(...)`` but
    ``self.function(...)`` (a tool calling its own function), and any ``X.oma_hook`` read
    off something other than pluggy's relay (``pm.hook.oma_hook``), such as a built-in
    plugin's module (``transport.oma_model_call(...)``). Reading pluggy's order
    (``get_hookimpls``) is allowed: that is pluggy's public record of it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "function"
            and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self")
        ):
            found.append(f"line {node.lineno}: .function(...)")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in _HOOKS
            and not (isinstance(node.value, ast.Attribute) and node.value.attr == "hook")
        ):
            found.append(f"line {node.lineno}: .{node.attr} past pluggy's relay")
    return found


def test_no_module_calls_hook_implementations_past_pluggy() -> None:
    found = [
        f"{name} {where}"
        for name, path in sorted(MODULES.items())
        for where in _hand_calls(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_pluggy_check_finds_a_call_past_pluggy() -> None:
    assert _hand_calls("for impl in caller.get_hookimpls(): impl.function(ctx)") == [
        "line 1: .function(...)"
    ]
    assert _hand_calls("transport.oma_model_call(call=call, run=run)") == [
        "line 1: .oma_model_call past pluggy's relay"
    ]
    assert _hand_calls("self.function(1); host.pm.hook.oma_run(run=run)") == []


def _callers_of_builtin_hooks(run: Callable[[], Awaitable[object]]) -> list[tuple[str, str]]:
    """``run`` drained while every call of a built-in plugin's hook implementation is
    recorded (a wrapper's each time it is resumed): (module, hook) of each one whose caller
    is not pluggy's own code."""
    import asyncio
    import sys

    import pluggy

    from oma_core.default_plugins import DEFAULT_PLUGINS

    pluggy_dir = str(Path(pluggy.__file__).parent)
    codes = {}
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        for hook in _HOOKS:
            function = getattr(module, hook, None)
            if function is not None:
                codes[function.__code__] = (module_name, hook)
    assert len(codes) >= 10, "the check found too few built-in implementations: it is stale"
    past: list[tuple[str, str]] = []
    seen: list[tuple[str, str]] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            seen.append(codes[frame.f_code])
            caller = frame.f_back
            if caller is None or not caller.f_code.co_filename.startswith(pluggy_dir):
                past.append(codes[frame.f_code])

    async def main() -> None:
        sys.setprofile(profile)
        try:
            await run()
        finally:
            sys.setprofile(None)

    asyncio.run(main())
    assert {hook for _, hook in seen} >= {"oma_run", "oma_model_call", "oma_tool_call"}, seen
    return past


@pytest.mark.parametrize("observed", [False, True], ids=["plain", "with-progress"])
def test_every_built_in_hook_implementation_is_called_by_pluggy(observed: bool) -> None:
    from _builders import scripted_agent, tool_call_turn

    from oma_core import PluginHost, RunSettings, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    host = PluginHost(load_entrypoints=False)
    agent, _ = scripted_agent([tool_call_turn("add", {"a": 1, "b": 2}), "3"], host, tools=[add])
    settings = RunSettings(progress=(lambda kind, data: None) if observed else None)
    past = _callers_of_builtin_hooks(lambda: agent.run("add", settings=settings))
    assert past == []


# -- the core calls hooks through the typed facade --------------------------------------------

#: Where the plugin host and its facade live: the only modules that name a hook to pluggy.
_HOOK_MACHINERY = frozenset(
    {"oma_core.plugins", "oma_core._hook_calls", "oma_core._wraps", "oma_core._discovery"}
)


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _hooks_by_name(source: str) -> list[str]:
    """Where ``source`` calls a hook by its name: ``hook_calls("oma_...")``, a ``"oma_..."``
    string handed to ``getattr`` or read off pluggy's relay (``pm.hook.oma_run``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and _called_name(node.func) in ("hook_calls", "getattr", "subset_hook_caller")
            and any(isinstance(arg, ast.Constant) and arg.value in _HOOKS for arg in node.args)
        ):
            found.append(f"line {node.lineno}: a hook named in a call")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in _HOOKS
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "hook"
        ):
            found.append(f"line {node.lineno}: .hook.{node.attr}")
    return found


def test_the_core_calls_hooks_through_the_typed_facade_only() -> None:
    found = [
        f"{name} {where}"
        for name, path in sorted(MODULES.items())
        if name not in _HOOK_MACHINERY and not name.startswith("oma_core.testing")
        for where in _hooks_by_name(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_by_name_check_finds_a_hook_called_by_name() -> None:
    assert _hooks_by_name('host.hook_calls("oma_progress")') == ["line 1: a hook named in a call"]
    assert _hooks_by_name("host.pm.hook.oma_run(run=run)") == ["line 1: .hook.oma_run"]
    assert _hooks_by_name('getattr(pm.hook, "oma_run")') == ["line 1: a hook named in a call"]
    assert _hooks_by_name('host.hooks.progress(); ContextVar("oma_tool_call")') == []


def test_every_member_of_the_typed_facade_is_called_by_the_core() -> None:
    from oma_core.plugins import Hooks

    members = {name for name in dir(Hooks) if not name.startswith("_")}
    assert members, "the facade has no member: the check is stale"
    sources = "\n".join(
        path.read_text(encoding="utf-8")
        for name, path in MODULES.items()
        if name not in _HOOK_MACHINERY
    )
    unused = sorted(name for name in members if f".hooks.{name}(" not in sources)
    assert not unused, unused


# -- layers by folder ------------------------------------------------------------------------

#: What each folder may not import (counting imports inside functions): the HTTP helpers stand
#: on the model and the interfaces, never on a run; nothing below the CLI imports the CLI; the
#: core never imports its testing kit.
_RUN_LAYER = ("oma_core.agent", "oma_core._runner", "oma_core.orchestrator", "oma_core.teams")
_FORBIDDEN_BY_FOLDER: dict[str, tuple[str, ...]] = {
    "oma_core.http": (*_RUN_LAYER, "oma_core.tools", "oma_core.default_plugins", "oma_core.cli"),
    "oma_core.default_plugins": ("oma_core.cli",),
}


def _layer_violations() -> list[str]:
    found = []
    for module in MODULES:
        for folder, forbidden in _FORBIDDEN_BY_FOLDER.items():
            if module != folder and not module.startswith(folder + "."):
                continue
            for target in _imports(module, deferred=True):
                if any(target == f or target.startswith(f + ".") for f in forbidden):
                    found.append(f"{module} imports {target}")
    for module in MODULES:
        if module.startswith(("oma_core.testing", "oma_core.cli")):
            continue
        found += [
            f"{module} imports {target}"
            for target in _imports(module, deferred=True)
            if target.startswith("oma_core.cli")
            and not module.startswith(tuple(_FORBIDDEN_BY_FOLDER))
        ]
    return found


def test_each_folder_imports_only_the_layers_below_it() -> None:
    assert _layer_violations() == []


def test_the_layer_check_finds_a_folder_reaching_up(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _imports

    def reaching_up(name: str, **options: bool) -> set[str]:
        extra = {"oma_core._runner"} if name == "oma_core.http._client" else set()
        return real(name, **options) | extra

    monkeypatch.setitem(globals(), "_imports", reaching_up)
    assert _layer_violations() == ["oma_core.http._client imports oma_core._runner"]


# -- a module's underscore names are its own -------------------------------------------------

#: The library: the core and every plugin package (not their tests, which may look inside).
LIBRARY = sorted(CORE.rglob("*.py")) + sorted(PLUGINS.glob("oma-*/oma_*/**/*.py"))
#: Underscore names the standard library documents as public (``os._exit``, a named tuple's
#: ``_replace``...).
_PUBLIC_UNDERSCORE = frozenset({"_exit", "_getframe", "_replace", "_asdict", "_fields", "_make"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own_names(tree: ast.Module) -> set[str]:
    """The names a module defines: its functions, methods and classes, and every name and
    attribute it assigns (``self._x = ...``, an attrs field ``_x: int``)."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.id if isinstance(node, ast.Name) else node.attr)
    return own


def _reach_ins(source: str) -> list[str]:
    """Where ``source`` uses another module's private name: ``x._name`` (a call or a read)
    with ``x`` not ``self`` or ``cls`` and ``_name`` defined nowhere in ``source`` (so a
    class method calling a private method of the instance it just built is its own business,
    and ``found._run(...)`` on a class of another module is not); an import of another
    module's underscore name; a public name imported under an underscore alias."""
    tree = ast.parse(source)
    own = _own_names(tree) | _PUBLIC_UNDERSCORE
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith("oma")
        ):
            for alias in node.names:
                renamed = f" as {alias.asname}" if alias.asname else ""
                if _private(alias.name) or (alias.asname and _private(alias.asname)):
                    found.append(f"line {node.lineno}: imports {alias.name}{renamed}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = [
        f"{path.relative_to(CORE.parent)} {where}"
        for path in LIBRARY
        for where in _reach_ins(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_privacy_check_finds_a_reach_in() -> None:
    assert _reach_ins("async def f(found):\n    return await found._run({})") == [
        "line 2: found._run"
    ]
    assert _reach_ins("from .redaction import JWT_SHAPE as _JWT") == [
        "line 1: imports JWT_SHAPE as _JWT"
    ]
    assert _reach_ins("from ._checks import _simd_decoder") == ["line 1: imports _simd_decoder"]
    own = "class G:\n    @classmethod\n    def of(cls):\n        g = cls()\n        g._check()\n"
    assert _reach_ins(own + "    def _check(self): self._seen = 1\n") == []
    assert _reach_ins("import os\nos._exit(1)\nfrom acp import Option as _Option") == []


# -- a new block type touches the registry, its validation and the providers, nothing else ----


@attrs.frozen
class _Marker:
    """A block type the registry does not hold: no text, no media (what a cache marker is)."""

    @property
    def type(self) -> str:
        return "marker"


@attrs.frozen
class _Note:
    """A block type the registry does not hold, carrying text."""

    text: str

    @property
    def type(self) -> str:
        return "note"


def test_what_reads_block_types_handles_one_it_has_never_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The token estimate, the echo provider's account and the kit's media rule derive from
    ``BLOCK_TYPES``: a new entry, with no text and no media or with text, needs no change in
    them (the estimate builds its rules once, from each entry, with ``_rule``)."""
    from oma_core import _tokens
    from oma_core.default_plugins.echo import describe_block
    from oma_core.messages import BLOCK_TYPES, BlockType
    from oma_core.testing import neutral

    def build(*_: object) -> Any:
        raise AssertionError("not parsed here")

    marker = BlockType("marker", _Marker, build)  # type: ignore[arg-type]
    note = BlockType("note", _Note, build)  # type: ignore[arg-type]
    monkeypatch.setitem(BLOCK_TYPES, "marker", marker)
    monkeypatch.setitem(BLOCK_TYPES, "note", note)
    assert _tokens._rule(marker)(_Marker(), 1000) == (0, 0)
    assert _tokens._rule(note)(_Note("12345678"), 1000) == (8, 0)
    assert describe_block(_Marker()) == "marker"  # type: ignore[arg-type]
    assert describe_block(_Note("hi")) == 'note "hi"'  # type: ignore[arg-type]
    assert not neutral._is_media(_Marker())  # type: ignore[arg-type]
    assert not neutral._is_media(_Note("hi"))  # type: ignore[arg-type]
