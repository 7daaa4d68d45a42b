"""The wire-neutral message model: frozen attrs classes for messages, blocks and sources.

Objects are valid by construction: building one runs the same checks as loading a dict
(see ``validation``), so an object that exists is never scanned again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs

__all__ = [
    "Base64Source",
    "ContentBlock",
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
]

Role: TypeAlias = Literal["user", "assistant"]


@attrs.frozen
class Base64Source:
    """Raw canonical base64 ``data`` of type ``media_type``."""

    media_type: str
    data: str

    @property
    def type(self) -> Literal["base64"]:
        return "base64"


@attrs.frozen
class UrlSource:
    """An absolute http(s) ``url`` of type ``media_type``."""

    media_type: str
    url: str

    @property
    def type(self) -> Literal["url"]:
        return "url"


MediaSource: TypeAlias = Base64Source | UrlSource


@attrs.frozen
class TextBlock:
    text: str

    @property
    def type(self) -> Literal["text"]:
        return "text"


@attrs.frozen
class ImageBlock:
    source: MediaSource
    detail: Literal["low", "high", "auto"] | None = None

    @property
    def type(self) -> Literal["image"]:
        return "image"


@attrs.frozen
class VideoBlock:
    source: MediaSource

    @property
    def type(self) -> Literal["video"]:
        return "video"


@attrs.frozen
class ToolUseBlock:
    """A model's call of a tool; ``input`` is a read-only JSON object."""

    id: str
    name: str
    input: Mapping[str, Any]

    @property
    def type(self) -> Literal["tool_use"]:
        return "tool_use"


@attrs.frozen
class FilePart:
    """A file inside a tool result."""

    filename: str
    source: MediaSource

    @property
    def type(self) -> Literal["file"]:
        return "file"


ToolResultPart: TypeAlias = TextBlock | ImageBlock | FilePart


@attrs.frozen
class ToolResultBlock:
    tool_use_id: str
    content: str | tuple[ToolResultPart, ...]
    is_error: bool = False

    @property
    def type(self) -> Literal["tool_result"]:
        return "tool_result"


@attrs.frozen
class ReasoningBlock:
    text: str
    signature: str | None = None
    redacted_data: str | None = None

    @property
    def type(self) -> Literal["reasoning"]:
        return "reasoning"


ContentBlock: TypeAlias = (
    TextBlock | ImageBlock | VideoBlock | ToolUseBlock | ToolResultBlock | ReasoningBlock
)


@attrs.frozen
class LLMMessage:
    role: Role
    content: tuple[ContentBlock, ...]
