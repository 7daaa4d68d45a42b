"""The wire shape of DESIGN section 2, as one parser: plain data in, message objects out.

This is the one description of which tags, keys and roles a message may carry. The message
classes' constructors use it for nested dicts, ``validation.load_messages`` for whole inputs and
``serialization``'s converter for structuring. Checks run in document order and the first
violation raises ``InvalidMessageError`` naming its place; message objects met along the way are
valid by construction and taken as they are, never scanned again. The leaf rules (text, MIME
types, base64, URLs, tool inputs) live in ``_checks``.

The classes live in ``messages``, which imports this module and hands them over with ``bind``
when it is defined; so this module never imports ``messages`` at run time (no import cycle), and
the parser names the classes as the globals below. The names in ``__all__`` are the package's
internal interface to the parser, not public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeVar

from . import messages as model
from ._checks import (
    ValidationLimits,
    check_base64,
    check_media_type,
    check_string,
    check_url,
    freeze_json_object,
    got,
    join,
    key_segment,
)
from .errors import InvalidMessageError
from .messages import (
    AudioBlock,
    Base64Source,
    DocumentBlock,
    FilePart,
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
)

__all__ = [
    "BLOCK_TYPES",
    "DOCUMENT_TYPES",
    "Budget",
    "document_fields",
    "image_fields",
    "in_family",
    "new",
    "optional_string",
    "parse_block",
    "parse_content",
    "parse_detail",
    "parse_message",
    "parse_part",
    "parse_role",
    "parse_source",
    "tag_of",
    "tool_result_fields",
]

_T = TypeVar("_T")
Detail = Literal["low", "high", "auto"]

#: every tagged class -> its wire "type"
_TAG_OF: dict[type, str] = {
    Base64Source: "base64",
    UrlSource: "url",
    TextBlock: "text",
    ImageBlock: "image",
    VideoBlock: "video",
    DocumentBlock: "document",
    AudioBlock: "audio",
    ToolUseBlock: "tool_use",
    ToolResultBlock: "tool_result",
    ReasoningBlock: "reasoning",
    FilePart: "file",
}
#: the same, less the sources
_BLOCK_TAG_OF: dict[type, str] = {
    cls: tag for cls, tag in _TAG_OF.items() if cls not in (Base64Source, UrlSource)
}
_ALL_CLASSES: tuple[type, ...] = (
    TextBlock,
    ImageBlock,
    VideoBlock,
    DocumentBlock,
    AudioBlock,
    ToolUseBlock,
    ToolResultBlock,
    ReasoningBlock,
    FilePart,
)


def tag_of(cls: type) -> str:
    """The wire ``type`` of a block, part or source class (``ImageBlock`` -> ``"image"``)."""
    return _TAG_OF[cls]


def new(cls: type[_T], **fields: object) -> _T:
    """The trusted path: an instance from already-checked fields, without checking again."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


class Budget:
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
#: The block tags, in the order errors list them (the newer kinds last).
BLOCK_TYPES: Final = (
    *("text", "image", "video", "tool_use", "tool_result", "reasoning"),
    *("document", "audio"),
)
#: The media types a document may have besides ``text/*``: PDF and the office formats.
DOCUMENT_TYPES: Final = frozenset(
    {
        "application/pdf",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.oasis.opendocument.text",
        "application/vnd.oasis.opendocument.spreadsheet",
    }
)
_ONLY_IN: Final = {"tool_use": "assistant", "reasoning": "assistant", "tool_result": "user"}
_DETAILS: Final[dict[str, Detail]] = {"low": "low", "high": "high", "auto": "auto"}

_BASE64_KEYS: Final = frozenset({"type", "media_type", "data"})
_URL_KEYS: Final = frozenset({"type", "media_type", "url"})
_TEXT_KEYS: Final = frozenset({"type", "text"})
_IMAGE_KEYS: Final = frozenset({"type", "source", "detail"})
_IMAGE_PART_KEYS: Final = frozenset({"type", "source"})
_VIDEO_KEYS: Final = frozenset({"type", "source"})
_DOCUMENT_KEYS: Final = frozenset({"type", "source", "filename"})
_AUDIO_KEYS: Final = frozenset({"type", "source"})
_TOOL_USE_KEYS: Final = frozenset({"type", "id", "name", "input"})
_TOOL_RESULT_KEYS: Final = frozenset({"type", "tool_use_id", "content", "is_error"})
_REASONING_KEYS: Final = frozenset({"type", "text", "signature", "redacted_data", "provider"})
_FILE_KEYS: Final = frozenset({"type", "filename", "source"})
_MESSAGE_KEYS: Final = frozenset({"role", "content"})


# --- fields ------------------------------------------------------------------------------


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


