"""Plan and agents files for ``oma tasks`` and ``oma team``: JSON in, a ``Team`` and
``TaskSpec``s out, or one line naming what is wrong (exit status 2) before anything starts.

A plan file is one JSON object: the team (``name``, ``max_concurrency``), its ``agents``
(``AgentConfig`` fields) and its ``tasks`` (``TaskSpec`` fields, the shape of a coordinator's
plan). An agents file is the same without ``tasks``, and may hold a ``coordinator``. Unknown
fields are refused, never ignored: a typo such as ``depend_on`` would otherwise change the
graph without a word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..errors import OmaError
from ._inputs import read_json

if TYPE_CHECKING:
    from ..config import AgentConfig
    from ..teams import TaskSpec, Team

__all__ = [
    "USAGE",
    "agent_config",
    "load_team",
    "read_json_or_refuse",
    "refuse",
    "stem",
    "task_spec",
    "team_file",
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
)
TASK_FIELDS = ("title", "description", "assignee", "depends_on", "max_retries")
TEAM_FIELDS = ("name", "max_concurrency", "agents", "coordinator")


def refuse(message: str) -> NoReturn:
    """A usage or configuration error: one line on stderr, exit status 2."""
    click.echo(f"error: {message}", err=True)
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
    from ..config import AgentConfig

    fields = dict(_object(data, where))
    _known(fields, AGENT_FIELDS, where)
    if not isinstance(fields.get("name"), str) or not fields["name"]:
        refuse(f"{where}.name must be a non-empty string")
    if "provider" in fields and not isinstance(fields["provider"], str):
        refuse(f"{where}.provider must be a provider's name")
    options = fields.get("provider_options")
    if options is not None and not isinstance(options, Mapping):
        refuse(f"{where}.provider_options must be an object")
    try:
        return AgentConfig(**fields)
    except (TypeError, ValueError, OmaError) as error:
        refuse(f"{where}: {error}")


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
