"""``oma keys``: stored with mode 0600 in the config directory, shown by name only."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from _builders import oma

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("OMA_HOME", str(home))
    return home


def test_keys_path_is_in_oma_home(_home: Path) -> None:
    result = oma("keys", "path")
    assert result.exit_code == 0
    assert result.stdout == f"{_home / 'keys.json'}\n"


def test_keys_path_defaults_to_the_user_config_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("OMA_HOME")
    expected = Path(platformdirs.user_config_dir("oma", appauthor=False)) / "keys.json"
    assert oma("keys", "path").stdout.strip() == str(expected)


def test_set_stores_the_key_with_mode_0600_and_never_prints_it(_home: Path) -> None:
    result = oma("keys", "set", "openai", input=f"{SECRET}\n")
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    path = _home / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"openai": SECRET}


def test_set_from_a_terminal_prompts_with_hidden_input(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    asked: list[dict[str, object]] = []

    def prompt(text: str, **options: object) -> str:
        asked.append({"text": text, **options})
        return SECRET

    monkeypatch.setattr("oma_core.cli._keys.stdin_is_piped", lambda: False)
    monkeypatch.setattr(click, "prompt", prompt)
    assert oma("keys", "set", "anthropic").exit_code == 0
    assert asked == [{"text": "Key for anthropic", "hide_input": True, "err": True}]


def test_list_prints_names_only() -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    oma("keys", "set", "anthropic", input="sk-ant-other\n")
    result = oma("keys", "list")
    assert result.exit_code == 0
    assert result.stdout == "anthropic\nopenai\n"


def test_remove_forgets_a_key_and_an_unknown_name_is_a_usage_error(_home: Path) -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    assert oma("keys", "remove", "openai").exit_code == 0
    assert json.loads((_home / "keys.json").read_text()) == {}
    result = oma("keys", "remove", "openai")
    assert result.exit_code == 2
    assert result.stderr == "error: no key is stored for openai\n"


def test_an_empty_key_is_refused(_home: Path) -> None:
    result = oma("keys", "set", "openai", input="\n")
    assert result.exit_code == 2
    assert not (_home / "keys.json").exists()


def test_a_broken_keys_file_is_one_line_not_a_traceback(_home: Path) -> None:
    _home.mkdir()
    path = _home / "keys.json"
    path.write_text("{not json")
    path.chmod(0o600)
    result = oma("keys", "list")
    assert result.exit_code == 2
    assert result.stderr == f"error: {path} is not a JSON object of keys; fix or remove it\n"


def test_a_name_no_provider_has_is_stored_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    from oma_core.plugins import PluginHost

    previous = PluginHost.set_default(None)
    try:
        result = oma("keys", "set", "opneai", input=f"{SECRET}\n")
    finally:
        PluginHost.set_default(previous)
    assert result.exit_code == 0
    assert "note: no installed provider is named opneai" in result.stderr
    assert oma("keys", "list").stdout == "opneai\n"
