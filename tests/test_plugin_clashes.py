"""Name clashes are never silent: two distributions offering one name are reported when plugins
load, ``oma plugins`` shows both owners and the winner, and an ambiguous name raises until the
user chooses (``OMA_PREFER_PLUGINS`` or ``PluginHost(prefer=...)``).

The two clashing distributions, ``tests/plugins/oma-clashplugin`` (a dedicated plugin: it
offers ``clashplugin``, its own name) and ``tests/plugins/oma-clashpresets`` (presets of a
generic wire), are mounted on ``sys.path`` with their metadata, not installed: installed, they
would clash in every ``PluginHost`` of the environment.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from oma_core import Agent, AgentConfig
from oma_core.errors import PluginError
from oma_core.plugins import AmbiguousNameError, NameClash, PluginClashWarning, PluginHost

PLUGINS = Path(__file__).parent / "plugins"
Mount = Callable[..., None]


@pytest.fixture
def mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mount]:
    """``mount("oma-clashplugin")`` puts that test distribution on ``sys.path`` as an installed
    one (its package and a .dist-info with its entry points); ``name=`` mounts it under another
    distribution name, ``entry_points=`` with others."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_PREFER_PLUGINS", raising=False)
    packages: list[str] = []

    def mount(
        folder: str, *, name: str | None = None, entry_points: dict[str, str] | None = None
    ) -> None:
        source = PLUGINS / folder
        project = tomllib.loads((source / "distribution.toml").read_text())["project"]
        package = folder.replace("-", "_")
        if not (tmp_path / package).exists():
            shutil.copytree(source / package, tmp_path / package)
            packages.append(package)
        dist = name or project["name"]
        info = tmp_path / f"{dist.replace('-', '_')}-{project['version']}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {project['version']}\n"
        )
        points = entry_points or project["entry-points"]["oma"]
        (info / "entry_points.txt").write_text(
            "[oma]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
        )

    yield mount
    for module in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[module]


