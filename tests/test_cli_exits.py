"""How ``oma`` ends, through the real command: one ``error:`` line and 2 for usage, 1 for a
failed run, 130 quietly on Ctrl-C, never a traceback; retries shown as they happen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from oma_core import Capabilities, LLMMessage, ProviderError, ProviderSpec, TextBlock, hookimpl
from oma_core.cli import cli
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderResponse

ROOT = Path(__file__).resolve().parent.parent
PNG = (ROOT / "examples" / "cat.png").read_bytes()


def environment(home: Path, **env: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("OMA_")},
        "OMA_HOME": str(home),
        "OMA_LOAD_PLUGINS": "",
        **env,
    }


def oma(
    *args: str, home: Path, input: bytes | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", *args],
        input=input if input is not None else b"",
        capture_output=True,
        env=environment(home, **env),
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    return _text(done)


def _text(done: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_the_offline_first_run_answers_from_echo(tmp_path: Path) -> None:
    done = oma("run", "hi", home=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, 'user: text "hi"\n', "")


def test_a_model_without_a_provider_exits_2(tmp_path: Path) -> None:
    done = oma("run", "Summarise the news", "-m", "claude-sonnet-4-6", home=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "names no provider" in one_error_line(done)


@pytest.mark.parametrize("command", ["validate", "run --messages"])
def test_an_image_given_as_a_conversation_is_one_line(tmp_path: Path, command: str) -> None:
    done = oma(*command.split(), "examples/cat.png", home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done) == (
        "error: examples/cat.png is not UTF-8 text (an image or video? attach it with "
        "-a examples/cat.png)"
    )


@pytest.mark.parametrize("command", ["validate", "run --messages"])
def test_a_directory_as_a_conversation_is_one_line(tmp_path: Path, command: str) -> None:
    done = oma(*command.split(), str(tmp_path), home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done) == f"error: {tmp_path} is a directory, not a JSON file"


def test_broken_json_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "c.json"
    broken.write_text('[{"role": "user",')
    done = oma("validate", str(broken), home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done).startswith(f"error: {broken} is not valid JSON")


def test_an_invalid_conversation_is_a_verdict_exit_1(tmp_path: Path) -> None:
    done = oma("validate", "examples/invalid_conversation.json", home=tmp_path)
    assert done.returncode == 1
    assert "must use HTTP or HTTPS" in one_error_line(done)


def test_a_failed_run_exits_1(tmp_path: Path) -> None:
    done = oma("run", "hi", "-p", "scripted", home=tmp_path)
    assert done.returncode == 1
    assert "ScriptedProvider is exhausted" in one_error_line(done)


def test_piped_text_and_stdin_media_through_real_pipes(tmp_path: Path) -> None:
    text = oma("run", "summarise", home=tmp_path, input=b"notes\n")
    assert text.stdout == 'user: text "summarise\\n\\nnotes\\n"\n'
    image = oma("run", "what?", "-a", "-", home=tmp_path, input=PNG)
    assert image.returncode == 0, image.stderr
    assert image.stdout == f'user: text "what?"; image image/png base64 {len(PNG)} bytes\n'


def test_ctrl_c_exits_130_quietly(tmp_path: Path) -> None:
    """Interrupted while waiting for piped input that never ends."""
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from oma_core.cli import main; print('ready', flush=True); main()",
            "run",
            "summarise",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(tmp_path),
        cwd=ROOT,
        # A runner started in the background ignores SIGINT, and a child inherits that: give
        # the command Python's usual handling, as a terminal would.
        preexec_fn=_default_sigint,
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == b"ready\n"
        process.stdin.write(b"partial input ")
        process.stdin.flush()
        _wait_until_reading(process.pid)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert (out, err) == (b"", b"")


def _wait_until_reading(pid: int) -> None:
    """Until the process blocks in read(2) on its stdin: the syscall number (0 on x86-64, 63
    on arm64) and its first argument, the file descriptor, 0 (a read of a module file while
    it starts does not count)."""
    import time

    read = "63" if os.uname().machine == "aarch64" else "0"
    syscall = Path(f"/proc/{pid}/syscall")
    for _ in range(3000):
        try:
            number, fd = syscall.read_text().split()[:2]
        except (OSError, ValueError):
            number = fd = ""
        if number == read and fd == "0x0":
            return
        time.sleep(0.01)
    raise AssertionError("the command never blocked reading stdin")


# -- retries on stderr ----------------------------------------------------------------------


class Flaky:
    """Fails once with a retryable 503 (no wait), then answers."""

    name = display_name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: Any) -> ProviderResponse:
        self.calls += 1
        if self.calls == 1:
            raise ProviderError(
                "HTTP 503 from api.flaky.test: overloaded", status_code=503, retry_after=0
            )
        return ProviderResponse(LLMMessage("assistant", (TextBlock("fine"),)))

    async def aclose(self) -> None:
        pass


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [ProviderSpec("flaky", "Flaky", lambda s: Flaky(), Capabilities.everything())]

    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="flaky-plugin")
    previous = PluginHost.set_default(host)
    yield
    PluginHost.set_default(previous)


@pytest.mark.usefixtures("flaky")
def test_a_retry_is_shown_on_stderr_with_attempt_reason_and_wait() -> None:
    result = CliRunner().invoke(cli, ["run", "-p", "flaky", "hi", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == "fine"
    assert result.stderr == (
        "retrying: attempt 1 failed (HTTP 503 from api.flaky.test: overloaded); waiting 0.0s\n"
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# -- configuration errors in the command's words ------------------------------------------------


class NeedsModel:
    """As an OpenAI-compatible server's preset: no default model, and a call without one fails
    before anything is sent (a ProviderError without a status, not retryable)."""

    name = display_name = "Needs Model"

    async def complete(self, request: Any) -> ProviderResponse:
        if request.model is None:
            raise ProviderError(
                "Needs Model: no model given; set AgentConfig.model",
                provider="Needs Model",
                retryable=False,
            )
        return ProviderResponse(LLMMessage("assistant", (TextBlock(request.model),)))

    def render(self, request: Any) -> dict[str, Any]:
        if request.model is None:
            raise ProviderError("no model given; set AgentConfig.model", retryable=False)
        return {"model": request.model}

    async def aclose(self) -> None:
        pass


class NeedsBaseUrl:
    """A provider that refuses to start without a base URL, advising Python's way."""

    def __init__(self, base_url: str | None) -> None:
        from oma_core.errors import UsageError

        if base_url is None:
            raise UsageError(
                'the "needs-url" provider needs a base URL: set AgentConfig.base_url '
                '(--base-url), e.g. "http://localhost:8080/v1"'
            )


