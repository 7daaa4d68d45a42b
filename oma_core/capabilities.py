"""What a provider or backend can carry, declared by its plugin and checked by the core.

Every request is checked against its provider's ``Capabilities`` before any I/O; a block the
provider cannot carry raises ``UnsupportedContentBlockError``. Nothing is dropped silently.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .errors import UnsupportedContentBlockError
from .messages import (
    Base64Source,
    FilePart,
    ImageBlock,
    LLMMessage,
    MediaSource,
    ToolResultBlock,
    UrlSource,
    VideoBlock,
)

if TYPE_CHECKING:
    from .backends import Backend
    from .providers import Provider, ProviderSettings

__all__ = [
    "IN_TOOL_RESULT",
    "BackendSpec",
    "BlockSupport",
    "Capabilities",
    "Mode",
    "ProviderSpec",
]

#: The pseudo-role of a part inside a tool result (an image or a file a tool returned).
IN_TOOL_RESULT = "tool_result"


class Mode(enum.Enum):
    """How a provider carries a block: mapped to its own wire shape, or passed on for the
    service to accept or refuse (OpenAI-compatible services receiving video)."""

    NATIVE = "native"
    FORWARDED = "forwarded"


@attrs.frozen
class BlockSupport:
    """One supported block type in some roles.

    ``block_type`` is a block's ``type`` ("text", "image", "video", "tool_use", "tool_result",
    "reasoning") or, with ``roles={IN_TOOL_RESULT}``, a tool-result part ("image", "file").
    ``sources`` and ``media_types`` restrict media blocks (``None``: any media type of the
    block's family); ``sources=frozenset({"url"})`` declares a URL-only provider.
    ``url_check``, for a service that reads only some URLs (Gemini: its File API and YouTube),
    takes a URL and returns None when the service can read it, or the reason it cannot, which
    becomes the refusal's detail.
    """

    block_type: str
    roles: frozenset[str] = frozenset({"user", "assistant"})
    sources: frozenset[str] = frozenset({"base64", "url"})
    media_types: frozenset[str] | None = None
    mode: Mode = Mode.NATIVE
    url_check: Callable[[str], str | None] | None = None


@attrs.frozen
class Capabilities:
    """The set of blocks a provider carries; everything else is refused before any request."""

    blocks: tuple[BlockSupport, ...]

    def find(self, block_type: str, role: str) -> tuple[BlockSupport, ...]:
        return tuple(b for b in self.blocks if b.block_type == block_type and role in b.roles)

    def mode(self, block_type: str, role: str, source: str | None = None) -> Mode | None:
        """The mode this block is carried in, or None when it is refused."""
        for support in self.find(block_type, role):
            if source is None or source in support.sources:
                return support.mode
        return None

    def check(self, messages: Iterable[LLMMessage], provider: str) -> None:
        """Raise ``UnsupportedContentBlockError`` for the first block ``provider`` cannot carry."""
        for message in messages:
            for block in message.content:
                self._check_block(block.type, message.role, _source_of(block), provider)
                if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                    for part in block.content:
                        if part.type != "text":
                            self._check_block(part.type, IN_TOOL_RESULT, _source_of(part), provider)

    def _check_block(
        self, block_type: str, role: str, source: MediaSource | None, provider: str
    ) -> None:
        supports = self.find(block_type, role)
        where = "inside a tool result" if role == IN_TOOL_RESULT else f"in a {role} message"
        if not supports:
            raise UnsupportedContentBlockError(provider, block_type, f"not supported {where}")
        if source is None:
            return
        kind = "base64" if isinstance(source, Base64Source) else "url"
        by_kind = [s for s in supports if kind in s.sources]
        if not by_kind:
            raise UnsupportedContentBlockError(
                provider, block_type, f"{kind} sources are not supported {where}"
            )
        media_type = source.media_type
        by_type = [s for s in by_kind if s.media_types is None or media_type in s.media_types]
        if not by_type:
            raise UnsupportedContentBlockError(
                provider, block_type, f"media type {source.media_type} is not supported"
            )
        if isinstance(source, UrlSource):
            reasons = [s.url_check(source.url) if s.url_check else None for s in by_type]
            if None not in reasons:
                raise UnsupportedContentBlockError(provider, block_type, reasons[0])

    @classmethod
    def everything(cls) -> Capabilities:
        """Every block in every role it may appear in: for echo and test providers."""
        return cls(
            (
                BlockSupport("text"),
                BlockSupport("image"),
                BlockSupport("video"),
                BlockSupport("tool_use", frozenset({"assistant"})),
                BlockSupport("tool_result", frozenset({"user"})),
                BlockSupport("reasoning", frozenset({"assistant"})),
                BlockSupport("image", frozenset({IN_TOOL_RESULT})),
                BlockSupport("file", frozenset({IN_TOOL_RESULT})),
            )
        )

    @classmethod
    def text_only(cls) -> Capabilities:
        return cls((BlockSupport("text"),))


def _source_of(block: object) -> MediaSource | None:
    if isinstance(block, ImageBlock | VideoBlock | FilePart):
        return block.source
    return None


@attrs.frozen
class ProviderSpec:
    """A provider a plugin offers, returned from ``oma_register_providers``.

    ``name`` is what ``AgentConfig.provider`` names; ``display_name`` names the provider in
    errors and in ``oma plugins``; ``capabilities`` is what every request is checked against
    before any I/O. ``factory`` is called on first use with the agent's ``ProviderSettings``;
    it is where the plugin imports its SDK, so that loading plugins imports none.
    ``default_model`` is the model when ``AgentConfig.model`` is None. ``shared`` says one
    instance may serve many runs at once (a stateless SDK client): ``OpenMultiAgent`` then
    keeps one per event loop and settings instead of building a client and connection pool
    for every run. ``default_base_url`` and ``api_key_env`` are not read by the core: they
    document what the provider itself falls back to when ``ProviderSettings.base_url`` or
    ``api_key`` is None (``docs/writing-a-provider.md`` has the table).
    """

    name: str
    display_name: str
    factory: Callable[[ProviderSettings], Provider]
    capabilities: Capabilities
    description: str = ""
    default_model: str | None = None
    default_base_url: str | None = None
    api_key_env: str | None = None
    shared: bool = False


@attrs.frozen
class BackendSpec:
    """An external agent backend a plugin offers, returned from ``oma_register_backends``.

    ``kind`` is what ``AgentConfig.backend["kind"]`` names. ``factory`` receives the rest of
    that mapping. ``text_only`` backends take string prompts only; the core refuses
    structured input for them before anything starts.
    """

    kind: str
    display_name: str
    factory: Callable[[Mapping[str, Any]], Backend]
    text_only: bool = True
    description: str = ""
