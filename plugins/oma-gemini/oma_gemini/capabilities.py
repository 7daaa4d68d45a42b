"""What the Gemini API can carry, as oma's ``Capabilities``, and which URLs it can read.

Images (PNG, JPEG, WebP, HEIC, HEIF), videos (the nine container types Gemini lists, and
their common aliases), documents (PDF, read with vision, and the text types Gemini reads as
plain text) and audio (WAV, MP3, AIFF, AAC, OGG Vorbis, FLAC) in user turns, base64 as
``inlineData`` or a URL as ``fileData``; PDFs, plain text and images returned by tools; tool
calls and results; reasoning (thought summaries and signatures, sent back as Gemini returned
them). Structured output natively (``responseJsonSchema``) or by a forced function call.
Prompt caching is implicit: the service caches repeated prefixes by itself (Gemini 2.5 and
later) and reports the tokens it read (``cachedContentTokenCount``); no request carries a
marker, so ``CachePoint`` blocks are left out (explicit caches, ``cachedContent``, are made
apart, through the API's caches endpoint, and named in ``provider_options``).

URLs, as the Gemini API documents them since January 2026 (the file input methods guide):
``fileData`` takes any public HTTPS URL and signed URLs (S3 presigned, Azure SAS, ...), which
the service fetches itself, as well as File API URIs and, for video, YouTube links. A plain
``http://`` URL (other than a YouTube link) is refused before any request, with the reason:
the service fetches external files over HTTPS only.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from oma_core import Capabilities
from oma_core.capabilities import CacheSupport
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit

from .thinking import MODEL_RULES

__all__ = [
    "CAPABILITIES",
    "DEFAULT_INLINE_LIMIT",
    "AUDIO_MEDIA_TYPES",
    "DISPLAY_NAME",
    "DOCUMENT_MEDIA_TYPES",
    "FILE_API_HOST",
    "IMAGE_MEDIA_TYPES",
    "INLINE_HINT",
    "PROVIDER",
    "VIDEO_MEDIA_TYPES",
    "WIRE_MEDIA_TYPE",
    "image_url_problem",
    "file_url_problem",
    "is_youtube",
    "video_url_problem",
]

DISPLAY_NAME = "Google Gemini"
#: The provider's registered name: what its reasoning blocks' ``provider`` says.
PROVIDER = "gemini"
FILE_API_HOST = "generativelanguage.googleapis.com"

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
#: Gemini's own names for video types, and the registered names oma guesses from file names.
WIRE_MEDIA_TYPE = {
    "video/quicktime": "video/mov",
    "video/x-msvideo": "video/avi",
    "video/x-ms-wmv": "video/wmv",
    "audio/mpeg": "audio/mp3",
}
VIDEO_MEDIA_TYPES = frozenset(
    {
        "video/mp4",
        "video/mpeg",
        "video/mov",
        "video/avi",
        "video/x-flv",
        "video/mpg",
        "video/webm",
        "video/wmv",
        "video/3gpp",
        *WIRE_MEDIA_TYPE,
    }
)
#: Documents: PDF (read with vision, page by page) and the text types Gemini's document
#: guide lists, read as plain text (``text/markdown`` for its ``text/md``).
DOCUMENT_MEDIA_TYPES = frozenset(
    {
        "application/pdf",
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "text/xml",
        "text/css",
        "text/rtf",
        "text/javascript",
        "text/x-python",
    }
)
#: Audio: the six formats Gemini's audio guide lists, and ``audio/mpeg`` (the registered
#: name oma gives MP3), sent as Gemini's ``audio/mp3``.
AUDIO_MEDIA_TYPES = frozenset(
    {"audio/wav", "audio/mp3", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"}
)
TOOL_FILE_MEDIA_TYPES = frozenset({"application/pdf", "text/plain"})
#: Decoded bytes of base64 media one request may carry inline (``inline_limit`` option).
DEFAULT_INLINE_LIMIT = 100 * 1000 * 1000
#: The way out a refusal past the inline limit offers.
INLINE_HINT = (
    "send it by URL instead (a public or signed https URL Gemini fetches), or upload it with "
    "the Gemini File API and send the file's URI"
)

_YOUTUBE_HOSTS = frozenset({"youtube.com", "www.youtube.com", "m.youtube.com", "youtu.be"})
_HTTPS_ONLY = (
    "Gemini fetches external URLs over HTTPS only (public or signed https:// URLs, File API "
    "URIs, YouTube links); use the https:// form of the URL, or send the bytes as base64"
)


def is_youtube(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("https", "http") and parts.hostname in _YOUTUBE_HOSTS


def image_url_problem(url: str) -> str | None:
    """None when Gemini can read the image at ``url`` (any https URL), else why not."""
    if is_youtube(url):
        return "a YouTube link is a video, not an image; send the image itself"
    return video_url_problem(url)


def file_url_problem(url: str) -> str | None:
    """None when Gemini can read the document or audio file at ``url`` (any https URL),
    else why not."""
    if is_youtube(url):
        return "a YouTube link is a video; Gemini reads it only as a video block"
    return video_url_problem(url)


def video_url_problem(url: str) -> str | None:
    """None when Gemini can read the video at ``url`` (any https URL, or a YouTube link),
    else why not."""
    if is_youtube(url) or urlsplit(url).scheme == "https":
        return None
    return _HTTPS_ONLY


_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL_RESULT = frozenset({IN_TOOL_RESULT})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", _USER, media_types=IMAGE_MEDIA_TYPES, url_check=image_url_problem),
        BlockSupport("video", _USER, media_types=VIDEO_MEDIA_TYPES, url_check=video_url_problem),
        BlockSupport(
            "document", _USER, media_types=DOCUMENT_MEDIA_TYPES, url_check=file_url_problem
        ),
        BlockSupport("audio", _USER, media_types=AUDIO_MEDIA_TYPES, url_check=file_url_problem),
        BlockSupport("tool_use", _ASSISTANT),
        BlockSupport("tool_result", _USER),
        BlockSupport("reasoning", _ASSISTANT),
        BlockSupport(
            "image", _IN_TOOL_RESULT, frozenset({"base64"}), media_types=IMAGE_MEDIA_TYPES
        ),
        BlockSupport(
            "file", _IN_TOOL_RESULT, frozenset({"base64"}), media_types=TOOL_FILE_MEDIA_TYPES
        ),
    ),
    # The API takes at most 100 MB of inline data per request (since January 2026; 20 MB
    # before); larger media go by URL. provider_options["inline_limit"] sets it, as the
    # provider's own check reads.
    limits=(
        MediaLimit(
            DEFAULT_INLINE_LIMIT,
            scope="request",
            option="inline_limit",
            name="inline limit",
            hint=INLINE_HINT,
        ),
    ),
    output_modes=frozenset({"native", "tool", "prompted"}),
    # AgentConfig.thinking as thinkingConfig, per model family (thinking.py)
    thinking=True,
    models=MODEL_RULES,
    # implicit caching: no marker on the wire; the tokens read are counted
    caching=CacheSupport(
        max_markers=0,
        implicit=True,
        source="Gemini API context caching documentation (implicit caching), 2026-12-06",
    ),
)
