"""Plan and agents files for ``oma tasks`` and ``oma team``: JSON in, a ``Team`` and
``TaskSpec``s out, or one line naming what is wrong (exit status 2) before anything starts.

A plan file is one JSON object: the team (``name``, ``max_concurrency``), its ``agents``
(``AgentConfig`` fields, and ``mcp``: the agent's MCP servers) and its ``tasks``
(``TaskSpec`` fields, the shape of a coordinator's plan). An agents file is the same without
``tasks``, and may hold a ``coordinator``. Unknown fields are refused, never ignored: a typo
such as ``depend_on`` would otherwise change the graph without a word.

Then the agents are made ready before anything starts: each gets its key as ``oma run`` finds
one (``with_keys``), and each is checked (``check_agents``): an unknown provider or backend,
an option its provider does not take, a missing key, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
import click

from ..errors import OmaError
from ._inputs import read_json
from ._live import printable

if TYPE_CHECKING:
    from .._config import AgentConfig
    from ..plugins import PluginHost
    from ..teams import TaskSpec, Team

__all__ = [
    "USAGE",
    "agent_config",
    "check_agents",
    "load_team",
    "read_json_or_refuse",
    "refuse",
    "stem",
    "task_spec",
    "team_file",
    "with_keys",
]

#: The exit status of a usage or configuration error.
USAGE = 2

#: The ``AgentConfig`` fields a JSON file can set (not ``before_run`` or ``tools``: code).
AGENT_FIELDS = (
    "name",
    "model",
    "provider",
    "base_url",
    "api_key",
    "system_prompt",
    "description",
    "history",
    "max_turns",
    "max_history_tokens",
    "max_retries",
    "retry_delay",
    "retry_backoff",
    "backend",
    "provider_options",
    "temperature",
    "max_tokens",
    "stop",
    "mcp",  # not a field: the agent's MCP servers, as tools (``_mcp_toolsets``)
)
TASK_FIELDS = ("title", "description", "assignee", "depends_on", "max_retries")
TEAM_FIELDS = ("name", "max_concurrency", "agents", "coordinator")


def refuse(message: str) -> NoReturn:
    """A usage or configuration error: one line on stderr, exit status 2 (what came from a
    file is shown through ``printable``: its control characters escaped)."""
    click.echo(f"error: {printable(message)}", err=True)
    raise SystemExit(USAGE)


def _object(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        refuse(f"{where} must be a JSON object, got {_json_type(data)}")
    return data


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _known(data: Mapping[str, Any], fields: Sequence[str], where: str) -> None:
    unknown = [key for key in data if key not in fields]
    if unknown:
        refuse(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(fields)})")


def agent_config(data: Any, where: str) -> AgentConfig:
    from .._config import AgentConfig

    fields = dict(_object(data, where))
    _known(fields, AGENT_FIELDS, where)
    if not isinstance(fields.get("name"), str) or not fields["name"]:
        refuse(f"{where}.name must be a non-empty string")
    if "provider" in fields and not isinstance(fields["provider"], str):
        refuse(f"{where}.provider must be a provider's name")
    options = fields.get("provider_options")
    if options is not None and not isinstance(options, Mapping):
        refuse(f"{where}.provider_options must be an object")
    if "mcp" in fields:
        fields["tools"] = _mcp_toolsets(fields.pop("mcp"), f"{where}.mcp")
    try:
        return AgentConfig(**fields)
    except (TypeError, ValueError, OmaError) as error:
        refuse(f"{where}: {error}")


def _mcp_toolsets(data: Any, where: str) -> list[Any]:
    """An agent's ``mcp`` section: a list of servers, ``{"command": ..., "args": [...]}`` or
    ``{"url": ...}`` (with the other settings of ``MCPToolset.from_config``), built through
    the ``mcp`` toolset kind a plugin registers; nothing is started here."""
    from ..plugins import PluginHost

    if not isinstance(data, list):
        refuse(f"{where} must be a list of MCP servers, got {_json_type(data)}")
    host = PluginHost.default()
    toolsets = []
    for index, server in enumerate(data):
        at = f"{where}[{index}]"
        server = _object(server, at)
        command, url = server.get("command"), server.get("url")
        if (command is None) == (url is None):
            refuse(f'{at} needs exactly one of "command" and "url"')
        if command is not None and (not isinstance(command, str) or not command):
            refuse(f"{at}.command must be a non-empty string")
        args = server.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            refuse(f"{at}.args must be a list of strings")
        if url is not None and not isinstance(url, str):
            refuse(f"{at}.url must be a string")
        try:
            toolsets.append(host.build_toolset("mcp", server))
        except (TypeError, ValueError, OmaError) as error:
            refuse(f"{at}: {_one_line(error)}")
    return toolsets


def task_spec(data: Any, where: str) -> TaskSpec:
    from ..teams import TaskSpec

    fields = _object(data, where)
    _known(fields, TASK_FIELDS, where)
    for key in ("title", "description"):
        if not isinstance(fields.get(key), str):
            refuse(f"{where}.{key} must be a string")
    assignee = fields.get("assignee")
    if assignee is not None and not isinstance(assignee, str):
        refuse(f"{where}.assignee must be an agent's name or null")
    depends_on = fields.get("depends_on", [])
    if not isinstance(depends_on, list) or not all(isinstance(d, str) for d in depends_on):
        refuse(f"{where}.depends_on must be a list of task titles")
    retries = fields.get("max_retries", 0)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        refuse(f"{where}.max_retries must be a whole number >= 0")
    return TaskSpec(fields["title"], fields["description"], assignee, tuple(depends_on), retries)


def load_team(data: Mapping[str, Any], path: str, default_name: str) -> Team:
    from ..teams import Team

    agents = data.get("agents")
    if not isinstance(agents, list) or not agents:
        refuse(f"{path}: agents must be a non-empty list of agents")
    configs = [agent_config(item, f"{path}: agents[{i}]") for i, item in enumerate(agents)]
    name = data.get("name", default_name)
    if not isinstance(name, str):
        refuse(f"{path}: name must be a string")
    concurrency = data.get("max_concurrency", 4)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        refuse(f"{path}: max_concurrency must be a whole number >= 1")
    try:
        return Team(name, configs, max_concurrency=concurrency)
    except (TypeError, ValueError) as error:
        refuse(f"{path}: {error}")


def team_file(path: str, extra: Sequence[str] = ()) -> Mapping[str, Any]:
    data = _object(read_json_or_refuse(path), path)
    _known(data, (*TEAM_FIELDS, *extra), path)
    return data


def read_json_or_refuse(path: str) -> Any:
    """``read_json``, but a missing or broken file is a configuration error (status 2)."""
    try:
        return read_json(path)
    except SystemExit:
        raise SystemExit(USAGE) from None


def stem(path: str) -> str:
    return Path(path).stem


# -- the agents, ready to run ------------------------------------------------------------------


def with_keys(team: Team, coordinator: AgentConfig | None) -> tuple[Team, AgentConfig | None]:
    """The team and coordinator with each agent's key, found as ``oma run`` finds one
    (``KeyResolver``: the agents file's ``api_key``, the key stored for the agent's
    ``base_url``, the provider's environment variable, the provider's stored key for its own
    host only). A keys file that cannot be trusted ends it here."""
    from ..errors import UsageError
    from ..plugins import PluginHost
    from ._keys import KeyResolver

    host = PluginHost.default()
    resolver = KeyResolver(host)

    def keyed(config: AgentConfig) -> AgentConfig:
        provider = _provider_of(config, host)
        if provider is None:
            return config
        key = resolver.key(provider, config.api_key, config.base_url)
        return attrs.evolve(config, api_key=key)

    try:
        agents = [keyed(config) for config in team.agents]
        coordinator = None if coordinator is None else keyed(coordinator)
    except UsageError as error:
        refuse(_one_line(error))
    return attrs.evolve(team, agents=agents), coordinator


def _provider_of(config: AgentConfig, host: PluginHost) -> str | None:
    """The registered provider an agent runs on (``model="openai:gpt-4o"`` names it when
    ``provider`` is left at its default), None for a backend or a provider object."""
    if config.backend is not None or not isinstance(config.provider, str):
        return None
    prefix, colon, _ = (config.model or "").partition(":")
    if colon and prefix in host.provider_specs() and config.provider in ("echo", prefix):
        return prefix
    return config.provider


async def check_agents(configs: Sequence[AgentConfig]) -> None:
    """Refuse, before any task starts, every agent that could not run: an unknown provider
    or backend, an option its provider does not take, a provider without its key. One line
    per problem, then exit 2 (a run would otherwise fail each of those agents' tasks)."""
    from ..agent import Agent
    from ..plugins import PluginHost

    host = PluginHost.default()
    problems: list[str] = []
    for config in configs:
        if config.backend is not None:
            kind = config.backend.get("kind")
            if kind not in host.backend_specs():
                problems.append(f"agent {config.name!r}: no backend {kind!r} is installed")
            continue
        try:
            agent = Agent(config, plugins=host)
        except OmaError as error:
            problems.append(f"agent {config.name!r}: {_one_line(error)}")
            continue
        try:
            agent.check_input("a task")  # a missing key is refused here, as when a run starts
            agent.provider()
        except OmaError as error:
            problems.append(f"agent {config.name!r}: {_problem(error, config.base_url)}")
        finally:
            await agent.aclose()
    if problems:
        for problem in problems[:-1]:
            click.echo(f"error: {printable(problem)}", err=True)
        refuse(problems[-1])


def _problem(error: OmaError, base_url: str | None = None) -> str:
    """An agent's error in the words of a plan or agents file (its ``api_key`` field); a
    missing key's way out names the agent's host when it has its own (a key stored for the
    provider is sent only to the provider's default host)."""
    from .._origin import origin
    from ..errors import MissingKeyError

    if isinstance(error, MissingKeyError):
        shown = error.display_name or error.provider
        where = " or ".join(error.variables)
        env = f"set {where} in the environment, " if where else ""
        at = origin(base_url)  # never the URL itself: it may hold a password or a token
        host = f" --base-url {at}" if at else ""
        return (
            f"{shown} needs an API key and has none: {env}store one with "
            f"`oma keys set {error.provider}{host}`, or give the agent an api_key"
        )
    return _one_line(error)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
