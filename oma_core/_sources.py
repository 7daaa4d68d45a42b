"""The leaves of the message model: media sources, and the field rules blocks share.

``Base64Source`` and ``UrlSource`` (re-exported by ``oma_core.messages``), the parser of a
source from a dict, and the rules of the fields several blocks carry (a role, an image's
``detail``, an optional string, a media family, the block allowance of one input). The
blocks and messages built on them, and the parser that builds those, are in
``oma_core._model``; the leaf checks of strings, MIME types, base64 and URLs in ``_checks``.
The names in ``__all__`` are the package's internal interface, not public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from ._checks import (
    ValidationLimits,
    check_base64,
    check_media_type,
    check_string,
    check_url,
    got,
    join,
    key_segment,
)
from .errors import InvalidMessageError

__all__ = [
    "DOCUMENT_TYPES",
    "MISSING",
    "Base64Source",
    "Budget",
    "Detail",
    "Immutable",
    "MediaSource",
    "Role",
    "UrlSource",
    "in_family",
    "keys_of",
    "new",
    "only_keys",
    "optional_string",
    "parse_detail",
    "parse_role",
    "parse_source",
    "require",
    "short",
]

Role: TypeAlias = Literal["user", "assistant"]
Detail = Literal["low", "high", "auto"]
_T = TypeVar("_T")

MISSING: Final = object()
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
_DETAILS: Final[dict[str, Detail]] = {"low": "low", "high": "high", "auto": "auto"}


def short(value: str | None) -> str:
    """Repr of a possibly huge payload: its start and its length, never all of it."""
    if value is None or len(value) <= 40:
        return repr(value)
    return f"{value[:24]!r}... ({len(value)} chars)"


def new(cls: type[_T], **fields: object) -> _T:
    """The trusted path: an instance from already-checked fields, without checking again."""
    obj = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def keys_of(cls: type) -> frozenset[str]:
    """The keys a dict of ``cls`` may hold: ``type`` and the class's fields."""
    return frozenset({"type", *(field.name for field in attrs.fields(cls))})


class Immutable:
    """Copying an immutable object gives the object itself: copies share, never duplicate."""

    __slots__ = ()

    def __copy__(self: _T) -> _T:
        return self

    def __deepcopy__(self: _T, memo: dict[int, Any]) -> _T:
        return self


@attrs.frozen(init=False)
class Base64Source(Immutable):
    """Raw canonical base64 ``data`` of type ``media_type``.

    Missing ``=`` padding is added; padded data is kept as the very same string object.
    """

    media_type: str
    data: str = attrs.field(repr=short)

    def __init__(self, media_type: str, data: str) -> None:
        object.__setattr__(self, "media_type", check_media_type(media_type, "media_type"))
        object.__setattr__(self, "data", check_base64(data, "data"))

    @property
    def type(self) -> Literal["base64"]:
        return "base64"


@attrs.frozen(init=False)
class UrlSource(Immutable):
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

_BASE64_KEYS: Final = keys_of(Base64Source)
_URL_KEYS: Final = keys_of(UrlSource)


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


# --- fields ------------------------------------------------------------------------------


def require(value: Mapping[str, Any], key: str, path: str) -> Any:
    """``value[key]``, or ``InvalidMessageError`` naming the missing key."""
    found = value.get(key, MISSING)
    if found is MISSING:
        raise InvalidMessageError(join(path, key), "is missing")
    return found


def only_keys(value: Mapping[Any, Any], allowed: frozenset[str], path: str, what: str) -> None:
    """Refuse the first key of ``value`` not in ``allowed``, naming ``what`` it is in."""
    for key in value:
        if key not in allowed:
            where = (path + key_segment(key)).lstrip(".")
            keys = ", ".join(sorted(allowed, key=lambda k: (k != "type", k)))
            raise InvalidMessageError(where, f"is not allowed in {what} (allowed keys: {keys})")


def parse_role(value: object, path: str) -> Role:
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


def in_family(source: MediaSource, family: str, path: str) -> MediaSource:
    """``source`` if its media type is ``family/...`` (an image block carries ``image/*``)."""
    if not source.media_type.startswith(family + "/"):
        article = "an" if family in ("image", "audio") else "a"
        raise InvalidMessageError(
            join(path, "media_type"),
            f"must be {article} {family} MIME type ({family}/...) in {article} {family} block, "
            f"got {source.media_type}",
        )
    return source


def parse_source(value: object, path: str) -> MediaSource:
    """A media source from a mapping, or a source object as it is."""
    if type(value) is Base64Source or type(value) is UrlSource:
        return value
    if isinstance(value, Mapping):
        tag = value.get("type", MISSING)
        if tag is MISSING:
            raise InvalidMessageError(
                join(path, "type"), 'is missing; it must be "base64" or "url"'
            )
        if tag == "base64" and type(tag) is str:
            only_keys(value, _BASE64_KEYS, path, 'a "base64" source')
            media_type = check_media_type(require(value, "media_type", path), f"{path}.media_type")
            data = check_base64(require(value, "data", path), join(path, "data"))
            return new(Base64Source, media_type=media_type, data=data)
        if tag == "url" and type(tag) is str:
            only_keys(value, _URL_KEYS, path, 'a "url" source')
            media_type = check_media_type(require(value, "media_type", path), f"{path}.media_type")
            url = check_url(require(value, "url", path), join(path, "url"))
            return new(UrlSource, media_type=media_type, url=url)
        raise InvalidMessageError(join(path, "type"), 'must be "base64" or "url"')
    if isinstance(value, Base64Source | UrlSource):
        return value
    raise InvalidMessageError(
        path, f"must be a media source (a dict, Base64Source or UrlSource), {got(value)}"
    )
