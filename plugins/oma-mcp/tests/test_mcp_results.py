"""The mapping of an MCP tool result to an oma one, on any content: it never raises, never
drops an item, and every media string it hands on passed the core's checks."""

from __future__ import annotations

import base64
import json
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from mcp_processes import served
from oma_mcp import MCPToolset, tool_output

from oma_core import (
    IMAGE_MEDIA_TYPES,
    Agent,
    AgentConfig,
    Capabilities,
    ImageBlock,
    PluginHost,
    RunLog,
    TextBlock,
    ToolResultBlock,
)
from oma_core.cli import cli
from oma_core.errors import ToolError
from oma_core.processes import argument_values, blank, header_values, redact, url_values
from oma_core.redaction import REDACTED
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit

_b64 = st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode())
_data = _b64 | st.text(max_size=40)  # valid base64, or (mostly) not
_mime = st.sampled_from(["image/png", "image/jpeg", "IMAGE/PNG", "image/png; q=1", "text"])

_items = st.one_of(
    st.builds(types.TextContent, text=st.text(max_size=40)),
    st.builds(types.ImageContent, data=_data, mime_type=_mime),
    st.builds(types.AudioContent, data=_data, mime_type=st.sampled_from(["audio/wav", "x"])),
    st.builds(
        types.EmbeddedResource,
        resource=st.builds(
            types.TextResourceContents,
            uri=st.just("file:///a.txt"),
            mime_type=st.just("text/plain"),
            text=st.text(max_size=20),
        ),
    ),
)


@given(items=st.lists(_items, max_size=6), is_error=st.booleans())
def test_any_result_maps_to_valid_content_or_an_error_naming_the_place(
    items: list[Any], is_error: bool
) -> None:
    result = types.CallToolResult(content=items, is_error=is_error)

    output = tool_output("t", result)

    assert output.is_error is is_error  # a part oma refuses is a note, not an error result
    if output.is_error or isinstance(output.content, str):
        assert isinstance(output.content, str)
        # a str is itself valid tool-result content
        ToolResultBlock("c", output.content, output.is_error)
        return
    parts = list(output.content)
    assert len(parts) >= len(items)  # nothing dropped
    block = ToolResultBlock("c", tuple(parts))  # valid by construction
    assert all(isinstance(p, TextBlock | ImageBlock) or p.type == "file" for p in block.content)


def test_an_image_with_parameters_in_its_media_type_is_a_note_naming_it() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(data=png, mime_type="image/png; charset=x"),
            types.TextContent(text="kept"),
        ]
    )

    output = tool_output("pic", result)

    assert not output.is_error
    note, kept = output.content
    assert note.text.startswith("[oma dropped content[0] (image/png; charset=x image, 4 bytes)")
    assert png not in note.text  # no payload in a note
    assert kept.text == "kept"


# -- results from a real server, as the provider receives them ---------------------------------

RESULTS = Path(__file__).with_name("results_server.py")
#: The default of ``max_result_bytes``.
ONE_MIB = 1024 * 1024
#: Images the way Anthropic takes them inside tool results: the four common types, 5 MiB each.
PICKY = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
        BlockSupport("image", frozenset({IN_TOOL_RESULT}), media_types=IMAGE_MEDIA_TYPES),
    ),
    limits=(MediaLimit(5 * 1024 * 1024, {"image"}, measure="base64"),),
)


@pytest.fixture
async def results() -> AsyncIterator[Callable[..., MCPToolset]]:
    """``results(*args, **options)``: a stdio toolset on the results server, closed after."""
    made: list[MCPToolset] = []

    def make(*args: str, **options: Any) -> MCPToolset:
        options.setdefault("init_timeout", 120.0)  # a loaded machine starts Python slowly
        options.setdefault("timeout", 300.0)
        made.append(MCPToolset.stdio(sys.executable, [str(RESULTS), *args], **options))
        return made[-1]

    yield make
    for toolset in made:
        await toolset.aclose()


@pytest.fixture
def results_http() -> Iterator[str]:
    """The results server on streamable HTTP at 127.0.0.1 (up to 60 s to start); its URL."""
    with served(str(RESULTS), "http") as url:
        yield url


