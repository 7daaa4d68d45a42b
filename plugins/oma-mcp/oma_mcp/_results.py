"""An MCP ``CallToolResult`` as an oma tool result: every media string checked by the core,
the size capped, the secrets oma gave the server blanked out.

- ``text`` → a text part;
- ``image`` → an image part, built with ``oma_core.image_base64`` (base64 and MIME checks),
  of one of the types every image-capable provider takes (``IMAGE_MEDIA_TYPES``);
- ``audio`` → a text line describing it, then a file part carrying it (the tool-result model
  has no audio part; a provider that cannot carry file parts in tool results refuses the run
  with ``UnsupportedContentBlockError``, never drops it);
- an embedded text resource → a text part headed by its URI; an embedded blob → a text line
  describing it, then an image part (``image/*``) or a file part;
- a resource link → a text line naming it (nothing is fetched);
- ``structuredContent`` → a text part ``structuredContent: <JSON>``, unless the content
  already holds it: a text part carries that JSON (the spec asks servers to send it as text
  too), every string in it is one the content says (server-filesystem's ``read_media_file``
  repeats its image there), or it is the SDK's wrapping of a plain return value
  (``{"result": v}`` beside ``v``'s text). When it is added, a long string the content
  already carries is written as ``"[the data of content[0]]"``: no payload is sent twice;
- ``isError`` → an error result: the text of the parts, as a string (error results are); its
  media are left out, with a line saying how many.

An item oma cannot pass on becomes a text part in its place, ``[oma dropped content[1]
(...): why]``; the other parts are kept and the run goes on. That is media the core refuses
(bad base64, a media type that is not ``type/subtype``), an image of another type, and media
past ``max_media_bytes`` (decoded bytes, all the result's media together, counted in order).
Text past ``max_result_bytes`` (UTF-8 bytes, all the result's text together) is cut, with a
line saying how much was dropped. Every value in ``secrets`` (what ``env``, ``headers``, the
URL or credential arguments gave the server) is blanked out of every text, before the cut.
Never a crash, never a silent drop. A single text part is a plain str.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from typing import Any

import mcp_types as types

from oma_core import IMAGE_MEDIA_TYPES, Base64Source, InvalidMessageError, TextBlock, image_base64
from oma_core.messages import FilePart
from oma_core.processes import blank
from oma_core.toolkit import ToolOutput

__all__ = ["DEFAULT_MAX_MEDIA_BYTES", "DEFAULT_MAX_RESULT_BYTES", "tool_output"]

#: The most text (UTF-8 bytes) one tool result passes on: 1 MiB.
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
#: The most media (decoded bytes) one tool result passes on: 3.75 MB, the largest image
#: every provider takes inside a tool result (Bedrock's limit; Anthropic's is 5 MiB of base64),
#: so one image a server sends never makes the provider refuse the run.
DEFAULT_MAX_MEDIA_BYTES = 3_750_000

#: A string of the structured value at least this long that the content already carries is
#: written as a reference to it.
_REFERENCED = 64


def tool_output(
    tool: str,
    result: types.CallToolResult,
    *,
    secrets: Iterable[str] = (),
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES,
) -> ToolOutput:
    """``result`` of MCP tool ``tool`` (the server's own name for it) as a ``ToolOutput``:
    at most ``max_result_bytes`` of text and ``max_media_bytes`` of media, without
    ``secrets``."""
    media = _Media(max_media_bytes)
    parts: list[Any] = []
    for index, item in enumerate(result.content):
        where = f"content[{index}]"
        try:
            parts.extend(_parts(item, where, media))
        except _Refused as refused:
            parts.append(TextBlock(f"[oma dropped {where} ({refused.what}): {refused.reason}]"))
    structured = result.structured_content
    if structured is not None:
        said = _structured(structured, result.content, parts)
        if said is not None:
            parts.append(TextBlock("structuredContent: " + said))
    parts = _capped([_scrubbed(part, secrets) for part in parts], max_result_bytes)
    if result.is_error:
        text = "\n".join(p.text for p in parts if isinstance(p, TextBlock))
        media_parts = sum(not isinstance(p, TextBlock) for p in parts)
        if media_parts:
            text += (
                f"\n[oma dropped {media_parts} media part(s) of this error result: an error "
                "result carries text only]"
            )
        return ToolOutput(text.strip() or f"MCP tool {tool!r} failed", is_error=True)
    if not parts:
        return ToolOutput("")
    if len(parts) == 1 and isinstance(parts[0], TextBlock):
        return ToolOutput(parts[0].text)
    return ToolOutput(parts)


class _Refused(Exception):
    def __init__(self, what: str, reason: str) -> None:
        super().__init__(reason)
        self.what = what
        self.reason = reason


class _Media:
    """The media budget of one result: parts are kept in order while they fit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, data: str, what: str) -> None:
        size = _estimate(data)
        if self.used + size > self.limit:
            kept = f" after {self.used} bytes of media kept" if self.used else ""
            raise _Refused(what, f"past max_media_bytes={self.limit}{kept}; ask the tool for less")
        self.used += size


