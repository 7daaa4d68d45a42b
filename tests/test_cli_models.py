"""``oma models``: the installed providers' default models and the options each declares,
with their types, as ``check_provider_options`` checks them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _builders import oma

from oma_core.plugins import PluginHost

pytestmark = pytest.mark.combination  # oma models over oma-openai's spec: run by `nox -s all`


@pytest.fixture(autouse=True)
def _openai(cli_home: Path) -> Iterator[None]:
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


def test_models_lists_each_providers_known_models_under_it() -> None:
    lines = oma("models").stdout.splitlines()
    start = lines.index("openai: gpt-4o-mini")
    assert lines[start + 1].startswith("  known models: gpt-4o-mini, gpt-4o, ")
    assert "o4-mini" in " ".join(lines[start + 1 : start + 4])


def test_a_provider_that_knows_no_models_gets_no_known_models_line() -> None:
    lines = oma("models").stdout.splitlines()
    after_vllm = lines[lines.index("vllm: (no default model)") + 1 :]
    assert not after_vllm or not after_vllm[0].startswith("  known models")
    assert "known models" not in oma("models", "echo").stdout


def test_models_of_one_provider_lists_its_known_models_before_its_options() -> None:
    lines = oma("models", "deepseek").stdout.splitlines()
    assert lines[:2] == [
        "deepseek: deepseek-chat",
        "  known models: deepseek-chat, deepseek-reasoner",
    ]
    assert lines[2].startswith("  -o ")


def test_models_json_gives_the_known_models() -> None:
    entries = {e["provider"]: e for e in json.loads(oma("models", "--json").stdout)}
    assert entries["deepseek"]["known_models"] == ["deepseek-chat", "deepseek-reasoner"]
    assert entries["vllm"]["known_models"] == []


@pytest.mark.parametrize("columns", [50, 80])
def test_the_known_models_wrap_to_a_narrow_terminal(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    lines = oma("models").stdout.splitlines()
    known = PluginHost.default().provider_specs()
    longest = max(len(model) for spec in known.values() for model in spec.known_models)
    # a line is cut between names only: one name longer than the room stands alone
    assert all(len(line) < columns or len(line.strip()) <= longest + 1 for line in lines)
    assert sum(line.startswith("    ") for line in lines) >= 1  # continued, indented
    shown = " ".join(lines)
    assert all(model in shown for spec in known.values() for model in spec.known_models)


def test_a_misspelt_provider_is_a_usage_error_with_a_did_you_mean() -> None:
    result = oma("models", "opnai")
    assert result.exit_code == 2
    assert "did you mean 'openai'?" in result.stderr


# -- oma models default ------------------------------------------------------------------------


def test_models_default_prints_nothing_and_exits_0_when_none_is_stored() -> None:
    result = oma("models", "default")
    assert (result.exit_code, result.stdout) == (0, "")


def test_models_default_stores_the_model_and_prints_it_back(cli_home: Path) -> None:
    stored = oma("models", "default", "openai:gpt-4.1-nano")
    assert stored.exit_code == 0, stored.stderr
    assert oma("models", "default").stdout == "openai:gpt-4.1-nano\n"
    settings = cli_home / "settings.json"
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert json.loads(settings.read_text()) == {"default_model": "openai:gpt-4.1-nano"}


def test_models_default_refuses_a_misspelt_provider_with_a_did_you_mean(cli_home: Path) -> None:
    result = oma("models", "default", "opnai:gpt-4o")
    assert result.exit_code == 2
    assert "did you mean 'openai'?" in result.stderr
    assert not (cli_home / "settings.json").exists()


def test_models_default_of_a_model_the_provider_does_not_know_stores_it_with_a_did_you_mean(
    cli_home: Path,
) -> None:
    result = oma("models", "default", "openai:gpt-4o-mnii")
    assert result.exit_code == 0, result.stderr
    note, stored = result.stderr.splitlines()
    assert note == (
        "note: openai does not list gpt-4o-mnii among its known models (did you mean "
        "gpt-4o-mini?); stored as given: oma models openai lists them"
    )
    assert stored.startswith("default model: openai:gpt-4o-mnii (stored in ")
    assert oma("models", "default").stdout == "openai:gpt-4o-mnii\n"


def test_models_default_of_a_known_or_unlike_model_says_no_more(cli_home: Path) -> None:
    for model in ("openai:gpt-4o", "openai:ft:gpt-4o:acme:x1"):
        result = oma("models", "default", model)
        assert result.exit_code == 0, result.stderr
        assert result.stderr.startswith(f"default model: {model} (stored in ")
        assert result.stderr.count("\n") == 1


def test_models_default_refuses_a_value_without_provider_and_model() -> None:
    result = oma("models", "default", "gpt-4o")
    assert result.exit_code == 2
    assert "is not PROVIDER:MODEL" in result.stderr


def test_a_stored_default_model_is_run_when_nothing_names_one() -> None:
    oma("models", "default", "openai:gpt-4.1-nano")
    result = oma("render", "hi")  # the body a run sends: openai's, with the stored model
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "gpt-4.1-nano"


def test_a_stored_default_of_a_provider_no_longer_installed_exits_2_naming_it(
    cli_home: Path,
) -> None:
    cli_home.mkdir(parents=True, exist_ok=True)
    (cli_home / "settings.json").write_text('{"default_model": "gone:m1"}')
    result = oma("run", "hi")
    assert result.exit_code == 2
    assert "the default model gone:m1 (set with oma models default)" in result.stderr


def test_oma_model_in_the_environment_beats_the_stored_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    oma("models", "default", "openai:gpt-4.1-nano")
    monkeypatch.setenv("OMA_MODEL", "openai:gpt-4o")
    assert json.loads(oma("render", "hi").stdout)["model"] == "gpt-4o"


def test_a_provider_on_the_command_line_beats_the_stored_default() -> None:
    oma("models", "default", "openai:gpt-4.1-nano")
    result = oma("run", "-p", "echo", "hi")
    assert (result.exit_code, result.stdout) == (0, 'user: text "hi"\n')


# -- the echo note -----------------------------------------------------------------------------

NOTE = "note: no model configured"


def _run_with_stderr_on_a_terminal(home: Path, *args: str) -> tuple[int, str, str]:
    """``oma ARGS`` in a subprocess whose stderr is a pty (stdout a pipe): its exit status,
    stdout and what reached the terminal."""
    main, secondary = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMA_")}
    env |= {"OMA_HOME": str(home), "OMA_LOAD_PLUGINS": ""}
    with subprocess.Popen(
        [sys.executable, "-m", "oma_core.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env=env,
    ) as process:
        os.close(secondary)
        stdout, _ = process.communicate(timeout=120)
    terminal = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the command ended: read what it left, then EIO
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        terminal += chunk
    os.close(main)
    return process.returncode, stdout.decode(), terminal.decode().replace("\r\n", "\n")


def test_echo_chosen_for_want_of_a_model_says_so_once_on_a_terminal(cli_home: Path) -> None:
    status, stdout, terminal = _run_with_stderr_on_a_terminal(cli_home, "run", "hi")
    assert (status, stdout) == (0, 'user: text "hi"\n')
    assert terminal.count(NOTE) == 1, terminal


def test_echo_chosen_by_name_says_nothing_on_a_terminal(cli_home: Path) -> None:
    status, _, terminal = _run_with_stderr_on_a_terminal(cli_home, "run", "-p", "echo", "hi")
    assert (status, terminal) == (0, "")


def test_the_echo_note_stays_out_of_stderr_that_is_not_a_terminal() -> None:
    result = oma("run", "hi")
    assert (result.exit_code, result.stderr) == (0, "")
