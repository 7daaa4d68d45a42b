"""Attachments: ``-a/--attach PATH|URL|-``, ``--attach-type PATH_OR_URL MIME`` and the
``--image``/``--video`` aliases, turned into image, video, document and audio blocks.

A file, stdin (``-``) and a ``data:`` URL are typed by their content (``oma_core.media``'s
signature check). A file's extension is a hint: when it disagrees, a warning says so and the
content's type is sent; a type the user states (``--attach-type``, a ``data:`` URL's) must
agree. An http(s) URL is typed by its extension or by ``--attach-type``; it is fetched by the
service, never by oma.

Files are read safely: regular files only (a FIFO, a device, a directory is refused at once),
their size checked against the target provider's limit for that kind of media before they are
read, and read in bounded chunks (stdin too).
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

import click

from ._exits import usage

if TYPE_CHECKING:
    from .. import media
    from ..capabilities import Capabilities
    from ..media import MediaTypeMismatchError
    from ..messages import ContentBlock
    from ._agent import AgentOptions

Family = Literal["image", "video"]

#: The most one attachment may hold when the provider declares no limit for its kind (echo,
#: a local server): a file is never read into memory unbounded.
DEFAULT_MAX_BYTES = 100 * 1024 * 1024

_DATA_URL = re.compile(r"^data:([^,;]+)((?:;[^,;]+)*);base64,(.*)$", re.DOTALL | re.IGNORECASE)


def is_url(value: str) -> bool:
    return "://" in value or value.lower().startswith("data:")


class Stdin:
    """Stdin, taken at most once (``-a -``, ``--messages -``)."""

    def __init__(self) -> None:
        self.used = False

    def take(self) -> None:
        if self.used:
            usage("stdin can be attached once (-a - given twice)")
        self.used = True


class Limits:
    """How many bytes an attachment of a media type may hold for the target provider: the
    smallest of its declared limits that count that kind of block (a base64 limit turned
    into file bytes; a per-request limit bounds one block too), else ``DEFAULT_MAX_BYTES``."""

    def __init__(self, provider: str | None, capabilities: Capabilities | None) -> None:
        self.provider = provider
        self.capabilities = capabilities

    def _smallest(self, media_type: str) -> tuple[int, str]:
        family = media_type.partition("/")[0]
        found: tuple[int, str] | None = None
        for limit in () if self.capabilities is None else self.capabilities.limits:
            if family not in limit.block_types:
                continue
            in_bytes = limit.max_bytes if limit.measure == "decoded" else limit.max_bytes // 4 * 3
            if found is None or in_bytes < found[0]:
                said = f"the {self.provider} {limit.describe()}"
                if limit.measure != "decoded":
                    said += f" ({in_bytes} bytes of file)"
                found = (in_bytes, f"{said}; {limit.hint}")
        if found is None:
            said = f"oma's limit of {DEFAULT_MAX_BYTES} bytes per attachment"
            if self.provider is not None:
                said += f" ({self.provider} declares none for {family})"
            found = (DEFAULT_MAX_BYTES, said)
        return found

    def max_bytes(self, media_type: str) -> int:
        return self._smallest(media_type)[0]

    def describe(self, media_type: str) -> str:
        return self._smallest(media_type)[1]


def limits_for(target: AgentOptions | None) -> Limits:
    """The limits of the provider the command will run (``-p``/``-m`` or their environment
    defaults, ``-o`` applied); when it cannot be told here, the agent reports why later and
    ``DEFAULT_MAX_BYTES`` bounds the read meanwhile."""
    import os

    from .._resolution import resolve_model
    from ..errors import OmaError
    from ..plugins import PluginHost
    from ._agent import split_options

    if target is None:
        return Limits(None, None)
    host = PluginHost.default()
    try:
        name, _ = resolve_model(
            target.provider or os.environ.get("OMA_PROVIDER") or None,
            target.model or os.environ.get("OMA_MODEL") or None,
            plugins=host,
        )
    except OmaError:
        return Limits(None, None)
    spec = host.provider_specs().get(name)
    if spec is None:
        return Limits(None, None)
    _, provider_options = split_options(target.options)
    return Limits(spec.display_name, spec.capabilities.with_options(provider_options))


def attachments(
    attach: Sequence[str],
    attach_types: Sequence[tuple[str, str]],
    images: Sequence[str],
    videos: Sequence[str],
    stdin: Stdin,
    limits: Limits | None = None,
) -> list[ContentBlock]:
    """The blocks, in order: ``-a`` values, then ``--attach-type`` values not also given with
    ``-a``, then ``--image``, then ``--video``."""
    stated = dict(attach_types)
    ordered: list[tuple[str, Family | None]] = [(value, None) for value in attach]
    ordered += [(value, None) for value, _ in attach_types if value not in attach]
    ordered += [(value, "image") for value in images]
    ordered += [(value, "video") for value in videos]
    limits = limits or Limits(None, None)
    return [_block(value, family, stated.get(value), stdin, limits) for value, family in ordered]


def _option(family: Family | None) -> str:
    return "-a" if family is None else f"--{family}"


def shown(value: str) -> str:
    """An attachment as messages name it: a ``data:`` URL without its payload, a URL's user
    info blanked (``https://user:***@host/...``: a password is never repeated)."""
    inline = _DATA_URL.match(value)
    if inline:
        return f"data:{inline.group(1)};base64,... ({len(value)} characters)"
    value = _blank_user_info(value)
    if len(value) > 200:
        return f"{value[:160]}... ({len(value)} characters)"
    return value


#: A URL's scheme and user info: everything up to the last "@" before the path, query or
#: fragment (``user:p@ss@host``: all of ``user:p@ss``).
_USER_INFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)@")


