"""The eleven distributions (the core and each plugin under ``plugins/``) as a user installs
them: each version is written once, in its package's ``__version__``, and read from there by
hatchling; the plugins move in lockstep with the core; each pins the ``oma-core`` range it
supports, and that range holds the core of this tree. ``nox -s build`` builds and installs the
wheels themselves."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from _builders import oma
from packaging.requirements import Requirement
from packaging.version import Version

import oma_core

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))
DISTRIBUTIONS = [ROOT, *PLUGINS]
# How hatchling's ``[tool.hatch.version] path`` source finds the version (its default pattern).
VERSION_LINE = re.compile(r'^__version__\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


def project_of(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return data


def written_version(root: Path) -> str:
    """The version hatchling builds ``root`` with: the line in the file its config names."""
    path = project_of(root)["tool"]["hatch"]["version"]["path"]
    found = VERSION_LINE.findall((root / path).read_text(encoding="utf-8"))
    assert len(found) == 1, f"{root.name}: {path} has {len(found)} __version__ lines"
    return str(found[0])


def core_requirement(root: Path) -> Requirement:
    requirements = [Requirement(line) for line in project_of(root)["project"]["dependencies"]]
    (core,) = [r for r in requirements if r.name == "oma-core"]
    return core


def test_there_are_the_core_and_eleven_plugin_distributions() -> None:
    names = [project_of(root)["project"]["name"] for root in DISTRIBUTIONS]
    assert names[0] == "oma-core"
    assert len(names) == 12 and len(set(names)) == 12
    assert all(name.startswith("oma-") for name in names)


@pytest.mark.parametrize("root", DISTRIBUTIONS, ids=lambda root: root.name)
def test_each_version_is_read_from_its_package(root: Path) -> None:
    project = project_of(root)
    assert "version" not in project["project"], "a version in pyproject.toml is a second copy"
    assert project["project"]["dynamic"] == ["version"]
    package = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"][0]
    assert project["tool"]["hatch"]["version"]["path"] == f"{package}/__init__.py"
    assert Version(written_version(root))  # a valid version


def test_the_core_version_read_by_hatchling_is_the_one_oma_core_reports() -> None:
    assert written_version(ROOT) == oma_core.__version__


@pytest.mark.parametrize("root", PLUGINS, ids=lambda root: root.name)
def test_each_plugin_moves_in_lockstep_with_the_core(root: Path) -> None:
    assert written_version(root) == written_version(ROOT)


@pytest.mark.parametrize("root", PLUGINS, ids=lambda root: root.name)
def test_each_plugin_pins_a_core_range_that_holds_this_core(root: Path) -> None:
    core = core_requirement(root)
    assert core.specifier.contains(written_version(ROOT))
    # A bounded range: the next minor version of the core (0.x) may break a plugin.
    assert any(spec.operator == "<" for spec in core.specifier), f"{root.name}: {core}"
    assert not core.specifier.contains("0.99")


def test_version_prints_the_core_then_each_installed_plugin_distribution() -> None:
    result = oma("--version")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"oma {oma_core.__version__}"
    installed = {ep.dist.name: ep.dist.version for ep in entry_points(group="oma") if ep.dist}
    assert lines[1:] == [f"{name} {installed[name]}" for name in sorted(installed)]
    assert "oma-testplugin 0.1.0" in lines  # tests/plugins/oma-testplugin, installed by nox
