"""Building image, video, document and audio blocks, and small facts about media sources.

The helpers return validated blocks; errors name the helper's parameter (``url``,
``media_type``, ``data``, ``detail``, ``path``). A URL's missing media type is looked up from
the URL path's file extension in a fixed table shipped with oma, so the answer is the same on
every machine (the system ``mimetypes`` database differs between machines and reads files).

Bytes and files (``image_file``, ``video_file``, ``document_file``, ``audio_file``,
``media_file``, ``image_bytes``, ...) are typed by their content: the signature library
``filetype`` (loaded on first use, never on ``import oma_core``) names the type. Text has no
signature: it is a document of the ``text/*`` type its extension (or the caller) names, and
``text/plain`` for ``document_file`` when neither does. A file's extension is a hint only:
one that disagrees with the content is a ``MediaTypeWarning`` and the content's type is sent;
a ``media_type`` the caller states and the content contradicts is a
``MediaTypeMismatchError`` naming both.

Files are read safely: regular files only (a FIFO, a device or a directory is refused at once,
never read), opened without blocking, the size checked against ``max_bytes`` before the body is
read, and the body read in bounded chunks that stop at the limit if the file grows meanwhile.
Errors never carry a payload: a value the caller passed is shown shortened.
"""

from __future__ import annotations

import base64
import os
import stat
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO, Final, Literal

from ._checks import check_base64, check_media_type, check_url, type_name
from ._sources import DOCUMENT_TYPES, new, optional_string, parse_detail
from .errors import InvalidMessageError
from .messages import (
    AudioBlock,
    Base64Source,
    DocumentBlock,
    ImageBlock,
    MediaSource,
    UrlSource,
    VideoBlock,
)