def parse_role(value: object, path: str) -> model.Role:
    """``"user"`` or ``"assistant"`` (an exact ``str``)."""
    if isinstance(value, str):
        if value == "user":
            return "user"
        if value == "assistant":
            return "assistant"
    shown = f"got {str.__str__(value)!r}" if isinstance(value, str) and len(value) <= 20 else ""
    raise InvalidMessageError(path, f'must be "user" or "assistant", {shown or got(value)}')


def parse_detail(value: object, path: str) -> Detail | None:
    """An image's ``detail``: None, ``"low"``, ``"high"`` or ``"auto"``."""
    if value is None:
        return None
    if isinstance(value, str) and value in _DETAILS:
        return _DETAILS[value]
    raise InvalidMessageError(path, 'must be "low", "high" or "auto"')


def optional_string(value: object, path: str) -> str | None:
    return None if value is None else check_string(value, path)


def in_family(source: model.MediaSource, family: str, path: str) -> model.MediaSource:
    """``source`` if its media type is ``family/...`` (an image block carries ``image/*``)."""
    if not source.media_type.startswith(family + "/"):
        article = "an" if family in ("image", "audio") else "a"
        raise InvalidMessageError(
            join(path, "media_type"),
            f"must be {article} {family} MIME type ({family}/...) in {article} {family} block, "
            f"got {source.media_type}",
        )
    return source


# --- sources, parts, blocks, messages ------------------------------------------------------


def parse_source(value: object, path: str) -> model.MediaSource:
    """A media source from a mapping, or a source object as it is."""
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
            return new(Base64Source, media_type=media_type, data=data)
        if tag == "url" and type(tag) is str:
            _only_keys(value, _URL_KEYS, path, 'a "url" source')
            media_type = check_media_type(_require(value, "media_type", path), f"{path}.media_type")
            url = check_url(_require(value, "url", path), join(path, "url"))
            return new(UrlSource, media_type=media_type, url=url)
        raise InvalidMessageError(join(path, "type"), 'must be "base64" or "url"')
    if isinstance(value, Base64Source | UrlSource):
        return value
    raise InvalidMessageError(
        path, f"must be a media source (a dict, Base64Source or UrlSource), {got(value)}"
    )


def image_fields(
    source: object, detail: object, path: str
) -> tuple[model.MediaSource, Detail | None]:
    """An image block's checked ``source`` and ``detail``."""
    where = join(path, "source")
    return in_family(parse_source(source, where), "image", where), parse_detail(
        detail, join(path, "detail")
    )


def document_fields(
    source: object, filename: object, path: str
) -> tuple[model.MediaSource, str | None]:
    """A document block's checked ``source`` (PDF, ``text/*`` or an office type) and
    ``filename``."""
    where = join(path, "source")
    checked = parse_source(source, where)
    media_type = checked.media_type
    if not (media_type.startswith("text/") or media_type in DOCUMENT_TYPES):
        raise InvalidMessageError(
            join(where, "media_type"),
            "must be a document MIME type (application/pdf, text/... or an office type) "
            f"in a document block, got {media_type}",
        )
    return checked, optional_string(filename, join(path, "filename"))


def tool_result_fields(
    tool_use_id: object, content: object, is_error: object, path: str, budget: Budget
) -> tuple[str, str | tuple[model.ToolResultPart, ...], bool]:
    """A tool result's checked ``tool_use_id``, ``content`` and ``is_error``."""
    checked_id = check_string(tool_use_id, join(path, "tool_use_id"))
    where = join(path, "content")
    checked: str | tuple[model.ToolResultPart, ...]
    if isinstance(content, str):
        checked = check_string(content, where)
    elif isinstance(content, list | tuple):
        if not content:
            raise InvalidMessageError(where, "must be a string or a non-empty list of parts")
        budget.take(len(content), where)
        checked = tuple([parse_part(part, f"{where}[{i}]") for i, part in enumerate(content)])
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


def _text_from(value: Mapping[str, Any], path: str) -> model.TextBlock:
    _only_keys(value, _TEXT_KEYS, path, 'a "text" block')
    return new(TextBlock, text=check_string(_require(value, "text", path), f"{path}.text"))


