"""What middleware sees: one run, one model call, one tool call.

Every run passes through the ``oma_run`` hook, every model call (each attempt of it, and each
turn of an external agent) through ``oma_model_call`` and every tool call through
``oma_tool_call``; see ``oma_core.hookspecs`` and the "Writing call middleware" page.
Middleware receives the ``RunContext`` (and a ``ModelCall`` or ``ToolInvocation``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import attrs

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._results import StreamEvent
    from ._settings import RunSettings
    from .backends import BackendRequest, BackendToolCall, BackendToolResult
    from .budgets import Budget
    from .messages import LLMMessage, ToolResultBlock, ToolUseBlock
    from .providers import ProviderEvent, ProviderRequest
    from .tools import Tool

__all__ = [
    "CallEvent",
    "CallEvents",
    "ModelCall",
    "RunContext",
    "RunEvents",
    "RunHooks",
    "RunInput",
    "ToolInvocation",
]

#: A run's checked input: a str (one user text message) or validated messages.
RunInput: TypeAlias = "str | tuple[LLMMessage, ...]"
#: What a run yields: ``StreamEvent``s, ``done`` (with the ``RunResult``) last.
RunEvents: TypeAlias = "AsyncGenerator[StreamEvent, None]"

#: What a model call yields: provider events (``ResponseComplete`` last) and, for an external
#: agent, the tool calls it reports.
CallEvent: TypeAlias = "ProviderEvent | BackendToolCall | BackendToolResult"
CallEvents: TypeAlias = "AsyncGenerator[CallEvent, None]"
#: (The built-in call answered whole returns a lighter async iterator with ``aclose``; treat
#: what ``yield`` gives a wrapper as an async iterator you close, nothing more.)


class RunHooks(Protocol):
    """The hooks a run calls (``PluginHost.hooks`` is one), typed; called with keywords
    (``hooks.run(run=run)``), as pluggy's hook callers are."""

    def run(self, run: RunContext) -> RunEvents: ...

    def model_call(self, call: ModelCall, run: RunContext) -> CallEvents: ...

    def tool_call(self, call: ToolInvocation, run: RunContext) -> Awaitable[ToolResultBlock]: ...

    @property
    def before_run_calls(self) -> Sequence[Any]:
        """The ``oma_before_run`` implementations, in pluggy's call order (a chain)."""
        ...


@attrs.define(eq=False)
class RunContext:
    """One run, as middleware sees it (read it; do not reassign its fields).

    ``input`` is the run's checked input (a str, or validated messages); ``stream`` whether
    the caller streams; ``session`` whether it is a ``prompt`` on the agent's history;
    ``target`` what the run talks to, resolved once before the run starts (the provider and
    what the agent knows of it, or the external backend; when resolving failed, the error,
    which is then the run's first failure); ``hooks`` the plugin host's hooks the run calls.
    ``state`` is scratch space for the run's lifetime: a plugin keeps what it needs between
    the calls of one run there, under a key of its own name.
    """

    run_id: str
    config: AgentConfig
    settings: RunSettings
    state: dict[str, Any] = attrs.Factory(dict)
    input: RunInput = ""
    stream: bool = False
    session: bool = False
    target: Any = None
    hooks: RunHooks | None = attrs.field(default=None, repr=False)

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