__all__ = [
    "AUDIO_EXTENSIONS",
    "DOCUMENT_EXTENSIONS",
    "DOCUMENT_TYPES",
    "IMAGE_EXTENSIONS",
    "IMAGE_MEDIA_TYPES",
    "VIDEO_EXTENSIONS",
    "Family",
    "MediaBlock",
    "audio_base64",
    "audio_bytes",
    "audio_file",
    "audio_url",
    "document_base64",
    "document_bytes",
    "document_file",
    "document_text",
    "document_url",
    "MediaFileTooLargeError",
    "MediaTypeMismatchError",
    "MediaTypeWarning",
    "MaxBytes",
    "checked_media_type",
    "read_limited",
    "extension_media_type",
    "family_of",
    "image_bytes",
    "image_file",
    "media_bytes",
    "media_file",
    "sniff_media_type",
    "video_bytes",
    "video_file",
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

#: File extension (lower case, no dot) -> document media type.
DOCUMENT_EXTENSIONS: Final[Mapping[str, str]] = {
    "pdf": "application/pdf",
    "txt": "text/plain",
    "text": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "html": "text/html",
    "htm": "text/html",
    "xml": "text/xml",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}

#: File extension (lower case, no dot) -> audio media type.
AUDIO_EXTENSIONS: Final[Mapping[str, str]] = {
    "wav": "audio/wav",
    "wave": "audio/wav",
    "mp3": "audio/mpeg",
    "mpga": "audio/mpeg",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/ogg",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "aac": "audio/aac",
    "aif": "audio/aiff",
    "aiff": "audio/aiff",
    "weba": "audio/webm",
    "webm": "audio/webm",  # only for an audio block: a .webm is a video elsewhere
}

Detail = Literal["low", "high", "auto"]
#: The kinds of media block, by what their media types start with.
Family = Literal["image", "video", "document", "audio"]
MediaBlock = ImageBlock | VideoBlock | DocumentBlock | AudioBlock

_EXTENSIONS: Final[Mapping[str, Mapping[str, str]]] = {
    "image": IMAGE_EXTENSIONS,
    "video": VIDEO_EXTENSIONS,
    "document": DOCUMENT_EXTENSIONS,
    "audio": AUDIO_EXTENSIONS,
}
#: How an error names one of a family ("must be an audio MIME type").
_ONE_OF: Final[Mapping[str, str]] = {
    "image": "an image",
    "video": "a video",
    "document": "a document",
    "audio": "an audio",
}


def family_of(media_type: str) -> Family | None:
    """The block family a media type belongs to (``application/pdf`` -> "document"), or None."""
    major = media_type.partition("/")[0]
    if major == "image" or major == "video" or major == "audio":
        return major  # type: ignore[return-value]
    if major == "text" or media_type in DOCUMENT_TYPES:
        return "document"
    return None


def guess_media_type(url: str, family: Family) -> str | None:
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
    return _EXTENSIONS[family].get(extension)


def _url_source(url: object, media_type: object, family: Family) -> UrlSource:
    checked_url = check_url(url, "url")
    if media_type is None:
        guessed = guess_media_type(checked_url, family)
        if guessed is None:
            example = "application/pdf" if family == "document" else f"{family}/..."
            raise InvalidMessageError(
                "media_type",
                f"could not be inferred from the URL's file extension; "
                f'pass media_type="{example}"',
            )
        return new(UrlSource, media_type=guessed, url=checked_url)
    return new(UrlSource, media_type=_family_type(media_type, family), url=checked_url)


def _base64_source(data: object, media_type: object, family: Family) -> Base64Source:
    if isinstance(data, bytes | bytearray | memoryview):
        raise InvalidMessageError(
            "data",
            f"must contain raw base64 data as a str, got {type_name(data)}; "
            "use base64.b64encode(raw).decode('ascii')",
        )
    checked_data = check_base64(data, "data")
    return new(Base64Source, media_type=_family_type(media_type, family), data=checked_data)


def _family_type(media_type: object, family: Family) -> str:
    checked = check_media_type(media_type, "media_type")
    if family_of(checked) != family:
        kinds = "application/pdf, text/... or an office type" if family == "document" else ""
        raise InvalidMessageError(
            "media_type",
            f"must be {_ONE_OF[family]} MIME type ({kinds or family + '/...'}), "
            f"got {_shown(checked)}",
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


def document_url(
    url: str, media_type: str | None = None, filename: str | None = None
) -> DocumentBlock:
    """A document block the provider fetches from ``url`` (absolute http or https).

    ``media_type`` defaults to the one of the URL's file extension (``.pdf`` ->
    application/pdf, ``.md`` -> text/markdown).
    """
    source = _url_source(url, media_type, "document")
    return new(DocumentBlock, source=source, filename=optional_string(filename, "filename"))


def document_base64(data: str, media_type: str, filename: str | None = None) -> DocumentBlock:
    """A document block carrying raw base64 ``data`` (no ``data:`` prefix)."""
    source = _base64_source(data, media_type, "document")
    return new(DocumentBlock, source=source, filename=optional_string(filename, "filename"))


def document_text(
    text: str, media_type: str = "text/plain", filename: str | None = None
) -> DocumentBlock:
    """A text document (``text/plain``, ``text/markdown``, ``text/csv``...) holding ``text``,
    carried as UTF-8 in base64."""
    checked = check_media_type(media_type, "media_type")
    if not checked.startswith("text/"):
        raise InvalidMessageError(
            "media_type", f"must be a text MIME type (text/...) for a text document, got {checked}"
        )
    if not isinstance(text, str):
        raise InvalidMessageError("text", f"must be a str, got {type_name(text)}")
    if not text:
        raise InvalidMessageError("text", "must not be empty: an empty document says nothing")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidMessageError("text", "must not contain lone surrogates") from None
    return document_base64(base64.b64encode(raw).decode("ascii"), checked, filename)


def audio_url(url: str, media_type: str | None = None) -> AudioBlock:
    """An audio block the provider fetches from ``url`` (absolute http or https).

    ``media_type`` defaults to the one of the URL's file extension (``.mp3`` -> audio/mpeg).
    """
    return new(AudioBlock, source=_url_source(url, media_type, "audio"))


def audio_base64(data: str, media_type: str) -> AudioBlock:
    """An audio block carrying raw base64 ``data`` (no ``data:`` prefix)."""
    return new(AudioBlock, source=_base64_source(data, media_type, "audio"))


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


# -- bytes and files: typed by their content ---------------------------------------------------

#: Names of one type the signature library, the extension table and callers may each use.
_SAME_TYPE: Final[Mapping[str, str]] = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/apng": "image/png",
    "image/x-icon": "image/vnd.microsoft.icon",
    "image/x-png": "image/png",
    "video/x-m4v": "video/mp4",
    "video/m4v": "video/mp4",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-flac": "audio/flac",
    "audio/mp3": "audio/mpeg",
    "audio/x-mp3": "audio/mpeg",
    "audio/mpeg3": "audio/mpeg",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aiff": "audio/aiff",
    "audio/x-aac": "audio/aac",
    "application/x-pdf": "application/pdf",
    "text/x-markdown": "text/markdown",
}
#: What each helper's kind is called in a refusal ("not an image or a video").
_WANTED: Final[Mapping[Family | None, str]] = {
    None: "an image, a video, a document or audio",
    "image": "an image",
    "video": "a video",
    "document": "a document",
    "audio": "audio",
}


class MediaTypeMismatchError(InvalidMessageError):
    """The content of bytes or a file is of one type, its extension (or the caller) says
    another; or the content is not an image or video at all (``content_type`` None or of
    another family). ``name`` is the file (or ``"data"``); ``claimed_by`` says who claimed
    ``claimed_type``: ``"extension"``, ``"caller"`` or ``"family"`` (the helper's kind);
    ``detail`` is the reason without the name."""

    def __init__(
        self,
        name: str,
        content_type: str | None,
        claimed_type: str | None,
        claimed_by: str,
        reason: str,
    ) -> None:
        self.name = name
        self.content_type = content_type
        self.claimed_type = claimed_type
        self.claimed_by = claimed_by
        self.detail = reason
        super().__init__("media_type", f"of {_shown(name)}: {reason}")


class MediaTypeWarning(UserWarning):
    """A file's extension says one media type and its content another: the content's type is
    sent. ``name`` is the file, ``content_type`` what it holds, ``extension_type`` what its
    extension says."""

    def __init__(self, name: str, content_type: str, extension_type: str) -> None:
        self.name = name
        self.content_type = content_type
        self.extension_type = extension_type
        super().__init__(
            f"{name}: its content is {content_type}, but its extension says {extension_type}; "
            f"sent as {content_type}"
        )


class MediaFileTooLargeError(InvalidMessageError):
    """A file is past the ``max_bytes`` it was read with; refused before its body is read (or,
    when it grew while read, as soon as it passed the limit: ``grew`` True).

    ``name`` is the file, ``media_type`` its content's type, ``size`` its size in bytes (at
    least ``limit + 1`` when it grew), ``limit`` the limit in bytes."""

    def __init__(self, name: str, media_type: str, size: int, limit: int, grew: bool) -> None:
        self.name = name
        self.media_type = media_type
        self.size = size
        self.limit = limit
        self.grew = grew
        if grew:
            self.detail = f"it grew past the limit of {limit} bytes while it was read"
        else:
            self.detail = f"it is {size} bytes, past the limit of {limit} bytes"
        super().__init__("path", f"{name}: {self.detail}")


#: Past this many characters, a name shown in an error is cut (errors carry no payload).
_SHOWN = 200
#: A stated media type that is not one is shown up to this many characters.
_SHOWN_TYPE = 20


def _shown(value: str) -> str:
    """A name as an error shows it: whole when short, a ``data:`` URL without its payload,
    else its start and its length."""
    if value[:5].lower() == "data:":
        return f"{value.partition(',')[0]},...[{len(value)} characters]"
    if len(value) <= _SHOWN:
        return value
    return f"{value[: _SHOWN - 40]}...[{len(value)} characters]"


def _shown_type(value: str) -> str:
    """A stated media type as an error shows it: whole when it is one, else cut short."""
    try:
        return check_media_type(value, "media_type")
    except InvalidMessageError:
        pass
    if len(value) <= _SHOWN_TYPE:
        return value
    return f"{_shown(value)[:_SHOWN_TYPE]}...[{len(value)} characters]"


def _canonical(media_type: str) -> str:
    lowered = media_type.strip().lower()
    return _SAME_TYPE.get(lowered, lowered)


def sniff_media_type(data: bytes) -> str | None:
    """The media type the content of ``data`` starts with (its signature), or None.

    Only the first 8 KiB are read; the answer comes from the ``filetype`` library's
    signature tables (imported on the first call).
    """
    import filetype  # type: ignore[import-untyped]

    kind = filetype.guess(bytes(data[:8192]))
    return None if kind is None else str(kind.mime)


def extension_media_type(name: str, family: Family | None = None) -> str | None:
    """The media type of ``name``'s file extension in oma's table for ``family`` (None: the
    image, video, document and audio tables, in that order), or None."""
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    families: tuple[Family, ...] = (family,) if family else ("image", "video", "document", "audio")
    for each in families:
        found = _EXTENSIONS[each].get(extension)
        if found is not None:
            return found
    return None


def _looks_like_text(data: bytes) -> bool:
    head = bytes(data[:4096])
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at the end is still text
        return exc.start >= len(head) - 3
    return True


def checked_media_type(
    data: bytes,
    name: str,
    family: Family | None = None,
    media_type: str | None = None,
    extension_hint: str | None = None,
) -> str:
    """The media type ``data`` is sent with: the one its content shows.

    ``media_type`` (stated by the caller; it replaces ``extension_hint``, from a file name)
    must agree with the content; it decides alone only when the content's type is unknown
    (never for text, except SVG and ``text/*`` documents). ``family`` limits the answer to
    one kind of block (None: any). Text is a document of the ``text/*`` type stated or hinted
    (for ``family="document"``, ``text/plain`` when none is). Anything else raises
    ``MediaTypeMismatchError`` naming both types. An ``extension_hint`` the content
    contradicts is only a ``MediaTypeWarning``: the content decides. Only the first 8 KiB of
    ``data`` are looked at.
    """
    sniffed = sniff_media_type(data)
    content = None if sniffed is None else _canonical(sniffed)
    if content == "video/webm" and family == "audio":
        content = "audio/webm"  # one container for both; the caller says it holds sound
    wanted = _WANTED[family]
    if content is None:
        text = bool(data) and _looks_like_text(data)
        stated = None if media_type is None else _canonical(media_type)
        if stated is not None and (not text or stated == "image/svg+xml"):
            checked = check_media_type(media_type, "media_type")
            return _family_type(checked, family) if family else checked
        if text and family in (None, "document"):
            claimed = stated or (None if extension_hint is None else _canonical(extension_hint))
            if claimed is not None and claimed.startswith("text/"):
                return check_media_type(claimed, "media_type")
            if family == "document" and stated is None:
                if claimed is not None:
                    warnings.warn(MediaTypeWarning(name, "text/plain", claimed), stacklevel=4)
                return "text/plain"
        if not data:
            reason = f"it is empty, not {wanted}"
        elif text:
            reason = f"it holds text, not {wanted}"
        else:
            reason = "its content is of no media type oma recognises"
        hint = extension_hint or None
        if hint:
            reason += f" (its extension says {hint})"
        claimed_by = "caller" if media_type is not None else "extension"
        claimed_type = None if media_type is None else _shown_type(media_type)
        raise MediaTypeMismatchError(name, None, claimed_type or hint, claimed_by, reason)
    content_family = family_of(content)
    if content_family is None or (family and content_family != family):
        claimed_type = None if media_type is None else _shown_type(media_type)
        raise MediaTypeMismatchError(
            name, content, claimed_type, "family", f"its content is {content}, not {wanted}"
        )
    if media_type is not None and _canonical(media_type) != content:
        claimed_type = _shown_type(media_type)
        raise MediaTypeMismatchError(
            name,
            content,
            claimed_type,
            "caller",
            f"its content is {content}, but the stated type is {claimed_type}",
        )
    if media_type is None and extension_hint is not None and _canonical(extension_hint) != content:
        warnings.warn(MediaTypeWarning(name, content, extension_hint), stacklevel=4)
    return content


#: What a limit may be: bytes, or a function of the content's media type giving them (None: no
#: limit), or None.
MaxBytes = int | Callable[[str], int | None] | None

#: Read in chunks of this size: memory grows with the file only up to the limit.
_CHUNK: Final = 1 << 20
#: The head read first: what the signature check and the text check look at.
_HEAD: Final = 8192

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int, name: str) -> InvalidMessageError | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    return InvalidMessageError("path", f"{name} is {kind}, not a regular file")


