"""An MCP ``CallToolResult`` as an oma tool result, every media string checked by the core.

- ``text`` → a text part;
- ``image`` → an image part, built with ``oma_core.image_base64`` (base64 and MIME checks);
- ``audio`` → a text line describing it, then a file part carrying it (the tool-result model
  has no audio part; a provider that cannot carry file parts in tool results refuses the run
  with ``UnsupportedContentBlockError``, never drops it);
- an embedded text resource → a text part headed by its URI; an embedded blob → a text line
  describing it, then an image part (``image/*``) or a file part;
- a resource link → a text line naming it (nothing is fetched);
- ``structuredContent`` → a text part ``structuredContent: <JSON>``, unless a text part already
  carries that JSON (the spec asks servers to send it as text too) or the result is the SDK's
  wrapping of a plain return value (``{"result": v}`` beside ``v``'s text);
- ``isError`` → an error result: the text of the parts, as a string (error results are).

Content the core refuses (bad base64, a wrong media type) makes an error result naming the
place and the problem: never a crash, never a silent drop. A single text part is a plain str.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from oma_core import Base64Source, InvalidMessageError, TextBlock, image_base64
from oma_core.messages import FilePart
from oma_core.toolkit import ToolOutput

__all__ = ["tool_output"]


def tool_output(tool: str, result: types.CallToolResult) -> ToolOutput:
    """``result`` of MCP tool ``tool`` (the server's own name for it) as a ``ToolOutput``."""
    parts: list[Any] = []
    try:
        for index, item in enumerate(result.content):
            parts.extend(_parts(item, f"content[{index}]"))
    except _Refused as refused:
        return ToolOutput(
            f"MCP tool {tool!r} returned {refused.where} that oma refuses: {refused.reason}",
            is_error=True,
        )
    structured = result.structured_content
    if structured is not None and not _already_said(structured, parts):
        parts.append(TextBlock("structuredContent: " + _json(structured)))
    if result.is_error:
        text = "\n".join(p.text for p in parts if isinstance(p, TextBlock))
        return ToolOutput(text or f"MCP tool {tool!r} failed", is_error=True)
    if not parts:
        return ToolOutput("")
    if len(parts) == 1 and isinstance(parts[0], TextBlock):
        return ToolOutput(parts[0].text)
    return ToolOutput(parts)


class _Refused(Exception):
    def __init__(self, where: str, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.reason = reason


def _parts(item: Any, where: str) -> list[Any]:
    if isinstance(item, types.TextContent):
        return [TextBlock(item.text)]
    if isinstance(item, types.ImageContent):
        return [_image(item.data, item.mime_type, where)]
    if isinstance(item, types.AudioContent):
        size = _size(item.data, where)
        return [
            TextBlock(f"[audio: {item.mime_type}, {size} bytes, attached as a file]"),
            _file(f"audio{_extension(item.mime_type)}", item.mime_type, item.data, where),
        ]
    if isinstance(item, types.EmbeddedResource):
        return _resource(item.resource, where)
    if isinstance(item, types.ResourceLink):
        mime = f", {item.mime_type}" if item.mime_type else ""
        about = f": {item.description}" if item.description else ""
        return [TextBlock(f"[resource link: {item.uri} ({item.name}{mime}){about}]")]
    return [TextBlock(f"[unsupported MCP content of type {getattr(item, 'type', '?')!r}]")]


def _resource(resource: Any, where: str) -> list[Any]:
    mime = resource.mime_type or "application/octet-stream"
    if isinstance(resource, types.TextResourceContents):
        return [TextBlock(f"[resource {resource.uri} ({mime})]\n{resource.text}")]
    size = _size(resource.blob, f"{where}.resource.blob")
    line = TextBlock(f"[resource {resource.uri} ({mime}, {size} bytes), attached]")
    if mime.startswith("image/"):
        return [line, _image(resource.blob, mime, f"{where}.resource.blob")]
    name = resource.uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
    return [line, _file(name, mime, resource.blob, f"{where}.resource.blob")]


def _image(data: str, mime: str, where: str) -> Any:
    try:
        return image_base64(data, mime)
    except InvalidMessageError as error:
        raise _Refused(where, error.reason) from None


def _file(name: str, mime: str, data: str, where: str) -> Any:
    try:
        return FilePart(name, Base64Source(mime, data))
    except InvalidMessageError as error:
        raise _Refused(where, error.reason) from None


def _size(data: str, where: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise _Refused(where, "must contain raw base64 data") from None


def _extension(mime: str) -> str:
    subtype = mime.partition("/")[2].split("+")[0].split(";")[0]
    return f".{subtype}" if subtype.isalnum() else ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _already_said(structured: Any, parts: list[Any]) -> bool:
    texts = [p.text for p in parts if isinstance(p, TextBlock)]
    for text in texts:
        try:
            if json.loads(text) == structured:
                return True
        except ValueError:
            pass
    if isinstance(structured, dict) and set(structured) == {"result"}:
        value = structured["result"]
        said = value if isinstance(value, str) else _json(value)
        return said in texts or any(_loads(t) == value for t in texts)
    return False


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _Refused  # equal to no JSON value