@pytest.fixture
def picky_providers(cli_home: Path) -> None:
    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            everything = Capabilities.everything()
            return [
                ProviderSpec("needs-model", "Needs Model", lambda s: NeedsModel(), everything),
                ProviderSpec(
                    "needs-url", "Needs URL", lambda s: NeedsBaseUrl(s.base_url), everything
                ),
            ]

    PluginHost.default().register(Plugin(), name="picky-providers")


@pytest.mark.usefixtures("picky_providers")
@pytest.mark.parametrize("command", ["run", "render"])
def test_a_provider_that_needs_a_model_without_m_exits_2_saying_m(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "-p", "needs-model", "hi"])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: -m MODEL is needed for needs-model (it has no default model): "
        "-p needs-model -m MODEL, or -m needs-model:MODEL\n"
    )
    assert "AgentConfig" not in result.output
    given = CliRunner().invoke(cli, [command, "-p", "needs-model", "-m", "m-1", "hi"])
    assert given.exit_code == 0, given.output


@pytest.mark.usefixtures("picky_providers")
def test_a_configuration_error_names_the_option_not_the_python_field() -> None:
    result = CliRunner().invoke(cli, ["render", "-p", "needs-url", "hi"])
    assert result.exit_code == 2
    assert result.stderr == (
        'error: the "needs-url" provider needs a base URL: give --base-url URL, e.g. '
        '"http://localhost:8080/v1"\n'
    )


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (("temperature", "hot"), "-o temperature must be a number >= 0, not text 'hot'"),
        (("temperature", "-1"), "-o temperature must be a number >= 0, not -1"),
        (("temperature", "NaN"), "-o temperature must be a number >= 0, not NaN"),
        (("temperature", "true"), "-o temperature must be a number >= 0, not true"),
        (("max_tokens", "2.5"), "-o max_tokens must be a whole number >= 1, not 2.5"),
        (("max_tokens", "0"), "-o max_tokens must be a whole number >= 1, not 0"),
        (
            ("stop", "5"),
            "-o stop must be text or a JSON list of texts, not 5 (VALUE is read as JSON "
            """when it parses: -o stop '"5"' gives the text)""",
        ),
        (("stop", '["a", 1]'), '-o stop must be text or a JSON list of texts, not ["a", 1]'),
        (("stop", '[""]'), '-o stop must be text or a JSON list of texts, not [""]'),
    ],
)
def test_a_wrong_portable_option_is_said_in_the_commands_words(
    tmp_path: Path, option: tuple[str, str], said: str
) -> None:
    done = oma("render", "-p", "echo", "-o", *option, "hi", home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done) == f"error: {said}"
    assert done.stdout == ""


