"""What the LiteLLM bridge carries, as oma's ``Capabilities``.

LiteLLM takes OpenAI-shaped chat messages and translates them for each provider it reaches;
what every one of its routes can take is text, images (base64 or URL; png, jpeg, gif, webp)
in user turns, tool calls and tool results with text. Video, reasoning and media inside tool
results are not declared, so the core refuses them before any request, naming the bridge:
LiteLLM has no portable shape for them, and a block it cannot carry is never dropped.

Structured output goes in OpenAI's form, which LiteLLM translates per route: ``native``
(``response_format`` ``json_schema``) and ``tool`` (a forced function call) are declared; a route
whose provider has neither is refused by LiteLLM or the service (the bridge cannot know each
route's models in advance).
"""

from __future__ import annotations

from oma_core.toolkit import BlockSupport, Capabilities

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "IMAGE_MEDIA_TYPES"]

DISPLAY_NAME = "LiteLLM bridge"

#: The image types every LiteLLM route takes as OpenAI-style ``image_url`` parts.
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
    ),
    output_modes=frozenset({"native", "tool", "prompted"}),
)
