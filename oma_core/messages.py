"""The wire-neutral message model: frozen attrs classes for messages, blocks and sources.

Objects are valid by construction: each constructor runs the same checks as loading a dict
(``load_messages``), so an object that exists is never scanned again. Errors from a
constructor carry a path relative to the object being built (``content[0].source.url must
use HTTP or HTTPS``); ``load_messages`` names places from ``messages``.

Sequences are tuples and a tool input is a read-only deep copy (read-only ``dict`` and
``list`` subclasses that compare and JSON-encode like plain ones), so nothing handed out can be
changed through it. Copying shares the immutable strings: ``copy.deepcopy`` of a message
returns the message itself.

This module holds the classes; the wire shape they are built from (which tags, keys and roles
exist) is described once, in the parser (``_parse``), which the constructors use for nested dicts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

import attrs

from ._checks import (
    DEFAULT_LIMITS,
    check_base64,
    check_media_type,
    check_string,
    check_url,
    freeze_json_object,
)

__all__ = [
    "AudioBlock",
    "Base64Source",
    "ContentBlock",
    "DocumentBlock",
    "FilePart",
    "ImageBlock",
    "LLMMessage",
    "MediaSource",
    "ReasoningBlock",
    "Role",
    "TextBlock",
    "ToolResultBlock",
    "ToolResultPart",
    "ToolUseBlock",
    "UrlSource",
    "VideoBlock",
    "prompt_of",
    "text_of",
    "thaw_json",
    "user_text",
]

Role: TypeAlias = Literal["user", "assistant"]
_T = TypeVar("_T")


def _short(value: str | None) -> str:
    """Repr of a possibly huge payload: its start and its length, never all of it."""
    if value is None or len(value) <= 40:
        return repr(value)
    return f"{value[:24]!r}... ({len(value)} chars)"


def _parser() -> Any:
    """The dict parser (``_parse``), imported on first use: it builds these classes, so it
    imports this module, and this one must not import it back at import time."""
    global _PARSER
    if _PARSER is None:
        from . import _parse

        _PARSER = _parse
    return _PARSER


_PARSER: Any = None


class _Immutable:
    """Copying an immutable object gives the object itself: copies share, never duplicate."""

    __slots__ = ()

    def __copy__(self: _T) -> _T:
        return self

    def __deepcopy__(self: _T, memo: dict[int, Any]) -> _T:
        return self


@attrs.frozen(init=False)
class Base64Source(_Immutable):
    """Raw canonical base64 ``data`` of type ``media_type``.

    Missing ``=`` padding is added; padded data is kept as the very same string object.
    """

    media_type: str
    data: str = attrs.field(repr=_short)

    def __init__(self, media_type: str, data: str) -> None:
        object.__setattr__(self, "media_type", check_media_type(media_type, "media_type"))
        object.__setattr__(self, "data", check_base64(data, "data"))

    @property
    def type(self) -> Literal["base64"]:
        return "base64"


@attrs.frozen(init=False)
class UrlSource(_Immutable):
    """An absolute http(s) ``url`` of type ``media_type``; the provider fetches it."""

    media_type: str
    url: str

    def __init__(self, media_type: str, url: str) -> None:
        object.__setattr__(self, "media_type", check_media_type(media_type, "media_type"))
        object.__setattr__(self, "url", check_url(url, "url"))

    @property
    def type(self) -> Literal["url"]:
        return "url"


MediaSource: TypeAlias = Base64Source | UrlSource


@attrs.frozen(init=False)
class TextBlock(_Immutable):
    """Plain text; may be empty."""

    text: str

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", check_string(text, "text"))

    @property
    def type(self) -> Literal["text"]:
        return "text"


@attrs.frozen(init=False)
class ImageBlock(_Immutable):
    """An image (``image/*``); ``detail`` is a resolution hint some providers honour."""

    source: MediaSource
    detail: Literal["low", "high", "auto"] | None = None

    def __init__(
        self,
        source: MediaSource | Mapping[str, Any],
        detail: Literal["low", "high", "auto"] | None = None,
    ) -> None:
        checked_source, checked_detail = _parser().image_fields(source, detail, "")
        object.__setattr__(self, "source", checked_source)
        object.__setattr__(self, "detail", checked_detail)

    @property
    def type(self) -> Literal["image"]:
        return "image"


@attrs.frozen(init=False)
class VideoBlock(_Immutable):
    """A video (``video/*``)."""

    source: MediaSource

    def __init__(self, source: MediaSource | Mapping[str, Any]) -> None:
        parser = _parser()
        checked = parser.in_family(parser.parse_source(source, "source"), "video", "source")
        object.__setattr__(self, "source", checked)

    @property
    def type(self) -> Literal["video"]:
        return "video"


@attrs.frozen(init=False)
class DocumentBlock(_Immutable):
    """A document: a PDF (``application/pdf``), text of a ``text/*`` type (``text/plain``,
    ``text/markdown``, ``text/csv``, ``text/html``...) or an office file (Word, Excel,
    OpenDocument). ``filename``, optional, names it where a provider has a place for a name.
    """

    source: MediaSource
    filename: str | None = None

    def __init__(
        self, source: MediaSource | Mapping[str, Any], filename: str | None = None
    ) -> None:
        checked_source, checked_name = _parser().document_fields(source, filename, "")
        object.__setattr__(self, "source", checked_source)
        object.__setattr__(self, "filename", checked_name)

    @property
    def type(self) -> Literal["document"]:
        return "document"


@attrs.frozen(init=False)
class AudioBlock(_Immutable):
    """A sound recording (``audio/*``: wav, mp3, ogg/opus, flac, m4a/aac, webm...)."""

    source: MediaSource

    def __init__(self, source: MediaSource | Mapping[str, Any]) -> None:
        parser = _parser()
        checked = parser.in_family(parser.parse_source(source, "source"), "audio", "source")
        object.__setattr__(self, "source", checked)

    @property
    def type(self) -> Literal["audio"]:
        return "audio"


@attrs.frozen(init=False)
class ToolUseBlock(_Immutable):
    """A model's call of a tool; assistant turns only.

    ``input`` is a read-only deep copy of a JSON object (a read-only ``dict`` holding read-only
    ``list``s: equal to the plain data it came from, and ``json.dumps`` takes it);
    ``plain_input()`` gives a fresh mutable ``dict`` for a tool function. Hashing uses ``id``
    and ``name`` only.
    """

    id: str
    name: str
    input: Mapping[str, Any] = attrs.field(hash=False)

    def __init__(self, id: str, name: str, input: Mapping[str, Any]) -> None:
        object.__setattr__(self, "id", check_string(id, "id"))
        object.__setattr__(self, "name", check_string(name, "name"))
        frozen = freeze_json_object(input, "input", DEFAULT_LIMITS.max_depth)
        object.__setattr__(self, "input", frozen)

    @property
    def type(self) -> Literal["tool_use"]:
        return "tool_use"

    def plain_input(self) -> dict[str, Any]:
        """A mutable deep copy of ``input`` made of plain dicts and lists."""
        plain: dict[str, Any] = thaw_json(self.input)
        return plain

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_tool_use, (self.id, self.name, self.plain_input()))


def _rebuild_tool_use(id: str, name: str, plain: Mapping[str, Any]) -> ToolUseBlock:
    """Unpickle without the depth limit: the block was valid when it was pickled."""
    rebuilt: ToolUseBlock = _parser().new(
        ToolUseBlock, id=id, name=name, input=freeze_json_object(plain, "input", sys.maxsize)
    )
    return rebuilt


@attrs.frozen(init=False)
class FilePart(_Immutable):
    """A file returned by a tool (any media type), inside ``ToolResultBlock.content``."""

    filename: str
    source: MediaSource

    def __init__(self, filename: str, source: MediaSource | Mapping[str, Any]) -> None:
        object.__setattr__(self, "filename", check_string(filename, "filename"))
        object.__setattr__(self, "source", _parser().parse_source(source, "source"))

    @property
    def type(self) -> Literal["file"]:
        return "file"


ToolResultPart: TypeAlias = TextBlock | ImageBlock | FilePart


@attrs.frozen(init=False)
class ToolResultBlock(_Immutable):
    """What a tool returned, in a user turn: a string, or text, image and file parts.

    An error result (``is_error=True``) carries a string.
    """

    tool_use_id: str
    content: str | tuple[ToolResultPart, ...]
    is_error: bool = False

    def __init__(
        self,
        tool_use_id: str,
        content: str | Sequence[ToolResultPart | Mapping[str, Any]],
        is_error: bool = False,
    ) -> None:
        fields = _parser().tool_result_fields(
            tool_use_id, content, is_error, "", _parser().Budget(DEFAULT_LIMITS)
        )
        object.__setattr__(self, "tool_use_id", fields[0])
        object.__setattr__(self, "content", fields[1])
        object.__setattr__(self, "is_error", fields[2])

    @property
    def type(self) -> Literal["tool_result"]:
        return "tool_result"


@attrs.frozen(init=False)
class ReasoningBlock(_Immutable):
    """The model's reasoning, kept so it can be sent back; assistant turns only.

    ``signature`` and ``redacted_data`` are opaque provider tokens, passed through unchanged.
    ``provider`` names the provider that issued them (set by the provider plugin): a signed or
    redacted block is sent back only to that provider, and left out of a request to another.
    """

    text: str
    signature: str | None = attrs.field(default=None, repr=_short)
    redacted_data: str | None = attrs.field(default=None, repr=_short)
    provider: str | None = None

    def __init__(
        self,
        text: str,
        signature: str | None = None,
        redacted_data: str | None = None,
        provider: str | None = None,
    ) -> None:
        parser = _parser()
        object.__setattr__(self, "text", check_string(text, "text"))
        object.__setattr__(self, "signature", parser.optional_string(signature, "signature"))
        object.__setattr__(
            self, "redacted_data", parser.optional_string(redacted_data, "redacted_data")
        )
        object.__setattr__(self, "provider", parser.optional_string(provider, "provider"))

    @property
    def type(self) -> Literal["reasoning"]:
        return "reasoning"


ContentBlock: TypeAlias = (
    TextBlock
    | ImageBlock
    | VideoBlock
    | DocumentBlock
    | AudioBlock
    | ToolUseBlock
    | ToolResultBlock
    | ReasoningBlock
)


@attrs.frozen(init=False)
class LLMMessage(_Immutable):
    """One turn: a role and a non-empty tuple of content blocks.

    ``content`` may be given as a list, and its items as blocks or plain dicts.
    """

    role: Role
    content: tuple[ContentBlock, ...]

    def __init__(self, role: Role, content: Sequence[ContentBlock | Mapping[str, Any]]) -> None:
        checked_role = _parser().parse_role(role, "role")
        object.__setattr__(self, "role", checked_role)
        blocks = _parser().parse_content(
            content, "content", checked_role, _parser().Budget(DEFAULT_LIMITS)
        )
        object.__setattr__(self, "content", blocks)


def thaw_json(value: Any) -> Any:
    """A plain, mutable deep copy of frozen JSON: dicts for mappings, lists for tuples and lists.

    What a provider hands an SDK or a JSON encoder that wants plain data: a ``ToolUseBlock``'s
    ``input``, a tool's ``input_schema``, an output schema (each a read-only copy). Leaves are
    shared; any other value is returned as it is. Iterative, so depth costs no stack.
    """
    if not isinstance(value, Mapping | tuple | list):
        return value
    root: Any = {} if isinstance(value, Mapping) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, child in pairs:
            if isinstance(child, Mapping):
                copy: Any = {}
                stack.append((child, copy))
            elif isinstance(child, tuple | list):
                copy = []
                stack.append((child, copy))
            else:
                copy = child
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


# -- reading text out of messages (the one place these are defined) ----------------------------


def user_text(text: str) -> LLMMessage:
    """One user turn holding ``text`` (what a str input to a run stands for)."""
    return LLMMessage("user", (TextBlock(text),))


def text_of(message: LLMMessage) -> str:
    """A message's text blocks joined with no separator."""
    return "".join(block.text for block in message.content if isinstance(block, TextBlock))


def prompt_of(messages: Sequence[LLMMessage]) -> str:
    """The text blocks of the latest user message, joined with no separator (empty when the
    latest user turn has no text, or there is none)."""
    for message in reversed(messages):
        if message.role == "user":
            return text_of(message)
    return ""
