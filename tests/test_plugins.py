"""PluginHost: entry-point discovery, isolation of broken plugins, the env switches."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _builders import TinyBackendPlugin, builtin_host

from oma_core import Agent, AgentConfig, BackendSpec, Capabilities, ProviderSpec, hookimpl
from oma_core.errors import PluginError
from oma_core.plugins import PluginHost
from oma_core.testing import ScriptedProvider

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(autouse=True)
def _no_plugin_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMA_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)


@pytest.fixture
def broken_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Put tests/plugins/oma-brokenplugin on sys.path as a real distribution (its metadata
    and entry points in a .dist-info folder), without installing it into the environment."""
    source = PLUGINS / "oma-brokenplugin"
    project = tomllib.loads((source / "distribution.toml").read_text())["project"]
    shutil.copytree(source / "oma_brokenplugin", tmp_path / "oma_brokenplugin")
    info = tmp_path / "oma_brokenplugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    entry_points = "\n".join(f"{k} = {v}" for k, v in project["entry-points"]["oma"].items())
    (info / "entry_points.txt").write_text(f"[oma]\n{entry_points}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("oma_brokenplugin")]:
        del sys.modules[name]


def _provider_plugin(name: str, display: str = "Test") -> object:
    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [
                ProviderSpec(
                    name, display, lambda s: ScriptedProvider([]), Capabilities.text_only()
                )
            ]

    return Plugin()


# -- built-ins and discovery --------------------------------------------------------------------


_GOOD_PLUGIN = """
from oma_core import Capabilities, ProviderSpec, hookimpl
from oma_core.testing import ScriptedProvider


@hookimpl
def oma_register_providers():
    return [ProviderSpec(name="ctgood", display_name="CT Good",
                         factory=lambda settings: ScriptedProvider(["from ctgood"]),
                         capabilities=Capabilities.everything())]
"""


_BROKEN_PLUGINS = {
    "oma_ctimport": "raise ImportError('this plugin cannot import')\n",
    "oma_ctbadhook": (
        "from oma_core import hookimpl\n\n"
        "@hookimpl\ndef oma_progress(evt, extra):\n    return None\n"
    ),
    "oma_ctraise": (
        "from oma_core import hookimpl\n\n"
        "@hookimpl\ndef oma_register_providers():\n    raise RuntimeError('cannot register')\n"
    ),
}


@pytest.fixture
def entry_point_plugins(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four distributions with ``oma`` entry points: one good, three broken in different ways."""
    modules = {"oma_ctgood": _GOOD_PLUGIN, **_BROKEN_PLUGINS}
    for module, source in modules.items():
        (tmp_path / f"{module}.py").write_text(source)
        dist = module.replace("_", "-")
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[oma]\n{module[4:]} = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("OMA_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)


def test_builtin_providers_load_without_entry_points() -> None:
    host = PluginHost(load_entrypoints=False)
    assert list(host.provider_specs()) == ["echo", "scripted"]
    assert host.failures == []


def test_installed_plugin_is_discovered_through_its_entry_point() -> None:
    host = PluginHost()
    assert host.provider_spec("shout").display_name == "Shout"
    (info,) = [info for info in host.plugin_info() if info.name == "testplugin"]
    assert (info.distribution, info.version, info.builtin) == ("oma-testplugin", "0.1.0", False)
    assert info.providers == ("shout",)
    assert "oma_before_run" in info.hooks


def test_installed_plugin_contributes_a_before_run_hook() -> None:
    host = PluginHost()
    (hook,) = [h for h in host.before_run_hooks() if h.plugin == "testplugin"]
    ctx = SimpleNamespace(prompt="testplugin: hello", messages=(), agent=None)
    assert hook(ctx) == {"prompt": "[rewritten by testplugin] hello"}
    assert hook(SimpleNamespace(prompt="hello", messages=(), agent=None)) is None


async def test_before_run_hook_of_an_installed_package_reaches_the_agent() -> None:
    from oma_core import Agent, AgentConfig

    agent = Agent(AgentConfig(name="a", provider="echo"), plugins=PluginHost())
    result = await agent.run("testplugin: hello")
    assert result.success
    assert '"[rewritten by testplugin] hello"' in result.output


def test_builtins_are_registered_before_external_plugins() -> None:
    names = [info.name for info in PluginHost().plugin_info()]
    assert names[:2] == ["oma_core.default_plugins.echo", "oma_core.default_plugins.scripted"]


# -- environment switches -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["testplugin", "oma-testplugin", "oma_testplugin"])
def test_load_plugins_loads_only_the_named_plugins(
    monkeypatch: pytest.MonkeyPatch, broken_dist: Path, name: str
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", f" {name} ,")
    host = PluginHost()
    assert list(host.provider_specs()) == ["echo", "scripted", "shout"]
    assert host.failures == []


def test_disable_plugins_blocks_the_named_plugins(
    monkeypatch: pytest.MonkeyPatch, broken_dist: Path
) -> None:
    monkeypatch.setenv("OMA_DISABLE_PLUGINS", "testplugin,oma-brokenplugin")
    host = PluginHost()
    assert "shout" not in host.provider_specs()
    assert not host.pm.has_plugin("testplugin")
    assert [f for f in host.failures if f.distribution == "oma-brokenplugin"] == []


def test_disable_plugins_cannot_remove_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_DISABLE_PLUGINS", "echo,scripted,oma-core")
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    assert list(PluginHost().provider_specs()) == ["echo", "scripted"]


# -- broken plugins -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry_point", "stage", "in_error"),
    [
        ("broken_import", "import", "oma_brokenplugin_missing_dependency"),
        ("broken_misspelt", "validate", "oma_register_provders"),
        ("broken_signature", "register", "config"),
        ("broken_register", "hook", "the SDK is not configured"),
        ("broken_returns", "hook", "ProviderSpec"),
    ],
)
def test_a_broken_plugin_is_reported_and_skipped(
    broken_dist: Path, entry_point: str, stage: str, in_error: str
) -> None:
    host = PluginHost()
    (failure,) = [f for f in host.failures if f.name == entry_point]
    assert failure.distribution == "oma-brokenplugin"
    assert failure.stage == stage
    assert in_error in failure.error
    assert not host.pm.has_plugin(entry_point)
    assert entry_point not in [info.name for info in host.plugin_info()]


def test_broken_plugins_do_not_stop_the_others_from_loading(
    monkeypatch: pytest.MonkeyPatch, broken_dist: Path
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin,oma-brokenplugin")
    host = PluginHost()
    assert len(host.failures) == 5
    assert list(host.provider_specs()) == ["echo", "scripted", "shout"]
    assert [h.plugin for h in host.before_run_hooks()] == ["testplugin"]


def test_unknown_provider_error_names_available_providers_and_failures(
    monkeypatch: pytest.MonkeyPatch, broken_dist: Path
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin,oma-brokenplugin")
    with pytest.raises(PluginError, match="unknown provider 'nope'") as info:
        PluginHost().provider_spec("nope")
    assert "echo, scripted, shout" in str(info.value)
    assert "broken_import" in str(info.value)
    assert info.value.name == "nope"


# -- in-process plugins -------------------------------------------------------------------------


def test_registering_a_plugin_adds_its_provider_and_unregistering_removes_it() -> None:
    host = PluginHost(load_entrypoints=False)
    assert "mine" not in host.provider_specs()
    plugin = _provider_plugin("mine")
    host.register(plugin, name="mine-plugin")
    assert host.provider_spec("mine").display_name == "Test"
    host.unregister(name="mine-plugin")
    assert "mine" not in host.provider_specs()


def test_registering_a_plugin_with_a_misspelt_hook_raises_and_leaves_no_trace() -> None:
    class Misspelt:
        @hookimpl
        def oma_before_rnu(self, ctx: Any) -> None:
            return None

    host = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="oma_before_rnu"):
        host.register(Misspelt(), name="misspelt")
    assert not host.pm.has_plugin("misspelt")


def test_a_before_run_hook_wrapper_is_refused() -> None:
    class Wrapper:
        @hookimpl(wrapper=True)
        def oma_before_run(self, ctx: Any) -> Any:
            return (yield)

    host = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="cannot be a hook wrapper"):
        host.register(Wrapper(), name="wrapper")
    assert host.before_run_hooks() == []


def test_the_plugin_registered_last_wins_a_provider_name_clash() -> None:
    host = PluginHost(load_entrypoints=False)
    host.register(_provider_plugin("dup", "First"), name="first")
    host.register(_provider_plugin("dup", "Second"), name="second")
    assert host.provider_spec("dup").display_name == "Second"
    assert host.shadowed() == ["provider 'dup' of plugin 'first' is shadowed by plugin 'second'"]
    owners = {info.name: info.providers for info in host.plugin_info()}
    assert (owners["first"], owners["second"]) == ((), ("dup",))


def test_before_run_hooks_come_in_pluggys_call_order() -> None:
    def plugin(name: str, tryfirst: bool = False, trylast: bool = False) -> object:
        class Plugin:
            @hookimpl(tryfirst=tryfirst, trylast=trylast)
            def oma_before_run(self, ctx: Any) -> str:
                return name

        return Plugin()

    host = PluginHost(load_entrypoints=False)
    host.register(plugin("early", tryfirst=True), name="early")
    host.register(plugin("a"), name="a")
    host.register(plugin("b"), name="b")
    host.register(plugin("late", trylast=True), name="late")
    order = [hook.plugin for hook in host.before_run_hooks()]
    assert order == host.pm.hook.oma_before_run(ctx=None)
    assert order == ["early", "b", "a", "late"]


def test_a_hook_call_passes_only_the_arguments_the_implementation_declares() -> None:
    class NoArguments:
        @hookimpl
        def oma_before_run(self) -> dict[str, str]:
            return {"prompt": "fixed"}

    host = PluginHost(load_entrypoints=False)
    host.register(NoArguments(), name="no-args")
    (hook,) = host.before_run_hooks()
    assert hook(SimpleNamespace(prompt="x")) == {"prompt": "fixed"}
    assert hook(ctx=None) == {"prompt": "fixed"}


def test_observer_hooks_can_be_called_one_implementation_at_a_time() -> None:
    seen: list[tuple[str, object]] = []

    class Observer:
        @hookimpl
        def oma_progress(self, event: object) -> None:
            seen.append(("progress", event))

        @hookimpl
        def oma_evaluation_result(self, result: object) -> None:
            seen.append(("evaluation", result))

    class Failing:
        @hookimpl
        def oma_progress(self, event: object) -> None:
            raise RuntimeError("observer down")

    host = PluginHost(load_entrypoints=False)
    host.register(Observer(), name="observer")
    host.register(Failing(), name="failing")
    failed = []
    for call in host.hook_calls("oma_progress"):
        try:
            call("start")
        except RuntimeError:
            failed.append(call.plugin)
    for call in host.hook_calls("oma_evaluation_result"):
        call(result="scored")
    assert failed == ["failing"]
    assert seen == [("progress", "start"), ("evaluation", "scored")]


def test_hook_calls_of_an_unknown_hook_raise() -> None:
    with pytest.raises(PluginError, match="unknown hook 'oma_nope'"):
        PluginHost(load_entrypoints=False).hook_calls("oma_nope")


def test_plugins_can_register_scorers_and_backends() -> None:
    def exact(case: Any) -> float:
        return 1.0

    class Plugin:
        @hookimpl
        def oma_register_scorers(self) -> list[Any]:
            return [exact]

        @hookimpl
        def oma_register_backends(self) -> list[BackendSpec]:
            return [BackendSpec("fake", "Fake agent", factory=lambda options: None)]  # type: ignore[arg-type,return-value]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="extras")
    assert host.scorers() == [exact]
    assert host.backend_spec("fake").display_name == "Fake agent"
    assert list(host.backend_specs()) == ["fake"]
    (info,) = [i for i in host.plugin_info() if i.name == "extras"]
    assert (info.backends, info.scorers) == (("fake",), 1)


def test_unknown_backend_error_names_available_backends() -> None:
    with pytest.raises(PluginError, match="unknown backend kind 'nope'; available backends: none"):
        PluginHost(load_entrypoints=False).backend_spec("nope")


def test_a_plugin_that_returns_a_non_callable_scorer_is_refused() -> None:
    class Plugin:
        @hookimpl
        def oma_register_scorers(self) -> list[Any]:
            return [0.5]

    host = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="list of a callable, got float"):
        host.register(Plugin(), name="bad-scorer")


# -- the shared host and import cost ------------------------------------------------------------


def test_default_host_is_created_once_and_can_be_replaced() -> None:
    first = PluginHost.default()
    assert PluginHost.default() is first
    replacement = PluginHost(load_entrypoints=False)
    assert PluginHost.set_default(replacement) is first
    try:
        assert PluginHost.default() is replacement
    finally:
        PluginHost.set_default(first)


def test_importing_oma_core_loads_no_plugin_cli_or_sdk() -> None:
    code = textwrap.dedent(
        """
        import sys
        import oma_core
        heavy = ["click", "rich", "httpx", "anthropic", "openai", "oma_core.plugins",
                 "oma_core.cli", "oma_testplugin"]
        print(",".join(name for name in heavy if name in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_loading_plugins_imports_no_sdk_or_cli() -> None:
    code = textwrap.dedent(
        """
        import sys
        from oma_core.plugins import PluginHost
        PluginHost().provider_specs()
        heavy = ["click", "rich", "httpx", "anthropic", "openai", "boto3", "litellm", "acp",
                 "pydantic", "google", "mistralai"]
        print(",".join(name for name in heavy if name in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_oma_load_plugins_empty_loads_no_external_plugin_but_the_builtins(
    monkeypatch: pytest.MonkeyPatch, broken_dist: Path
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)
    specs = PluginHost().provider_specs()
    assert {"echo", "scripted"} <= set(specs)
    assert "anthropic" not in specs and "openai" not in specs

    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    host = PluginHost()
    assert list(host.provider_specs()) == ["echo", "scripted"]
    assert host.failures == []
    assert host.before_run_hooks() == []


def test_a_registered_in_process_plugin_offers_its_backend() -> None:
    host = builtin_host(TinyBackendPlugin())
    assert "tiny" in host.backend_specs()


@pytest.mark.usefixtures("entry_point_plugins")
async def test_broken_entry_point_plugins_are_skipped_and_reported() -> None:
    host = PluginHost()
    assert "ctgood" in host.provider_specs()
    failed = {failure.name for failure in host.failures}
    assert {"ctimport", "ctbadhook", "ctraise"} <= failed
    agent = Agent(AgentConfig(name="g", provider="ctgood"), plugins=host)
    assert (await agent.run("x")).output == "from ctgood"


@pytest.mark.usefixtures("entry_point_plugins")
def test_oma_load_plugins_loads_only_the_named_entry_point_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "ctgood")
    host = PluginHost()
    specs = host.provider_specs()
    assert "ctgood" in specs and "anthropic" not in specs
    assert {"echo", "scripted"} <= set(specs)
    assert host.failures == []


@pytest.mark.usefixtures("entry_point_plugins")
def test_oma_disable_plugins_blocks_named_entry_point_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_DISABLE_PLUGINS", "ctgood,ctimport,ctbadhook,ctraise,echo,scripted")
    host = PluginHost()
    specs = host.provider_specs()
    assert "ctgood" not in specs
    assert {"echo", "scripted"} <= set(specs), "built-in providers always load"
    assert not {"ctimport", "ctbadhook", "ctraise"} & {f.name for f in host.failures}
