"""What the Anthropic Messages API can carry, as oma's ``Capabilities``.

Images in user turns and inside tool results (base64 or URL; JPEG, PNG, GIF, WebP); PDFs inside
tool results as ``document`` blocks; tool calls, tool results and reasoning (thinking). Video is
not declared, so the core refuses it before any request: the Messages API has no video block.
"""

from __future__ import annotations

from oma_core import Capabilities
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "DOCUMENT_MEDIA_TYPES", "IMAGE_MEDIA_TYPES"]

DISPLAY_NAME = "Anthropic Messages"

#: The image types the Messages API accepts (its ``source.media_type`` enum).
IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: Files a tool may return, sent as ``document`` blocks.
DOCUMENT_MEDIA_TYPES = frozenset({"application/pdf"})

_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL_RESULT = frozenset({IN_TOOL_RESULT})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", _USER, media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("tool_use", _ASSISTANT),
        BlockSupport("tool_result", _USER),
        BlockSupport("reasoning", _ASSISTANT),
        BlockSupport("image", _IN_TOOL_RESULT, media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("file", _IN_TOOL_RESULT, media_types=DOCUMENT_MEDIA_TYPES),
    ),
    # The API's documented limits: 5 MB per image (it counts the base64 text), 32 MB per
    # request body on the Messages endpoint.
    limits=(
        MediaLimit(5 * 1024 * 1024, {"image"}, measure="base64"),
        MediaLimit(32_000_000, {"image", "file"}, scope="request", measure="base64"),
    ),
    # output_config.format (native), a forced tool (tool, for models without native)
    output_modes=frozenset({"native", "tool", "prompted"}),
)
