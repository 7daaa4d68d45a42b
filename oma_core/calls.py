"""What call middleware sees: the run a call belongs to, one model call, one tool call.

Every model call (each attempt of it, and each turn of an external agent) passes through the
``oma_model_call`` hook and every tool call through ``oma_tool_call``; see
``oma_core.hookspecs`` and the "Writing call middleware" page. Middleware receives a
``ModelCall`` or ``ToolInvocation`` and the ``RunContext``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

if TYPE_CHECKING:
    from .backends import BackendRequest, BackendToolCall, BackendToolResult
    from .budgets import Budget
    from .config import AgentConfig
    from .messages import ToolUseBlock
    from .providers import ProviderEvent, ProviderRequest
    from .settings import RunSettings
    from .tools import Tool

__all__ = ["CallEvent", "CallEvents", "ModelCall", "RunContext", "ToolInvocation"]

#: What a model call yields: provider events (``ResponseComplete`` last) and, for an external
#: agent, the tool calls it reports.
CallEvent: TypeAlias = "ProviderEvent | BackendToolCall | BackendToolResult"
CallEvents: TypeAlias = "AsyncGenerator[CallEvent, None]"
#: (The built-in call answered whole returns a lighter async iterator with ``aclose``; treat
#: what ``yield`` gives a wrapper as an async iterator you close, nothing more.)


@attrs.define(eq=False)
class RunContext:
    """One run, as middleware sees it (read it; do not reassign its fields).

    ``state`` is scratch space for the run's lifetime: a plugin keeps what it needs between
    the calls of one run there, under a key of its own name.
    """

    run_id: str
    config: AgentConfig
    settings: RunSettings
    state: dict[str, Any] = attrs.Factory(dict)

    @property
    def agent(self) -> str:
        """The agent's name."""
        return self.config.name

    @property
    def metadata(self) -> Mapping[str, Any]:
        return self.settings.metadata

    @property
    def budgets(self) -> tuple[Budget, ...]:
        return self.settings.budgets


@attrs.define(eq=False)
class ModelCall:
    """One attempt of one model call (or one turn of an external agent).

    ``request`` is what will be sent; a middleware may replace it (``attrs.evolve``) before it
    iterates the inner events, e.g. to clamp ``max_tokens``. ``attempt`` counts from 1; for a
    retry, ``retry_of`` is the error of the attempt before and ``retry_delay`` the seconds
    waited. ``stream`` says whether the caller is streaming (deltas are wanted). ``target``
    is the provider object, or the backend for ``kind == "backend"`` (with
    ``backend_request``).
    """

    request: ProviderRequest
    kind: Literal["model", "backend"]
    provider: str
    display_name: str
    target: Any
    stream: bool = False
    attempt: int = 1
    retry_of: BaseException | None = None
    retry_delay: float = 0.0
    backend_request: BackendRequest | None = None


@attrs.define(eq=False)
class ToolInvocation:
    """One tool call the model asked for; ``tools`` are the agent's tools by name."""

    block: ToolUseBlock
    tools: Mapping[str, Tool]
