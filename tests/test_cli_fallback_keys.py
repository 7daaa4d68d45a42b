"""``oma run -m PROVIDER:MODEL --fallback ...``: the key store is read for the run's provider
and its fallback providers only, and a fallback provider runs with the key stored for it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import builtin_host
from click.testing import CliRunner

from oma_core import Capabilities, LLMMessage, ProviderSpec, TextBlock, hookimpl
from oma_core.cli import cli
from oma_core.errors import ProviderError
from oma_core.plugins import PluginHost
from oma_core.toolkit import ProviderRequest, ProviderResponse, ProviderSettings

KEY = "sk-stored-for-keyed-0123456789"


class _Answers:
    def __init__(self, fail: bool) -> None:
        self.fail = fail

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        if self.fail:
            raise ProviderError("HTTP 503: down", provider="Down", status_code=503, retry_after=0)
        return ProviderResponse(LLMMessage("assistant", (TextBlock("from keyed"),)))

    async def aclose(self) -> None:
        pass


class _Plugin:
    """ "down" (no key, always 503) and "keyed" (needs a key, from OMA_TEST_KEYED_KEY or the
    store), recording the settings each was built with."""

    def __init__(self) -> None:
        self.built: dict[str, ProviderSettings] = {}

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        def factory(name: str) -> Any:
            def make(settings: ProviderSettings) -> _Answers:
                self.built[name] = settings
                return _Answers(fail=name == "down")

            return make

        text = Capabilities.text_only()
        return [
            ProviderSpec("down", "Down", factory("down"), text, default_model="d-1"),
            ProviderSpec("keyed", "Keyed", factory("keyed"), text, default_model="k-1",
                         api_key_env="OMA_TEST_KEYED_KEY", requires_api_key=True),
        ]  # fmt: skip


@pytest.fixture
def plugin(cli_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Plugin]:
    monkeypatch.delenv("OMA_TEST_KEYED_KEY", raising=False)
    made = _Plugin()
    previous = PluginHost.set_default(builtin_host(made))
    yield made
    PluginHost.set_default(previous)


def _run(*arguments: str) -> Any:
    command = ["run", *arguments, "--json", "--no-log", "hi"]
    return CliRunner().invoke(cli, command)


def test_a_fallback_provider_runs_with_the_key_stored_for_it(plugin: _Plugin) -> None:
    stored = CliRunner().invoke(cli, ["keys", "set", "keyed"], input=KEY + "\n")
    assert stored.exit_code == 0, stored.output
    result = _run("-m", "down:d-1", "--fallback", "keyed:k-1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == "from keyed"
    assert plugin.built["keyed"].api_key == KEY
    assert plugin.built["down"].api_key is None  # the store's key went to its provider only


def test_providers_that_need_no_key_never_open_the_keys_file(
    plugin: _Plugin, cli_home: Path
) -> None:
    cli_home.mkdir(mode=0o700, exist_ok=True)
    path = cli_home / "keys.json"
    path.write_text(json.dumps({"keyed": KEY}))
    os.chmod(path, 0o666)  # others may write it: refused if it were read
    result = _run("-m", "down:d-1", "--fallback", "echo")
    assert result.exit_code == 0, result.output
    assert "keys.json" not in result.stderr
