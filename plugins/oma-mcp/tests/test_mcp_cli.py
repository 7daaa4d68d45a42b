"""MCP servers from the command line: ``oma run --mcp``, ``oma mcp list``, and the ``mcp``
section of an agents file, through the ``mcp`` toolset kind this plugin registers.

The commands run in this process (click's runner), with only this plugin loaded; the scripted
provider's requests are its wire, so they show what a provider would be sent.
"""

from __future__ import annotations

import base64
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp_processes import EXAMPLE

from oma_core.cli import cli

CAT = EXAMPLE.with_name("cat.png")
SERVER = shlex.join([sys.executable, str(EXAMPLE)])


@pytest.fixture(autouse=True)
def home(oma_home: Path) -> Path:
    """A folder for the test's own files, beside the command's ``$OMA_HOME``."""
    return oma_home.parent


def oma(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _use(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "c1", "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


def _script(*responses: Any) -> tuple[str, str, str]:
    return ("-o", "responses", json.dumps(list(responses)))


def test_run_with_mcp_sends_the_servers_image_in_the_tool_result(
    scripted_providers: list[Any],
) -> None:
    script = _script(_use("shout", {"text": "hi"}), _use("cat_picture"), "a cat")
    result = oma("run", "go", "--mcp", SERVER, "-p", "scripted", *script, "--no-log")

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "a cat"
    (provider,) = scripted_providers
    assert [t.name for t in provider.requests[0].tools] == ["shout", "cat_picture"]
    assert provider.requests[1].messages[-1].content[0].content == "HI"
    (answer,) = provider.requests[2].messages[-1].content
    assert answer.type == "tool_result" and not answer.is_error
    (image,) = answer.content
    assert image.type == "image" and image.source.media_type == "image/png"
    assert base64.b64decode(image.source.data) == CAT.read_bytes()


def test_run_takes_several_mcp_servers_and_tells_clashing_tools_apart(
    scripted_providers: list[Any],
) -> None:
    script = _script("never")
    result = oma("run", "go", "--mcp", SERVER, "--mcp", SERVER, "-p", "scripted", *script)

    assert result.exit_code == 2  # a configuration mistake, found before the model is called
    assert "two tools are named 'shout'" in result.stderr
    assert "give the toolset a prefix" in result.stderr
    assert scripted_providers[0].requests == []


def test_mcp_prefix_names_the_servers_tools_apart_in_the_order_given(
    scripted_providers: list[Any],
) -> None:
    script = _script(_use("loud_shout", {"text": "hi"}), "shouted")
    prefixes = ("--mcp-prefix", "", "--mcp-prefix", "loud")
    result = oma(
        "run", "go", "--mcp", SERVER, "--mcp", SERVER, *prefixes, "-p", "scripted", *script
    )

    assert result.exit_code == 0, result.output
    (provider,) = scripted_providers
    names = [t.name for t in provider.requests[0].tools]
    assert names == ["shout", "cat_picture", "loud_shout", "loud_cat_picture"]
    assert provider.requests[1].messages[-1].content[0].content == "HI"


def test_more_mcp_prefixes_than_servers_is_a_usage_error() -> None:
    result = oma("run", "go", "--mcp", SERVER, "--mcp-prefix", "a", "--mcp-prefix", "b")

    assert result.exit_code == 2
    assert "2 --mcp-prefix for 1 MCP server(s)" in result.stderr


def test_an_empty_mcp_command_is_a_usage_error() -> None:
    result = oma("run", "go", "--mcp", " ", "-p", "scripted")

    assert result.exit_code == 2
    assert "--mcp needs a command" in result.stderr


def test_mcp_http_needs_an_http_url() -> None:
    result = oma("run", "go", "--mcp-http", "ftp://example", "-p", "scripted")

    assert result.exit_code == 2
    assert "--mcp-http needs an http(s) URL, got 'ftp://example'" in result.stderr


def test_run_with_mcp_http_offers_the_servers_tools_and_sends_their_answers(
    scripted_providers: list[Any], example_http_server: str
) -> None:
    script = _script(_use("shout", {"text": "hi"}), "shouted")
    result = oma("run", "go", "--mcp-http", example_http_server, "-p", "scripted", *script)

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "shouted"
    (provider,) = scripted_providers
    assert [t.name for t in provider.requests[0].tools] == ["shout", "cat_picture"]
    (answer,) = provider.requests[1].messages[-1].content
    assert answer.type == "tool_result" and not answer.is_error
    assert answer.content == "HI"


def test_mcp_list_prints_each_tool_with_its_input_schema() -> None:
    result = oma("mcp", "list", SERVER)

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "shout  Return the text in capital letters."
    assert json.loads(lines[1].removeprefix("  input: "))["required"] == ["text"]
    assert lines[2] == "cat_picture  A photo of a cat (PNG)."


def test_mcp_list_json_gives_names_descriptions_and_schemas() -> None:
    result = oma("mcp", "list", "--json", SERVER)

    assert result.exit_code == 0, result.output
    tools = json.loads(result.stdout)
    assert [t["name"] for t in tools] == ["shout", "cat_picture"]
    assert tools[0]["input_schema"]["properties"]["text"]["type"] == "string"


def test_mcp_list_json_reads_a_streamable_http_server(http_server: str) -> None:
    result = oma("mcp", "list", "--json", http_server)

    assert result.exit_code == 0, result.output
    tools = {t["name"]: t for t in json.loads(result.stdout)}
    assert {"echo", "picture", "slow", "crash"} <= set(tools)
    assert tools["echo"]["description"] == "Echo the text back."
    assert tools["echo"]["input_schema"]["required"] == ["text"]


def test_mcp_list_of_a_server_that_cannot_start_fails_naming_it() -> None:
    result = oma("mcp", "list", "/nonexistent/mcp-server")

    # a wrong command is a configuration mistake, exit 2, as `oma run --mcp` says it
    assert result.exit_code == 2
    assert result.stderr.count("error: ") == 1
    assert "could not be started" in result.stderr
    assert "/nonexistent/mcp-server" in result.stderr


def test_oma_plugins_lists_the_mcp_toolset_kind() -> None:
    result = oma("plugins", "--json")

    data = json.loads(result.stdout)
    assert data["toolsets"]["mcp"]["plugin"] == "mcp"


def _plan(tmp_path: Path, mcp: Any, responses: list[Any]) -> str:
    agent = {
        "name": "w",
        "provider": "scripted",
        "provider_options": {"responses": responses},
        "mcp": mcp,
    }
    task = {"title": "a", "description": "shout hi", "assignee": "w", "depends_on": []}
    path = tmp_path / "PLAN.json"
    path.write_text(json.dumps({"name": "t", "agents": [agent], "tasks": [task]}))
    return str(path)


def test_an_agents_mcp_section_gives_its_tasks_the_servers_tools(
    home: Path, scripted_providers: list[Any]
) -> None:
    server = {"command": sys.executable, "args": [str(EXAMPLE)]}
    plan = _plan(home, [server], [_use("shout", {"text": "hi"}), "shouted"])
    result = oma("tasks", plan, "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"]["a"]["output"] == "shouted"
    (provider,) = [p for p in scripted_providers if p.requests]  # the others: the checks before
    assert provider.requests[1].messages[-1].content[0].content == "HI"


def test_a_team_agents_mcp_section_gives_the_planned_task_the_servers_tools(
    home: Path, scripted_providers: list[Any]
) -> None:
    shouter = {
        "name": "shouter",
        "provider": "scripted",
        "provider_options": {"responses": [_use("shout", {"text": "hi"}), "shouted"]},
        "mcp": [{"command": sys.executable, "args": [str(EXAMPLE)]}],
    }
    task = {"title": "shout", "description": "Shout hi.", "assignee": "shouter"}
    boss = {
        "name": "boss",
        "provider": "scripted",
        "provider_options": {"responses": [json.dumps({"tasks": [task]}), "It was shouted."]},
    }
    agents = home / "AGENTS.json"
    agents.write_text(json.dumps({"name": "t", "agents": [shouter], "coordinator": boss}))
    result = oma("team", "Shout hi", "--agents", str(agents), "--json")

    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["output"] == "It was shouted."
    assert printed["tasks"]["shout"]["output"] == "shouted"
    (answered,) = [p for p in scripted_providers if len(p.requests) == 2 and p.requests[0].tools]
    assert [t.name for t in answered.requests[0].tools] == ["shout", "cat_picture"]
    assert answered.requests[1].messages[-1].content[0].content == "HI"


@pytest.mark.parametrize(
    ("mcp", "message"),
    [
        ({"command": "x"}, "agents[0].mcp must be a list of MCP servers, got object"),
        ([{"command": "x", "url": "http://h"}], 'needs exactly one of "command" and "url"'),
        ([{"command": "x", "args": "-v"}], "agents[0].mcp[0].args must be a list of strings"),
        ([{"command": "x", "colour": 1}], "unknown MCP server settings: colour"),
    ],
)
def test_a_bad_mcp_section_is_refused_before_anything_starts(
    home: Path, mcp: Any, message: str
) -> None:
    result = oma("tasks", _plan(home, mcp, ["never"]))

    assert result.exit_code == 2
    assert message in result.stderr


@pytest.mark.parametrize("streamed", [True, False])
def test_run_with_an_mcp_server_that_cannot_start_exits_2_naming_it(
    streamed: bool, scripted_providers: list[Any]
) -> None:
    given = [] if streamed else ["--no-stream"]
    result = oma(
        "run", "-p", "scripted", *_script("never"), *given, "--mcp", "/nonexistent/x", "hi"
    )

    assert result.exit_code == 2, result.output  # a configuration mistake, not a failed run
    assert result.stderr.startswith("error: MCP server ")
    assert "could not be started" in result.stderr
    assert result.stderr.count("\n") == 1
    assert all(not p.requests for p in scripted_providers)
