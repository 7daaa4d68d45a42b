"""The ``oma`` command, through click's CliRunner."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from _builders import oma
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_core.cli import CAPABILITY_COLUMNS
from oma_core.plugins import PluginHost

PNG = b"\x89PNG\r\n\x1a\n" + bytes(92)  # 100 bytes: the PNG signature, then padding
MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(6)  # 30 bytes


pytestmark = pytest.mark.usefixtures("cli_home")


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    return path


def write_json(path: Path, data: object) -> str:
    path.write_text(json.dumps(data))
    return str(path)


# -- the default command ------------------------------------------------------------------------


def test_a_prompt_without_a_command_is_run() -> None:
    result = oma("hello there")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "hello there"\n'


def test_run_options_may_come_before_the_prompt(png: Path) -> None:
    result = oma("-m", "echo:any", "-s", "be brief", "-a", str(png), "describe")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        'system: "be brief"\nuser: text "describe"; image image/png base64 100 bytes\n'
    )
    assert oma("--no-stream", "hi").stdout == 'user: text "hi"\n'


def test_a_word_that_names_a_command_runs_the_command() -> None:
    result = oma("plugins", "--json")
    assert result.exit_code == 0, result.output
    assert "echo" in json.loads(result.stdout)["providers"]


def test_bare_oma_prints_the_help_and_exits_0() -> None:
    result = oma()
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: oma [OPTIONS] COMMAND [ARGS]... | PROMPT")
    assert "`oma PROMPT` is `oma run PROMPT`" in result.stdout
    assert "run" in result.stdout and "validate" in result.stdout
    assert result.stderr == ""


def test_an_unknown_option_without_a_command_is_runs_usage_error() -> None:
    result = oma("--bogus", "hi")
    assert result.exit_code == 2
    assert "No such option '--bogus'" in result.stderr
    assert "Traceback" not in result.output


def test_help_and_version_stay_the_groups() -> None:
    assert oma("--version").stdout.startswith("oma 0.1.0\n")
    assert "Commands:" in oma("--help").stdout


# -- oma run ------------------------------------------------------------------------------------


def test_run_on_echo_prints_the_description_of_the_prompt() -> None:
    result = oma("run", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "hi"\n'


def test_run_with_an_image_file_sends_it_as_base64_with_its_media_type(png: Path) -> None:
    result = oma("run", "What is in this picture?", "--image", str(png))
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        'user: text "What is in this picture?"; image image/png base64 100 bytes\n'
    )


def test_run_with_urls_keeps_them_urls() -> None:
    result = oma(
        "run",
        "Compare",
        "--image",
        "https://example.com/a.jpg",
        "--video",
        "https://example.com/b.mp4",
    )
    assert result.exit_code == 0, result.output
    assert "image image/jpeg url https://example.com/a.jpg" in result.stdout
    assert "video video/mp4 url https://example.com/b.mp4" in result.stdout


def test_run_with_a_video_file_sends_base64(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(MP4)
    result = oma("run", "--video", str(clip))
    assert result.exit_code == 0, result.output
    assert result.stdout == "user: video video/mp4 base64 30 bytes\n"


def test_run_no_stream_and_system_prompt() -> None:
    result = oma("run", "hi", "--no-stream", "--system", "Be brief.")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'system: "Be brief."\nuser: text "hi"\n'


def test_run_json_prints_output_usage_and_status() -> None:
    result = oma("run", "hi", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["output"] == 'user: text "hi"'
    assert data["success"] is True
    assert data["status"] == {"code": "ok", "error": None}
    assert data["usage"]["input_tokens"] == 1
    assert data["usage"]["output_tokens"] == 4


def test_run_sends_a_conversation_file_and_appends_the_prompt(tmp_path: Path) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "reply"}]},
    ]
    path = write_json(tmp_path / "conv.json", {"messages": conversation})
    result = oma("run", "--messages", path, "next")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "first"\nassistant: text "reply"\nuser: text "next"\n'


def test_run_with_an_invalid_conversation_fails_with_the_path_and_no_traceback(
    tmp_path: Path,
) -> None:
    bad = [{"role": "user", "content": [{"type": "image", "source": {"type": "url",
            "media_type": "image/png", "url": "file:///etc/passwd"}}]}]  # fmt: skip
    result = oma("run", "--messages", write_json(tmp_path / "bad.json", bad))
    assert result.exit_code == 2
    assert "messages[0].content[0].source.url must use HTTP or HTTPS" in result.stderr
    assert "Traceback" not in result.output


def test_run_with_a_non_http_media_url_fails_without_a_traceback() -> None:
    result = oma("run", "x", "--image", "ftp://example.com/a.png")
    assert result.exit_code == 2
    assert "must use HTTP or HTTPS" in result.stderr
    assert "Traceback" not in result.output


def test_run_with_a_failing_provider_exits_non_zero() -> None:
    result = oma("run", "hi", "-p", "scripted")  # no responses scripted
    assert result.exit_code == 1
    assert "no responses left" in result.stderr


def test_run_with_an_unknown_provider_names_the_available_ones() -> None:
    result = oma("run", "hi", "-p", "nope")
    assert result.exit_code == 2
    assert "unknown provider 'nope'; available providers: echo, scripted" in result.stderr


def test_run_uses_the_provider_named_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_PROVIDER", "scripted")
    result = oma("run", "hi")
    assert result.exit_code == 1
    assert "no responses left" in result.stderr


def test_run_without_input_is_a_usage_error() -> None:
    result = oma("run")
    assert result.exit_code == 2
    assert "give a PROMPT" in result.stderr


def test_run_with_a_missing_image_file_is_a_usage_error(tmp_path: Path) -> None:
    result = oma("run", "x", "--image", str(tmp_path / "missing.png"))
    assert result.exit_code == 2
    assert "no such file" in result.stderr


# -- oma validate -------------------------------------------------------------------------------


def test_validate_describes_each_message_of_a_valid_conversation(tmp_path: Path) -> None:
    data = base64.b64encode(bytes(1234)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "What?"}, image]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
    ]
    result = oma("validate", write_json(tmp_path / "c.json", conversation))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        'messages[0] user: text "What?"; image image/png base64 1234 bytes',
        'messages[1] assistant: text "A cat."',
        "valid: 2 messages",
    ]


def test_validate_reports_the_first_error_and_exits_1(tmp_path: Path) -> None:
    conversation = [{"role": "user", "content": "not a list"}]
    result = oma("validate", write_json(tmp_path / "c.json", conversation))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid: messages[0].content must be a list")


def _document_and_audio(media_type: str = "application/pdf") -> list[dict[str, Any]]:
    """A user turn holding a PDF by URL and a wav as base64 (116 bytes: a RIFF header)."""
    wav = base64.b64encode(b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + bytes(100))
    url = "https://example.com/report.pdf"
    document = {"type": "document", "source": {"type": "url", "media_type": media_type, "url": url}}
    data = wav.decode()
    audio = {"type": "audio", "source": {"type": "base64", "media_type": "audio/wav", "data": data}}
    return [{"role": "user", "content": [{"type": "text", "text": "Read these."}, document, audio]}]


def test_validate_describes_a_url_document_and_base64_audio(tmp_path: Path) -> None:
    result = oma("validate", write_json(tmp_path / "c.json", _document_and_audio()))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        'messages[0] user: text "Read these."; '
        "document application/pdf url https://example.com/report.pdf; "
        "audio audio/wav base64 116 bytes",
        "valid: 1 message",
    ]


def test_validate_refuses_a_zip_document_naming_its_media_type(tmp_path: Path) -> None:
    conversation = _document_and_audio("application/zip")
    result = oma("validate", write_json(tmp_path / "c.json", conversation))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid: messages[0].content[1].source.media_type ")
    assert "got application/zip" in result.stderr
    assert result.stdout == ""


def test_validate_reports_a_file_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{nope")
    result = oma("validate", str(path))
    assert result.exit_code == 2
    assert "is not valid JSON" in result.stderr


CONVERSATION = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_validate_reads_stdin_with_a_dash() -> None:
    result = oma("validate", "-", input=json.dumps(CONVERSATION))
    assert result.exit_code == 0, result.output
    assert result.stdout == 'messages[0] user: text "hi"\nvalid: 1 message\n'


def test_validate_takes_the_file_as_run_does_with_messages(tmp_path: Path) -> None:
    path = write_json(tmp_path / "c.json", CONVERSATION)
    assert oma("validate", "--messages", path).stdout == oma("validate", path).stdout
    both = oma("validate", path, "--messages", str(tmp_path / "other.json"))
    assert both.exit_code == 2
    assert both.stderr == (
        f"error: two conversation files ({path} and --messages {tmp_path / 'other.json'}): "
        "give one\n"
    )
    neither = oma("validate")
    assert neither.exit_code == 2
    assert neither.stderr == "error: give the conversation FILE to check (- reads stdin)\n"


def test_validate_refuses_a_1gb_file_before_reading_it(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "huge.json"
    path.write_bytes(b"[")
    os.truncate(path, 1 << 30)
    oma("validate", "-", input="[]")  # lazy imports are not the command's reading
    tracemalloc.start()
    try:
        result = oma("validate", str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {path} is 1073741824 bytes, past the limit of 67108864 bytes "
        "(--max-bytes SIZE sets it)\n"
    )
    assert peak < 1024 * 1024


def test_validate_max_bytes_is_settable_and_bounds_stdin_too(tmp_path: Path) -> None:
    text = json.dumps(CONVERSATION)
    path = tmp_path / "c.json"
    path.write_text(text)
    assert oma("validate", "--max-bytes", str(len(text)), str(path)).exit_code == 0
    small = oma("validate", "--max-bytes", "1K", "-", input=text + " " * 1024)
    assert small.exit_code == 2
    assert small.stderr == (
        "error: stdin holds more than the limit of 1024 bytes (--max-bytes SIZE sets it)\n"
    )
    wrong = oma("validate", "--max-bytes", "lots", str(path))
    assert wrong.exit_code == 2
    assert wrong.stderr.startswith("error: --max-bytes lots: not a positive size")


def big_conversation(path: Path, turns: int, image_bytes: int) -> Path:
    """A valid conversation of ``turns`` messages, every other one with an image, written
    message by message."""
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(image_bytes)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    with path.open("w") as file:
        file.write('{"model": "x", "messages": [')
        for index in range(turns):
            content: list[Any] = [{"type": "text", "text": f"turn {index}"}]
            if index % 2 == 0:
                content.append(image)
            role = "user" if index % 2 == 0 else "assistant"
            file.write(("," if index else "") + json.dumps({"role": role, "content": content}))
        file.write("]}")
    return path


def test_validate_reads_a_large_valid_file_in_memory_bounded_by_its_largest_message(
    tmp_path: Path,
) -> None:
    import tracemalloc

    path = big_conversation(tmp_path / "big.json", turns=400, image_bytes=60_000)
    assert path.stat().st_size > 15_000_000
    oma("validate", write_json(tmp_path / "small.json", CONVERSATION))  # lazy imports
    tracemalloc.start()
    try:
        result = oma("validate", str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == 'messages[0] user: text "turn 0"; image image/png base64 60008 bytes'
    assert lines[-1] == "valid: 400 messages"
    assert peak < 4 * 1024 * 1024  # the file is 16 MB; a message is 80 KB


def whole_file_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("oma_core.cli._validate.described_messages", lambda path: None)


MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool", "robot"]),
        "content": st.one_of(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=8)}),
                    st.fixed_dictionaries({"type": st.just("image"), "source": st.just({})}),
                    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
                ),
                max_size=3,
            ),
            st.text(max_size=4),
        ),
    }
)
DOCUMENT = st.one_of(
    st.lists(MESSAGE, max_size=4),
    st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=4)}),
    st.dictionaries(st.sampled_from(["messages", "x"]), st.integers(), max_size=2),
    st.integers(),
)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    document=DOCUMENT,
    cut=st.integers(min_value=0, max_value=3),
    extra=st.sampled_from(["", " ", "x", "\ufeff", "NaN", "]"]),
)
def test_validate_streaming_says_what_the_whole_file_way_says(
    document: Any, cut: int, extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps(document)
    text = (text[: len(text) - cut] if cut else text) + extra
    if extra == "\ufeff":
        text = extra + text
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    streamed = oma("validate", str(path))
    with monkeypatch.context() as context:
        whole_file_only(context)
        whole = oma("validate", str(path))
    assert (streamed.exit_code, streamed.stdout, streamed.stderr) == (
        whole.exit_code,
        whole.stdout,
        whole.stderr,
    )


def test_validate_of_a_file_that_is_not_utf8_says_so_as_before(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'[{"role": "user", "content": [{"type": "text", "text": "caf\xe9"}]}]')
    result = oma("validate", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {path} is not UTF-8 text")


# -- oma plugins --------------------------------------------------------------------------------


def test_plugins_json_lists_plugins_failures_providers_and_backends() -> None:
    result = oma("plugins", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {
        "plugins",
        "failures",
        "providers",
        "backends",
        "executors",
        "toolsets",
        "shadowed",
        "clashes",
    }
    assert data["executors"]["local"]["plugin"] == "oma_core.default_plugins.local_executor"
    echo = data["providers"]["echo"]
    assert echo["display_name"] == "Echo"
    assert echo["plugin"] == "oma_core.default_plugins.echo"
    assert echo["capabilities"] == dict.fromkeys(CAPABILITY_COLUMNS, "native")
    assert data["failures"] == []
    (plugin,) = [p for p in data["plugins"] if p["name"] == "oma_core.default_plugins.echo"]
    assert plugin["builtin"] is True
    assert plugin["providers"] == ["echo"]


def test_plugins_json_shows_an_installed_plugin_and_its_refusals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin")
    data = json.loads(oma("plugins", "--json").stdout)
    assert data["providers"]["shout"]["capabilities"] == {
        "text": "native",
        "image_base64": "refused",
        "image_url": "refused",
        "video_base64": "refused",
        "video_url": "refused",
        "tool_use": "refused",
        "tool_result_media": "refused",
        "document": "refused",
        "audio": "refused",
    }
    (plugin,) = [p for p in data["plugins"] if p["name"] == "testplugin"]
    assert plugin["distribution"] == "oma-testplugin"
    assert "oma_before_run" in plugin["hooks"]


def test_plugins_prints_tables_for_people(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    result = oma("plugins")
    assert result.exit_code == 0, result.output
    assert "echo (built-in)" in result.stdout
    assert re.search(r"tool-\s.*\n.*result", result.stdout)
    assert re.search(r"^ *echo +native +native", result.stdout, re.M)


# -- oma render ---------------------------------------------------------------------------------


def test_render_prints_the_request_body_with_shortened_base64(png: Path) -> None:
    result = oma("render", "-p", "echo", "Look", "--image", str(png), "--system", "S")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["system"] == "S"
    source = body["messages"][0]["content"][1]["source"]
    encoded = base64.b64encode(PNG).decode()
    assert source["data"] == f"{encoded[:16]}...[{len(encoded)} chars]"


def test_render_refuses_a_prompt_that_is_only_a_file_name_pointing_at_messages(
    tmp_path: Path,
) -> None:
    path = write_json(tmp_path / "c.json", CONVERSATION)
    result = oma("render", path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: PROMPT {path} names a file, and render takes PROMPT as text (as run does): "
        f"render the conversation in it with --messages {path}; to send the name as text, "
        f"pipe it (echo {path} | oma render)\n"
    )
    rendered = oma("render", "--messages", path)
    assert rendered.exit_code == 0, rendered.output
    assert json.loads(rendered.stdout)["messages"] == CONVERSATION


def test_render_points_a_media_file_given_as_prompt_at_attach(png: Path) -> None:
    result = oma("render", str(png))
    assert result.exit_code == 2
    assert f"attach it with -a {png}" in result.stderr
    assert oma("render", "describe this", "-a", str(png)).exit_code == 0


def test_render_and_validate_read_the_same_file_the_same_way(tmp_path: Path) -> None:
    path = write_json(tmp_path / "c.json", {"messages": CONVERSATION})
    assert oma("validate", "--messages", path).exit_code == 0
    assert json.loads(oma("render", "--messages", path).stdout)["messages"] == CONVERSATION
    piped = oma("render", "--messages", "-", input=json.dumps(CONVERSATION))
    assert json.loads(piped.stdout)["messages"] == CONVERSATION


def test_render_full_prints_base64_whole(png: Path) -> None:
    result = oma("render", "-p", "echo", "Look", "--image", str(png), "--full")
    body = json.loads(result.stdout)
    assert body["messages"][0]["content"][1]["source"]["data"] == base64.b64encode(PNG).decode()


def test_render_checks_capabilities_before_rendering(
    monkeypatch: pytest.MonkeyPatch, png: Path
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin")
    result = oma("render", "-p", "shout", "Look", "--image", str(png))
    assert result.exit_code == 2
    assert 'Shout cannot represent the "image" content block' in result.stderr


def test_run_with_command_but_no_backend_is_a_usage_error() -> None:
    result = oma("run", "hi", "--command", "cat")
    assert result.exit_code == 2
    assert "--command and --arg need --backend" in result.stderr


def test_run_with_an_unknown_backend_kind_names_the_available_ones() -> None:
    result = oma("run", "hi", "--backend", "nope", "--command", "cat")
    assert result.exit_code == 2
    assert "unknown backend kind 'nope'" in result.stderr


# -- added: streaming, data URLs, narrow terminals, load failures ----------------------------------


class TwoWay:
    """Streams two chunks but answers "whole" through complete(): shows which path ran."""

    name = display_name = "two-way"

    async def complete(self, request: Any) -> Any:
        from oma_core import LLMMessage, TextBlock
        from oma_core.providers import ProviderResponse

        return ProviderResponse(LLMMessage("assistant", (TextBlock("whole"),)))

    async def stream(self, request: Any) -> Any:
        from oma_core import LLMMessage, TextBlock
        from oma_core.providers import ProviderResponse, ResponseComplete, TextDelta

        yield TextDelta("chunk-a ")
        yield TextDelta("chunk-b")
        message = LLMMessage("assistant", (TextBlock("chunk-a chunk-b"),))
        yield ResponseComplete(ProviderResponse(message))

    async def aclose(self) -> None:
        pass


@pytest.fixture
def two_way(cli_home: Path) -> None:
    from oma_core import Capabilities, ProviderSpec, hookimpl

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            factory: Any = lambda settings: TwoWay()  # noqa: E731
            return [ProviderSpec("two-way", "Two Way", factory, Capabilities.text_only())]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="two-way-plugin")
    PluginHost.set_default(host)


@pytest.mark.usefixtures("two_way")
def test_run_streams_by_default_and_no_stream_waits_for_the_whole_answer() -> None:
    assert oma("run", "hi", "-p", "two-way").stdout == "chunk-a chunk-b\n"
    assert oma("run", "hi", "-p", "two-way", "--no-stream").stdout == "whole\n"
    assert json.loads(oma("run", "hi", "-p", "two-way", "--json").stdout)["output"] == "whole"


def test_run_with_a_base64_data_url_sends_a_base64_block() -> None:
    encoded = base64.b64encode(PNG).decode()
    result = oma("run", "x", "--image", f"data:image/png;base64,{encoded}")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "x"; image image/png base64 100 bytes\n'


def test_run_json_reports_a_failed_run_and_exits_1() -> None:
    result = oma("run", "hi", "-p", "scripted", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["success"] is False and data["status"]["code"] == "error"
    assert "no responses left" in data["status"]["error"]


def test_plugins_fits_the_matrix_into_narrow_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin")
    result = oma("plugins")
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 72
    assert re.search(r"^ *shout +yes +no +no +no +no +no +no +no +no *$", result.stdout, re.M)
    assert "no: refused before any request" in result.stdout
    assert "oma_register_providers" in result.stdout  # hook names are never cut


def test_plugins_reports_a_plugin_that_failed_to_load(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    info = tmp_path / "oma_cli_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oma-cli-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[oma]\ncli_broken = oma_cli_broken_missing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "cli_broken")
    monkeypatch.setenv("COLUMNS", "200")
    result = oma("plugins")
    assert result.exit_code == 0, result.output
    assert "failed to load cli_broken (oma-cli-broken) at import" in result.stdout
    assert "oma_cli_broken_missing" in result.stdout
    data = json.loads(oma("plugins", "--json").stdout)
    (failure,) = data["failures"]
    assert (failure["name"], failure["distribution"], failure["stage"]) == (
        "cli_broken",
        "oma-cli-broken",
        "import",
    )


@pytest.mark.usefixtures("two_way")
def test_render_with_a_provider_without_render_fails_cleanly() -> None:
    result = oma("render", "hi", "-p", "two-way")
    assert result.exit_code == 2
    assert "the Two Way provider cannot render requests" in result.stderr
    assert "Traceback" not in result.output
