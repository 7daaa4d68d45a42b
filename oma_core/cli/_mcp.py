"""MCP servers on the command line: ``oma run --mcp CMD / --mcp-http URL / --mcp-prefix NAME``
and ``oma mcp list``.

The core never imports a plugin: the servers are built through the ``mcp`` toolset kind a
plugin registers (``oma_register_toolsets``; oma-mcp does), so a missing plugin is the usual
"not installed" error with its install hint. A command is split like a shell would
(``shlex``): ``--mcp 'python server.py --flag'`` runs ``python`` with two arguments. A server
that cannot start (a wrong command or URL) ends ``oma run`` and ``oma mcp list`` with status
2, a configuration mistake (``server_failed``).
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

import click

from ._exits import command_guard, usage, usage_text

if TYPE_CHECKING:
    from ..agent import Agent
    from ..errors import OmaError
    from ..plugins import PluginHost

__all__ = ["mcp", "mcp_configs", "mcp_options", "server_failed", "with_mcp"]

F = TypeVar("F", bound=Callable[..., Any])

#: The toolset kind the MCP plugin registers.
KIND = "mcp"


def mcp_options(function: F) -> F:
    """``--mcp CMD``, ``--mcp-http URL`` and ``--mcp-prefix NAME`` (each repeatable), as
    ``mcp``, ``mcp_http`` and ``mcp_prefix``."""
    function = click.option(
        "--mcp-prefix",
        "mcp_prefix",
        multiple=True,
        metavar="NAME",
        help="Prefix the tools of an MCP server (NAME_tool): the first --mcp-prefix goes to the "
        "first server, --mcp ones before --mcp-http ones; '' for none (repeatable).",
    )(function)
    function = click.option(
        "--mcp-http",
        "mcp_http",
        multiple=True,
        metavar="URL",
        help="Offer the tools of the MCP server at URL (streamable HTTP; repeatable).",
    )(function)
    return click.option(
        "--mcp",
        "mcp",
        multiple=True,
        metavar="CMD",
        help="Start the MCP server CMD (split like a shell) and offer its tools (repeatable).",
    )(function)


def server_config(server: str, option: str = "--mcp") -> dict[str, Any]:
    """One server's plain configuration: ``{"url": ...}`` for an http(s) URL, else the
    command split like a shell would, ``{"command": ..., "args": [...]}``."""
    if server.lower().startswith(("http://", "https://")):
        return {"url": server}
    try:
        words = shlex.split(server)
    except ValueError as exc:
        usage(f"{option} {server!r}: {exc}")
    if not words:
        usage(f"{option} needs a command, e.g. {option} 'python server.py'")
    return {"command": words[0], "args": words[1:]}


def mcp_configs(
    commands: Sequence[str], urls: Sequence[str], prefixes: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The servers ``--mcp`` and ``--mcp-http`` name, in that order, each with the
    ``--mcp-prefix`` of its place (click cannot tell how the options were interleaved, so
    prefixes pair with servers by position; an empty one, or none left, is no prefix)."""
    configs = [server_config(command) for command in commands]
    for url in urls:
        if not url.lower().startswith(("http://", "https://")):
            usage(f"--mcp-http needs an http(s) URL, got {url!r}")
        configs.append({"url": url})
    if len(prefixes) > len(configs):
        usage(
            f"{len(prefixes)} --mcp-prefix for {len(configs)} MCP server(s): one per server, "
            "in the order --mcp then --mcp-http"
        )
    for config, prefix in zip(configs, prefixes, strict=False):
        if prefix:
            config["prefix"] = prefix
    return configs


def build_toolsets(
    configs: Sequence[Mapping[str, Any]], host: PluginHost, where: str = "--mcp"
) -> list[Any]:
    """The toolsets of ``configs`` (nothing is started). A missing plugin is the install
    hint (exit 2); a bad configuration a usage error naming ``where``."""
    from ..errors import NotRegisteredError, ToolError

    toolsets = []
    for config in configs:
        try:
            toolsets.append(host.build_toolset(KIND, config))
        except NotRegisteredError:
            raise
        except (ToolError, TypeError, ValueError) as exc:
            usage(f"{where}: {exc}")
    return toolsets


#: The code of the error the MCP plugin raises when a server cannot be started, initialised
#: or listed (``MCPServerError``, which the core cannot import).
SERVER_ERROR = "MCP_SERVER_ERROR"


def server_failed(error: object) -> TypeGuard[OmaError]:
    """Whether ``error`` is an MCP server that could not start: a configuration mistake of
    ``--mcp``/``--mcp-http`` (a wrong command or URL), exit 2 like any other."""
    from ..errors import OmaError

    return isinstance(error, OmaError) and error.code == SERVER_ERROR


def with_mcp(
    agent: Agent, commands: Sequence[str], urls: Sequence[str], prefixes: Sequence[str] = ()
) -> Agent:
    """``agent`` with the tools of the MCP servers ``--mcp``/``--mcp-http`` name, prefixed as
    ``--mcp-prefix`` says (itself if none). The servers start with the run and stop when its
    event loop ends."""
    configs = mcp_configs(commands, urls, prefixes)
    if not configs:
        return agent
    import attrs

    from ..agent import Agent

    toolsets = build_toolsets(configs, agent.plugins)
    config = attrs.evolve(agent.config, tools=[*agent.config.tools, *toolsets])
    return Agent(config, plugins=agent.plugins)


@click.group()
def mcp() -> None:
    """Look at MCP servers (with the oma-mcp plugin)."""


@mcp.command("list")
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="Print the tools as a JSON array.")
@command_guard
def list_tools(server: str, as_json: bool) -> None:
    """Start SERVER (a command, split like a shell, or an http(s) URL) and print its tools
    with their input schemas."""
    from ..plugins import PluginHost

    host = PluginHost.default()
    (toolset,) = build_toolsets([server_config(server, "SERVER")], host, "SERVER")
    try:
        tools = asyncio.run(_listed(toolset))
    except Exception as exc:
        if server_failed(exc):  # a wrong command or URL: configuration, as `oma run --mcp`
            usage(usage_text(exc))
        raise
    if as_json:
        rows = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools
        ]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not tools:
        click.echo("(no tools)")
    for found in tools:
        click.echo(f"{found.name}  {found.description}".rstrip())
        schema = json.dumps(found.input_schema, ensure_ascii=False, sort_keys=True)
        click.echo(f"  input: {schema}")


async def _listed(toolset: Any) -> list[Any]:
    """The toolset's tools, the server stopped afterwards whatever happens."""
    try:
        return list(await toolset.list_tools())
    finally:
        close = getattr(toolset, "aclose", None)
        if close is not None:
            await close()
