"""``oma models``: the installed providers' default models and the options each declares,
with their types, as ``check_provider_options`` checks them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from _builders import oma

from oma_core.plugins import PluginHost


@pytest.fixture(autouse=True)
def _openai() -> Iterator[None]:
    oma_openai = pytest.importorskip("oma_openai")
    host = PluginHost(load_entrypoints=False)
    host.register(oma_openai, name="openai")
    previous = PluginHost.set_default(host)
    yield
    PluginHost.set_default(previous)


def test_models_lists_each_provider_with_its_default_model() -> None:
    result = oma("models")
    assert result.exit_code == 0, result.stderr
    assert "openai: gpt-4o-mini" in result.stdout.splitlines()
    assert "  -o" not in result.stdout  # options only on request


def test_models_of_one_provider_lists_its_options_with_their_types() -> None:
    result = oma("models", "openai")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "  -o seed INT" in lines
    assert any(line.startswith("  -o extra_body OBJECT") for line in lines)


def test_models_json_gives_the_declared_types() -> None:
    result = oma("models", "--json", "--options")
    entry = next(e for e in json.loads(result.stdout) if e["provider"] == "openai")
    types = {option["name"]: option["type"] for option in entry["options"]}
    assert types["temperature"] == "number"
    assert types["stop"] == "str or list"


def test_a_misspelt_provider_is_a_usage_error_with_a_did_you_mean() -> None:
    result = oma("models", "opnai")
    assert result.exit_code == 2
    assert "did you mean 'openai'?" in result.stderr