def _open_regular(path: str | os.PathLike[str], name: str) -> tuple[int, int]:
    """A descriptor on the regular file at ``path`` and its size. Stat'ed first and opened
    without blocking, so a FIFO or a device is refused at once and never read; the opened
    descriptor is checked again (the path may have been swapped between the two)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InvalidMessageError("path", f"no such file: {name}") from None
    except OSError as exc:
        raise InvalidMessageError("path", f"cannot read {name}: {exc.strerror or exc}") from None
    refused = _not_regular(mode, name)
    if refused is not None:
        raise refused
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InvalidMessageError("path", f"cannot read {name}: {exc.strerror or exc}") from None
    opened = os.fstat(fd)
    refused = _not_regular(opened.st_mode, name)
    if refused is not None:
        os.close(fd)
        raise refused
    return fd, opened.st_size


def _read_up_to(fd: int, count: int, name: str) -> bytes:
    """Up to ``count`` bytes from ``fd``, fewer only at its end; in chunks of ``_CHUNK``."""
    parts: list[bytes] = []
    left = count
    while left > 0:
        try:
            part = os.read(fd, min(left, _CHUNK))
        except OSError as exc:
            raise InvalidMessageError(
                "path", f"cannot read {name}: {exc.strerror or exc}"
            ) from None
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _limit_for(max_bytes: MaxBytes, media_type: str) -> int | None:
    return max_bytes(media_type) if callable(max_bytes) else max_bytes


def _read_file(
    path: str | os.PathLike[str],
    family: Family | None,
    media_type: str | None,
    max_bytes: MaxBytes,
) -> tuple[bytes, str]:
    """The bytes of the regular file at ``path`` and their checked media type.

    The head is read and typed first, then the size is checked against the limit for that
    type before the body is read; a file that grows past the limit meanwhile is cut there and
    refused.
    """
    name = os.fspath(path)
    fd, size = _open_regular(path, name)
    try:
        head = _read_up_to(fd, _HEAD, name)
        base = Path(path).name
        hint = extension_media_type(base, family) or extension_media_type(base)
        checked = checked_media_type(head, name, family, media_type, hint)
        limit = _limit_for(max_bytes, checked)
        if limit is not None and size > limit:
            raise MediaFileTooLargeError(name, checked, size, limit, grew=False)
        if len(head) < _HEAD:
            return head, checked
        wanted = (limit + 1 if limit is not None else max(size, _HEAD) + 1) - len(head)
        parts = [head]
        while True:  # to the end of the file, or one byte past the limit
            part = _read_up_to(fd, wanted, name)
            parts.append(part)
            read = sum(map(len, parts))
            if limit is not None and read > limit:
                raise MediaFileTooLargeError(name, checked, read, limit, grew=True)
            if len(part) < wanted or limit is not None:
                return b"".join(parts), checked
            wanted = _CHUNK
    finally:
        os.close(fd)


def read_limited(
    stream: BinaryIO,
    name: str,
    family: Family | None = None,
    media_type: str | None = None,
    max_bytes: MaxBytes = None,
) -> tuple[bytes, str]:
    """The bytes of ``stream`` (stdin, a pipe) and their checked media type, read as a file is:
    the head typed first, then at most the limit for that type (``MediaFileTooLargeError`` one
    byte past it, without reading further)."""
    head = _read_stream(stream, _HEAD)
    checked = checked_media_type(head, name, family, media_type)
    limit = _limit_for(max_bytes, checked)
    if len(head) < _HEAD:
        return head, checked
    rest = _read_stream(stream, None if limit is None else limit + 1 - len(head))
    data = head + rest
    if limit is not None and len(data) > limit:
        raise MediaFileTooLargeError(name, checked, len(data), limit, grew=True)
    return data, checked


def _read_stream(stream: BinaryIO, count: int | None) -> bytes:
    parts: list[bytes] = []
    left = count
    while left is None or left > 0:
        part = stream.read(_CHUNK if left is None else min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        if left is not None:
            left -= len(part)
    return b"".join(parts)


def _block(
    data: bytes, media_type: str, detail: Detail | None = None, filename: str | None = None
) -> MediaBlock:
    """The block of ``media_type``'s family holding ``data`` (a text document must be UTF-8)."""
    encoded = base64.b64encode(data).decode("ascii")
    family = family_of(media_type)
    if family == "image":
        return image_base64(encoded, media_type, detail)
    if family == "document":
        if media_type.startswith("text/"):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                name = filename or "data"
                raise MediaTypeMismatchError(
                    name, media_type, None, "family", f"it is not UTF-8 text (byte {exc.start})"
                ) from None
        return document_base64(encoded, media_type, filename)
    if family == "audio":
        return audio_base64(encoded, media_type)
    return video_base64(encoded, media_type)


