"""The wire-neutral message model: frozen attrs classes for messages, blocks and sources.

Objects are valid by construction: each constructor runs the same checks as loading a dict
(``load_messages``), so an object that exists is never scanned again. Errors from a
constructor carry a path relative to the object being built (``content[0].source.url must
use HTTP or HTTPS``); ``load_messages`` names places from ``messages``.

Sequences are tuples and a tool input is a read-only deep copy (read-only ``dict`` and
``list`` subclasses that compare and JSON-encode like plain ones), so nothing handed out can be
changed through it; ``thaw_json`` gives plain data back. Copying shares the immutable strings:
``copy.deepcopy`` of a message returns the message itself.

``BLOCK_TYPES`` is the one registry of content block types (tag, class, roles, media family,
whether it is a hint such as ``CachePoint`` rather than content):
the parser, the converter, the token estimate and the testing kit read it rather than listing
the blocks again. This module is the public face of the model; the classes are defined with
the parser that builds them (``oma_core._model``), over the sources (``oma_core._sources``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._model import (
    BLOCK_TYPES,
    HINT_CLASSES,
    AudioBlock,
    BlockType,
    CachePoint,
    ContentBlock,
    DocumentBlock,
    Family,
    FilePart,
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultPart,
    ToolUseBlock,
    VideoBlock,
    thaw_json,
)
from ._sources import Base64Source, MediaSource, Role, UrlSource

__all__ = [
    "BLOCK_TYPES",
    "HINT_CLASSES",
    "AudioBlock",
    "Base64Source",
    "BlockType",
    "CachePoint",
    "ContentBlock",
    "DocumentBlock",
    "Family",
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
    "strip_hints",
    "text_of",
    "thaw_json",
    "user_text",
]


# -- reading text out of messages (the one place these are defined) ----------------------------


def user_text(text: str) -> LLMMessage:
    """One user turn holding ``text`` (what a str input to a run stands for)."""
    return LLMMessage("user", (TextBlock(text),))


def text_of(message: LLMMessage) -> str:
    """A message's text blocks joined with no separator."""
    return "".join(block.text for block in message.content if isinstance(block, TextBlock))


def strip_hints(messages: Sequence[LLMMessage]) -> tuple[LLMMessage, ...]:
    """``messages`` without their hint blocks (``CachePoint``): what a provider that declares
    no caching receives. The very tuple (and messages) come back when there is none, so the
    common case is one scan and no copy; a message is never left empty (a message holding
    only hints is refused when it is built)."""
    if not any(isinstance(b, HINT_CLASSES) for m in messages for b in m.content):
        return messages if isinstance(messages, tuple) else tuple(messages)
    return tuple(
        LLMMessage(m.role, [b for b in m.content if not isinstance(b, HINT_CLASSES)])
        if any(isinstance(b, HINT_CLASSES) for b in m.content)
        else m
        for m in messages
    )


def prompt_of(messages: Sequence[LLMMessage]) -> str:
    """The text blocks of the latest user message, joined with no separator (empty when the
    latest user turn has no text, or there is none)."""
    for message in reversed(messages):
        if message.role == "user":
            return text_of(message)
    return ""