@pytest.fixture
def both(mount: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two clashing distributions, and no other external plugin (whatever is installed)."""
    mount("oma-clashplugin")
    mount("oma-clashpresets")
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-clashplugin,oma-clashpresets")


def _host(**options: object) -> tuple[PluginHost, list[str]]:
    """A fresh host with everything settled, and the clash warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        host = PluginHost(**options)  # type: ignore[arg-type]
        host.provider_specs()
    return host, [str(w.message) for w in caught if issubclass(w.category, PluginClashWarning)]


# -- the rule -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("both")
def test_the_distribution_named_for_a_provider_beats_another_distributions_preset() -> None:
    host, _ = _host()
    assert host.provider_spec("clashplugin").display_name == "clashplugin (oma-clashplugin)"
    assert (
        NameClash(
            "provider",
            "clashplugin",
            ("oma-clashplugin", "oma-clashpresets"),
            "oma-clashplugin",
            "dedicated",
        )
        in host.clashes()
    )


@pytest.mark.usefixtures("both")
def test_a_clash_is_a_warning_naming_both_distributions_and_the_winner() -> None:
    _, caught = _host()
    (dedicated,) = [text for text in caught if "'clashplugin'" in text]
    assert dedicated == (
        "provider 'clashplugin' is offered by oma-clashplugin and oma-clashpresets: "
        "oma-clashplugin wins, being named for it; to use oma-clashpresets's, set "
        "OMA_PREFER_PLUGINS=clashplugin=oma-clashpresets"
    )
    (ambiguous,) = [text for text in caught if "'ollama'" in text]
    assert "oma-clashplugin and oma-clashpresets, and none is named for it" in ambiguous


@pytest.mark.usefixtures("both")
def test_a_host_warns_about_a_clash_once() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        host = PluginHost()
        for _ in range(3):
            host.provider_specs()
        host.register(object(), name="another")  # the registry is rebuilt
        host.provider_specs()
    assert len([w for w in caught if issubclass(w.category, PluginClashWarning)]) == 3


@pytest.mark.usefixtures("both")
def test_a_name_no_distribution_is_named_for_is_ambiguous_and_raises_naming_both() -> None:
    host, _ = _host()
    assert "ollama" not in host.provider_specs()
    with pytest.raises(AmbiguousNameError) as info:
        host.provider_spec("ollama")
    error = info.value
    assert (error.name, error.kind, error.owners) == (
        "ollama",
        "provider",
        ("oma-clashplugin", "oma-clashpresets"),
    )
    assert "OMA_PREFER_PLUGINS=ollama=oma-clashpresets" in str(error)
    assert isinstance(error, PluginError)


@pytest.mark.usefixtures("both")
def test_an_agent_on_an_ambiguous_provider_is_refused_when_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, _ = _host()
    with pytest.raises(AmbiguousNameError, match="'ollama' is offered by"):
        Agent(AgentConfig(name="a", provider="ollama"), plugins=host)


@pytest.mark.usefixtures("both")
def test_an_agent_naming_an_ambiguous_provider_in_its_model_is_refused() -> None:
    host, _ = _host()
    with pytest.raises(AmbiguousNameError):
        Agent(AgentConfig(name="a", model="ollama:llama3"), plugins=host)


@pytest.mark.usefixtures("both")
def test_the_clash_warning_points_at_the_program_line_that_loaded_the_plugins() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PluginHost().provider_specs()
    (first, *_) = [w for w in caught if issubclass(w.category, PluginClashWarning)]
    assert first.filename == __file__


@pytest.mark.usefixtures("both")
def test_an_ambiguous_backend_kind_raises_too() -> None:
    host, caught = _host()
    assert "clashagent" not in host.backend_specs()
    with pytest.raises(AmbiguousNameError) as info:
        host.backend_spec("clashagent")
    assert info.value.kind == "backend"
    assert any(text.startswith("backend kind 'clashagent'") for text in caught)


#: A distribution that offers the executor ``clashexec`` (its description names the owner).
_EXECUTOR_PLUGIN = """
from oma_core import hookimpl
from oma_core.toolkit import ExecutorSpec


@hookimpl
def oma_register_executors():
    return [ExecutorSpec("clashexec", factory=_never, description={owner!r})]


def _never(options):
    raise NotImplementedError("the clash tests never build this executor")
"""


@pytest.fixture
def executors(mount: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two distributions, oma-execa and oma-execb, each offering the executor ``clashexec``
    (written beside the ``mount``ed ones: on ``sys.path``, with their metadata)."""
    packages = []
    for owner in ("oma-execa", "oma-execb"):
        package = owner.replace("-", "_")
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(_EXECUTOR_PLUGIN.format(owner=owner))
        info = tmp_path / f"{package}-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {owner}\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text(f"[oma]\n{package} = {package}\n")
        packages.append(package)
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-execa,oma-execb")
    yield
    for package in packages:
        sys.modules.pop(package, None)


@pytest.mark.usefixtures("executors")
def test_an_ambiguous_executor_name_raises_too() -> None:
    host, caught = _host()
    assert host.failures == []  # both loaded: the name is ambiguous, not missing
    assert "clashexec" not in host.executor_specs()
    with pytest.raises(AmbiguousNameError) as info:
        host.executor_spec("clashexec")
    assert (info.value.kind, info.value.owners) == ("executor", ("oma-execa", "oma-execb"))
    assert "OMA_PREFER_PLUGINS=clashexec=oma-execb" in str(info.value)
    assert any(text.startswith("executor 'clashexec'") for text in caught)


@pytest.mark.usefixtures("executors")
def test_a_preference_chooses_the_owner_of_an_ambiguous_executor() -> None:
    host, caught = _host(prefer={"clashexec": "oma-execb"})
    assert host.executor_spec("clashexec").description == "oma-execb"
    assert caught == []  # chosen: nothing to warn of


# -- choosing -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("both")
async def test_oma_prefer_plugins_chooses_the_owner_of_an_ambiguous_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_PREFER_PLUGINS", "ollama=oma-clashpresets")
    host, caught = _host()
    agent = Agent(AgentConfig(name="a", provider="ollama"), plugins=host)
    assert (await agent.run("hi")).output == "from oma-clashpresets"
    assert [text for text in caught if "'ollama'" in text] == []  # chosen: nothing to warn of
    (clash,) = [clash for clash in host.clashes() if clash.name == "ollama"]
    assert (clash.winner, clash.reason) == ("oma-clashpresets", "chosen")


@pytest.mark.usefixtures("both")
def test_prefer_chooses_by_entry_point_name_and_beats_the_dedicated_rule() -> None:
    host, _ = _host(prefer={"ollama": "clashplugin", "clashplugin": "oma_clashpresets"})
    assert host.provider_spec("ollama").display_name == "ollama (oma-clashplugin)"
    assert host.provider_spec("clashplugin").display_name == "clashplugin (oma-clashpresets)"


@pytest.mark.usefixtures("both")
def test_prefer_given_in_code_wins_over_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_PREFER_PLUGINS", "ollama=oma-clashpresets")
    host, _ = _host(prefer={"ollama": "oma-clashplugin"})
    assert host.provider_spec("ollama").display_name == "ollama (oma-clashplugin)"


@pytest.mark.usefixtures("both")
def test_a_preference_naming_no_owner_leaves_the_name_ambiguous() -> None:
    host, _ = _host(prefer={"ollama": "oma-elsewhere"})
    with pytest.raises(AmbiguousNameError):
        host.provider_spec("ollama")


@pytest.mark.parametrize("value", ["ollama", "ollama=", "=oma-x", "a=b,c"])
def test_a_malformed_oma_prefer_plugins_is_refused_naming_the_item(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("OMA_PREFER_PLUGINS", value)
    with pytest.raises(PluginError, match="expected name=distribution") as info:
        PluginHost(load_entrypoints=False)
    assert info.value.name == "OMA_PREFER_PLUGINS"


def test_oma_plugins_with_a_malformed_preference_is_a_usage_error() -> None:
    env = dict(os.environ, OMA_PREFER_PLUGINS="ollama")
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "plugins"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: OMA_PREFER_PLUGINS holds 'ollama'")
    assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("both")
def test_a_plugin_registered_in_code_beats_every_distribution_without_a_clash() -> None:
    from oma_core import Capabilities, ProviderSpec, hookimpl
    from oma_core.testing import ScriptedProvider

    class Mine:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            factory = lambda settings: ScriptedProvider([])  # noqa: E731
            return [ProviderSpec("ollama", "Mine", factory, Capabilities.text_only())]

    host, _ = _host()
    host.register(Mine(), name="mine")
    assert host.provider_spec("ollama").display_name == "Mine"
    assert "ollama" not in [clash.name for clash in host.clashes()]


def test_two_entry_points_of_one_distribution_do_not_clash(
    mount: Mount, monkeypatch: pytest.MonkeyPatch
) -> None:
    mount(
        "oma-clashplugin",
        entry_points={"first": "oma_clashplugin", "second": "oma_clashplugin"},
    )
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-clashplugin")
    host, caught = _host()
    # pluggy registers one module once: the second entry point is refused by name, not a clash
    assert caught == [] and host.clashes() == []
    assert host.provider_spec("ollama").display_name == "ollama (oma-clashplugin)"


def test_an_ambiguous_name_error_pickles_with_its_fields() -> None:
    error = AmbiguousNameError("x", name="ollama", kind="provider", owners=("a", "b"))
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.name, copy.kind, copy.owners) == (
        AmbiguousNameError,
        "x",
        "ollama",
        "provider",
        ("a", "b"),
    )


# -- oma plugins ----------------------------------------------------------------------------------


def _oma_plugins(tmp_path: Path, *args: str, stderr: bool = False) -> Any:
    """``oma plugins`` in a subprocess that sees the mounted distributions."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "plugins", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return (done.stdout, done.stderr) if stderr else done.stdout


@pytest.mark.usefixtures("both")
def test_oma_plugins_json_lists_each_clash_with_both_owners_and_the_winner(
    tmp_path: Path,
) -> None:
    data = json.loads(_oma_plugins(tmp_path, "--json"))
    (dedicated,) = [clash for clash in data["clashes"] if clash["name"] == "clashplugin"]
    assert dedicated["owners"] == ["oma-clashplugin", "oma-clashpresets"]
    assert (dedicated["kind"], dedicated["winner"], dedicated["reason"]) == (
        "provider",
        "oma-clashplugin",
        "dedicated",
    )
    assert dedicated["note"].startswith("provider 'clashplugin' is offered by")
    (ollama,) = [clash for clash in data["clashes"] if clash["name"] == "ollama"]
    assert (ollama["winner"], ollama["reason"]) == (None, "ambiguous")
    assert "ollama" not in data["providers"]
    assert data["providers"]["clashplugin"]["plugin"] == "clashplugin"


@pytest.mark.usefixtures("both")
def test_oma_plugins_prints_each_clash_and_who_wins(tmp_path: Path) -> None:
    out, err = _oma_plugins(tmp_path, stderr=True)
    assert "PluginClashWarning" not in err  # listed once, in the report
    assert (
        "clash: provider 'clashplugin' is offered by oma-clashplugin and oma-clashpresets: "
        "oma-clashplugin wins" in out
    )
    assert "clash: provider 'ollama' is offered by" in out


# -- beside the bundled plugins (nox -s all) ------------------------------------------------------


@pytest.mark.combination
def test_a_dedicated_ollama_plugin_beats_oma_openais_preset_and_says_so(
    mount: Mount, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("oma_openai")
    mount("oma-clashplugin", name="oma-ollama", entry_points={"ollama": "oma_clashplugin"})
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-openai,oma-ollama")
    host, caught = _host()
    assert host.provider_spec("ollama").display_name == "ollama (oma-clashplugin)"
    assert (
        "provider 'ollama' is offered by oma-ollama and oma-openai: oma-ollama wins, being "
        "named for it; to use oma-openai's, set OMA_PREFER_PLUGINS=ollama=oma-openai"
    ) in caught


@pytest.mark.combination
def test_a_plugin_offering_a_bundled_preset_name_makes_it_ambiguous_until_chosen(
    mount: Mount, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("oma_openai")
    mount("oma-clashplugin")
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-openai,oma-clashplugin")
    host, caught = _host()
    with pytest.raises(AmbiguousNameError) as info:
        host.provider_spec("ollama")
    assert info.value.owners == ("oma-clashplugin", "oma-openai")
    assert any("'ollama' is offered by oma-clashplugin and oma-openai" in t for t in caught)
    monkeypatch.setenv("OMA_PREFER_PLUGINS", "ollama=oma-openai")
    host, _ = _host()
    assert host.provider_spec("ollama").display_name == "Ollama"
