"""``oma keys``: stored with mode 0600 in the config directory, shown by name only, and a
store that holds under concurrent writers and a hostile directory.

The concurrency and attack tests run real processes: writers racing for the store, and the
``oma`` command against a FIFO, a directory or a symlink planted where the store or its temp
file goes. Each waits for its processes with a generous ``TIMEOUT`` that only stops a hang.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import ROOT, builtin_host, oma

from oma_core import Capabilities, ProviderSpec, hookimpl
from oma_core.plugins import PluginHost

SECRET = "sk-test-0123456789abcdef"
TIMEOUT = 240.0  # a failure guard only: every test ends as soon as its processes do
ENTRY = "from oma_core.cli import main; main()"
#: A writer process: ``KeyStore.set`` of keys ``{prefix}-0`` .. ``{prefix}-{count - 1}``.
WRITER = """
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from oma_core.cli._keystore import KeyStore

store = KeyStore(Path(sys.argv[1]), lock_timeout=600)
prefix, count = sys.argv[2], int(sys.argv[3])
for index in range(count):
    store.set(f"{prefix}-{index}", f"sk-{prefix}-{index}")
"""


class KeyedPlugin:
    """Providers that take a key ("openai", "anthropic": names only, they never run)."""

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        return [
            ProviderSpec(name, name.title(), _never, Capabilities.text_only(), api_key_env=env)
            for name, env in (("openai", "OMA_TEST_OPENAI_KEY"), ("anthropic", None))
        ]


def _never(settings: object) -> Any:
    raise AssertionError("no provider is built by these tests")


@pytest.fixture(autouse=True)
def _home(cli_home: Path) -> Iterator[Path]:
    """``cli_home``, with "openai" and "anthropic" installed (the built-ins besides)."""
    previous = PluginHost.set_default(builtin_host(KeyedPlugin()))
    yield cli_home
    PluginHost.set_default(previous)


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


def test_a_key_for_a_base_url_is_stored_under_the_provider_and_its_normalised_origin(
    _home: Path,
) -> None:
    set_one = oma("keys", "set", "openai", "--base-url", "HTTP://Local.Test:80/v1/", input="sk-a\n")
    assert set_one.exit_code == 0, set_one.output
    assert set_one.stderr.startswith("stored the key for openai http://local.test in ")
    oma("keys", "set", "openai", "--base-url", "https://[::1]:8443/v1", input="sk-b\n")
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    assert json.loads((_home / "keys.json").read_text()) == {
        "openai": SECRET,
        "openai@http://local.test": "sk-a",
        "openai@https://[::1]:8443": "sk-b",
    }
    listed = oma("keys", "list")
    assert listed.stdout == "openai\nopenai http://local.test\nopenai https://[::1]:8443\n"
    got = oma("keys", "get", "openai", "--base-url", "http://local.test/other")
    assert got.stdout == "sk-a\n"
    assert oma("keys", "remove", "openai", "--base-url", "http://local.test").exit_code == 0
    assert oma("keys", "list").stdout == "openai\nopenai https://[::1]:8443\n"
    missing = oma("keys", "get", "openai", "--base-url", "http://local.test")
    assert missing.exit_code == 2
    assert missing.stderr == "error: no key is stored for openai http://local.test\n"


@pytest.mark.parametrize("url", ["local.test:8080/v1", "ftp://local.test", "http://", "http://h:x"])
def test_a_base_url_without_a_scheme_and_host_is_refused_and_nothing_stored(
    url: str, _home: Path
) -> None:
    result = oma("keys", "set", "openai", "--base-url", url, input=f"{SECRET}\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --base-url {url!r} is not an http:// or https:// URL with a host\n"
    )
    assert not (_home / "keys.json").exists()


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


def test_a_name_no_installed_provider_has_is_refused_with_a_did_you_mean(_home: Path) -> None:
    result = oma("keys", "set", "opneai", input=f"{SECRET}\n")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no installed provider is named opneai; did you mean openai? (installed: "
        "anthropic, echo, openai, scripted); pass --force to store it anyway\n"
    )
    assert not (_home / "keys.json").exists()


def test_force_stores_a_key_for_a_provider_not_installed() -> None:
    result = oma("keys", "set", "--force", "mistral", input=f"{SECRET}\n")
    assert result.exit_code == 0, result.output
    assert oma("keys", "list").stdout == "mistral\n"


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "-x", "a" * 65, "k\x1b[31m"])
def test_a_name_that_is_no_provider_name_is_refused_even_with_force(name: str, _home: Path) -> None:
    result = oma("keys", "set", "--force", "--", name, input=f"{SECRET}\n")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {name!r} is not a provider name"), result.stderr
    assert not (_home / "keys.json").exists()


def test_get_prints_the_stored_key_for_scripts() -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    result = oma("keys", "get", "openai")
    assert result.exit_code == 0
    assert result.stdout == f"{SECRET}\n"
    assert result.stderr == ""


def test_get_of_a_name_with_no_key_is_a_usage_error() -> None:
    result = oma("keys", "get", "openai")
    assert result.exit_code == 2
    assert result.stderr == "error: no key is stored for openai\n"


def test_a_keys_file_others_can_read_gives_a_warning_with_the_fix(_home: Path) -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    path = _home / "keys.json"
    path.chmod(0o644)
    result = oma("keys", "get", "openai")
    assert result.exit_code == 0
    assert result.stdout == f"{SECRET}\n"
    assert result.stderr == (
        f"warning: {path} can be read by others (mode 644); run: chmod 600 {path}\n"
    )


def test_set_rewrites_a_keys_file_others_can_read_at_mode_0600(_home: Path) -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    path = _home / "keys.json"
    path.chmod(0o644)
    assert oma("keys", "set", "openai", input=f"{SECRET}\n").exit_code == 0  # the same key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("planted", ["directory", "fifo", "others-writable"])
def test_a_run_that_needs_no_key_never_opens_the_keys_file(planted: str, _home: Path) -> None:
    _home.mkdir(mode=0o700)
    path = _home / "keys.json"
    if planted == "directory":
        path.mkdir()
    elif planted == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("{}")
        path.chmod(0o666)
    result = oma("run", "-p", "echo", "hi")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


# -- the store under concurrent writers --------------------------------------------------------


def environment(home: Path) -> dict[str, str]:
    return {**os.environ, "OMA_HOME": str(home), "OMA_LOAD_PLUGINS": ""}


def oma_process(home: Path, *args: str, input: str = "") -> subprocess.CompletedProcess[str]:
    """The real ``oma`` command in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment(home),
        timeout=TIMEOUT,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The command failed with status 2 and one ``error:`` line, no traceback; the line."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_twenty_processes_of_a_hundred_sets_each_keep_every_key(_home: Path) -> None:
    path = _home / "keys.json"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"p{number}", "100"],
            cwd=ROOT,
            env=environment(_home),
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(20)
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=TIMEOUT)
        assert writer.returncode == 0, errors
    stored = json.loads(path.read_text(encoding="utf-8"))
    expected = {f"p{n}-{i}": f"sk-p{n}-{i}" for n in range(20) for i in range(100)}
    assert stored == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(_home)) == ["keys.json", "keys.json.lock"]  # no temp file left