def _use(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "c1", "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def _run(
    toolset: MCPToolset,
    *responses: Any,
    capabilities: Capabilities | None = None,
    log: RunLog | None = None,
) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider([*responses, "done"], capabilities=capabilities)
    host = PluginHost(load_entrypoints=False)
    if log is not None:
        host.register(log.plugin())
    agent = Agent(AgentConfig(name="a", provider=provider, tools=[toolset]), plugins=host)
    return await agent.run("go"), provider


def _sent(provider: ScriptedProvider) -> Any:
    """The tool result the provider received in its second request."""
    block = provider.requests[1].messages[-1].content[0]
    assert block.type == "tool_result"
    return block


def _texts(block: Any) -> list[str]:
    if isinstance(block.content, str):
        return [block.content]
    return [p.text for p in block.content if isinstance(p, TextBlock)]


async def test_a_text_result_past_one_mib_is_cut_there_saying_what_was_dropped(
    results: Callable[..., MCPToolset],
) -> None:
    size = 3_000_000  # the was 20 MB: the same cut, a shorter test
    result, provider = await _run(results(), _use("big_text", {"size": size}))

    assert result.success, result.status
    block = _sent(provider)
    assert not block.is_error
    (text,) = _texts(block)
    kept, note = text.split("\n")
    assert kept == "x" * ONE_MIB  # 1 MiB of it, not 20 MB
    assert len(note) < 300
    assert f"{size} bytes" in note and "max_result_bytes=1048576" in note
    assert f"{size - ONE_MIB} bytes were dropped" in note


async def test_max_result_bytes_is_an_option_of_the_toolset(
    results: Callable[..., MCPToolset],
) -> None:
    result, provider = await _run(results(max_result_bytes=100), _use("big_text", {"size": 5000}))

    assert result.success
    (text,) = _texts(_sent(provider))
    kept, note = text.split("\n")
    assert kept == "x" * 100
    assert "max_result_bytes=100" in note and "4900 bytes were dropped" in note


async def test_an_image_past_max_media_bytes_becomes_a_note_and_the_rest_is_kept(
    results: Callable[..., MCPToolset],
) -> None:
    size = 4_000_000  # 5.3 MB of base64: past PICKY's 5 MiB, which would refuse the run
    result, provider = await _run(results(), _use("big_image", {"size": size}), capabilities=PICKY)

    assert result.success, result.status
    block = _sent(provider)
    assert not block.is_error
    assert [p.type for p in block.content] == ["text", "text", "text"]
    before, note, after = _texts(block)
    assert (before, after) == ("before", "after")
    assert note.startswith(f"[oma dropped content[1] (image/png image, {size} bytes)")
    assert "max_media_bytes=3750000" in note


async def test_max_media_bytes_is_an_option_counting_the_results_media_together(
    results: Callable[..., MCPToolset],
) -> None:
    toolset = results(max_media_bytes=170)
    result, provider = await _run(toolset, _use("images", {"sizes": [100, 100, 70]}))

    assert result.success
    first, note, third = _sent(provider).content
    assert isinstance(first, ImageBlock) and isinstance(third, ImageBlock)  # 170 bytes kept
    assert note.text.startswith("[oma dropped content[1] (image/png image, 100 bytes)")
    assert "max_media_bytes=170 after 100 bytes of media kept" in note.text


async def test_an_image_of_an_odd_type_becomes_a_note_and_the_run_goes_on(
    results: Callable[..., MCPToolset],
) -> None:
    result, provider = await _run(results(), _use("odd_image"), capabilities=PICKY)

    assert result.success, result.status
    block = _sent(provider)
    assert not block.is_error
    image, note, text = block.content
    assert isinstance(image, ImageBlock) and image.source.media_type == "image/png"
    assert "content[1]" in note.text and "image/x-evil" in note.text
    assert "image/png" in note.text  # the types that are kept
    assert text.text == "two pictures"


async def test_structured_content_repeating_the_image_is_not_sent_twice(
    results: Callable[..., MCPToolset],
) -> None:
    result, provider = await _run(results(), _use("media_file", {"size": 300_000}))

    assert result.success
    block = _sent(provider)
    (image,) = block.content  # no second, 400,100-character text part
    assert isinstance(image, ImageBlock) and len(image.source.data) == 400_000


