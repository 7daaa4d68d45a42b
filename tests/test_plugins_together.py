"""Every plugin under plugins/ installed at once: each is discovered through its entry point,
none shadows another, and ``oma plugins`` lists them all with each provider's true capabilities.

Only ``nox -s all`` installs them together, so these tests are marked ``combination`` (and skip
where a plugin is missing, as in a checkout with only some installed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from oma_core import PluginHost
from oma_core.cli import capability_matrix
from oma_core.stores import store_specs

ROOT = Path(__file__).resolve().parent.parent


def _distributions() -> dict[str, dict[str, Any]]:
    """Each plugin's ``[project]`` table, by distribution name."""
    projects = (
        tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        for path in sorted(ROOT.glob("plugins/*/pyproject.toml"))
    )
    return {project["name"]: project for project in projects}


DISTRIBUTIONS = _distributions()
_MISSING = [
    name for name in DISTRIBUTIONS if importlib.util.find_spec(name.replace("-", "_")) is None
]
pytestmark = [
    pytest.mark.combination,
    pytest.mark.skipif(bool(_MISSING), reason=f"not installed: {', '.join(_MISSING)}"),
]


@pytest.fixture
def every_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """No environment switch narrows what is loaded."""
    monkeypatch.delenv("OMA_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)


def _oma_plugins(*args: str, columns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.pop("OMA_LOAD_PLUGINS", None)
    env.pop("OMA_DISABLE_PLUGINS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "plugins", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.usefixtures("every_plugin")
@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_each_plugin_is_discovered_through_its_entry_point(distribution: str) -> None:
    host = PluginHost()
    assert host.failures == []
    entry_points = DISTRIBUTIONS[distribution]["entry-points"]["oma"]
    loaded = {info.name: info for info in host.plugin_info() if info.distribution == distribution}
    assert set(loaded) == set(entry_points)
    stores = {plugin for _, plugin in store_specs(host).values()}
    for info in loaded.values():
        assert not info.builtin
        offers = info.providers or info.backends or info.executors or info.toolsets
        assert offers or info.name in stores, info


@pytest.mark.usefixtures("every_plugin")
def test_no_plugin_shadows_or_clashes_with_another() -> None:
    host = PluginHost()
    assert host.shadowed() == [] and host.clashes() == []
    infos = host.plugin_info()
    for kind in ("providers", "backends", "executors"):
        offered = [name for info in infos for name in getattr(info, kind)]
        assert len(offered) == len(set(offered)), kind
    assert sorted(host.provider_specs()) == sorted(n for i in infos for n in i.providers)


@pytest.fixture(scope="module")
def listed() -> dict[str, Any]:
    """``oma plugins --json`` over every installed plugin (run once: it loads them all)."""
    return json.loads(_oma_plugins("--json"))  # type: ignore[no-any-return]


@pytest.mark.usefixtures("every_plugin")
def test_oma_plugins_json_shows_each_providers_own_capabilities(listed: dict[str, Any]) -> None:
    data = listed
    assert data["failures"] == [] and data["shadowed"] == [] and data["clashes"] == []
    specs = PluginHost().provider_specs()
    assert sorted(data["providers"]) == sorted(specs)
    for name, entry in data["providers"].items():
        assert entry["capabilities"] == capability_matrix(specs[name].capabilities), name
    listed = {p["distribution"] for p in data["plugins"]}
    assert set(DISTRIBUTIONS) <= listed


@pytest.mark.parametrize("columns", ["80", "50", "40"])
def test_oma_plugins_over_every_plugin_fits_the_terminal_and_cuts_no_name(
    columns: str, listed: dict[str, Any]
) -> None:
    out = _oma_plugins(columns=columns)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= int(columns)
    words = set(re.findall(r"[\w.:-]+", out))
    for name in [*listed["providers"], *listed["backends"], *listed["executors"]]:
        assert name in words, name