def image_bytes(
    data: bytes, media_type: str | None = None, detail: Detail | None = None
) -> ImageBlock:
    """An image block of raw ``data``, its type taken from the content (``media_type``, when
    given, must agree; it decides only for content of a type the signatures do not know)."""
    checked = checked_media_type(_raw(data), "data", "image", media_type)
    block = _block(bytes(data), checked, detail)
    assert isinstance(block, ImageBlock)
    return block


def video_bytes(data: bytes, media_type: str | None = None) -> VideoBlock:
    """A video block of raw ``data``, its type taken from the content (see ``image_bytes``)."""
    checked = checked_media_type(_raw(data), "data", "video", media_type)
    block = _block(bytes(data), checked)
    assert isinstance(block, VideoBlock)
    return block


def document_bytes(
    data: bytes, media_type: str | None = None, filename: str | None = None
) -> DocumentBlock:
    """A document block of raw ``data``: a PDF or office file typed by its content, or text
    (UTF-8) of the ``text/*`` ``media_type`` given (default ``text/plain``)."""
    checked = checked_media_type(_raw(data), filename or "data", "document", media_type)
    block = _block(bytes(data), checked, filename=filename)
    assert isinstance(block, DocumentBlock)
    return block


def audio_bytes(data: bytes, media_type: str | None = None) -> AudioBlock:
    """An audio block of raw ``data``, its type taken from the content (see ``image_bytes``)."""
    checked = checked_media_type(_raw(data), "data", "audio", media_type)
    block = _block(bytes(data), checked)
    assert isinstance(block, AudioBlock)
    return block


