"""The message classes, the registry of block types, and the parser that builds them from dicts.

One module because each needs the others: a constructor parses the nested dicts it is given
(``LLMMessage("user", [{"type": "text", ...}])``) with the same parser ``load_messages`` uses,
and the parser builds the classes. ``oma_core.messages`` is the public face of what is
public here; the sources and shared field rules are below, in ``oma_core._sources``.

The wire shape of DESIGN section 2, described once: which tags, keys and roles a message may
carry. Checks run in document order and the first violation raises ``InvalidMessageError``
naming its place; message objects met along the way are valid by construction and taken as
they are, never scanned again. ``BLOCK_TYPES`` is the one list of block types: the parser's
tags, role rules and allowed keys, the converter's classes (``oma_core.serialization``), the
token estimate and the testing kit's checks all read it. A new block type is a class, its
entry there and its builder below (then each provider maps it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from ._checks import (
    DEFAULT_LIMITS,
    check_string,
    freeze_json_object,
    got,
    join,
)
from ._sources import (
    DOCUMENT_TYPES,
    MISSING,
    Base64Source,
    Budget,
    Detail,
    Immutable,
    MediaSource,
    Role,
    UrlSource,
    in_family,
    keys_of,
    new,
    only_keys,
    optional_string,
    parse_detail,
    parse_role,
    parse_source,
    require,
    short,
)
from .errors import InvalidMessageError

__all__ = [
    "BLOCK_TYPES",
    "HINT_CLASSES",
    "AudioBlock",
    "BlockType",
    "CachePoint",
    "ContentBlock",
    "DocumentBlock",
    "Family",
    "FilePart",
    "ImageBlock",
    "LLMMessage",
    "ReasoningBlock",
    "TextBlock",
    "ToolResultBlock",
    "ToolResultPart",
    "ToolUseBlock",
    "VideoBlock",
    "document_fields",
    "image_fields",
    "parse_block",
    "parse_content",
    "parse_message",
    "parse_part",
    "tag_of",
    "thaw_json",
    "tool_result_fields",
]

_T = TypeVar("_T")
#: The kinds of media block, by what their media types start with.
Family = Literal["image", "video", "document", "audio"]


# --- the classes ---------------------------------------------------------------------------


@attrs.frozen(init=False)
class TextBlock(Immutable):
    """Plain text; may be empty."""

    text: str

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", check_string(text, "text"))

    @property
    def type(self) -> Literal["text"]:
        return "text"


@attrs.frozen(init=False)
class ImageBlock(Immutable):
    """An image (``image/*``); ``detail`` is a resolution hint some providers honour."""

    source: MediaSource
    detail: Literal["low", "high", "auto"] | None = None

    def __init__(
        self,
        source: MediaSource | Mapping[str, Any],
        detail: Literal["low", "high", "auto"] | None = None,
    ) -> None:
        checked_source, checked_detail = image_fields(source, detail, "")
        object.__setattr__(self, "source", checked_source)
        object.__setattr__(self, "detail", checked_detail)

    @property
    def type(self) -> Literal["image"]:
        return "image"


@attrs.frozen(init=False)
class VideoBlock(Immutable):
    """A video (``video/*``)."""

    source: MediaSource

    def __init__(self, source: MediaSource | Mapping[str, Any]) -> None:
        checked = in_family(parse_source(source, "source"), "video", "source")
        object.__setattr__(self, "source", checked)

    @property
    def type(self) -> Literal["video"]:
        return "video"


@attrs.frozen(init=False)
class DocumentBlock(Immutable):
    """A document: a PDF (``application/pdf``), text of a ``text/*`` type (``text/plain``,
    ``text/markdown``, ``text/csv``, ``text/html``...) or an office file (Word, Excel,
    OpenDocument). ``filename``, optional, names it where a provider has a place for a name.
    """

    source: MediaSource
    filename: str | None = None

    def __init__(
        self, source: MediaSource | Mapping[str, Any], filename: str | None = None
    ) -> None:
        checked_source, checked_name = document_fields(source, filename, "")
        object.__setattr__(self, "source", checked_source)
        object.__setattr__(self, "filename", checked_name)

    @property
    def type(self) -> Literal["document"]:
        return "document"


@attrs.frozen(init=False)
class AudioBlock(Immutable):
    """A sound recording (``audio/*``: wav, mp3, ogg/opus, flac, m4a/aac, webm...)."""

    source: MediaSource

    def __init__(self, source: MediaSource | Mapping[str, Any]) -> None:
        checked = in_family(parse_source(source, "source"), "audio", "source")
        object.__setattr__(self, "source", checked)

    @property
    def type(self) -> Literal["audio"]:
        return "audio"


@attrs.frozen(init=False)
class ToolUseBlock(Immutable):
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
    return new(
        ToolUseBlock, id=id, name=name, input=freeze_json_object(plain, "input", sys.maxsize)
    )


@attrs.frozen(init=False)
class FilePart(Immutable):
    """A file returned by a tool (any media type), inside ``ToolResultBlock.content``."""

    filename: str
    source: MediaSource

    def __init__(self, filename: str, source: MediaSource | Mapping[str, Any]) -> None:
        object.__setattr__(self, "filename", check_string(filename, "filename"))
        object.__setattr__(self, "source", parse_source(source, "source"))

    @property
    def type(self) -> Literal["file"]:
        return "file"


ToolResultPart: TypeAlias = TextBlock | ImageBlock | FilePart


@attrs.frozen(init=False)
class ToolResultBlock(Immutable):
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
        fields = tool_result_fields(tool_use_id, content, is_error, "", Budget(DEFAULT_LIMITS))
        object.__setattr__(self, "tool_use_id", fields[0])
        object.__setattr__(self, "content", fields[1])
        object.__setattr__(self, "is_error", fields[2])

    @property
    def type(self) -> Literal["tool_result"]:
        return "tool_result"


@attrs.frozen(init=False)
class ReasoningBlock(Immutable):
    """The model's reasoning, kept so it can be sent back; assistant turns only.

    ``signature`` and ``redacted_data`` are opaque provider tokens, passed through unchanged.
    ``provider`` names the provider that issued them (set by the provider plugin): a signed or
    redacted block is sent back only to that provider, and left out of a request to another.
    """

    text: str
    signature: str | None = attrs.field(default=None, repr=short)
    redacted_data: str | None = attrs.field(default=None, repr=short)
    provider: str | None = None

    def __init__(
        self,
        text: str,
        signature: str | None = None,
        redacted_data: str | None = None,
        provider: str | None = None,
    ) -> None:
        object.__setattr__(self, "text", check_string(text, "text"))
        object.__setattr__(self, "signature", optional_string(signature, "signature"))
        object.__setattr__(self, "redacted_data", optional_string(redacted_data, "redacted_data"))
        object.__setattr__(self, "provider", optional_string(provider, "provider"))

    @property
    def type(self) -> Literal["reasoning"]:
        return "reasoning"


@attrs.frozen(init=False)
class CachePoint(Immutable):
    """The end of a cacheable prefix: everything before it (tools, system prompt, earlier
    blocks) may be cached by the service; user turns only.

    A hint, not content: no text, no media. A provider that declares caching
    (``Capabilities.caching``) turns it into its own marker (Anthropic's ``cache_control`` on
    the block before it); to any other provider it is left out of the request.
    """

    def __init__(self) -> None:
        pass

    @property
    def type(self) -> Literal["cache_point"]:
        return "cache_point"


_CACHE_POINT: Final = CachePoint()


#: Every block class (what type checkers see; ``BLOCK_TYPES`` lists the same at run time).
ContentBlock: TypeAlias = (
    TextBlock
    | ImageBlock
    | VideoBlock
    | DocumentBlock
    | AudioBlock
    | ToolUseBlock
    | ToolResultBlock
    | ReasoningBlock
    | CachePoint
)


@attrs.frozen(init=False)
class LLMMessage(Immutable):
    """One turn: a role and a non-empty tuple of content blocks.

    ``content`` may be given as a list, and its items as blocks or plain dicts.
    """

    role: Role
    content: tuple[ContentBlock, ...]

    def __init__(self, role: Role, content: Sequence[ContentBlock | Mapping[str, Any]]) -> None:
        checked_role = parse_role(role, "role")
        object.__setattr__(self, "role", checked_role)
        blocks = parse_content(content, "content", checked_role, Budget(DEFAULT_LIMITS))
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


# --- the fields of blocks ------------------------------------------------------------------


def image_fields(source: object, detail: object, path: str) -> tuple[MediaSource, Detail | None]:
    """An image block's checked ``source`` and ``detail``."""
    where = join(path, "source")
    return in_family(parse_source(source, where), "image", where), parse_detail(
        detail, join(path, "detail")
    )


def document_fields(source: object, filename: object, path: str) -> tuple[MediaSource, str | None]:
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
) -> tuple[str, str | tuple[ToolResultPart, ...], bool]:
    """A tool result's checked ``tool_use_id``, ``content`` and ``is_error``."""
    checked_id = check_string(tool_use_id, join(path, "tool_use_id"))
    where = join(path, "content")
    checked: str | tuple[ToolResultPart, ...]
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


# --- each block type's builder: its dict (keys already checked) to the block ----------------


def _text(value: Mapping[str, Any], path: str, budget: Budget | None = None) -> TextBlock:
    return new(TextBlock, text=check_string(require(value, "text", path), f"{path}.text"))


def _image(value: Mapping[str, Any], path: str, budget: Budget) -> ImageBlock:
    source, detail = image_fields(require(value, "source", path), value.get("detail"), path)
    return new(ImageBlock, source=source, detail=detail)


def _video(value: Mapping[str, Any], path: str, budget: Budget) -> VideoBlock:
    where = f"{path}.source"
    source = in_family(parse_source(require(value, "source", path), where), "video", where)
    return new(VideoBlock, source=source)


def _document(value: Mapping[str, Any], path: str, budget: Budget) -> DocumentBlock:
    source, filename = document_fields(require(value, "source", path), value.get("filename"), path)
    return new(DocumentBlock, source=source, filename=filename)


def _audio(value: Mapping[str, Any], path: str, budget: Budget) -> AudioBlock:
    where = f"{path}.source"
    source = in_family(parse_source(require(value, "source", path), where), "audio", where)
    return new(AudioBlock, source=source)


def _tool_use(value: Mapping[str, Any], path: str, budget: Budget) -> ToolUseBlock:
    return new(
        ToolUseBlock,
        id=check_string(require(value, "id", path), f"{path}.id"),
        name=check_string(require(value, "name", path), f"{path}.name"),
        input=freeze_json_object(
            require(value, "input", path), f"{path}.input", budget.limits.max_depth
        ),
    )


def _tool_result(value: Mapping[str, Any], path: str, budget: Budget) -> ToolResultBlock:
    tool_use_id, content, is_error = tool_result_fields(
        require(value, "tool_use_id", path),
        require(value, "content", path),
        value.get("is_error", False),
        path,
        budget,
    )
    return new(ToolResultBlock, tool_use_id=tool_use_id, content=content, is_error=is_error)


def _cache_point(value: Mapping[str, Any], path: str, budget: Budget) -> CachePoint:
    return _CACHE_POINT


def _reasoning(value: Mapping[str, Any], path: str, budget: Budget) -> ReasoningBlock:
    return new(
        ReasoningBlock,
        text=check_string(require(value, "text", path), f"{path}.text"),
        signature=optional_string(value.get("signature"), f"{path}.signature"),
        redacted_data=optional_string(value.get("redacted_data"), f"{path}.redacted_data"),
        provider=optional_string(value.get("provider"), f"{path}.provider"),
    )


# --- the registry --------------------------------------------------------------------------

_BOTH: Final[frozenset[Role]] = frozenset({"user", "assistant"})


@attrs.frozen
class BlockType:
    """One content block type: its wire ``tag``, its class, the roles whose messages may carry
    it and, for a media block, the ``family`` its media type is in (``image/*``...).

    ``build`` makes the block from a dict whose keys were checked (the class's fields and
    ``type``): the parser's one step that differs per type.
    """

    tag: str
    cls: type[ContentBlock]
    build: Callable[[Mapping[str, Any], str, Budget], ContentBlock] = attrs.field(repr=False)
    roles: frozenset[Role] = _BOTH
    family: Family | None = None
    #: A hint, not content (``CachePoint``): it carries no text or media, a message needs at
    #: least one block besides it, and a provider that does not declare it never receives it
    #: (``oma_core.capabilities.Capabilities.outgoing``); converters and estimates skip it.
    hint: bool = False

    @property
    def keys(self) -> frozenset[str]:
        """The keys a dict of this block may hold."""
        return keys_of(self.cls)

    @property
    def what(self) -> str:
        """How an error names the block: ``a "text" block``, ``an "image" block``."""
        article = "an" if self.tag[0] in "aeiou" else "a"
        return f'{article} "{self.tag}" block'


def _registry(*kinds: BlockType) -> Mapping[str, BlockType]:
    return {kind.tag: kind for kind in kinds}


#: Every content block type by its tag, in the order errors list them (the newer kinds last).
BLOCK_TYPES: Final[Mapping[str, BlockType]] = _registry(
    BlockType("text", TextBlock, _text),
    BlockType("image", ImageBlock, _image, family="image"),
    BlockType("video", VideoBlock, _video, family="video"),
    BlockType("tool_use", ToolUseBlock, _tool_use, roles=frozenset({"assistant"})),
    BlockType("tool_result", ToolResultBlock, _tool_result, roles=frozenset({"user"})),
    BlockType("reasoning", ReasoningBlock, _reasoning, roles=frozenset({"assistant"})),
    BlockType("document", DocumentBlock, _document, family="document"),
    BlockType("audio", AudioBlock, _audio, family="audio"),
    BlockType("cache_point", CachePoint, _cache_point, roles=frozenset({"user"}), hint=True),
)

#: block class -> its entry
_KIND_OF: Final[dict[type, BlockType]] = {kind.cls: kind for kind in BLOCK_TYPES.values()}
#: every tagged class -> its wire "type"
_TAG_OF: Final[dict[type, str]] = {
    Base64Source: "base64",
    UrlSource: "url",
    **{kind.cls: kind.tag for kind in BLOCK_TYPES.values()},
    FilePart: "file",
}
_ALL_CLASSES: Final[tuple[type, ...]] = (*_KIND_OF, FilePart)
#: The classes of hint blocks (``BlockType.hint``): what ``isinstance`` tells from content.
HINT_CLASSES: Final[tuple[type, ...]] = tuple(k.cls for k in BLOCK_TYPES.values() if k.hint)
_KEYS: Final[dict[str, frozenset[str]]] = {tag: kind.keys for tag, kind in BLOCK_TYPES.items()}
_TYPE_NAMES: Final = ", ".join(f'"{tag}"' for tag in BLOCK_TYPES)
_IMAGE_PART_KEYS: Final = frozenset({"type", "source"})
_FILE_KEYS: Final = keys_of(FilePart)
_MESSAGE_KEYS: Final = frozenset({"role", "content"})


def tag_of(cls: type) -> str:
    """The wire ``type`` of a block, part or source class (``ImageBlock`` -> ``"image"``)."""
    return _TAG_OF[cls]


# --- parts, blocks, messages ---------------------------------------------------------------


def parse_block(value: object, path: str, role: Role | None, budget: Budget) -> ContentBlock:
    """A content block from a mapping, or a block object as it is; ``role`` (when given)
    is the role of the message holding it, for the rule of which blocks each role may carry."""
    kind = _KIND_OF.get(type(value))
    if kind is None and isinstance(value, _ALL_CLASSES):
        if isinstance(value, FilePart):
            raise InvalidMessageError(path, "is a file part, allowed only inside a tool result")
        kind = BLOCK_TYPES[value.type]  # type: ignore[attr-defined]  # a block class's subclass
    if kind is not None:
        _role_rule(kind, role, path)
        return value  # type: ignore[return-value]
    if not isinstance(value, Mapping):
        raise InvalidMessageError(
            path, f"must be a content block (a dict or block object), {got(value)}"
        )
    found = value.get("type", MISSING)
    kind = BLOCK_TYPES.get(found) if type(found) is str else None
    if kind is None:
        missing = " (it is missing)" if found is MISSING else ""
        raise InvalidMessageError(join(path, "type"), f"must be one of {_TYPE_NAMES}{missing}")
    _role_rule(kind, role, path)
    only_keys(value, _KEYS[kind.tag], path, kind.what)
    return kind.build(value, path, budget)


def _role_rule(kind: BlockType, role: Role | None, path: str) -> None:
    if role is not None and role not in kind.roles:
        (only,) = kind.roles
        raise InvalidMessageError(
            path, f'is a "{kind.tag}" block, which only {only} messages may contain'
        )


def parse_part(value: object, path: str) -> ToolResultPart:
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
    tag = value.get("type", MISSING)
    if tag == "text" and type(tag) is str:
        only_keys(value, _KEYS["text"], path, 'a "text" block')
        return _text(value, path)
    if tag == "image" and type(tag) is str:
        only_keys(value, _IMAGE_PART_KEYS, path, "an image inside a tool result")
        source, _ = image_fields(require(value, "source", path), None, path)
        return new(ImageBlock, source=source, detail=None)
    if tag == "file" and type(tag) is str:
        only_keys(value, _FILE_KEYS, path, 'a "file" part')
        return new(
            FilePart,
            filename=check_string(require(value, "filename", path), f"{path}.filename"),
            source=parse_source(require(value, "source", path), f"{path}.source"),
        )
    missing = " (it is missing)" if tag is MISSING else ""
    raise InvalidMessageError(join(path, "type"), f'must be "text", "image" or "file"{missing}')


def parse_content(value: object, path: str, role: Role, budget: Budget) -> tuple[ContentBlock, ...]:
    """A message's non-empty list of blocks, as a tuple."""
    if not isinstance(value, list | tuple):
        raise InvalidMessageError(path, f"must be a list of content blocks, {got(value)}")
    if not value:
        raise InvalidMessageError(path, "must contain at least one content block")
    budget.take(len(value), path)
    blocks = tuple(
        [parse_block(block, f"{path}[{i}]", role, budget) for i, block in enumerate(value)]
    )
    if all(isinstance(block, HINT_CLASSES) for block in blocks):  # stops at the first other
        raise InvalidMessageError(
            path, 'must contain at least one content block besides "cache_point" markers'
        )
    return blocks


def parse_message(value: object, path: str, budget: Budget) -> LLMMessage:
    """One message from a mapping or an ``LLMMessage`` (taken as it is, never re-scanned)."""
    if isinstance(value, LLMMessage):
        budget.take(len(value.content), f"{path}.content")
        return value
    if not isinstance(value, Mapping):
        raise InvalidMessageError(path, f"must be a message (a dict or LLMMessage), {got(value)}")
    only_keys(value, _MESSAGE_KEYS, path, "a message")
    role = parse_role(require(value, "role", path), f"{path}.role")
    content = parse_content(require(value, "content", path), f"{path}.content", role, budget)
    return new(LLMMessage, role=role, content=content)
