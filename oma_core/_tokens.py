"""A rough, provider-independent token estimate for budgets and history trimming.

Four characters make a token; an image costs a flat ``image_tokens`` whatever its size (what
providers really bill depends on resolution and differs between them); a video costs a
quarter of its payload or URL length. A text document costs what its text would (a quarter
of its bytes); a PDF or office document one token per 40 bytes (about 2,500 per 100 KB page,
the middle of what providers bill per page); audio one token per 500 bytes (32 tokens a
second, the rate Gemini documents, at 128 kbit/s). A document or audio clip by URL, whose size
is not known, costs a flat ``image_tokens``. Good for "is this conversation getting too
long?", not for billing.

Each block's rule comes from its entry in ``oma_core.messages.BLOCK_TYPES``: a media block
costs what its family costs, a block with a ``text`` field what its text does, a tool call
its input as JSON, a tool result its text and parts; any other block (a marker carrying
neither text nor media) costs nothing. A new block type needs no change here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .media import decoded_size
from .messages import BLOCK_TYPES, BlockType, Family, MediaSource, ToolResultBlock, ToolUseBlock
from .validation import load_messages

__all__ = ["estimate_tokens"]

#: What a block costs: characters (summed over the conversation, made tokens once at the end)
#: and tokens of its own.
_Cost: TypeAlias = tuple[int, int]
#: A block's rule, given the block and the flat price of an image (``image_tokens``).
_Rule: TypeAlias = Callable[[Any, int], _Cost]

_NOTHING: Final[_Cost] = (0, 0)


def _ceil_quarter(count: int) -> int:
    return -(-count // 4)


def estimate_tokens(messages: object, image_tokens: int = 1000) -> int:
    """Estimate the tokens of ``messages`` (objects or dicts; dicts are validated first).

    ceil(characters / 4) over text, reasoning text, tool inputs (as compact JSON) and
    tool-result text; plus ``image_tokens`` per image, tool-result images included; plus
    ceil(length / 4) of each video's base64 payload or URL; plus, per document and audio
    clip, the rates of the module's docstring.
    """
    characters = 0
    tokens = 0
    for message in load_messages(messages, allow_empty=True):
        for block in message.content:
            more_characters, more_tokens = _RULES[block.type](block, image_tokens)
            characters += more_characters
            tokens += more_tokens
    return _ceil_quarter(characters) + tokens


# --- media, by family ----------------------------------------------------------------------


def _flat(source: MediaSource, flat: int) -> int:
    return flat


def _payload_quarter(source: MediaSource, flat: int) -> int:
    payload = source.data if source.type == "base64" else source.url
    return _ceil_quarter(len(payload))


def _document(source: MediaSource, flat: int) -> int:
    if source.type == "url":
        return flat
    size = decoded_size(source)
    if source.media_type.startswith("text/"):
        return _ceil_quarter(size)
    return -(-size // 40)


def _audio(source: MediaSource, flat: int) -> int:
    if source.type == "url":
        return flat
    return -(-decoded_size(source) // 500)


#: A media family's price; a family without one here costs what media of unknown size does.
_BY_FAMILY: Final[Mapping[Family, Callable[[MediaSource, int], int]]] = {
    "image": _flat,
    "video": _payload_quarter,
    "document": _document,
    "audio": _audio,
}


# --- each block type's rule ----------------------------------------------------------------


def _text(block: Any, flat: int) -> _Cost:
    return len(block.text), 0


def _nothing(block: Any, flat: int) -> _Cost:
    return _NOTHING


def _tool_use(block: ToolUseBlock, flat: int) -> _Cost:
    text = json.dumps(block.plain_input(), ensure_ascii=False, separators=(",", ":"))
    return len(text), 0


def _tool_result(block: ToolResultBlock, flat: int) -> _Cost:
    if isinstance(block.content, str):
        return len(block.content), 0
    characters = tokens = 0
    for part in block.content:  # text and images as blocks are; a file part costs nothing
        more_characters, more_tokens = _RULES.get(part.type, _nothing)(part, flat)
        characters += more_characters
        tokens += more_tokens
    return characters, tokens


def _media_rule(family: Family) -> _Rule:
    price = _BY_FAMILY.get(family, _flat)

    def rule(block: Any, flat: int) -> _Cost:
        return 0, price(block.source, flat)

    return rule


def _rule(kind: BlockType) -> _Rule:
    """A block type's rule, read off its registry entry (the two tool blocks carry
    structure, not text, and have rules of their own)."""
    if kind.cls is ToolUseBlock:
        return _tool_use
    if kind.cls is ToolResultBlock:
        return _tool_result
    if kind.family is not None:
        return _media_rule(kind.family)
    if "text" in kind.keys:
        return _text
    return _nothing


#: block tag -> its rule
_RULES: Final[dict[str, _Rule]] = {tag: _rule(kind) for tag, kind in BLOCK_TYPES.items()}