def _block_from(
    value: Mapping[str, Any], tag: str, path: str, budget: Budget
) -> model.ContentBlock:
    """A block of a known ``tag`` (role already checked) from a mapping."""
    if tag == "text":
        return _text_from(value, path)
    if tag == "image":
        _only_keys(value, _IMAGE_KEYS, path, 'an "image" block')
        source, detail = image_fields(_require(value, "source", path), value.get("detail"), path)
        return new(ImageBlock, source=source, detail=detail)
    if tag == "video":
        _only_keys(value, _VIDEO_KEYS, path, 'a "video" block')
        where = f"{path}.source"
        source = in_family(parse_source(_require(value, "source", path), where), "video", where)
        return new(VideoBlock, source=source)
    if tag == "document":
        _only_keys(value, _DOCUMENT_KEYS, path, 'a "document" block')
        source, filename = document_fields(
            _require(value, "source", path), value.get("filename"), path
        )
        return new(DocumentBlock, source=source, filename=filename)
    if tag == "audio":
        _only_keys(value, _AUDIO_KEYS, path, 'an "audio" block')
        where = f"{path}.source"
        source = in_family(parse_source(_require(value, "source", path), where), "audio", where)
        return new(AudioBlock, source=source)
    if tag == "tool_use":
        _only_keys(value, _TOOL_USE_KEYS, path, 'a "tool_use" block')
        return new(
            ToolUseBlock,
            id=check_string(_require(value, "id", path), f"{path}.id"),
            name=check_string(_require(value, "name", path), f"{path}.name"),
            input=freeze_json_object(
                _require(value, "input", path), f"{path}.input", budget.limits.max_depth
            ),
        )
    if tag == "tool_result":
        _only_keys(value, _TOOL_RESULT_KEYS, path, 'a "tool_result" block')
        tool_use_id, content, is_error = tool_result_fields(
            _require(value, "tool_use_id", path),
            _require(value, "content", path),
            value.get("is_error", False),
            path,
            budget,
        )
        return new(ToolResultBlock, tool_use_id=tool_use_id, content=content, is_error=is_error)
    _only_keys(value, _REASONING_KEYS, path, 'a "reasoning" block')
    return new(
        ReasoningBlock,
        text=check_string(_require(value, "text", path), f"{path}.text"),
        signature=optional_string(value.get("signature"), f"{path}.signature"),
        redacted_data=optional_string(value.get("redacted_data"), f"{path}.redacted_data"),
        provider=optional_string(value.get("provider"), f"{path}.provider"),
    )


def parse_block(
    value: object, path: str, role: model.Role | None, budget: Budget
) -> model.ContentBlock:
    """A content block from a mapping, or a block object as it is; ``role`` (when given)
    is the role of the message holding it, for the rule of which blocks each role may carry."""
    tag = _BLOCK_TAG_OF.get(type(value))
    if tag is None and isinstance(value, _ALL_CLASSES):
        tag = value.type  # type: ignore[attr-defined]  # a subclass of a block class
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
    if type(found) is not str or found not in BLOCK_TYPES:
        missing = " (it is missing)" if found is _MISSING else ""
        names = ", ".join(f'"{t}"' for t in BLOCK_TYPES)
        raise InvalidMessageError(join(path, "type"), f"must be one of {names}{missing}")
    _role_rule(found, role, path)
    return _block_from(value, found, path, budget)


def _role_rule(tag: str, role: model.Role | None, path: str) -> None:
    only = _ONLY_IN.get(tag)
    if only is not None and role is not None and only != role:
        raise InvalidMessageError(
            path, f'is a "{tag}" block, which only {only} messages may contain'
        )


def parse_part(value: object, path: str) -> model.ToolResultPart:
    """A tool-result part (text, image without ``detail``, file) from a mapping or an object."""
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
        source, _ = image_fields(_require(value, "source", path), None, path)
        return new(ImageBlock, source=source, detail=None)
    if tag == "file" and type(tag) is str:
        _only_keys(value, _FILE_KEYS, path, 'a "file" part')
        return new(
            FilePart,
            filename=check_string(_require(value, "filename", path), f"{path}.filename"),
            source=parse_source(_require(value, "source", path), f"{path}.source"),
        )
    missing = " (it is missing)" if tag is _MISSING else ""
    raise InvalidMessageError(join(path, "type"), f'must be "text", "image" or "file"{missing}')


def parse_content(
    value: object, path: str, role: model.Role, budget: Budget
) -> tuple[model.ContentBlock, ...]:
    """A message's non-empty list of blocks, as a tuple."""
    if not isinstance(value, list | tuple):
        raise InvalidMessageError(path, f"must be a list of content blocks, {got(value)}")
    if not value:
        raise InvalidMessageError(path, "must contain at least one content block")
    budget.take(len(value), path)
    return tuple(
        [parse_block(block, f"{path}[{i}]", role, budget) for i, block in enumerate(value)]
    )


def parse_message(value: object, path: str, budget: Budget) -> model.LLMMessage:
    """One message from a mapping or an ``LLMMessage`` (taken as it is, never re-scanned)."""
    if isinstance(value, LLMMessage):
        budget.take(len(value.content), f"{path}.content")
        return value
    if not isinstance(value, Mapping):
        raise InvalidMessageError(path, f"must be a message (a dict or LLMMessage), {got(value)}")
    _only_keys(value, _MESSAGE_KEYS, path, "a message")
    role = parse_role(_require(value, "role", path), f"{path}.role")
    content = parse_content(_require(value, "content", path), f"{path}.content", role, budget)
    return new(LLMMessage, role=role, content=content)
