"""The client's side of MCP: progress and logs from a server, roots, sampling and
elicitation it asks for (each off unless configured), and its resources and prompts read
as oma types. Against ``client_features_server.py``, a server on the official SDK."""

from __future__ import annotations

import json
import logging
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from oma_mcp import (
    Elicitation,
    MCPRequestError,
    MCPToolset,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
)

from oma_core import (
    AgentConfig,
    Budget,
    ImageBlock,
    LLMMessage,
    OpenMultiAgent,
    ProgressEvent,
    TextBlock,
)
from oma_core.errors import BackendError, ToolError
from oma_core.testing import ScriptedProvider

SERVER = Path(__file__).with_name("client_features_server.py")

Make = Callable[..., MCPToolset]


@pytest.fixture
def features(scripts: Make) -> Make:
    """``features(**options)``: a stdio toolset on the client-features server; each one made
    is closed after the test, and no server process may outlive it."""

    def make(**options: Any) -> MCPToolset:
        # a generous start-up bound: the SDK's import takes seconds on a loaded machine
        options.setdefault("init_timeout", 120.0)
        return scripts(SERVER, name="features", **options)

    return make


def _use(name: str, arguments: dict[str, Any] | None = None, id: str = "c1") -> dict[str, Any]:
    block = {"type": "tool_use", "id": id, "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def _run(toolset: MCPToolset, *responses: Any) -> tuple[Any, list[ProgressEvent], Any]:
    """A run that calls the server's tools; its result, progress events and the tool result
    text the model got back for the first call."""
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([*responses, "done"])
    async with OpenMultiAgent(on_progress=events.append) as oma:
        config = AgentConfig(name="a", provider=provider, tools=[toolset])
        result = await oma.run_agent(config, "go")
    block = provider.requests[1].messages[-1].content[0]
    return result, events, block


async def _answer(toolset: MCPToolset, tool: str, arguments: dict[str, Any] | None = None) -> str:
    output = await toolset.call(tool, arguments or {})
    assert not output.is_error, output.content
    assert isinstance(output.content, str)
    return output.content


# -- progress and logs ---------------------------------------------------------------------


async def test_a_tools_progress_notifications_become_tool_progress_events(features: Make) -> None:
    result, events, block = await _run(features(prefix="f"), _use("f_steps", {"n": 3}, id="c9"))

    assert result.success, result.status
    assert block.content == "stepped"
    progress = [e.data for e in events if e.type == "tool_progress"]
    assert progress == [
        {
            "tool": "f_steps",
            "call_id": "c9",
            "progress": float(i),
            "total": 3.0,
            "message": f"step {i}",
        }
        for i in (1, 2, 3)
    ]
    kinds = [e.type for e in events]
    assert kinds.index("tool_progress") < kinds.index("agent_complete")


async def test_a_call_outside_a_run_takes_its_progress_nowhere(features: Make) -> None:
    assert await _answer(features(), "steps", {"n": 2}) == "stepped"


async def test_server_log_messages_reach_the_oma_logger_at_their_level(
    features: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="oma.mcp")

    assert await _answer(features(), "chatty") == "logged"

    logged = [
        (r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name == "oma.mcp.server"
    ]
    assert logged == [
        ("oma.mcp.server", logging.DEBUG, "MCP server 'features:toy': a debug line"),
        ("oma.mcp.server", logging.INFO, "MCP server 'features:toy': an info line"),
        ("oma.mcp.server", logging.WARNING, 'MCP server \'features:toy\': {"disk": "low"}'),
        ("oma.mcp.server", logging.ERROR, "MCP server 'features': an error line"),
    ]


async def test_server_logs_below_the_loggers_level_are_not_formatted(
    features: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="oma.mcp")

    await _answer(features(), "chatty")

    levels = [r.levelno for r in caplog.records if r.name == "oma.mcp.server"]
    assert levels == [logging.WARNING, logging.ERROR]


async def test_long_log_lines_and_progress_messages_are_cut(
    features: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oma.mcp")

    result, events, block = await _run(features(), _use("loud", {"size": 100_000}))

    assert result.success and block.content == "loud"
    (record,) = [r for r in caplog.records if r.name == "oma.mcp.server"]
    assert 4000 < len(record.getMessage()) < 4100
    assert record.getMessage().endswith("... [96000 more]")
    (progress,) = [e.data for e in events if e.type == "tool_progress"]
    assert len(progress["message"]) < 4100 and progress["message"].startswith("yyyy")


async def test_a_secret_the_server_was_given_is_blanked_out_of_its_logs(
    features: Make, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "tok-8c1d55e0a9f34b7e"
    toolset = features(env={"SERVICE_TOKEN": secret})

    assert await _answer(toolset, "leak", {"name": "SERVICE_TOKEN"}) == "leaked"

    (record,) = [r for r in caplog.records if r.name == "oma.mcp.server"]
    assert secret not in record.getMessage()
    assert record.getMessage().startswith("MCP server 'features': using token ")


# -- roots -------------------------------------------------------------------------------------


async def test_roots_are_answered_as_file_uris(features: Make, tmp_path: Path) -> None:
    project = tmp_path / "project"
    toolset = features(roots=[project, "file:///srv/data"])

    answer = json.loads(await _answer(toolset, "roots"))

    assert answer == [[project.as_uri(), "project"], ["file:///srv/data", "data"]]


async def test_without_roots_the_server_is_refused(features: Make) -> None:
    answer = await _answer(features(), "roots")

    assert answer.startswith("refused:")


@pytest.mark.parametrize("roots", ["/one/folder", ["https://example.com/x"], [3]])
def test_roots_must_be_a_list_of_local_folders(roots: Any) -> None:
    with pytest.raises(ToolError, match="root"):
        MCPToolset.stdio("server", roots=roots)


# -- sampling ----------------------------------------------------------------------------------


async def test_sampling_asks_the_configured_model_within_the_token_bound(features: Make) -> None:
    provider = ScriptedProvider(["forty-two"])
    sampler = AgentConfig(name="sampler", model="scripted:tiny", provider=provider)
    toolset = features(sampling=sampler, sampling_max_tokens=100)

    answer = json.loads(
        await _answer(toolset, "ask_model", {"question": "6*7?", "max_tokens": 500})
    )

    assert answer["text"] == "forty-two" and answer["model"] == "scripted:tiny"
    (request,) = provider.requests
    assert request.max_tokens == 100  # the server asked for 500
    assert request.system_prompt == "Answer briefly."
    assert request.temperature == 0.5
    assert request.tools == ()
    assert [m.role for m in request.messages] == ["user"]
    assert request.messages[0].content == (TextBlock("6*7?"),)


async def test_a_smaller_request_keeps_its_own_max_tokens(features: Make) -> None:
    provider = ScriptedProvider(["ok"])
    toolset = features(sampling=AgentConfig(name="s", provider=provider))

    await _answer(toolset, "ask_model", {"question": "q", "max_tokens": 7})

    assert provider.requests[0].max_tokens == 7


async def test_sampled_turns_keep_their_roles_and_images(features: Make) -> None:
    provider = ScriptedProvider(["a pixel"])
    toolset = features(sampling=AgentConfig(name="s", provider=provider))

    assert await _answer(toolset, "ask_model_with_image") == "a pixel"

    messages = provider.requests[0].messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    last = messages[-1].content
    assert last[0] == TextBlock("what is this?") and isinstance(last[1], ImageBlock)


async def test_sampling_past_its_count_is_refused(features: Make) -> None:
    provider = ScriptedProvider(["one", "two", "three"])
    toolset = features(sampling=AgentConfig(name="s", provider=provider), max_samples=2)
    ask = {"question": "q", "max_tokens": 5}

    first = await _answer(toolset, "ask_model", ask)
    second = await _answer(toolset, "ask_model", ask)
    third = await _answer(toolset, "ask_model", ask)

    assert [json.loads(first)["text"], json.loads(second)["text"]] == ["one", "two"]
    assert third.startswith("refused:") and "max_samples" in third
    assert len(provider.requests) == 2


async def test_sampling_spends_the_callers_budget_and_is_refused_once_it_is_spent(
    features: Make,
) -> None:
    provider = ScriptedProvider(["one", "never"])
    budget = Budget(max_tokens=1)  # the same object the caller's runs are given
    toolset = features(sampling=AgentConfig(name="s", provider=provider), sampling_budget=budget)
    ask = {"question": "q", "max_tokens": 5}

    first = await _answer(toolset, "ask_model", ask)
    spent = budget.used_tokens
    second = await _answer(toolset, "ask_model", ask)

    assert json.loads(first)["text"] == "one" and spent > 0
    assert second.startswith("refused:") and "budget" in second.lower()
    assert len(provider.requests) == 1  # the spent budget is refused before the model
    assert budget.used_tokens == spent


async def test_sampling_with_tools_is_refused(features: Make) -> None:
    provider = ScriptedProvider(["never"])
    toolset = features(sampling=AgentConfig(name="s", provider=provider))

    answer = await _answer(toolset, "ask_model_with_tools")

    assert answer.startswith("refused:") and "tools" in answer
    assert provider.requests == []


async def test_without_a_sampling_model_the_server_is_refused(features: Make) -> None:
    answer = await _answer(features(), "ask_model", {"question": "q", "max_tokens": 5})

    assert answer.startswith("refused:")


async def test_a_failed_model_call_is_an_error_answer_to_the_server(features: Make) -> None:
    provider = ScriptedProvider([])  # exhausted: every call fails
    toolset = features(sampling=AgentConfig(name="s", provider=provider))

    answer = await _answer(toolset, "ask_model", {"question": "q", "max_tokens": 5})

    assert answer.startswith("refused:") and "oma's model failed" in answer


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sampling", {"model": "x"}),
        ("sampling_max_tokens", 0),
        ("max_samples", True),
        ("sampling_budget", 100),
    ],
)
def test_sampling_settings_are_checked(option: str, value: Any) -> None:
    with pytest.raises(ToolError, match=option):
        MCPToolset.stdio("server", **{option: value})


# -- elicitation -------------------------------------------------------------------------------


async def test_elicitation_asks_the_callback_and_returns_its_answer(features: Make) -> None:
    asked: list[Elicitation] = []

    async def answer(question: Elicitation) -> dict[str, Any]:
        asked.append(question)
        return {"name": "Ann", "age": 31}

    reply = json.loads(
        await _answer(features(elicitation=answer), "ask_user", {"question": "Who?"})
    )

    assert reply == {"action": "accept", "data": {"name": "Ann", "age": 31}}
    (question,) = asked
    assert question.server == "features" and question.message == "Who?"
    assert question.url is None
    assert question.schema is not None and set(question.schema["properties"]) == {"name", "age"}


@pytest.mark.parametrize(
    ("given", "action"), [(None, "decline"), ("decline", "decline"), ("cancel", "cancel")]
)
async def test_the_callback_may_decline_or_cancel(features: Make, given: Any, action: str) -> None:
    reply = json.loads(
        await _answer(features(elicitation=lambda q: given), "ask_user", {"question": "Who?"})
    )

    assert reply == {"action": action, "data": None}


async def test_url_mode_gives_the_callback_the_url(features: Make) -> None:
    asked: list[Elicitation] = []

    def answer(question: Elicitation) -> dict[str, Any]:
        asked.append(question)
        return {}

    reply = json.loads(await _answer(features(elicitation=answer), "ask_url"))

    assert reply == {"action": "accept"}
    assert asked[0].url == "https://example.com/login" and asked[0].schema is None


async def test_a_failing_callback_is_an_error_answer_to_the_server(
    features: Make, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(question: Elicitation) -> Any:
        raise RuntimeError("no terminal")

    answer = await _answer(features(elicitation=broken), "ask_user", {"question": "Who?"})

    assert answer.startswith("refused:") and "elicitation callback failed" in answer
    assert any("no terminal" in r.getMessage() for r in caplog.records)


async def test_an_answer_that_is_not_a_flat_dict_is_an_error_answer(features: Make) -> None:
    toolset = features(elicitation=lambda q: ["Ann"])

    answer = await _answer(toolset, "ask_user", {"question": "Who?"})

    assert answer.startswith("refused:") and "not a flat dict" in answer


async def test_without_a_callback_elicitation_is_refused(features: Make) -> None:
    answer = await _answer(features(), "ask_user", {"question": "Who?"})

    assert answer.startswith("refused:")


# -- resources and prompts ---------------------------------------------------------------------


async def test_resources_are_listed_as_oma_descriptions(features: Make) -> None:
    toolset = features()

    resources = await toolset.list_resources()
    templates = await toolset.list_resource_templates()

    by_uri = {r.uri: r for r in resources}
    assert by_uri["file:///notes.txt"] == Resource(
        "file:///notes.txt", "notes", None, "Some notes", "text/plain", None
    )
    assert {"file:///notes.txt", "file:///pixel.png", "file:///data.bin"} <= set(by_uri)
    assert templates == [ResourceTemplate("greeting://{name}", "greeting", None, "", "text/plain")]


async def test_a_text_resource_reads_as_a_text_block(features: Make) -> None:
    toolset = features()

    assert await toolset.read_resource("file:///notes.txt") == [TextBlock("remember the milk")]
    assert await toolset.read_resource("greeting://bob") == [TextBlock("Hello, bob!")]


async def test_an_image_blob_reads_as_a_checked_image_block(features: Make) -> None:
    (block,) = await features().read_resource("file:///pixel.png")

    assert isinstance(block, ImageBlock)
    assert block.source.media_type == "image/png"  # type: ignore[union-attr]


async def test_a_blob_no_oma_block_carries_reads_as_a_line_naming_it(features: Make) -> None:
    (block,) = await features().read_resource("file:///data.bin")

    assert block == TextBlock(
        "[resource file:///data.bin (application/octet-stream, 3 bytes): no oma block for it]"
    )


async def test_an_unknown_resource_raises_a_typed_error(features: Make) -> None:
    with pytest.raises(MCPRequestError) as caught:
        await features().read_resource("file:///nope")

    error = caught.value
    assert isinstance(error, BackendError)
    assert (error.backend, error.method, error.error_code) == ("features", "resources/read", -32602)
    assert "'file:///nope'" in str(error) and "Unknown resource" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.method, copy.error_code, str(copy)) == (
        MCPRequestError,
        "resources/read",
        -32602,
        str(error),
    )


async def test_a_server_that_dies_during_a_read_raises_and_is_started_again(
    features: Make,
) -> None:
    toolset = features()

    with pytest.raises(MCPRequestError) as caught:
        await toolset.read_resource("file:///crash")

    assert caught.value.method == "resources/read"
    assert await toolset.read_resource("file:///notes.txt") == [TextBlock("remember the milk")]


async def test_prompts_are_listed_with_their_arguments(features: Make) -> None:
    prompts = {p.name: p for p in await features().list_prompts()}

    assert prompts["review"] == Prompt(
        "review",
        None,
        "Review a piece of code.",
        (PromptArgument("code", None, True), PromptArgument("language", None, False)),
    )
    assert set(prompts) == {"review", "debate"}


async def test_a_prompt_is_filled_in_as_oma_messages(features: Make) -> None:
    toolset = features()

    (message,) = await toolset.get_prompt("review", {"code": "x = 1"})
    debate = await toolset.get_prompt("debate", {"topic": "tea"})

    assert message == LLMMessage("user", [TextBlock("Please review this python code:\nx = 1")])
    assert [m.role for m in debate] == ["user", "assistant", "user"]
    assert debate[1].content == (TextBlock("I will."),)
    assert isinstance(debate[2].content[0], ImageBlock)


async def test_an_unknown_prompt_raises_a_typed_error(features: Make) -> None:
    with pytest.raises(MCPRequestError, match="prompts/get 'nope'") as caught:
        await features().get_prompt("nope")

    assert caught.value.method == "prompts/get"


async def test_roots_are_accepted_from_plain_data(tmp_path: Path) -> None:
    config = {
        "command": sys.executable,
        "args": [str(SERVER)],
        "roots": [str(tmp_path)],
        "init_timeout": 120.0,
    }
    toolset = MCPToolset.from_config(config)
    try:
        answer = json.loads(await _answer(toolset, "roots"))
    finally:
        await toolset.aclose()

    assert answer == [[tmp_path.as_uri(), tmp_path.name]]
