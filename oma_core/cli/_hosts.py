"""Where each agent of a team talks to, to explain a task's failure as ``oma run`` explains
its own: ``oma tasks`` and ``oma team`` name the server a task could not reach
(``_exits.explained``) and, for a key its host refused (HTTP 401/403), where the key came from
and how to replace it (``_keys.key_advice``), in the lines they print and in their JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from ._exits import endpoint_of, explained

if TYPE_CHECKING:
    from ..agent import Agent, AgentConfig
    from ..plugins import PluginHost
    from ..progress import ProgressEvent

#: Where a task's agent got a key that is not stored nor in the environment.
_GIVEN = "in the agent's api_key"


@attrs.frozen
class Reach:
    """An agent of a team and the host (and port) its provider talks to, if any."""

    agent: Agent
    endpoint: str | None

    def explained(self, error: object) -> str:
        """``str(error)``, with the host after a connection error and the key advice after a
        refused key."""
        from ._keys import key_advice

        return with_host(error, self.endpoint) + key_advice(error, self.agent, _GIVEN)


def host_of_plugins() -> PluginHost:
    """The process's plugin host (imported when a team runs, not when the CLI starts)."""
    from ..plugins import PluginHost

    return PluginHost.default()


def reaches(configs: Iterable[AgentConfig | None], host: PluginHost) -> dict[str, Reach]:
    """Each agent's name and its ``Reach`` (an agent that cannot be built, an unknown
    provider say, has none: its tasks fail saying so)."""
    from ..agent import Agent
    from ..errors import OmaError

    found: dict[str, Reach] = {}
    for config in configs:
        if config is None:
            continue
        try:
            agent = Agent(config, plugins=host)
            found[config.name] = Reach(agent, endpoint_of(agent))
        except OmaError:
            continue
    return found


def explained_by(reaches: Mapping[str, Reach], error: object, agent: str | None) -> str:
    """A task's ``error`` explained for its ``agent`` (plain ``str(error)`` for an agent
    without a ``Reach``)."""
    reach = reaches.get(agent or "")
    return str(error) if reach is None else reach.explained(error)


def with_host(error: object, endpoint: str | None) -> str:
    """``str(error)``, and `` (connecting to HOST)`` after a connection error that does not
    name its host."""
    text = str(error)
    suffix = f" (connecting to {endpoint})"
    if endpoint and explained(error, endpoint).endswith(suffix) and not text.endswith(suffix):
        return text + suffix
    return text


def hosts_named(
    observer: Callable[[ProgressEvent], object], reaches: Mapping[str, Reach]
) -> Callable[[ProgressEvent], object]:
    """``observer``, given a failed task's error explained for its agent (its host, its
    key)."""

    def observe(event: ProgressEvent) -> object:
        error = event.data.get("error")
        if event.type == "task_failed" and error is not None and event.agent in reaches:
            text = explained_by(reaches, error, event.agent)
            event = attrs.evolve(event, data={**event.data, "error": text})
        return observer(event)

    return observe
