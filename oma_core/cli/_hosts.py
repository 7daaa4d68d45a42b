"""The host each agent of a team talks to, named in a task's connection error as ``oma run``
names its own (``_exits.explained``): ``oma tasks`` and ``oma team`` say which server a task
could not reach, in the lines they print and in their JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from ._exits import endpoint_of, explained

if TYPE_CHECKING:
    from ..agent import AgentConfig
    from ..plugins import PluginHost
    from ..progress import ProgressEvent


def host_of_plugins() -> PluginHost:
    """The process's plugin host (imported when a team runs, not when the CLI starts)."""
    from ..plugins import PluginHost

    return PluginHost.default()


def endpoints(configs: Iterable[AgentConfig | None], host: PluginHost) -> dict[str, str]:
    """Each agent's name and the host (and port) its provider talks to, for those that
    have one (a backend or an unknown provider has none)."""
    from ..agent import Agent
    from ..errors import OmaError

    found: dict[str, str] = {}
    for config in configs:
        if config is None:
            continue
        try:
            endpoint = endpoint_of(Agent(config, plugins=host))
        except OmaError:
            continue
        if endpoint is not None:
            found[config.name] = endpoint
    return found


def with_host(error: object, endpoint: str | None) -> str:
    """``str(error)``, and `` (connecting to HOST)`` after a connection error that does not
    name its host."""
    text = str(error)
    suffix = f" (connecting to {endpoint})"
    if endpoint and explained(error, endpoint).endswith(suffix) and not text.endswith(suffix):
        return text + suffix
    return text


def hosts_named(
    observer: Callable[[ProgressEvent], object], hosts: Mapping[str, str]
) -> Callable[[ProgressEvent], object]:
    """``observer``, given a failed task's error with its agent's host named."""

    def observe(event: ProgressEvent) -> object:
        error = event.data.get("error")
        endpoint = hosts.get(event.agent or "")
        if event.type == "task_failed" and error is not None and endpoint is not None:
            event = attrs.evolve(event, data={**event.data, "error": with_host(error, endpoint)})
        return observer(event)

    return observe