def media_bytes(data: bytes, media_type: str | None = None, name: str = "data") -> MediaBlock:
    """An image, video, document or audio block of raw ``data``, whichever its content is
    (text only with a ``text/*`` ``media_type``)."""
    return _block(bytes(data), checked_media_type(_raw(data), name, None, media_type))


def image_file(
    path: str | os.PathLike[str],
    media_type: str | None = None,
    detail: Detail | None = None,
    *,
    max_bytes: MaxBytes = None,
) -> ImageBlock:
    """An image block of the regular file at ``path``, typed by its content.

    An extension that disagrees is a ``MediaTypeWarning`` (a JPEG named ``.png`` is sent as
    image/jpeg); a ``media_type`` you state must agree (``MediaTypeMismatchError``).
    ``max_bytes`` (bytes, or a function of the media type) is checked before the file is
    read: ``MediaFileTooLargeError``.
    """
    data, checked = _read_file(path, "image", media_type, max_bytes)
    block = _block(data, checked, detail)
    assert isinstance(block, ImageBlock)
    return block


def video_file(
    path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: MaxBytes = None
) -> VideoBlock:
    """A video block of the regular file at ``path``, typed by its content (see
    ``image_file``)."""
    data, checked = _read_file(path, "video", media_type, max_bytes)
    block = _block(data, checked)
    assert isinstance(block, VideoBlock)
    return block


