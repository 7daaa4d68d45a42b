"""oma provider plugin for Mistral's chat completions API (``POST /v1/chat/completions``).

Registers ``mistral``. Loading the plugin imports neither httpx nor httpx-sse: the factory
imports the provider on first use. Text, images in user turns (a URL or a base64 data URL),
tool calls and tool results; video and reasoning are refused before any request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oma_core.toolkit import BlockSupport, Capabilities, ProviderSpec, hookimpl

if TYPE_CHECKING:
    from oma_core.toolkit import Provider, ProviderSettings

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "IMAGE_MEDIA_TYPES", "SPEC", "oma_register_providers"]

DISPLAY_NAME = "Mistral"
#: The image types Mistral's vision models read.
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})

CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), media_types=IMAGE_MEDIA_TYPES),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
    )
)


def create_provider(settings: ProviderSettings) -> Provider:
    from ._provider import MistralProvider  # httpx loads here, on first use

    return MistralProvider(settings)


SPEC = ProviderSpec(
    name="mistral",
    display_name=DISPLAY_NAME,
    factory=create_provider,
    capabilities=CAPABILITIES,
    description="Mistral chat completions over httpx (text, images, tools, streaming).",
    default_model="mistral-medium-latest",
    default_base_url="https://api.mistral.ai/v1",
    api_key_env="MISTRAL_API_KEY",
    shared=True,  # one httpx client per event loop serves concurrent runs
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