async def test_structured_content_with_more_to_say_keeps_it_but_not_the_payload(
    results: Callable[..., MCPToolset],
) -> None:
    result, provider = await _run(results(), _use("sized_media", {"size": 3000}))

    assert result.success
    image, text = _sent(provider).content
    assert isinstance(image, ImageBlock)
    assert image.source.data not in text.text
    assert text.text.startswith("structuredContent: ")
    said = json.loads(text.text.removeprefix("structuredContent: "))
    assert said == {"data": "[the data of content[0]]", "path": "/srv/cat.png", "size": 3000}


# -- secrets given to the server never reach the model or the log -----------------------------

ENV_SECRET = "hunter2-upstream-login-value"
ARG_SECRET = "argsecret-4567-abcd"
BEARER = "tok-abc-123456-bearer"
HEADER_SECRET = "xkey-7890-efgh"


def _leaked(provider: ScriptedProvider, home: Path, *secrets: str) -> list[str]:
    """Which of ``secrets`` the provider was sent, or any file under ``home`` holds."""
    sent = repr(provider.requests)
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    return [s for s in secrets if s in sent or s.encode() in stored]


@pytest.mark.parametrize("how", ["error", "result", "rpc"])
async def test_env_and_argument_secrets_echoed_by_a_stdio_server_are_scrubbed(
    results: Callable[..., MCPToolset], tmp_path: Path, how: str
) -> None:
    toolset = results("--api-key", ARG_SECRET, env={"UPSTREAM_LOGIN": ENV_SECRET})
    log = RunLog(tmp_path / "logs.db")
    arguments = {"variables": ["UPSTREAM_LOGIN"], "headers": [], "fail": how == "error"}
    result, provider = await _run(
        toolset, _use("leak", {**arguments, "rpc": how == "rpc"}), log=log
    )

    assert result.success
    block = _sent(provider)
    assert block.is_error is (how != "result")
    (text,) = _texts(block)
    assert "UPSTREAM_LOGIN" in text and text.count(REDACTED) == 2  # the echo was there
    assert _leaked(provider, tmp_path, ENV_SECRET, ARG_SECRET) == []
    assert log.runs(None)  # the run was logged


@pytest.mark.parametrize("fail", [True, False], ids=["error", "result"])
async def test_header_secrets_echoed_by_an_http_server_are_scrubbed(
    results_http: str, tmp_path: Path, fail: bool
) -> None:
    headers = {"Authorization": f"Bearer {BEARER}", "X-Api-Key": HEADER_SECRET}
    toolset = MCPToolset.http(results_http, headers=headers)
    log = RunLog(tmp_path / "logs.db")
    call = _use("leak", {"variables": [], "headers": ["Authorization", "X-Api-Key"], "fail": fail})
    try:
        result, provider = await _run(toolset, call, log=log)
    finally:
        await toolset.aclose()

    assert result.success
    (text,) = _texts(_sent(provider))
    assert "Authorization" in text and "X-Api-Key" in text and REDACTED in text
    assert _leaked(provider, tmp_path, BEARER, HEADER_SECRET) == []
    assert log.runs(None)


# -- credentials on an ``oma run --mcp`` command line -----------------------------------------

CLI_SECRETS = ("cli-apikey-1111", "cli-token-2222", "cli-password-3333")
CREDENTIAL_ARGS = f"--api-key {CLI_SECRETS[0]} --token={CLI_SECRETS[1]} --password {CLI_SECRETS[2]}"


def test_credentials_in_mcp_arguments_reach_neither_the_model_nor_the_log(
    oma_home: Path, scripted_providers: list[ScriptedProvider]
) -> None:
    server = f"{shlex.join([sys.executable, str(RESULTS)])} {CREDENTIAL_ARGS}"
    call = _use("leak", {"variables": [], "headers": [], "fail": True})
    script = json.dumps([call, "done"])
    result = CliRunner().invoke(
        cli, ["run", "go", "--mcp", server, "-p", "scripted", "-o", "responses", script]
    )

    assert result.exit_code == 0, result.output
    (provider,) = scripted_providers
    (text,) = _texts(_sent(provider))
    assert "argv" in text and text.count(REDACTED) == 3  # the server echoed all three
    assert (oma_home / "logs.db").exists()
    assert _leaked(provider, oma_home, *CLI_SECRETS) == []


