"""What the LiteLLM bridge carries, as oma's ``Capabilities``.

LiteLLM takes OpenAI-shaped chat messages and translates them for each provider it reaches;
what every one of its routes can take is text, images (base64 or URL; png, jpeg, gif, webp)
in user turns, tool calls and tool results with text; text documents, as a text part that
names the file; PDFs (``file`` parts) and wav/mp3 audio (``input_audio`` parts), which the
provider passes on only to a model LiteLLM's model map says takes them
(``litellm.supports_pdf_input`` / ``supports_audio_input``) and refuses, before any request,
for any other; reasoning (``thinking_blocks``, ``oma_litellm.reasoning``). Video and media
inside tool results are not declared, so
the core refuses them before any request, naming the bridge: LiteLLM has no portable shape for
them, and a block it cannot carry is never dropped.

Structured output goes in OpenAI's form, which LiteLLM translates per route: ``native``
(``response_format`` ``json_schema``) and ``tool`` (a forced function call) are declared; a route
whose provider has neither is refused by LiteLLM or the service (the bridge cannot know each
route's models in advance).
"""

from __future__ import annotations

from oma_core import Capabilities
from oma_core.toolkit import BlockSupport

__all__ = [
    "AUDIO_FORMATS",
    "CAPABILITIES",
    "DISPLAY_NAME",
    "IMAGE_MEDIA_TYPES",
    "PDF_TYPES",
    "TEXT_DOCUMENT_TYPES",
]

DISPLAY_NAME = "LiteLLM bridge"

#: The image types every LiteLLM route takes as OpenAI-style ``image_url`` parts.
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: Documents sent as OpenAI's ``file`` part, which LiteLLM translates per route.
PDF_TYPES = frozenset({"application/pdf"})
#: Text documents, sent as a text part naming the file: the text types oma names files by.
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
#: Audio sent as OpenAI's ``input_audio`` part: its ``format`` is "wav" or "mp3".
AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}

_USER = frozenset({"user"})
_BASE64 = frozenset({"base64"})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
        BlockSupport("document", _USER, _BASE64, TEXT_DOCUMENT_TYPES),
        # in OpenAI's documented parts, which LiteLLM maps per route; passed on only where its
        # model map says the model takes them (provider.py), refused locally elsewhere
        BlockSupport("document", _USER, _BASE64, PDF_TYPES),
        BlockSupport("audio", _USER, _BASE64, frozenset(AUDIO_FORMATS)),
        BlockSupport("reasoning", frozenset({"assistant"})),
    ),
    output_modes=frozenset({"native", "tool", "prompted"}),
    # AgentConfig.thinking as reasoning_effort / thinking; which models reason is LiteLLM's
    # model map's to say (supports_reasoning), checked per request (reasoning.py)
    thinking=True,
)
