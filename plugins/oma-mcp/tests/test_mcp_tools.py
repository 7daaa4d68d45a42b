"""An MCP server's tools in an agent run: listed, offered to the model, called through the
tool-call middleware, results as the provider receives them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from oma_mcp import MCPServerError, MCPToolset

from oma_core import Agent, AgentConfig, ImageBlock, PluginHost, TextBlock, hookimpl
from oma_core.errors import ToolError
from oma_core.testing import ScriptedProvider

Toys = Callable[..., MCPToolset]


def _use(name: str, arguments: dict[str, Any] | None = None, id: str = "c1") -> dict[str, Any]:
    block = {"type": "tool_use", "id": id, "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def _run(tools: list[Any], *responses: Any, host: PluginHost | None = None) -> Any:
    provider = ScriptedProvider([*responses, "done"])
    config = AgentConfig(name="a", provider=provider, tools=tools)
    agent = Agent(config, plugins=host or PluginHost(load_entrypoints=False))
    result = await agent.run("go")
    return result, provider


def _sent_result(provider: ScriptedProvider) -> Any:
    """The tool result the provider received in its second request."""
    block = provider.requests[1].messages[-1].content[0]
    assert block.type == "tool_result"
    return block


async def test_the_servers_tools_are_offered_to_the_model_with_their_schemas(toys: Toys) -> None:
    result, provider = await _run([toys()], "hello")

    assert result.success, result.status
    offered = {t.name: t for t in provider.requests[0].tools}
    assert {"echo", "picture", "fail", "slow", "crash"} <= set(offered)
    assert offered["echo"].description == "Echo the text back."
    assert offered["echo"].input_schema["properties"]["text"]["type"] == "string"
    assert offered["echo"].input_schema["required"] == ["text"]


async def test_a_text_tool_answers_with_its_text(toys: Toys) -> None:
    result, provider = await _run([toys()], _use("echo", {"text": "hi there"}))

    assert result.success
    block = _sent_result(provider)
    assert block.content == "hi there" and not block.is_error


async def test_an_image_tool_reaches_the_provider_as_an_image_part(toys: Toys) -> None:
    result, provider = await _run([toys()], _use("picture"))

    assert result.success
    (part,) = _sent_result(provider).content
    assert isinstance(part, ImageBlock)
    assert part.source.media_type == "image/png"
    assert part.source.data.startswith("iVBORw0KGgo")


async def test_an_image_that_fails_the_base64_check_is_a_note_naming_it(
    toys: Toys,
) -> None:
    result, provider = await _run([toys()], _use("broken_picture"))

    assert result.success
    block = _sent_result(provider)
    assert not block.is_error  # the part is dropped, saying why; the result stands
    assert (
        "oma dropped content[0]" in block.content
        and "must contain raw base64 data" in block.content
    )


async def test_a_tool_error_is_an_error_result_with_the_servers_text(toys: Toys) -> None:
    _result, provider = await _run([toys()], _use("fail", {"reason": "disk full"}))

    block = _sent_result(provider)
    assert block.is_error and block.content.endswith("disk full")


async def test_audio_resources_links_and_structured_content_are_kept(toys: Toys) -> None:
    result, provider = await _run([toys()], _use("mixed"))

    assert result.success
    parts = _sent_result(provider).content
    kinds = [p.type for p in parts]
    texts = [p.text for p in parts if isinstance(p, TextBlock)]
    assert kinds == ["text", "text", "file", "text", "text", "file", "text", "text"]
    assert texts[0] == "here"
    assert "[audio: audio/wav, 12 bytes" in texts[1]
    assert parts[2].source.media_type == "audio/wav"
    assert "file:///notes.txt" in texts[2] and "a note" in texts[2]
    assert parts[5].filename == "report.pdf"
    assert parts[5].source.media_type == "application/pdf"
    assert "https://example.com/big.csv" in texts[4]
    assert texts[5] == 'structuredContent: {"count": 3}'


async def test_a_wrapped_plain_return_is_not_repeated_as_structured_content(toys: Toys) -> None:
    _result, provider = await _run([toys()], _use("echo", {"text": "once"}))

    assert _sent_result(provider).content == "once"


async def test_arguments_that_break_the_schema_never_reach_the_server(toys: Toys) -> None:
    _result, provider = await _run([toys()], _use("echo", {"txt": "typo"}))

    block = _sent_result(provider)
    assert block.is_error and "missing the required argument 'text'" in block.content


async def test_an_mcp_tool_call_passes_through_the_tool_call_middleware(toys: Toys) -> None:
    seen: list[str] = []

    class Watch:
        @hookimpl(wrapper=True)
        def oma_tool_call(self, call: Any, run: Any) -> Any:
            seen.append(call.block.name)
            return (yield)

    host = PluginHost(load_entrypoints=False)
    host.register(Watch(), "watch")
    result, _ = await _run([toys()], _use("echo", {"text": "x"}), host=host)

    assert result.success and seen == ["echo"]


async def test_a_prefix_keeps_two_servers_apart(toys: Toys) -> None:
    one, two = toys(prefix="one"), toys(prefix="two")
    _result, provider = await _run([one, two], _use("two_echo", {"text": "from two"}))

    names = [t.name for t in provider.requests[0].tools]
    assert "one_echo" in names and "two_echo" in names
    assert _sent_result(provider).content == "from two"


async def test_two_servers_without_a_prefix_fail_the_run_with_a_tool_error(toys: Toys) -> None:
    result, provider = await _run([toys(), toys()], "never")

    assert isinstance(result.status.error, ToolError)
    assert "two tools are named" in str(result.status.error)
    assert provider.requests == []


async def test_a_changed_tool_list_is_offered_in_the_next_model_call(toys: Toys) -> None:
    result, provider = await _run([toys()], _use("grow"))

    assert result.success, result.status
    assert "extra" not in [t.name for t in provider.requests[0].tools]
    assert "extra" in [t.name for t in provider.requests[1].tools]


async def test_the_server_gets_only_allow_listed_variables_and_those_passed(
    toys: Toys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMA_TEST_SECRET", "sk-parent-secret")
    monkeypatch.setenv("OMA_TEST_PASSED", "passed-on")
    server = toys(env={"OMA_TEST_PASSED": None, "OMA_TEST_SET": "set"})
    tools = {t.name: t for t in await server.list_tools()}

    async def value(name: str) -> Any:
        return (await tools["whoami"].invoke({"name": name})).content

    assert await value("OMA_TEST_SECRET") == "<unset>"
    assert await value("OMA_TEST_PASSED") == "[REDACTED]"  # set, and never echoed back
    assert await value("OMA_TEST_SET") == "set"
    assert await value("PATH") != "<unset>"


def test_a_toolset_is_built_from_plain_config_data() -> None:
    stdio = MCPToolset.from_config({"command": sys.executable, "args": ["s.py"], "prefix": "p"})
    http = MCPToolset.from_config({"url": "http://127.0.0.1:1/mcp", "headers": {"X": "1"}})

    assert stdio.prefix == "p" and stdio.name.endswith("s.py")
    assert http.name == "http://127.0.0.1:1/mcp"


@pytest.mark.parametrize(
    "config",
    [{}, {"command": "x", "url": "http://h/"}, {"command": "x", "bogus": 1}, {"url": "ftp://h/"}],
)
def test_a_config_that_names_no_one_server_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(ToolError):
        MCPToolset.from_config(config)


def test_an_http_config_may_ask_for_the_sse_transport() -> None:
    sse = MCPToolset.from_config({"url": "http://127.0.0.1:1/sse", "transport": "sse"})

    assert sse.name == "http://127.0.0.1:1/sse"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"url": "http://h/mcp", "transport": "websocket"}, "transport must be one of"),
        ({"command": "x", "transport": "sse"}, '"transport" is for a server at a "url"'),
    ],
)
def test_a_transport_mcp_does_not_have_here_is_refused(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        MCPToolset.from_config(config)


def test_the_server_error_pickles_with_its_fields() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(MCPServerError("down", backend="s")))

    assert type(error) is MCPServerError and error.backend == "s" and str(error) == "down"


async def test_a_pickled_toolset_keeps_its_settings_and_starts_its_own_server(
    toys: Toys,
) -> None:
    import pickle

    server = toys(prefix="p", timeout=5.0)
    await server.list_tools()

    copy = pickle.loads(pickle.dumps(server))
    try:
        tools = {t.name: t for t in await copy.list_tools()}
        assert copy.prefix == "p" and copy.timeout == 5.0 and copy.name == server.name
        assert (await tools["p_echo"].invoke({"text": "copied"})).content == "copied"
    finally:
        await copy.aclose()


async def test_every_page_of_the_tool_list_is_read() -> None:
    from pathlib import Path

    paged = Path(__file__).with_name("paged_server.py")
    async with MCPToolset.stdio(sys.executable, [str(paged)]) as server:
        tools = {t.name: t for t in await server.list_tools()}
        answer = await tools["tool_24"].invoke({})

    assert sorted(tools) == [f"tool_{i:02d}" for i in range(25)]
    assert answer.content == "tool_24"


def test_the_servers_name_shows_no_credential() -> None:
    stdio = MCPToolset.stdio(
        "srv", ["--token=sk-abcdefghijklmnop", "--x", "hunter22"], env={"PASSWORD": "hunter22"}
    )
    http = MCPToolset.http("https://user:pw@mcp.example.com:8443/mcp?key=secret#f")

    assert "sk-abcdefghijklmnop" not in stdio.name and "hunter22" not in stdio.name
    assert http.name == "https://mcp.example.com:8443/mcp"