def _blank_user_info(value: str) -> str:
    """``value`` with a URL's password (or a user name alone, often a token) as ``***``."""
    found = _USER_INFO.match(value)
    if found is None:
        return value
    user, colon, _ = found.group(2).partition(":")
    blank = f"{user}:***" if colon else "***"
    return f"{found.group(1)}{blank}@{value[found.end() :]}"


@contextmanager
def _extension_warnings(where: str) -> Iterator[None]:
    """Show each ``MediaTypeWarning`` (an extension the content contradicts) as a line."""
    from ..media import MediaTypeWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MediaTypeWarning)
        yield
    for item in caught:
        warning = item.message
        if isinstance(warning, MediaTypeWarning):
            click.echo(
                f"warning: {where}: its content is {warning.content_type}, but its extension "
                f"says {warning.extension_type}; sent as {warning.content_type}",
                err=True,
            )
        else:  # pragma: no cover - anything else is shown as Python would
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


def _block(
    value: str, family: Family | None, stated: str | None, stdin: Stdin, limits: Limits
) -> ContentBlock:
    from .. import media
    from ..errors import InvalidMessageError

    where = f"{_option(family)} {shown(value)}"
    try:
        if value == "-":
            stdin.take()
            data, checked = media.read_limited(
                sys.stdin.buffer, "stdin", family, stated, limits.max_bytes
            )
            return _from_bytes(data, "stdin", family, checked)
        inline = _DATA_URL.match(value)
        if inline:
            declared, _params, payload = inline.groups()
            try:
                raw = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                usage(f"{where}: the data: URL does not hold valid base64")
            return _from_bytes(raw, "the data: URL", family, stated or declared.strip().lower())
        if is_url(value):
            return _from_url(value, family, stated)
        with _extension_warnings(where):
            if family == "image":
                return media.image_file(value, stated, max_bytes=limits.max_bytes)
            if family == "video":
                return media.video_file(value, stated, max_bytes=limits.max_bytes)
            return media.media_file(value, stated, max_bytes=limits.max_bytes)
    except media.MediaTypeMismatchError as exc:
        usage(f"{where}: {exc.detail}{_hint(exc, shown(value))}")
    except media.MediaFileTooLargeError as exc:
        past = limits.describe(exc.media_type)
        if value == "-":
            usage(f"{where}: more than {exc.limit} bytes of {exc.media_type}, past {past}")
        if exc.grew:
            usage(f"{where}: it grew past {past} while it was read")
        usage(f"{where}: {exc.size} bytes of {exc.media_type}, past {past}")
    except InvalidMessageError as exc:
        usage(f"{where}: {exc.reason}")


def _hint(exc: MediaTypeMismatchError, where: str) -> str:
    if exc.content_type is None and "text" in exc.detail:
        return "; text belongs in the prompt (pipe it: oma run PROMPT < FILE)"
    if exc.content_type is None and "empty" not in exc.detail:
        return f"; if it is one, state its type: --attach-type {where} TYPE/SUBTYPE"
    return ""


def _from_bytes(data: bytes, name: str, family: Family | None, stated: str | None) -> ContentBlock:
    from .. import media

    if family == "image":
        return media.image_bytes(data, stated)
    if family == "video":
        return media.video_bytes(data, stated)
    return media.media_bytes(data, stated, name=name)


#: The families a URL's extension is looked up in, in this order (``.webm``: a video).
_FAMILIES: tuple[media.Family, ...] = ("image", "video", "document", "audio")
#: One media type of each family, for the hint of a URL whose type cannot be told.
_EXAMPLE_TYPES: dict[str, str] = {
    "image": "image/png",
    "video": "video/mp4",
    "document": "application/pdf",
    "audio": "audio/mpeg",
}
_ONE_OF = {"image": "an image", "video": "a video"}


def _from_url(url: str, family: Family | None, stated: str | None) -> ContentBlock:
    """A URL block of the family its type names: the stated type, else its extension's in
    the image, video, document and audio tables, in that order (``--image``/``--video``: in
    that family's only)."""
    from .. import media
    from .._checks import check_url
    from ..errors import InvalidMessageError

    check_url(url, "")  # a URL refused (user info, not http) before its type is guessed
    media_type = stated or _guess(url, (family,) if family else _FAMILIES)
    if media_type is None and family is not None:
        other = _guess(url, _FAMILIES)
        if other is not None:  # --image report.pdf: the family is wrong, not the name
            raise InvalidMessageError("", f"its extension says {other}, not {_ONE_OF[family]}")
    if media_type is None:
        first, *others = [_EXAMPLE_TYPES[family]] if family else list(_EXAMPLE_TYPES.values())
        usage(
            f"cannot tell the media type of {url} from its name; state it: "
            f"--attach-type {url} {first}" + (f" (or {', '.join(others)}, ...)" if others else "")
        )
    kind = family or media.family_of(media_type.lower())
    if kind == "image":
        return media.image_url(url, media_type)
    if kind == "video":
        return media.video_url(url, media_type)
    if kind == "document":
        return media.document_url(url, media_type)
    if kind == "audio":
        return media.audio_url(url, media_type)
    raise InvalidMessageError(
        "",
        f"{media_type} is none of the four families: an image/..., video/..., "
        "document (application/pdf, text/..., an office type) or audio/... type",
    )


def _guess(url: str, families: Sequence[media.Family]) -> str | None:
    """The type of ``url``'s extension in the first of ``families``' tables that has it."""
    from .. import media

    for family in families:
        found = media.guess_media_type(url, family)
        if found is not None:
            return found
    return None
