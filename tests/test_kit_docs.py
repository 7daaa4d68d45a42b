"""The plugin author's docs and packaging say what the kit needs and where it is: the
``testing`` extra holds every third-party module ``oma_core.testing`` imports beyond the
core's own dependencies, and the pages name it; ``docs/agent.md`` lists every
``AgentConfig`` field; ``plugins/README.md`` points to the template generator; the docs and
the template import the stream items from the same place."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import attrs

from oma_core import AgentConfig
from oma_core.testing.template import generate

ROOT = Path(__file__).resolve().parents[1]
#: Distribution name -> the module it installs, where the two differ.
_MODULES = {"pytest-asyncio": "pytest_asyncio", "opentelemetry-api": "opentelemetry"}


def _module(requirement: str) -> str:
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()
    return _MODULES.get(name, name.replace("-", "_"))


def _project() -> dict[str, Any]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project: dict[str, Any] = tomllib.loads(text)["project"]
    return project


def _imported_by_the_kit() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "oma_core" / "testing").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "oma_core"}


def test_the_testing_extra_holds_what_the_kit_imports_beyond_the_core() -> None:
    project = _project()
    core = {_module(r) for r in project["dependencies"]}
    testing = {_module(r) for r in project["optional-dependencies"]["testing"]}
    missing = _imported_by_the_kit() - core - testing
    assert not missing, f"oma_core.testing imports {sorted(missing)}: add them to the extra"
    assert "pytest_asyncio" in testing, "the kit's checks are coroutines"


def test_the_testing_page_names_the_extra() -> None:
    page = (ROOT / "docs" / "testing-plugins.md").read_text(encoding="utf-8")
    assert 'pip install "oma-core[testing]"' in page


def test_the_agent_page_lists_every_config_field() -> None:
    page = (ROOT / "docs" / "agent.md").read_text(encoding="utf-8")
    table = page.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    listed = {
        name
        for row in re.findall(r"^\| (.*?) \|", table, re.M)
        for name in re.findall(r"`(\w+)`", row)
    }
    missing = [f.name for f in attrs.fields(AgentConfig) if f.name not in listed]
    assert not missing, f"docs/agent.md's table lacks {missing}"


def test_the_plugins_readme_points_to_the_template_generator() -> None:
    readme = (ROOT / "plugins" / "README.md").read_text(encoding="utf-8")
    assert "python -m oma_core.testing.template" in readme
    assert "copy a folder" not in readme


def test_the_docs_and_the_template_import_stream_items_from_one_place(tmp_path: Path) -> None:
    """The docs name ``oma_core.testing.JSONLine``; the template's fake imports it (and
    ``SSEEvent``, ``StreamItem``) from there, not from ``oma_core.testing.fake_server``."""
    docs = "".join(
        (ROOT / "docs" / page).read_text(encoding="utf-8")
        for page in ("testing-plugins.md", "writing-a-provider.md")
    )
    assert "oma_core.testing.fake_server import" not in docs
    for stream in ("ndjson", "sse"):
        for path in generate("acme", tmp_path / stream, stream=stream):
            text = path.read_text(encoding="utf-8")
            assert "oma_core.testing.fake_server" not in text, path
