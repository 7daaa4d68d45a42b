"""The external-backend interface: an agent that runs outside oma (a CLI, an ACP agent).

Backends take a string prompt and yield events. The core refuses structured input for
text-only backends before any process starts, so a backend only ever sees text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeAlias, runtime_checkable

import attrs

from .providers import ReasoningDelta, TextDelta, Usage

__all__ = [
    "Backend",
    "BackendEvent",
    "BackendRequest",
    "BackendResult",
    "BackendToolCall",
    "BackendToolResult",
]


@attrs.frozen
class BackendRequest:
    """One turn for an external agent.

    ``continue_session`` is True for ``Agent.prompt`` (a backend with sessions reuses the
    agent's session and sends ``system_prompt`` on the first turn only) and False for
    ``run``/``stream`` (a fresh session each time). ``timeout`` is the run's remaining time.
    """

    prompt: str
    system_prompt: str | None = None
    continue_session: bool = False
    timeout: float | None = None


@attrs.frozen
class BackendToolCall:
    """The external agent started a tool call (reported, not executed by oma)."""

    id: str
    name: str
    input: Any = None


@attrs.frozen
class BackendToolResult:
    """An external agent's tool call finished."""

    id: str
    content: str
    is_error: bool = False


@attrs.frozen
class BackendResult:
    """The last event of every backend run: the collected output and usage if reported."""

    output: str
    usage: Usage = Usage()
    stop_reason: str | None = None


BackendEvent: TypeAlias = (
    TextDelta | ReasoningDelta | BackendToolCall | BackendToolResult | BackendResult
)


@runtime_checkable
class Backend(Protocol):
    """An external agent. One object per ``Agent``; ``aclose`` stops what it started."""

    kind: str
    display_name: str

    def run(self, request: BackendRequest) -> AsyncIterator[BackendEvent]:
        """Run one turn, yielding events and ``BackendResult`` last; raise ``BackendError``
        on failure. An async generator: closing it early stops the turn (and its process)."""
        ...

    async def aclose(self) -> None:
        """Stop every process and session this backend started."""
        ...
