"""Building image and video blocks, and small facts about media sources.

The helpers return validated blocks; errors name the helper's parameter (``url``,
``media_type``, ``data``, ``detail``). A missing media type is looked up from the URL path's
file extension in a fixed table shipped with oma, so the answer is the same on every machine
(the system ``mimetypes`` database differs between machines and reads files).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from ._checks import check_base64, check_media_type, check_url, type_name
from ._parse import new, parse_detail
from .errors import InvalidMessageError
from .messages import Base64Source, ImageBlock, MediaSource, UrlSource, VideoBlock

__all__ = [
    "IMAGE_EXTENSIONS",
    "IMAGE_MEDIA_TYPES",
    "VIDEO_EXTENSIONS",
    "check_base64",
    "check_media_type",
    "check_url",
    "decoded_size",
    "describe_source",
    "guess_media_type",
    "image_base64",
    "image_url",
    "video_base64",
    "video_url",
]

#: The image types every image-capable provider accepts.
IMAGE_MEDIA_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

#: File extension (lower case, no dot) -> image media type.
IMAGE_EXTENSIONS: Final[Mapping[str, str]] = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "jpe": "image/jpeg",
    "jfif": "image/jpeg",
    "png": "image/png",
    "apng": "image/apng",
    "gif": "image/gif",
    "webp": "image/webp",
    "bmp": "image/bmp",
    "tif": "image/tiff",
    "tiff": "image/tiff",
    "svg": "image/svg+xml",
    "heic": "image/heic",
    "heif": "image/heif",
    "avif": "image/avif",
    "ico": "image/vnd.microsoft.icon",
}

#: File extension (lower case, no dot) -> video media type.
VIDEO_EXTENSIONS: Final[Mapping[str, str]] = {
    "mp4": "video/mp4",
    "m4v": "video/x-m4v",
    "mov": "video/quicktime",
    "qt": "video/quicktime",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "avi": "video/x-msvideo",
    "mpeg": "video/mpeg",
    "mpg": "video/mpeg",
    "mpe": "video/mpeg",
    "3gp": "video/3gpp",
    "3g2": "video/3gpp2",
    "wmv": "video/x-ms-wmv",
    "flv": "video/x-flv",
    "ogv": "video/ogg",
    "m2ts": "video/mp2t",
    "mts": "video/mp2t",
}

Detail = Literal["low", "high", "auto"]


def guess_media_type(url: str, family: Literal["image", "video"]) -> str | None:
    """The media type of ``url``'s file extension in oma's table for ``family``, or None.

    Only the path counts: the query and fragment are ignored, and nothing is fetched.
    """
    rest = url.split("://", 1)[-1]
    for delimiter in "?#":
        rest = rest.split(delimiter, 1)[0]
    path = rest.partition("/")[2]
    name = path.rpartition("/")[2]
    if "." not in name:
        return None
    extension = name.rpartition(".")[2].lower()
    table = IMAGE_EXTENSIONS if family == "image" else VIDEO_EXTENSIONS
    return table.get(extension)


def _url_source(url: object, media_type: object, family: Literal["image", "video"]) -> UrlSource:
    checked_url = check_url(url, "url")
    if media_type is None:
        guessed = guess_media_type(checked_url, family)
        if guessed is None:
            raise InvalidMessageError(
                "media_type",
                f"could not be inferred from the URL's file extension; "
                f'pass media_type="{family}/..."',
            )
        return new(UrlSource, media_type=guessed, url=checked_url)
    return new(UrlSource, media_type=_family_type(media_type, family), url=checked_url)


def _base64_source(
    data: object, media_type: object, family: Literal["image", "video"]
) -> Base64Source:
    if isinstance(data, bytes | bytearray | memoryview):
        raise InvalidMessageError(
            "data",
            f"must contain raw base64 data as a str, got {type_name(data)}; "
            "use base64.b64encode(raw).decode('ascii')",
        )
    checked_data = check_base64(data, "data")
    return new(Base64Source, media_type=_family_type(media_type, family), data=checked_data)


def _family_type(media_type: object, family: str) -> str:
    checked = check_media_type(media_type, "media_type")
    if not checked.startswith(family + "/"):
        article = "an" if family == "image" else "a"
        raise InvalidMessageError(
            "media_type", f"must be {article} {family} MIME type ({family}/...), got {checked}"
        )
    return checked


def image_url(url: str, media_type: str | None = None, detail: Detail | None = None) -> ImageBlock:
    """An image block the provider fetches from ``url`` (absolute http or https).

    ``media_type`` defaults to the one of the URL's file extension (``.png`` -> image/png).
    """
    source = _url_source(url, media_type, "image")
    return new(ImageBlock, source=source, detail=parse_detail(detail, "detail"))


def image_base64(data: str, media_type: str, detail: Detail | None = None) -> ImageBlock:
    """An image block carrying raw base64 ``data`` (no ``data:`` prefix)."""
    source = _base64_source(data, media_type, "image")
    return new(ImageBlock, source=source, detail=parse_detail(detail, "detail"))


def video_url(url: str, media_type: str | None = None) -> VideoBlock:
    """A video block the provider fetches from ``url`` (absolute http or https).

    ``media_type`` defaults to the one of the URL's file extension (``.mp4`` -> video/mp4).
    """
    return new(VideoBlock, source=_url_source(url, media_type, "video"))


def video_base64(data: str, media_type: str) -> VideoBlock:
    """A video block carrying raw base64 ``data`` (no ``data:`` prefix)."""
    return new(VideoBlock, source=_base64_source(data, media_type, "video"))


def decoded_size(source: Base64Source) -> int:
    """The number of bytes ``source.data`` decodes to, computed without decoding."""
    data = source.data
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return len(data) // 4 * 3 - padding


def describe_source(source: MediaSource) -> str:
    """A short, payload-free description: ``image/png, base64, 68 bytes`` or
    ``video/mp4, url, https://example.com/clip.mp4``."""
    if isinstance(source, Base64Source):
        return f"{source.media_type}, base64, {decoded_size(source)} bytes"
    return f"{source.media_type}, url, {source.url}"
