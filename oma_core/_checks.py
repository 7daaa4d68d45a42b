"""The leaf rules of message validation: text, MIME types, base64, URLs and plain tool data.

Each check takes a value and the path that names it, returns the value to keep (the same
object, or a normalised one) or raises ``InvalidMessageError``. Nothing here touches the
network or the file system, and nothing recurses: nesting is walked with an explicit stack.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final, SupportsIndex

import attrs

from .errors import InvalidMessageError

__all__ = [
    "DEFAULT_LIMITS",
    "ValidationLimits",
    "check_base64",
    "check_media_type",
    "check_string",
    "check_url",
    "freeze_json_object",
    "got",
    "join",
    "key_segment",
    "type_name",
]


@attrs.frozen
class ValidationLimits:
    """Bounds that stop hostile input early, before anything is scanned past them.

    ``max_depth`` bounds how deeply a tool input nests (the input object itself is level 1);
    ``max_blocks`` bounds the content blocks and tool-result parts of one input (one
    ``load_messages`` call, or one hand-built message).
    """

    max_depth: int = 100
    max_blocks: int = 100_000


DEFAULT_LIMITS: Final = ValidationLimits()


def type_name(value: object) -> str:
    """The type of ``value`` as Python names it, with ``None`` for None."""
    return "None" if value is None else type(value).__name__


def got(value: object) -> str:
    """``got <type>`` for a message about a value of the wrong type. A value that is not plain
    data at all (a function, a set, bytes, a datetime, ...) is also named as such, so every
    refusal of such an object carries the same phrase wherever in the input it sits."""
    if (
        value is None
        or isinstance(value, dict | list | tuple | str | int | float | MappingProxyType)
        or type(value).__module__.startswith("oma_core.")  # a message object in the wrong place
    ):
        return f"got {type_name(value)}"
    return f"got {type_name(value)}: {_PLAIN}"


def join(path: str, name: str) -> str:
    """``path.name``, or just ``name`` at the root of a hand-built object."""
    return f"{path}.{name}" if path else name


def key_segment(key: object) -> str:
    """The path segment of a mapping key: ``.name`` for identifiers, ``["odd key"]`` otherwise."""
    if isinstance(key, str) and key.isidentifier() and key.isascii():
        return f".{key}" if len(key) <= 64 else f".{key[:60]}..."
    if isinstance(key, str):
        shown = key if len(key) <= 40 else key[:37] + "..."
        return "[" + repr(shown) + "]"
    return f"[<{type_name(key)} key>]"


def _exact(value: str) -> str:
    """A plain ``str``: a subclass could override the very methods the checks rely on."""
    return value if type(value) is str else str.__str__(value)


# --- text -------------------------------------------------------------------------------

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def check_string(value: object, path: str, what: str = "a string") -> str:
    """A ``str`` without lone surrogates (which no provider can encode as UTF-8)."""
    if not isinstance(value, str):
        raise InvalidMessageError(path, f"must be {what}, {got(value)}")
    value = _exact(value)
    if not value.isascii() and _SURROGATE.search(value) is not None:
        raise InvalidMessageError(path, "must not contain lone surrogates (invalid Unicode)")
    return value


# --- MIME types -------------------------------------------------------------------------

# RFC 6838 restricted names, lower case only: no parameters, no wildcards, no spaces.
_MEDIA_TYPE: Final = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
)


def check_media_type(value: object, path: str) -> str:
    """A lowercase ``type/subtype`` with no parameters and no wildcards."""
    if isinstance(value, str):
        value = _exact(value)
    if not isinstance(value, str) or _MEDIA_TYPE.fullmatch(value) is None:
        wrong = f", {got(value)}" if not isinstance(value, str) else ""
        raise InvalidMessageError(
            path, f"must be a lowercase MIME type without parameters, like image/png{wrong}"
        )
    return value


# --- base64 -----------------------------------------------------------------------------

_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# The last character of a group that ends in "==" (one byte) or "=" (two bytes) carries
# 4 or 2 bits beyond the data; canonical base64 leaves them zero.
_LAST_OF_TWO: Final = frozenset("AQgw")
_LAST_OF_THREE: Final = frozenset("AEIMQUYcgkosw048")
# Scanning in slices keeps memory flat; 64-256 KiB measured fastest (they stay in cache).
_CHUNK: Final = 1 << 16
_RAW: Final = "must contain raw base64 data"


# From this size on, pybase64's SIMD decoder checks the alphabet (about 20 GB/s against
# about 2 GB/s for bytes.translate); below it, its import is not worth paying.
_SIMD_FROM: Final = 1 << 16
_SIMD_SLICE: Final = 1 << 20  # a multiple of 4: every slice is whole groups


@functools.cache
def _simd_decoder() -> Callable[..., bytes] | None:
    try:
        from pybase64 import b64decode
    except ImportError:  # a platform without its wheel: the portable scan below
        return None
    return b64decode


def _alphabet_only(value: str, body: int) -> bool:
    """Whether ``value[:body]`` (ASCII) holds only base64 alphabet characters.

    Large strings go through pybase64's strict decoder in whole-group slices (it refuses any
    other character, and = anywhere but at a slice's end, which is checked here; the output
    is dropped); the 0-3 characters of a last partial group and
    small strings are scanned with ``bytes.translate``, in bounded slices.
    """
    decode = _simd_decoder() if body >= _SIMD_FROM else None
    whole = 0
    if decode is not None:
        whole = body - body % 4
        for start in range(0, whole, _SIMD_SLICE):
            end = min(start + _SIMD_SLICE, whole)
            if value[end - 1] == "=":  # the decoder takes = as a slice's last padding
                return False
            try:
                decode(value[start:end], validate=True)
            except ValueError:  # binascii.Error
                return False
    for start in range(whole, body, _CHUNK):
        if value[start : min(start + _CHUNK, body)].encode("ascii").translate(None, _ALPHABET):
            return False
    return True


def check_base64(value: object, path: str) -> str:
    """Raw canonical standard base64; returns it padded (the same object if it was).

    Checked without decoding: the characters are scanned in bounded slices, the length and
    padding are arithmetic, and the stray bits live in the last character alone.
    """
    if not isinstance(value, str):
        raise InvalidMessageError(path, f"{_RAW} in a string, {got(value)}")
    value = _exact(value)
    size = len(value)
    if size == 0:
        raise InvalidMessageError(path, f"{_RAW}, got an empty string")
    if value[:5].lower() == "data:":
        raise InvalidMessageError(
            path, f"{_RAW}, not a data: URL; pass only the base64 text after the comma"
        )
    bad_chars = (
        f"{_RAW}: only A-Z, a-z, 0-9, + and / with = padding "
        "(no whitespace, line breaks or URL-safe - and _)"
    )
    if not value.isascii():
        raise InvalidMessageError(path, bad_chars)
    pad = 0
    if value[-1] == "=":
        pad = 2 if size >= 2 and value[-2] == "=" else 1
    body = size - pad
    tail = body % 4
    if not _alphabet_only(value, body):
        raise InvalidMessageError(path, bad_chars)
    if (pad and (size % 4 or tail + pad != 4)) or (not pad and tail == 1):
        raise InvalidMessageError(path, f"{_RAW}: its length or its = padding is wrong")
    if (tail == 2 and value[body - 1] not in _LAST_OF_TWO) or (
        tail == 3 and value[body - 1] not in _LAST_OF_THREE
    ):
        raise InvalidMessageError(
            path, f"{_RAW}: the last group has stray bits set (not canonical base64)"
        )
    if tail and not pad:
        return value + "=" * (4 - tail)
    return value


# --- URLs -------------------------------------------------------------------------------

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_HOST: Final = re.compile(r"[A-Za-z0-9._~\-\u0080-\U0010ffff]+")
_IPV6: Final = re.compile(r"\[[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]")
_ABSOLUTE: Final = "must be an absolute HTTP(S) URL"


def check_url(value: object, path: str) -> str:
    """An absolute ``http``/``https`` URL with a host, checked by a small strict parser.

    Refused: other schemes, relative and scheme-relative references, user info, whitespace,
    control and invisible characters, backslashes, malformed hosts and ports. The string is
    kept exactly as given; nothing is normalised or resolved.
    """
    if not isinstance(value, str):
        raise InvalidMessageError(path, f"{_ABSOLUTE} in a string, {got(value)}")
    value = _exact(value)
    colon = value.find(":")
    scheme = value[:colon] if colon > 0 else ""
    if not scheme or _SCHEME.fullmatch(scheme) is None:
        raise InvalidMessageError(path, f"{_ABSOLUTE} (like https://example.com/a.png)")
    if scheme.lower() not in ("http", "https"):
        shown = scheme if len(scheme) <= 20 else scheme[:17] + "..."
        hint = (
            " (a data: URL's payload belongs in a base64 source)"
            if scheme.lower() == "data"
            else ""
        )
        raise InvalidMessageError(path, f"must use HTTP or HTTPS, not {shown}:{hint}")
    if not value.isprintable() or " " in value or "\\" in value:
        raise InvalidMessageError(
            path, f"{_ABSOLUTE} without whitespace, control characters or backslashes"
        )
    if not value.startswith("//", colon + 1):
        raise InvalidMessageError(path, f"{_ABSOLUTE} with a host (like https://example.com/)")
    start = colon + 3
    end = len(value)
    for delimiter in "/?#":
        found = value.find(delimiter, start, end)
        if found != -1:
            end = found
    authority = value[start:end]
    if "@" in authority:
        raise InvalidMessageError(path, f"{_ABSOLUTE} without user info (user:password@)")
    if authority.startswith("["):
        close = authority.find("]")
        host, port = authority[: close + 1], authority[close + 1 :]
        host_ok = close != -1 and _IPV6.fullmatch(host) is not None
        if port and not port.startswith(":"):
            host_ok = False
        port = port[1:]
        has_port = bool(authority[close + 1 :])
    else:
        host, has_colon, port = authority.partition(":")
        host_ok = _HOST.fullmatch(host) is not None
        has_port = bool(has_colon)
    if not host:
        raise InvalidMessageError(path, f"{_ABSOLUTE} with a host (like https://example.com/)")
    if not host_ok:
        raise InvalidMessageError(path, f"{_ABSOLUTE} with a valid host name or address")
    if has_port and not (0 < len(port) <= 5 and port.isascii() and port.isdigit()):
        raise InvalidMessageError(path, f"{_ABSOLUTE} with a numeric port")
    if has_port and int(port) > 65535:
        raise InvalidMessageError(path, f"{_ABSOLUTE} with a port up to 65535")
    return value


# --- plain data (tool inputs) -----------------------------------------------------------


class ReadOnlyError(TypeError, AttributeError):
    """Raised on an attempt to change a frozen tool input.

    A ``TypeError`` (like assigning into a mappingproxy or a tuple) and an ``AttributeError``
    (like calling ``append`` on a tuple), so code written for either reading catches it.
    """


def _read_only(self: object, *args: object, **kwargs: object) -> Any:
    raise ReadOnlyError(
        f"{type(self).__name__} is read-only (a tool input); use plain_input() for a copy"
    )


class FrozenDict(dict[str, Any]):
    """A read-only ``dict``: equal to the plain dict it copies and JSON-encodable as one."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self:  # __init__ again on a built one would change it
            _read_only(self)
        super().__init__(*args, **kwargs)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: object) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A read-only ``list``: equal to the list (or tuple) it copies, JSON-encodable as a list."""

    __slots__ = ()
    __setitem__ = __delitem__ = _read_only
    append = clear = extend = insert = pop = remove = reverse = sort = _read_only

    def __init__(self, *args: Any) -> None:
        if self:
            _read_only(self)
        super().__init__(*args)

    def __iadd__(self, other: Iterable[Any]) -> FrozenList:  # type: ignore[misc]
        return FrozenList([*self, *other])  # rebinds, like a tuple's +=

    def __imul__(self, count: SupportsIndex) -> FrozenList:
        return FrozenList(list(self) * count)

    def __eq__(self, other: object) -> bool:
        # Equal to a tuple too: frozen inputs used to hold tuples, and callers compare both.
        return list.__eq__(self, list(other) if isinstance(other, tuple) else other)

    def __ne__(self, other: object) -> bool:
        equal: Any = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: object) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


_PLAIN: Final = (
    "messages must contain cloneable structured data "
    "(dicts with string keys, lists, str, int, finite float, bool, None)"
)
_LEAVES: Final = frozenset({int, bool, type(None)})


def _frames_path(path: str, frames: list[list[Any]]) -> str:
    return path + "".join(
        key_segment(frame[3]) if frame[2] else f"[{frame[3]}]" for frame in frames
    )


def _entries(container: Any) -> Iterator[tuple[Any, Any]]:
    """(key, value) pairs of what a container really holds, past any overridden iteration."""
    if isinstance(container, dict):
        return iter(dict.items(container))
    if isinstance(container, MappingProxyType):
        return iter(container.items())
    if isinstance(container, list):
        return enumerate(list.__iter__(container))
    return enumerate(tuple.__iter__(container))


def freeze_json_object(value: object, path: str, max_depth: int) -> Mapping[str, Any]:
    """A deep, read-only copy of a JSON object: ``FrozenDict`` for objects, ``FrozenList`` for
    arrays (equal to, and JSON-encodable like, plain dicts and lists). Refuses anything that
    is not plain data, and nesting past ``max_depth``.

    Walked with an explicit stack, so no input can raise ``RecursionError`` (a cycle is
    refused as too deep).
    """
    if not isinstance(value, dict | MappingProxyType):
        raise InvalidMessageError(path, f"must be a JSON object (a dict), {got(value)}")
    root: dict[str, Any] = {}
    # frame: [iterator of (key, child), output container, is_mapping, current key]
    frames: list[list[Any]] = [[_entries(value), root, True, None]]
    while frames:
        frame = frames[-1]
        items: Iterator[tuple[Any, Any]] = frame[0]
        out = frame[1]
        is_mapping = frame[2]
        pushed = False
        for key, child in items:
            frame[3] = key
            if is_mapping:
                if type(key) is not str:
                    raise InvalidMessageError(
                        _frames_path(path, frames[:-1]),
                        f"has a {type_name(key)} key, but {_PLAIN}",
                    )
                if not key.isascii() and _SURROGATE.search(key) is not None:
                    raise InvalidMessageError(
                        _frames_path(path, frames), "must not contain lone surrogates in its key"
                    )
            kind = type(child)
            if kind is str:
                if not child.isascii() and _SURROGATE.search(child) is not None:
                    raise InvalidMessageError(
                        _frames_path(path, frames),
                        "must not contain lone surrogates (invalid Unicode)",
                    )
            elif kind in _LEAVES:
                pass
            elif kind is float:
                if not math.isfinite(child):
                    raise InvalidMessageError(
                        _frames_path(path, frames), f"holds a non-finite float, but {_PLAIN}"
                    )
            elif isinstance(child, dict | MappingProxyType | list | tuple):
                if len(frames) >= max_depth:
                    raise InvalidMessageError(path, f"is nested more than {max_depth} levels deep")
                is_map = isinstance(child, dict | MappingProxyType)
                frames.append([_entries(child), {} if is_map else [], is_map, None])
                pushed = True
                break
            else:
                raise InvalidMessageError(
                    _frames_path(path, frames), f"holds a {type_name(child)}, but {_PLAIN}"
                )
            if is_mapping:
                out[key] = child
            else:
                out.append(child)
        if pushed:
            continue
        frames.pop()
        frozen: Any = FrozenDict(out) if is_mapping else FrozenList(out)
        if frames:
            parent = frames[-1]
            if parent[2]:
                parent[1][parent[3]] = frozen
            else:
                parent[1].append(frozen)
    return FrozenDict(root)
