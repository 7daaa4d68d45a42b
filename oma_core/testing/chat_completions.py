"""The Chat Completions form of the kit's samples, for ``assert_on_wire`` in the kits of plugins
whose wire is OpenAI's Chat Completions (or a bridge handed that form, as LiteLLM is).

Written from OpenAI's API reference (``POST /v1/chat/completions``), not from any plugin:
an image is an ``image_url`` part (inline base64 as a ``data:`` URL); a PDF, or a ``file``
block, is a ``file`` part with ``filename`` and ``file_data``; a base64 text document is a
``text`` part holding its text framed with its name and media type (as pydantic-ai inlines
files, since the API takes no text files); audio is an ``input_audio`` part with the base64
data and its format (``wav`` or ``mp3``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

__all__ = ["chat_media_part", "chat_wire_items", "data_url"]

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}


def data_url(source: Mapping[str, Any]) -> str:
    """A sample's source as a URL: ``data:`` for base64, else its own URL."""
    if source["type"] == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    return str(source["url"])


def chat_wire_items(body: Mapping[str, Any]) -> list[Any]:
    """Every message, content part and tool call of a request body, flattened (a sample's
    counterpart is found among them with ``in``)."""
    items: list[Any] = []
    for message in body["messages"]:
        items.append(message)
        if isinstance(message.get("content"), list):
            items.extend(message["content"])
        items.extend(message.get("tool_calls") or ())
    return items


def chat_media_part(block: Mapping[str, Any]) -> dict[str, Any]:
    """The content part of a sample's ``image``, ``document``, ``file`` or ``audio`` block
    (see the module docstring); ``ValueError`` for another block type."""
    kind, source = block["type"], block["source"]
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": data_url(source)}}
    if kind == "audio":
        data = {"data": source["data"], "format": _AUDIO_FORMATS[source["media_type"]]}
        return {"type": "input_audio", "input_audio": data}
    if kind == "file":
        return {
            "type": "file",
            "file": {"filename": block["filename"], "file_data": data_url(source)},
        }
    if kind != "document":
        raise ValueError(f"no Chat Completions media part for a {kind!r} block")
    if source["type"] == "base64" and source["media_type"].startswith("text/"):
        text = base64.b64decode(source["data"]).decode("utf-8")
        named = f' id="{block["filename"]}"' if block.get("filename") else ""
        media_type = source["media_type"]
        framed = (
            f'-----BEGIN FILE{named} type="{media_type}"-----\n{text}\n-----END FILE{named}-----'
        )
        return {"type": "text", "text": framed}
    filename = block.get("filename") or "document.pdf"
    return {"type": "file", "file": {"filename": filename, "file_data": data_url(source)}}