def _parts(item: Any, where: str, media: _Media) -> list[Any]:
    if isinstance(item, types.TextContent):
        return [TextBlock(item.text)]
    if isinstance(item, types.ImageContent):
        return [_image(item.data, item.mime_type, media)]
    if isinstance(item, types.AudioContent):
        what = _what(item.mime_type, "audio", item.data)
        size = _size(item.data, what)
        media.take(item.data, what)
        return [
            TextBlock(f"[audio: {item.mime_type}, {size} bytes, attached as a file]"),
            _file(f"audio{_extension(item.mime_type)}", item.mime_type, item.data, what),
        ]
    if isinstance(item, types.EmbeddedResource):
        return _resource(item.resource, media)
    if isinstance(item, types.ResourceLink):
        mime = f", {item.mime_type}" if item.mime_type else ""
        about = f": {item.description}" if item.description else ""
        return [TextBlock(f"[resource link: {item.uri} ({item.name}{mime}){about}]")]
    return [TextBlock(f"[unsupported MCP content of type {getattr(item, 'type', '?')!r}]")]


def _resource(resource: Any, media: _Media) -> list[Any]:
    mime = resource.mime_type or "application/octet-stream"
    if isinstance(resource, types.TextResourceContents):
        return [TextBlock(f"[resource {resource.uri} ({mime})]\n{resource.text}")]
    what = f"resource {resource.uri}: " + _what(mime, "blob", resource.blob)
    if mime.startswith("image/"):
        image = _image(resource.blob, mime, media, what)
        size = _size(resource.blob, what)
        return [TextBlock(f"[resource {resource.uri} ({mime}, {size} bytes), attached]"), image]
    size = _size(resource.blob, what)
    media.take(resource.blob, what)
    line = TextBlock(f"[resource {resource.uri} ({mime}, {size} bytes), attached]")
    name = resource.uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
    return [line, _file(name, mime, resource.blob, what)]


def _image(data: str, mime: str, media: _Media, what: str | None = None) -> Any:
    what = what or _what(mime, "image", data)
    try:
        image = image_base64(data, mime)
    except InvalidMessageError as error:
        raise _Refused(what, error.reason) from None
    kept = image.source.media_type
    if kept not in IMAGE_MEDIA_TYPES:
        types_ = ", ".join(sorted(IMAGE_MEDIA_TYPES))
        raise _Refused(what, f"{kept} is not one of the image types providers take ({types_})")
    media.take(data, what)
    return image


def _file(name: str, mime: str, data: str, what: str) -> Any:
    try:
        return FilePart(name, Base64Source(mime, data))
    except InvalidMessageError as error:
        raise _Refused(what, error.reason) from None


def _what(mime: str, kind: str, data: str) -> str:
    """``image/png image, 68 bytes``: a part as a note names it (the media type shown
    only when it is a short printable one)."""
    shown = mime if len(mime) <= 100 and mime.isprintable() else "an odd media type"
    return f"{shown} {kind}, {_estimate(data)} bytes"


def _estimate(data: str) -> int:
    """The bytes base64 ``data`` decodes to, computed without decoding."""
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(len(data) // 4 * 3 - padding, 0)


def _size(data: str, what: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise _Refused(what, "must contain raw base64 data") from None


def _extension(mime: str) -> str:
    subtype = mime.partition("/")[2].split("+")[0].split(";")[0]
    return f".{subtype}" if subtype.isalnum() else ""


def _scrubbed(part: Any, secrets: Iterable[str]) -> Any:
    if isinstance(part, TextBlock):
        text = blank(part.text, secrets)
        return part if text == part.text else TextBlock(text)
    return part


def _capped(parts: list[Any], limit: int) -> list[Any]:
    """``parts`` with their text cut at ``limit`` UTF-8 bytes in all, the cut text part (or
    the last one kept) ending with a line saying what went."""
    sizes = [_bytes(p.text) if isinstance(p, TextBlock) else 0 for p in parts]
    total = sum(sizes)
    if total <= limit:
        return parts
    kept: list[Any] = []
    left = limit
    sent = 0
    last_text = -1
    for part, size in zip(parts, sizes, strict=True):
        if not isinstance(part, TextBlock):
            kept.append(part)
            continue
        if left <= 0:
            continue
        if size > left:  # a character cut in two is dropped whole
            text = part.text
            cut = text[:left] if text.isascii() else text.encode()[:left].decode("utf-8", "ignore")
            part = TextBlock(cut)
            size = left = _bytes(cut)
        left -= size
        sent += size
        last_text = len(kept)
        kept.append(part)
    note = (
        f"[oma cut this result: its text is {total} bytes, past max_result_bytes={limit}; "
        f"the last {total - sent} bytes were dropped. Ask the tool for less.]"
    )
    if last_text < 0:
        return [TextBlock(note), *kept]
    kept[last_text] = TextBlock(kept[last_text].text + "\n" + note)
    return kept


def _bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _structured(structured: Any, content: list[Any], parts: list[Any]) -> str | None:
    """The JSON of ``structured`` to add as text, or None when the content already holds it;
    a long string the content carries is written as a reference to its place."""
    if _already_said(structured, parts):
        return None
    said: dict[str, str] = {}
    for index, item in enumerate(content):
        dumped = item.model_dump(mode="json", by_alias=True, exclude_none=True)
        for path, text in _strings(dumped, ""):
            said.setdefault(text, f"[the {path.lstrip('.') or 'value'} of content[{index}]]")
    leaves = list(_leaves(structured))
    if leaves and all(isinstance(leaf, str) and leaf in said for leaf in leaves):
        return None
    return _json(_referenced(structured, said))


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _referenced(value: Any, said: dict[str, str]) -> Any:
    if isinstance(value, str):
        return said.get(value, value) if len(value) >= _REFERENCED else value
    if isinstance(value, dict):
        return {key: _referenced(item, said) for key, item in value.items()}
    if isinstance(value, list):
        return [_referenced(item, said) for item in value]
    return value


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
