"""What the Anthropic Messages API can carry, as oma's ``Capabilities``.

Images in user turns and inside tool results (base64 or URL; JPEG, PNG, GIF, WebP); documents in
user turns (a PDF by base64 or URL, text by base64) and PDFs inside tool results, as ``document``
blocks; tool calls, tool results and reasoning (thinking); prompt caching (``cache_control``
breakpoints from ``CachePoint`` blocks and ``AgentConfig.cache``). Video and audio are not
declared, so the core refuses them before any request: the Messages API has no video or audio
block.
"""

from __future__ import annotations

from oma_core import Capabilities
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit

from .caching import CACHING
from .thinking import MODEL_RULES

__all__ = [
    "CAPABILITIES",
    "DISPLAY_NAME",
    "DOCUMENT_MEDIA_TYPES",
    "IMAGE_MEDIA_TYPES",
    "PROVIDER",
    "TEXT_DOCUMENT_TYPES",
]

DISPLAY_NAME = "Anthropic Messages"
#: The provider's registered name: what its reasoning blocks' ``provider`` says.
PROVIDER = "anthropic"

#: The image types the Messages API accepts (its ``source.media_type`` enum).
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: Files a tool may return, sent as ``document`` blocks; and the one type a document block
#: takes by base64 or URL (``Base64PDFSource``, ``URLPDFSource``).
DOCUMENT_MEDIA_TYPES = frozenset({"application/pdf"})
#: Text documents, sent as the API's plain-text source (``{"type": "text", "media_type":
#: "text/plain", "data"}``, the only text type it documents) holding the decoded text: the
#: text types oma names files by (``oma_core.media.DOCUMENT_EXTENSIONS``).
TEXT_DOCUMENT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/tab-separated-values",
        "text/html",
        "text/xml",
    }
)

_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL_RESULT = frozenset({IN_TOOL_RESULT})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", _USER, media_types=IMAGE_MEDIA_TYPES),
        # a PDF by base64 or URL; text by base64 only (the API fetches PDFs alone)
        BlockSupport(
            "document",
            _USER,
            frozenset({"base64"}),
            media_types=DOCUMENT_MEDIA_TYPES | TEXT_DOCUMENT_TYPES,
        ),
        BlockSupport("document", _USER, frozenset({"url"}), media_types=DOCUMENT_MEDIA_TYPES),
        BlockSupport("tool_use", _ASSISTANT),
        BlockSupport("tool_result", _USER),
        BlockSupport("reasoning", _ASSISTANT),
        BlockSupport("image", _IN_TOOL_RESULT, media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("file", _IN_TOOL_RESULT, media_types=DOCUMENT_MEDIA_TYPES),
    ),
    # The API's documented limits: 5 MB per image (it counts the base64 text), 32 MB per
    # request body on the Messages endpoint (PDF support: "Maximum request size"). A text
    # document is sent decoded, so counting its base64 errs on the safe side. The PDF page
    # limit cannot be checked without parsing the PDF: the service judges it.
    limits=(
        MediaLimit(5 * 1024 * 1024, {"image"}, measure="base64"),
        MediaLimit(32_000_000, {"image", "document", "file"}, scope="request", measure="base64"),
    ),
    # output_config.format (native), a forced tool (tool, for models without native)
    output_modes=frozenset({"native", "tool", "prompted"}),
    # AgentConfig.thinking, mapped per model family (thinking.py)
    thinking=True,
    models=MODEL_RULES,
    # cache_control breakpoints, at most 4 (caching.py)
    caching=CACHING,
)
