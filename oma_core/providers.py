"""The provider interface that plugins implement.

A provider turns a ``ProviderRequest`` (validated, immutable messages plus settings) into one
assistant turn, either at once (``complete``) or as a stream of events (``stream``) whose last
event is always a ``ResponseComplete`` carrying the same ``ProviderResponse`` that ``complete``
would have returned. Providers never validate messages again and never retry: the core checks
capabilities before the call and owns the one retry ladder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from .messages import LLMMessage, ToolUseBlock

__all__ = [
    "OutputRequest",
    "Provider",
    "ProviderEvent",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ReasoningDelta",
    "ResponseComplete",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolDefinition",
    "Usage",
]


@attrs.frozen
class Usage:
    """Token counts of one call or, summed, of a run.

    One convention for every provider: ``input_tokens`` counts all the input, cached or not;
    ``cache_read_tokens`` (read from the service's prompt cache) and ``cache_write_tokens``
    (written to it) are parts of it. ``reasoning_tokens`` (thinking) is part of
    ``output_tokens``. A count the provider does not report is 0.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@attrs.frozen
class ToolDefinition:
    """A tool as a provider sees it: a name, a description and a JSON-schema input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@attrs.frozen
class OutputRequest:
    """The output a call must produce, for a provider that holds the model to it.

    Set on ``ProviderRequest.output`` only in the modes the provider declares in
    ``Capabilities.output_modes`` (prompted mode never sets it: the core puts the schema in
    the system prompt). ``mode`` says where the provider puts ``schema`` on its wire:

    - ``"native"``: the service's own structured-output setting (e.g. OpenAI's
      ``response_format`` ``json_schema``); the reply's text is the JSON output.
    - ``"tool"``: one more tool named ``name`` whose input schema is ``schema``, with the
      service's tool choice forced to it (when the request has tools of its own, forced to
      "some tool" instead, so the model may call those first); the reply's call of that tool
      carries the output in its arguments (the core reads it and never runs it as a tool).

    ``name`` is safe as a tool or schema name on every service (``[A-Za-z0-9_-]``, at most
    64 characters); ``strict`` asks the service to enforce the schema exactly where it can
    (a provider that cannot make a schema strict refuses it locally, before any request).
    """

    schema: Mapping[str, Any]
    name: str
    mode: Literal["native", "tool"]
    description: str | None = None
    strict: bool = True


@attrs.frozen
class ProviderSettings:
    """What a provider factory receives: connection settings from ``AgentConfig``.

    ``base_url`` and ``api_key`` keep the SDK's own meaning (a plugin falls back to its
    environment variable when ``api_key`` is None); ``options`` is ``provider_options``.
    """

    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    options: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ProviderRequest:
    """One model call: everything a provider needs, already validated and immutable."""

    model: str | None
    messages: tuple[LLMMessage, ...]
    system_prompt: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)
    #: Stop sequences (portable: every provider maps them to its wire); None: not set.
    stop: tuple[str, ...] | None = None
    #: The output the model is held to in native or tool mode; None: free text (or prompted).
    output: OutputRequest | None = None
    #: ``AgentConfig.thinking``: "off" | "low" | "medium" | "high" | a token budget; None: the
    #: provider's default.
    thinking: str | int | None = None
    #: ``AgentConfig.cache``: "auto" (the provider places the service's cache markers on the
    #: system prompt, the tools and the latest user turn) or None (only the messages'
    #: ``CachePoint`` blocks). A provider that declares no caching ignores it.
    cache: Literal["auto"] | None = None


@attrs.frozen
class ProviderResponse:
    """One assistant turn: the message, its usage and why the model stopped."""

    message: LLMMessage
    usage: Usage = Usage()
    stop_reason: str | None = None
    model: str | None = None


@attrs.frozen
class TextDelta:
    """A piece of assistant text, as it arrives."""

    text: str


@attrs.frozen
class ReasoningDelta:
    """A piece of the model's reasoning (thinking), as it arrives."""

    text: str


@attrs.frozen
class ToolCall:
    """A complete tool call, emitted once its arguments have fully arrived."""

    block: ToolUseBlock


@attrs.frozen
class ToolCallDelta:
    """A piece of a tool call's JSON arguments, as it arrives (optional for a provider).

    ``index`` tells the calls of one turn apart (the service's own numbering: a content-block
    or ``tool_calls`` index); ``name`` and ``id`` come at least with the first piece of a call
    (later pieces may repeat them). The ``ToolCall`` that follows is the call: pieces only
    show it arriving (the core parses the output tool's pieces leniently, for partial output
    in tool mode) and never change a result, so bad pieces followed by a valid ``ToolCall``
    are harmless, and a provider that never emits them works the same, with fewer partials.
    """

    index: int
    arguments: str
    name: str | None = None
    id: str | None = None


@attrs.frozen
class ResponseComplete:
    """The last event of every provider stream: the assembled turn."""

    response: ProviderResponse


ProviderEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | ToolCall | ResponseComplete


@runtime_checkable
class Provider(Protocol):
    """What a provider object offers. ``name`` is the registered name, e.g. "anthropic"."""

    name: str
    display_name: str

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        """Send one request and return the whole assistant turn."""
        ...

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Send one request and yield events as they arrive, ``ResponseComplete`` last.

        An async generator: closing it (``aclose``) closes the underlying connection.
        """
        ...

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        """Return the exact JSON body ``complete`` would send for ``request``; send nothing."""
        ...

    async def aclose(self) -> None:
        """Release connections and clients the provider holds."""
        ...