def test_credentials_in_mcp_arguments_are_blanked_in_a_start_error(oma_home: Path) -> None:
    server = f"{shlex.join([sys.executable, '-c', 'raise SystemExit(3)'])} {CREDENTIAL_ARGS}"
    result = CliRunner().invoke(
        cli, ["run", "go", "--mcp", server, "-p", "scripted", "-o", "responses", '["x"]']
    )

    assert result.exit_code != 0
    assert "could not be started" in result.stderr
    assert "--api-key [REDACTED]" in result.stderr  # the option stays, its value goes
    files = b"".join(p.read_bytes() for p in oma_home.rglob("*") if p.is_file())
    assert [s for s in CLI_SECRETS if s in result.output or s.encode() in files] == []


# -- what is scrubbed, and what is left alone ---------------------------------------------------


def test_a_header_scheme_keeps_its_word_but_its_token_is_a_secret_too() -> None:
    basic = base64.b64encode(b"robot:pa55word-basic").decode()
    headers = {"Authorization": f"Bearer {BEARER}", "Proxy-Authorization": f"Basic {basic}"}
    echoed = f"token {BEARER} refused; robot:pa55word-basic; pa55word-basic; {basic}"

    assert blank(echoed, header_values(headers)) == (
        f"token {REDACTED} refused; {REDACTED}; {REDACTED}; {REDACTED}"
    )


def test_a_secret_is_blanked_as_json_escapes_it_too() -> None:
    secret = 'qu"ote\\d-secret'

    assert blank(json.dumps({"v": secret}), [secret]) == json.dumps({"v": REDACTED})


def test_credential_options_on_a_command_line_are_blanked_and_others_kept() -> None:
    line = (
        "srv --api-key k-1234 --token=t-1234 --password 'p 1234' --client-secret s-1234 "
        "--max-tokens 1000 --no-api-key --verbose --name demo"
    )

    assert redact(line) == (
        f"srv --api-key {REDACTED} --token={REDACTED} --password {REDACTED} "
        f"--client-secret {REDACTED} --max-tokens 1000 --no-api-key --verbose --name demo"
    )
    args = shlex.split(line)[1:]
    assert argument_values(args) == ["k-1234", "t-1234", "p 1234", "s-1234"]


def test_a_tool_result_loses_only_the_values_given_not_what_looks_like_a_key() -> None:
    text = "config.py:\napi_key = os.environ['API_KEY']\npassword = 'from-the-file'\nmy-env-value"
    result = types.CallToolResult(content=[types.TextContent(text=text)])

    output = tool_output("read", result, secrets=["my-env-value"])

    assert output.content == text.replace("my-env-value", REDACTED)  # the file is the file


def test_a_cut_never_splits_a_character_and_counts_what_went() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="é" * 10), types.TextContent(text="abc")]
    )

    output = tool_output("t", result, max_result_bytes=7)

    kept, note = output.content.split("\n")
    assert kept == "ééé"  # 6 bytes: the fourth é would be cut in two
    assert "its text is 23 bytes, past max_result_bytes=7" in note
    assert "the last 17 bytes were dropped" in note


def test_the_credentials_of_a_url_are_secrets_and_its_other_parts_are_not() -> None:
    url = "https://bot:url-pass-1@example.com/mcp?api_key=url-key-22&access_token=at-333&page=2"

    assert url_values(url) == ["url-pass-1", "url-key-22", "at-333"]


def test_the_caps_come_from_config_data_and_a_bad_one_is_refused_by_name() -> None:
    config = {"command": "srv", "max_result_bytes": 10, "max_media_bytes": 0}
    toolset = MCPToolset.from_config(config)

    assert (toolset.max_result_bytes, toolset.max_media_bytes) == (10, 0)
    with pytest.raises(ToolError, match=r"max_media_bytes must be an int >= 0, got '1 MB'"):
        MCPToolset.stdio("srv", max_media_bytes="1 MB")