def test_twenty_parallel_keys_set_commands_all_store_their_key(_home: Path) -> None:
    commands = [
        subprocess.Popen(
            [sys.executable, "-c", ENTRY, "keys", "set", "--force", f"provider{number}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=environment(_home),
        )
        for number in range(20)
    ]
    for number, command in enumerate(commands):
        _, errors = command.communicate(f"sk-{number}\n", timeout=TIMEOUT)
        assert command.returncode == 0, errors
        assert "Traceback" not in errors
    stored = json.loads((_home / "keys.json").read_text(encoding="utf-8"))
    assert stored == {f"provider{number}": f"sk-{number}" for number in range(20)}


def test_a_writer_that_waits_too_long_for_the_lock_gets_one_line(
    _home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from filelock import FileLock

    _home.mkdir(mode=0o700)
    monkeypatch.setattr("oma_core.cli._keystore.LOCK_TIMEOUT", 0.2)
    with FileLock(_home / "keys.json.lock"):
        result = oma("keys", "set", "openai", input=f"{SECRET}\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {_home / 'keys.json.lock'} is held by another oma command for over 0.2 s; "
        "try again when it ends\n"
    )
    assert not (_home / "keys.json").exists()


# -- the store under attack --------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of another user's choosing, outside the store: nothing may be written to it."""
    path = tmp_path / "outside.txt"
    path.write_text("theirs\n")
    return path


def test_a_symlink_planted_at_the_store_gets_nothing(_home: Path, outside: Path) -> None:
    _home.mkdir(mode=0o700)
    (_home / "keys.json").symlink_to(outside)
    line = one_error_line(
        oma_process(_home, "keys", "set", "--force", "openai", input=f"{SECRET}\n")
    )
    assert line == f"error: {_home / 'keys.json'} is a symlink, not a keys file; remove it"
    assert outside.read_text() == "theirs\n"
    assert (_home / "keys.json").is_symlink()


def test_a_symlink_planted_at_the_old_temp_name_gets_nothing(_home: Path, outside: Path) -> None:
    _home.mkdir(mode=0o700)
    (_home / "keys.json.tmp").symlink_to(outside)
    result = oma_process(_home, "keys", "set", "--force", "openai", input=f"{SECRET}\n")
    assert result.returncode == 0, result.stderr
    assert outside.read_text() == "theirs\n"
    assert json.loads((_home / "keys.json").read_text()) == {"openai": SECRET}
    assert not (_home / "keys.json").is_symlink()


def test_a_symlink_planted_at_the_lock_is_refused_and_gets_nothing(
    _home: Path, outside: Path
) -> None:
    _home.mkdir(mode=0o700)
    (_home / "keys.json.lock").symlink_to(outside)
    line = one_error_line(
        oma_process(_home, "keys", "set", "--force", "openai", input=f"{SECRET}\n")
    )
    assert line.startswith(f"error: {_home / 'keys.json.lock'} cannot be locked")
    assert outside.read_text() == "theirs\n"
    assert not (_home / "keys.json").exists()


def test_a_fifo_at_the_store_fails_at_once_with_one_line(_home: Path) -> None:
    _home.mkdir(mode=0o700)
    os.mkfifo(_home / "keys.json", 0o600)
    line = one_error_line(oma_process(_home, "keys", "list"))  # a hang fails on TIMEOUT
    assert line == f"error: {_home / 'keys.json'} is a FIFO, not a keys file; remove it"


def test_a_directory_at_the_store_is_named_a_directory(_home: Path) -> None:
    (_home / "keys.json").mkdir(parents=True)
    _home.chmod(0o700)
    for args in (("keys", "list"), ("keys", "set", "--force", "openai")):
        line = one_error_line(oma_process(_home, *args, input=f"{SECRET}\n"))
        assert line == f"error: {_home / 'keys.json'} is a directory, not a keys file; remove it"


def test_a_store_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    home = tmp_path / "link"
    home.symlink_to(real)
    line = one_error_line(
        oma_process(home, "keys", "set", "--force", "openai", input=f"{SECRET}\n")
    )
    assert line == (f"error: {home} is a symlink; the keys live in a real directory of your own")
    assert os.listdir(real) == []


def test_a_store_directory_others_can_write_is_refused(_home: Path) -> None:
    _home.mkdir()
    _home.chmod(0o777)
    result = oma("keys", "set", "openai", input=f"{SECRET}\n")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {_home} can be written by others (mode 777); run: chmod 700 {_home}\n"
    )
    assert os.listdir(_home) == []


def test_a_keys_file_others_can_write_is_refused(_home: Path) -> None:
    oma("keys", "set", "openai", input=f"{SECRET}\n")
    path = _home / "keys.json"
    path.chmod(0o666)
    result = oma("keys", "list")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {path} can be written by others (mode 666); run: chmod 600 {path}\n"
    )


def test_a_keys_file_larger_than_the_limit_is_refused_unread(_home: Path) -> None:
    from oma_core.cli._keystore import MAX_BYTES

    _home.mkdir(mode=0o700)
    path = _home / "keys.json"
    with path.open("wb") as sparse:
        sparse.truncate(MAX_BYTES + 1)
    path.chmod(0o600)
    result = oma("keys", "list")
    assert result.exit_code == 2
    assert result.stderr == f"error: {path} is larger than {MAX_BYTES} bytes: not a keys file\n"


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_fifo_at_the_store_fails_a_run_that_needs_a_key_at_once(_home: Path) -> None:
    pytest.importorskip("oma_openai")
    _home.mkdir(mode=0o700)
    os.mkfifo(_home / "keys.json", 0o600)
    env = {**environment(_home), "OMA_LOAD_PLUGINS": "openai"}
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, "run", "-p", "openai", "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,  # a hang fails here
    )
    line = one_error_line(result)
    assert line == f"error: {_home / 'keys.json'} is a FIFO, not a keys file; remove it"