def test_a_failure_of_a_provider_with_a_default_model_stays_a_failed_run(tmp_path: Path) -> None:
    done = oma("run", "hi", "-p", "scripted", home=tmp_path)
    assert done.returncode == 1  # scripted has no default model, but its failure is not that
    assert "-m MODEL" not in done.stderr


# -- click's usage errors, on one line ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("logs", "-n", "-1"),
            "error: Invalid value for '-n' / '--count': -1 is not in the range x>=0. "
            "(see `oma logs --help`)",
        ),
        (
            ("run", "--modle", "x"),
            "error: No such option '--modle'. Did you mean '--model'? (see `oma run --help`)",
        ),
        (("templates", "edit"), "error: No such command 'edit'. (see `oma templates --help`)"),
        (
            ("templates", "save"),
            "error: Missing argument 'NAME'. (see `oma templates save --help`)",
        ),
        (("-o", "a"), "error: Option '-o' requires 2 arguments. (see `oma run --help`)"),
    ],
)
def test_a_usage_error_of_the_option_parser_is_one_error_line_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = oma(*args, home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done) == said
    assert done.stdout == ""


def test_a_group_without_its_command_still_prints_its_help(tmp_path: Path) -> None:
    done = oma("keys", home=tmp_path)
    assert done.returncode == 2
    assert done.stdout.startswith("Usage: oma keys") or done.stderr.startswith("Usage: oma keys")


@pytest.mark.parametrize("command", ["run", "render", "chat"])
def test_an_option_value_nested_30000_deep_is_one_error_line(tmp_path: Path, command: str) -> None:
    deep = "[" * 30_000 + "]" * 30_000  # an argument holds at most 128 kB
    done = oma(command, "-p", "echo", "-o", "a", deep, "hi", home=tmp_path)
    assert done.returncode == 2
    assert one_error_line(done) == (
        "error: a value given (an -o value, a file) nests lists or objects too deeply to read "
        "(hundreds of levels): flatten it"
    )


def _commands() -> list[tuple[str, ...]]:
    """Every command and subcommand of ``oma``, as the words that name it."""
    found: list[tuple[str, ...]] = []

    def walk(group: Any, path: tuple[str, ...]) -> None:
        for name, command in sorted(group.commands.items()):
            found.append((*path, name))
            if hasattr(command, "commands"):
                walk(command, (*path, name))

    walk(cli, ())
    return found


@pytest.mark.parametrize("words", _commands(), ids=" ".join)
def test_every_command_says_an_unknown_option_on_one_line(
    words: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMA_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, [*words, "--zz-qq"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: No such option '--zz-qq'. (see `oma {' '.join(words)} --help`)\n"
    )
