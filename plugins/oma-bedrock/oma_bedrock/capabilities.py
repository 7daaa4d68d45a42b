"""What Amazon Bedrock's Converse API can carry, as oma's ``Capabilities``.

Converse takes media as bytes (or S3 locations, which oma's message model does not have), so
every media block is declared for base64 sources only: a URL source is refused by the core
before anything is signed or sent. Images (png, jpeg, gif, webp) in user turns and inside tool
results; video, natively, in user turns for the formats Converse names; documents (pdf, csv,
doc, docx, xls, xlsx, html, txt, md) in user turns and from tools; audio in user turns for the
formats of botocore's ``AudioFormat``; tool calls, tool results and reasoning. Structured
output natively (``outputConfig.textFormat``, which botocore's service model has) or by a
forced tool (``toolChoice`` ``{"tool": ...}``); each works on the models Bedrock supports it
for. Prompt caching: ``cachePoint`` checkpoints from ``CachePoint`` blocks and
``AgentConfig.cache``.
"""

from __future__ import annotations

from collections.abc import Mapping

from oma_core import Capabilities
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit

from .caching import CACHING
from .thinking import MODEL_RULES

__all__ = [
    "AUDIO_FORMATS",
    "CAPABILITIES",
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_INLINE_BYTES",
    "MAX_DOCUMENTS",
    "DISPLAY_NAME",
    "DOCUMENT_FORMATS",
    "IMAGE_FORMATS",
    "PROVIDER",
    "VIDEO_FORMATS",
]

DISPLAY_NAME = "Amazon Bedrock"
#: The provider's registered name: what its reasoning blocks' ``provider`` says.
PROVIDER = "bedrock"

#: Media type -> Converse ``ImageFormat``.
IMAGE_FORMATS: Mapping[str, str] = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
#: Media type -> Converse ``VideoFormat`` (mp4, mov, mkv, webm, flv, mpeg/mpg, wmv, 3gp).
VIDEO_FORMATS: Mapping[str, str] = {
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "video/x-matroska": "mkv",
    "video/webm": "webm",
    "video/x-flv": "flv",
    "video/mpeg": "mpeg",
    "video/x-ms-wmv": "wmv",
    "video/3gpp": "three_gp",
}
#: Media type -> Converse ``DocumentFormat``, for documents and for files a tool returns.
DOCUMENT_FORMATS: Mapping[str, str] = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
#: Media type -> Converse ``AudioFormat`` (botocore's service model: mp3, wav, flac, ogg, aac,
#: m4a, webm, ...); AIFF has no format there and is refused.
AUDIO_FORMATS: Mapping[str, str] = {
    "audio/wav": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/flac": "flac",
    "audio/ogg": "ogg",
    "audio/aac": "aac",
    "audio/mp4": "m4a",
    "audio/webm": "webm",
}
#: Converse's documented limit on one document's bytes (Message: "Each document's size must be
#: no more than 4.5 MB"); ``provider_options["max_document_bytes"]`` raises it for the models
#: AWS exempts (Claude 4 and later for PDF, Nova for PDF and DOCX).
DEFAULT_MAX_DOCUMENT_BYTES = 4_500_000
#: Converse's documented limit on documents per message ("up to five documents").
MAX_DOCUMENTS = 5
#: Decoded media bytes one request may carry inline (Converse's documented 25 MB request
#: limit for video bytes); settable with ``provider_options["max_inline_bytes"]``.
DEFAULT_MAX_INLINE_BYTES = 25_000_000

_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL_RESULT = frozenset({IN_TOOL_RESULT})
_BASE64 = frozenset({"base64"})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", _USER, _BASE64, frozenset(IMAGE_FORMATS)),
        BlockSupport("video", _USER, _BASE64, frozenset(VIDEO_FORMATS)),
        BlockSupport("document", _USER, _BASE64, frozenset(DOCUMENT_FORMATS)),
        BlockSupport("audio", _USER, _BASE64, frozenset(AUDIO_FORMATS)),
        BlockSupport("tool_use", _ASSISTANT),
        BlockSupport("tool_result", _USER),
        BlockSupport("reasoning", _ASSISTANT),
        BlockSupport("image", _IN_TOOL_RESULT, _BASE64, frozenset(IMAGE_FORMATS)),
        BlockSupport("file", _IN_TOOL_RESULT, _BASE64, frozenset(DOCUMENT_FORMATS)),
    ),
    # Converse's documented limits: 3.75 MB per image, 4.5 MB per document (settable: some
    # models read larger PDFs); the inline media of a request together at most
    # max_inline_bytes (25 MB by default, for video bytes).
    limits=(
        MediaLimit(3_750_000, {"image"}),
        MediaLimit(
            DEFAULT_MAX_DOCUMENT_BYTES,
            {"document", "file"},
            option="max_document_bytes",
            name="document limit",
            hint=(
                "Converse takes larger documents from S3 only (Claude 4 and later read larger "
                'PDFs, Nova larger PDF and DOCX: raise provider_options["max_document_bytes"] '
                "for them)"
            ),
        ),
        MediaLimit(
            DEFAULT_MAX_INLINE_BYTES,
            scope="request",
            option="max_inline_bytes",
            name="inline limit",
            hint="Converse takes larger media from S3 only",
        ),
    ),
    output_modes=frozenset({"native", "tool", "prompted"}),
    # AgentConfig.thinking for Claude, per family (thinking.py)
    thinking=True,
    models=MODEL_RULES,
    # cachePoint checkpoints, at most 4 (caching.py)
    caching=CACHING,
)
