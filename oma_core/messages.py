"""The wire-neutral message model: frozen attrs classes for messages, blocks and sources.

Objects are valid by construction: each constructor runs the same checks as loading a dict
(``load_messages``), so an object that exists is never scanned again. Errors from a
constructor carry a path relative to the object being built (``content[0].source.url must
use HTTP or HTTPS``); ``load_messages`` names places from ``messages``.

Sequences are tuples and a tool input is a read-only deep copy (read-only ``dict`` and
``list`` subclasses that compare and JSON-encode like plain ones), so nothing handed out can be
changed through it. Copying shares the immutable strings: ``copy.deepcopy`` of a message
returns the message itself.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from ._checks import (
    DEFAULT_LIMITS,
    ValidationLimits,
    check_base64,
    check_media_type,
    check_string,
    check_url,
    freeze_json_object,
    got,
    join,
    key_segment,
    thaw_json,
)
from .errors import InvalidMessageError

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
_T = TypeVar("_T")


def _short(value: str | None) -> str:
    """Repr of a possibly huge payload: its start and its length, never all of it."""
    if value is None or len(value) <= 40:
        return repr(value)
    return f"{value[:24]!r}... ({len(value)} chars)"


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
        checked_source, checked_detail = _image_fields(source, detail, "")
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
        object.__setattr__(self, "source", _family(_source(source, "source"), "video", "source"))

    @property
    def type(self) -> Literal["video"]:
        return "video"


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
    return _new(
        ToolUseBlock, id=id, name=name, input=freeze_json_object(plain, "input", sys.maxsize)
    )


@attrs.frozen(init=False)
class FilePart(_Immutable):
    """A file returned by a tool (any media type), inside ``ToolResultBlock.content``."""

    filename: str
    source: MediaSource

    def __init__(self, filename: str, source: MediaSource | Mapping[str, Any]) -> None:
        object.__setattr__(self, "filename", check_string(filename, "filename"))
        object.__setattr__(self, "source", _source(source, "source"))

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
        fields = _tool_result_fields(tool_use_id, content, is_error, "", _Budget(DEFAULT_LIMITS))
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
    """

    text: str
    signature: str | None = attrs.field(default=None, repr=_short)
    redacted_data: str | None = attrs.field(default=None, repr=_short)

    def __init__(
        self, text: str, signature: str | None = None, redacted_data: str | None = None
    ) -> None:
        object.__setattr__(self, "text", check_string(text, "text"))
        object.__setattr__(self, "signature", _optional_string(signature, "signature"))
        object.__setattr__(self, "redacted_data", _optional_string(redacted_data, "redacted_data"))

    @property
    def type(self) -> Literal["reasoning"]:
        return "reasoning"


ContentBlock: TypeAlias = (
    TextBlock | ImageBlock | VideoBlock | ToolUseBlock | ToolResultBlock | ReasoningBlock
)


@attrs.frozen(init=False)
class LLMMessage(_Immutable):
    """One turn: a role and a non-empty tuple of content blocks.

    ``content`` may be given as a list, and its items as blocks or plain dicts.
    """

    role: Role
    content: tuple[ContentBlock, ...]

    def __init__(self, role: Role, content: Sequence[ContentBlock | Mapping[str, Any]]) -> None:
        checked_role = _role(role, "role")
        object.__setattr__(self, "role", checked_role)
        blocks = _content(content, "content", checked_role, _Budget(DEFAULT_LIMITS))
        object.__setattr__(self, "content", blocks)


# --- building: the checks shared by constructors and by load_messages ---------------------


