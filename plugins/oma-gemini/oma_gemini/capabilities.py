"""What the Gemini API can carry, as oma's ``Capabilities``, and which URLs it can read.

Images (PNG, JPEG, WebP, HEIC, HEIF) and videos (the nine container types Gemini lists, and
their common aliases) in user turns, base64 as ``inlineData`` or a URL as ``fileData``; PDFs,
plain text and images returned by tools; tool calls and results; reasoning (thought
summaries and signatures, sent back as Gemini returned them). Gemini fetches no arbitrary
URL: ``fileData`` takes a File API URI (``https://generativelanguage.googleapis.com/.../files/
ID``) or, for video, a YouTube link; any other URL is refused before any request, with the
reason.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, Capabilities, MediaLimit

__all__ = [
    "CAPABILITIES",
    "DISPLAY_NAME",
    "FILE_API_HOST",
    "IMAGE_MEDIA_TYPES",
    "VIDEO_MEDIA_TYPES",
    "WIRE_MEDIA_TYPE",
    "image_url_problem",
    "is_youtube",
    "video_url_problem",
]

DISPLAY_NAME = "Google Gemini"
FILE_API_HOST = "generativelanguage.googleapis.com"

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
#: Gemini's own names for video types, and the registered names oma guesses from file names.
WIRE_MEDIA_TYPE = {
    "video/quicktime": "video/mov",
    "video/x-msvideo": "video/avi",
    "video/x-ms-wmv": "video/wmv",
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
TOOL_FILE_MEDIA_TYPES = frozenset({"application/pdf", "text/plain"})

_YOUTUBE_HOSTS = frozenset({"youtube.com", "www.youtube.com", "m.youtube.com", "youtu.be"})
_SEND_BYTES = "send the bytes as base64 instead, or upload the file with the File API"


def _file_api_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname == FILE_API_HOST and "/files/" in parts.path:
        return None
    return (
        f"Gemini reads only File API URIs (https://{FILE_API_HOST}/v1beta/files/...) "
        f"and YouTube links, not other URLs; {_SEND_BYTES}"
    )


def image_url_problem(url: str) -> str | None:
    """None when Gemini can read the image at ``url``, else why not."""
    problem = _file_api_problem(url)
    if problem is not None and urlsplit(url).hostname in _YOUTUBE_HOSTS:
        return f"a YouTube link is a video, not an image; {_SEND_BYTES}"
    return problem


def is_youtube(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("https", "http") and parts.hostname in _YOUTUBE_HOSTS


def video_url_problem(url: str) -> str | None:
    """None when Gemini can read the video at ``url`` (File API URI or YouTube), else why not."""
    return None if is_youtube(url) else _file_api_problem(url)


_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL_RESULT = frozenset({IN_TOOL_RESULT})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", _USER, media_types=IMAGE_MEDIA_TYPES, url_check=image_url_problem),
        BlockSupport("video", _USER, media_types=VIDEO_MEDIA_TYPES, url_check=video_url_problem),
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
    # The API takes at most 20 MB of inline data per request (larger media go through its
    # File API); provider_options["inline_limit"] sets it, as the provider's own check reads.
    limits=(
        MediaLimit(
            20 * 1000 * 1000,
            scope="request",
            option="inline_limit",
            name="inline limit",
            hint="upload large media with the Gemini File API and send the file's URI as a URL "
            "source",
        ),
    ),
)