def document_file(
    path: str | os.PathLike[str],
    media_type: str | None = None,
    filename: str | None = None,
    *,
    max_bytes: MaxBytes = None,
) -> DocumentBlock:
    """A document block of the regular file at ``path``: a PDF or office file typed by its
    content, or UTF-8 text of the ``text/*`` type its extension names (``.md`` ->
    text/markdown; ``text/plain`` otherwise). ``filename`` defaults to the file's name."""
    data, checked = _read_file(path, "document", media_type, max_bytes)
    name = Path(path).name if filename is None else filename
    block = _block(data, checked, filename=name)
    assert isinstance(block, DocumentBlock)
    return block


def audio_file(
    path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: MaxBytes = None
) -> AudioBlock:
    """An audio block of the regular file at ``path``, typed by its content (see
    ``image_file``)."""
    data, checked = _read_file(path, "audio", media_type, max_bytes)
    block = _block(data, checked)
    assert isinstance(block, AudioBlock)
    return block


def media_file(
    path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: MaxBytes = None
) -> MediaBlock:
    """An image, video, document or audio block of the regular file at ``path``, whichever
    its content is (see ``image_file``); text only when its extension names a ``text/*``
    document type (``.txt``, ``.md``, ``.csv``...), a document then named after the file."""
    data, checked = _read_file(path, None, media_type, max_bytes)
    filename = Path(path).name if family_of(checked) == "document" else None
    return _block(data, checked, filename=filename)


def _raw(data: object) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidMessageError("data", f"must be bytes, got {type_name(data)}")
    return bytes(data)