def _new(cls: type[_T], **fields: object) -> _T:
    """The trusted path: an instance from already-checked fields, without checking again."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


class _Budget:
    """The block allowance of one input, shared by all its messages."""

    __slots__ = ("blocks_left", "limits")

    def __init__(self, limits: ValidationLimits) -> None:
        self.limits = limits
        self.blocks_left = limits.max_blocks

    def take(self, count: int, path: str) -> None:
        if count > self.blocks_left:
            raise InvalidMessageError(
                path, f"exceeds the limit of {self.limits.max_blocks} content blocks in one input"
            )
        self.blocks_left -= count


_MISSING: Final = object()
_BLOCK_TYPES: Final = ("text", "image", "video", "tool_use", "tool_result", "reasoning")
_ONLY_IN: Final = {"tool_use": "assistant", "reasoning": "assistant", "tool_result": "user"}
_TAG_OF: Final[dict[type, str]] = {
    TextBlock: "text",
    ImageBlock: "image",
    VideoBlock: "video",
    ToolUseBlock: "tool_use",
    ToolResultBlock: "tool_result",
    ReasoningBlock: "reasoning",
    FilePart: "file",
}
_ALL_CLASSES: Final = (
    TextBlock,
    ImageBlock,
    VideoBlock,
    ToolUseBlock,
    ToolResultBlock,
    ReasoningBlock,
    FilePart,
)


def _require(value: Mapping[str, Any], key: str, path: str) -> Any:
    found = value.get(key, _MISSING)
    if found is _MISSING:
        raise InvalidMessageError(join(path, key), "is missing")
    return found


def _only_keys(value: Mapping[Any, Any], allowed: frozenset[str], path: str, what: str) -> None:
    for key in value:
        if key not in allowed:
            where = (path + key_segment(key)).lstrip(".")
            keys = ", ".join(sorted(allowed, key=lambda k: (k != "type", k)))
            raise InvalidMessageError(where, f"is not allowed in {what} (allowed keys: {keys})")


def _role(value: object, path: str) -> Role:
    if isinstance(value, str):
        if value == "user":
            return "user"
        if value == "assistant":
            return "assistant"
    shown = f"got {str.__str__(value)!r}" if isinstance(value, str) and len(value) <= 20 else ""
    raise InvalidMessageError(path, f'must be "user" or "assistant", {shown or got(value)}')


_DETAILS: Final[dict[str, Literal["low", "high", "auto"]]] = {
    "low": "low",
    "high": "high",
    "auto": "auto",
}


def _detail(value: object, path: str) -> Literal["low", "high", "auto"] | None:
    if value is None:
        return None
    if isinstance(value, str) and value in _DETAILS:
        return _DETAILS[value]
    raise InvalidMessageError(path, 'must be "low", "high" or "auto"')


def _optional_string(value: object, path: str) -> str | None:
    return None if value is None else check_string(value, path)


def _family(source: MediaSource, family: str, path: str) -> MediaSource:
    if not source.media_type.startswith(family + "/"):
        article = "an" if family == "image" else "a"
        raise InvalidMessageError(
            join(path, "media_type"),
            f"must be {article} {family} MIME type ({family}/...) in {article} {family} block, "
            f"got {source.media_type}",
        )
    return source


_BASE64_KEYS: Final = frozenset({"type", "media_type", "data"})
_URL_KEYS: Final = frozenset({"type", "media_type", "url"})


def _source(value: object, path: str) -> MediaSource:
    if type(value) is Base64Source or type(value) is UrlSource:
        return value
    if isinstance(value, Mapping):
        tag = value.get("type", _MISSING)
        if tag is _MISSING:
            raise InvalidMessageError(
                join(path, "type"), 'is missing; it must be "base64" or "url"'
            )
        if tag == "base64" and type(tag) is str:
            _only_keys(value, _BASE64_KEYS, path, 'a "base64" source')
            media_type = check_media_type(_require(value, "media_type", path), f"{path}.media_type")
            data = check_base64(_require(value, "data", path), join(path, "data"))
            return _new(Base64Source, media_type=media_type, data=data)
        if tag == "url" and type(tag) is str:
            _only_keys(value, _URL_KEYS, path, 'a "url" source')
            media_type = check_media_type(_require(value, "media_type", path), f"{path}.media_type")
            url = check_url(_require(value, "url", path), join(path, "url"))
            return _new(UrlSource, media_type=media_type, url=url)
        raise InvalidMessageError(join(path, "type"), 'must be "base64" or "url"')
    if isinstance(value, Base64Source | UrlSource):
        return value
    raise InvalidMessageError(
        path, f"must be a media source (a dict, Base64Source or UrlSource), {got(value)}"
    )


def _image_fields(
    source: object, detail: object, path: str
) -> tuple[MediaSource, Literal["low", "high", "auto"] | None]:
    checked = _family(_source(source, join(path, "source")), "image", join(path, "source"))
    return checked, _detail(detail, join(path, "detail"))


def _tool_result_fields(
    tool_use_id: object, content: object, is_error: object, path: str, budget: _Budget
) -> tuple[str, str | tuple[ToolResultPart, ...], bool]:
    checked_id = check_string(tool_use_id, join(path, "tool_use_id"))
    where = join(path, "content")
    checked: str | tuple[ToolResultPart, ...]
    if isinstance(content, str):
        checked = check_string(content, where)
    elif isinstance(content, list | tuple):
        if not content:
            raise InvalidMessageError(where, "must be a string or a non-empty list of parts")
        budget.take(len(content), where)
        checked = tuple([_part(part, f"{where}[{i}]") for i, part in enumerate(content)])
    else:
        raise InvalidMessageError(
            where,
            f"must be a string or a list of text, image and file parts, {got(content)}",
        )
    if type(is_error) is not bool:
        raise InvalidMessageError(
            join(path, "is_error"), f"must be true or false (a bool), {got(is_error)}"
        )
    if is_error and not isinstance(checked, str):
        raise InvalidMessageError(where, "must be a string for an error tool result")
    return checked_id, checked, is_error


_TEXT_KEYS: Final = frozenset({"type", "text"})
_IMAGE_KEYS: Final = frozenset({"type", "source", "detail"})
_IMAGE_PART_KEYS: Final = frozenset({"type", "source"})
_VIDEO_KEYS: Final = frozenset({"type", "source"})
_TOOL_USE_KEYS: Final = frozenset({"type", "id", "name", "input"})
_TOOL_RESULT_KEYS: Final = frozenset({"type", "tool_use_id", "content", "is_error"})
_REASONING_KEYS: Final = frozenset({"type", "text", "signature", "redacted_data"})
_FILE_KEYS: Final = frozenset({"type", "filename", "source"})
_MESSAGE_KEYS: Final = frozenset({"role", "content"})


def _text_from(value: Mapping[str, Any], path: str) -> TextBlock:
    _only_keys(value, _TEXT_KEYS, path, 'a "text" block')
    return _new(TextBlock, text=check_string(_require(value, "text", path), f"{path}.text"))


def _block_from(value: Mapping[str, Any], tag: str, path: str, budget: _Budget) -> ContentBlock:
    """A block of a known ``tag`` (role already checked) from a mapping."""
    if tag == "text":
        return _text_from(value, path)
    if tag == "image":
        _only_keys(value, _IMAGE_KEYS, path, 'an "image" block')
        source, detail = _image_fields(_require(value, "source", path), value.get("detail"), path)
        return _new(ImageBlock, source=source, detail=detail)
    if tag == "video":
        _only_keys(value, _VIDEO_KEYS, path, 'a "video" block')
        where = f"{path}.source"
        source = _family(_source(_require(value, "source", path), where), "video", where)
        return _new(VideoBlock, source=source)
    if tag == "tool_use":
        _only_keys(value, _TOOL_USE_KEYS, path, 'a "tool_use" block')
        return _new(
            ToolUseBlock,
            id=check_string(_require(value, "id", path), f"{path}.id"),
            name=check_string(_require(value, "name", path), f"{path}.name"),
            input=freeze_json_object(
                _require(value, "input", path), f"{path}.input", budget.limits.max_depth
            ),
        )
    if tag == "tool_result":
        _only_keys(value, _TOOL_RESULT_KEYS, path, 'a "tool_result" block')
        tool_use_id, content, is_error = _tool_result_fields(
            _require(value, "tool_use_id", path),
            _require(value, "content", path),
            value.get("is_error", False),
            path,
            budget,
        )
        return _new(ToolResultBlock, tool_use_id=tool_use_id, content=content, is_error=is_error)
    _only_keys(value, _REASONING_KEYS, path, 'a "reasoning" block')
    return _new(
        ReasoningBlock,
        text=check_string(_require(value, "text", path), f"{path}.text"),
        signature=_optional_string(value.get("signature"), f"{path}.signature"),
        redacted_data=_optional_string(value.get("redacted_data"), f"{path}.redacted_data"),
    )


def _block(value: object, path: str, role: Role, budget: _Budget) -> ContentBlock:
    tag = _TAG_OF.get(type(value))
    if tag is None and isinstance(value, _ALL_CLASSES):
        tag = value.type  # a subclass of a block class
    if tag is not None:
        if tag == "file":
            raise InvalidMessageError(path, "is a file part, allowed only inside a tool result")
        _role_rule(tag, role, path)
        return value  # type: ignore[return-value]
    if not isinstance(value, Mapping):
        raise InvalidMessageError(
            path, f"must be a content block (a dict or block object), {got(value)}"
        )
    found = value.get("type", _MISSING)
    if type(found) is not str or found not in _BLOCK_TYPES:
        missing = " (it is missing)" if found is _MISSING else ""
        names = ", ".join(f'"{t}"' for t in _BLOCK_TYPES)
        raise InvalidMessageError(join(path, "type"), f"must be one of {names}{missing}")
    _role_rule(found, role, path)
    return _block_from(value, found, path, budget)


def _role_rule(tag: str, role: Role, path: str) -> None:
    only = _ONLY_IN.get(tag)
    if only is not None and only != role:
        raise InvalidMessageError(
            path, f'is a "{tag}" block, which only {only} messages may contain'
        )


def _part(value: object, path: str) -> ToolResultPart:
    kind = type(value)
    if kind is TextBlock or kind is FilePart:
        return value  # type: ignore[return-value]
    if isinstance(value, ImageBlock):
        if value.detail is not None:
            raise InvalidMessageError(
                join(path, "detail"), "is not allowed on an image inside a tool result"
            )
        return value
    if isinstance(value, TextBlock | FilePart):
        return value
    if isinstance(value, _ALL_CLASSES) or not isinstance(value, Mapping):
        raise InvalidMessageError(
            path, f"must be a tool result part (text, image or file), {got(value)}"
        )
    tag = value.get("type", _MISSING)
    if tag == "text" and type(tag) is str:
        return _text_from(value, path)
    if tag == "image" and type(tag) is str:
        _only_keys(value, _IMAGE_PART_KEYS, path, "an image inside a tool result")
        source, _ = _image_fields(_require(value, "source", path), None, path)
        return _new(ImageBlock, source=source, detail=None)
    if tag == "file" and type(tag) is str:
        _only_keys(value, _FILE_KEYS, path, 'a "file" part')
        return _new(
            FilePart,
            filename=check_string(_require(value, "filename", path), f"{path}.filename"),
            source=_source(_require(value, "source", path), f"{path}.source"),
        )
    missing = " (it is missing)" if tag is _MISSING else ""
    raise InvalidMessageError(join(path, "type"), f'must be "text", "image" or "file"{missing}')


def _content(value: object, path: str, role: Role, budget: _Budget) -> tuple[ContentBlock, ...]:
    if not isinstance(value, list | tuple):
        raise InvalidMessageError(path, f"must be a list of content blocks, {got(value)}")
    if not value:
        raise InvalidMessageError(path, "must contain at least one content block")
    budget.take(len(value), path)
    return tuple([_block(block, f"{path}[{i}]", role, budget) for i, block in enumerate(value)])


def _message(value: object, path: str, budget: _Budget) -> LLMMessage:
    """One message from a mapping or an ``LLMMessage`` (taken as it is, never re-scanned)."""
    if isinstance(value, LLMMessage):
        budget.take(len(value.content), f"{path}.content")
        return value
    if not isinstance(value, Mapping):
        raise InvalidMessageError(path, f"must be a message (a dict or LLMMessage), {got(value)}")
    _only_keys(value, _MESSAGE_KEYS, path, "a message")
    role = _role(_require(value, "role", path), f"{path}.role")
    content = _content(_require(value, "content", path), f"{path}.content", role, budget)
    return _new(LLMMessage, role=role, content=content)
