"""A rough, provider-independent token estimate for budgets and history trimming.

Four characters make a token; an image costs a flat ``image_tokens`` whatever its size (what
providers really bill depends on resolution and differs between them); a video costs a
quarter of its payload or URL length. A text document costs what its text would (a quarter
of its bytes); a PDF or office document one token per 40 bytes (about 2,500 per 100 KB page,
the middle of what providers bill per page); audio one token per 500 bytes (32 tokens a
second, the rate Gemini documents, at 128 kbit/s). A document or audio clip by URL, whose size
is not known, costs a flat ``image_tokens``. Good for "is this conversation getting too
long?", not for billing.
"""

from __future__ import annotations

import json

from .media import decoded_size
from .messages import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from .validation import load_messages

__all__ = ["estimate_tokens"]


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
    images = 0
    video_tokens = 0
    media_tokens = 0
    for message in load_messages(messages, allow_empty=True):
        for block in message.content:
            if isinstance(block, TextBlock | ReasoningBlock):
                characters += len(block.text)
            elif isinstance(block, ImageBlock):
                images += 1
            elif isinstance(block, VideoBlock):
                source = block.source
                payload = source.data if source.type == "base64" else source.url
                video_tokens += _ceil_quarter(len(payload))
            elif isinstance(block, DocumentBlock | AudioBlock):
                media_tokens += _media_tokens(block, image_tokens)
            elif isinstance(block, ToolUseBlock):
                text = json.dumps(block.plain_input(), ensure_ascii=False, separators=(",", ":"))
                characters += len(text)
            elif isinstance(block, ToolResultBlock):
                if isinstance(block.content, str):
                    characters += len(block.content)
                    continue
                for part in block.content:
                    if isinstance(part, TextBlock):
                        characters += len(part.text)
                    elif isinstance(part, ImageBlock):
                        images += 1
    return _ceil_quarter(characters) + images * image_tokens + video_tokens + media_tokens


def _media_tokens(block: DocumentBlock | AudioBlock, by_url: int) -> int:
    source = block.source
    if source.type == "url":
        return by_url
    size = decoded_size(source)
    if isinstance(block, AudioBlock):
        return -(-size // 500)
    if source.media_type.startswith("text/"):
        return _ceil_quarter(size)
    return -(-size // 40)
