"""Attachments: ``-a/--attach PATH|URL|-``, ``--attach-type PATH_OR_URL MIME`` and the
``--image``/``--video`` aliases, turned into image and video blocks.

A file, stdin (``-``) and a ``data:`` URL are typed by their content (``oma_core.media``'s
signature check); the extension is a hint that must agree. An http(s) URL is typed by its
extension or by ``--attach-type``; it is fetched by the service, never by oma.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ._exits import usage

if TYPE_CHECKING:
    from ..media import MediaTypeMismatchError
    from ..messages import ContentBlock

Family = Literal["image", "video"]

_DATA_URL = re.compile(r"^data:([^,;]+)((?:;[^,;]+)*);base64,(.*)$", re.DOTALL | re.IGNORECASE)


def is_url(value: str) -> bool:
    return "://" in value or value.lower().startswith("data:")


class Stdin:
    """Stdin's bytes, read at most once (``-a -``)."""

    def __init__(self) -> None:
        self.used = False

    def read(self) -> bytes:
        if self.used:
            usage("stdin can be attached once (-a - given twice)")
        self.used = True
        return sys.stdin.buffer.read()


def attachments(
    attach: Sequence[str],
    attach_types: Sequence[tuple[str, str]],
    images: Sequence[str],
    videos: Sequence[str],
    stdin: Stdin,
) -> list[ContentBlock]:
    """The blocks, in order: ``-a`` values, then ``--attach-type`` values not also given with
    ``-a``, then ``--image``, then ``--video``."""
    stated = dict(attach_types)
    ordered: list[tuple[str, Family | None]] = [(value, None) for value in attach]
    ordered += [(value, None) for value, _ in attach_types if value not in attach]
    ordered += [(value, "image") for value in images]
    ordered += [(value, "video") for value in videos]
    return [_block(value, family, stated.get(value), stdin) for value, family in ordered]


def _option(family: Family | None) -> str:
    return "-a" if family is None else f"--{family}"


def _block(value: str, family: Family | None, stated: str | None, stdin: Stdin) -> ContentBlock:
    from .. import media
    from ..errors import InvalidMessageError

    try:
        if value == "-":
            return _from_bytes(stdin.read(), "stdin", family, stated)
        inline = _DATA_URL.match(value)
        if inline:
            declared, _params, payload = inline.groups()
            try:
                raw = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                usage(f"{_option(family)}: the data: URL does not hold valid base64")
            return _from_bytes(raw, "the data: URL", family, stated or declared.strip().lower())
        if is_url(value):
            return _from_url(value, family, stated)
        if family == "image":
            return media.image_file(value, stated)
        if family == "video":
            return media.video_file(value, stated)
        return media.media_file(value, stated)
    except media.MediaTypeMismatchError as exc:
        where = "-" if value == "-" else value
        usage(f"{_option(family)} {where}: {exc.detail}{_hint(exc, where)}")
    except InvalidMessageError as exc:
        usage(f"{_option(family)} {value}: {exc.reason}")


def _hint(exc: MediaTypeMismatchError, where: str) -> str:
    if exc.claimed_by == "extension" and exc.content_type is not None:
        return f"; if the content is right, say so: --attach-type {where} {exc.content_type}"
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


def _from_url(url: str, family: Family | None, stated: str | None) -> ContentBlock:
    from .. import media

    media_type = stated
    if media_type is None:
        families: tuple[Family, ...] = (family,) if family else ("image", "video")
        for candidate in families:
            media_type = media.guess_media_type(url, candidate)
            if media_type:
                break
    if media_type is None:
        usage(
            f"cannot tell the media type of {url} from its name; state it: "
            f"--attach-type {url} image/png (or video/mp4, ...)"
        )
    kind = family or ("video" if media_type.lower().startswith("video/") else "image")
    if kind == "image":
        return media.image_url(url, media_type)
    return media.video_url(url, media_type)
