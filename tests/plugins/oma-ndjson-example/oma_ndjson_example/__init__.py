"""oma-ndjson-example: an Ollama-like chat service (``POST /api/chat``, newline-delimited JSON
streaming, images as a base64 list on the message, OpenAI-like tools, no video), made from
oma's plugin template (``python -m oma_core.testing.template``)."""

from __future__ import annotations

from oma_core import Capabilities, ProviderSpec, hookimpl
from oma_core.http import CLIENT_OPTIONS
from oma_core.toolkit import BlockSupport, Provider, ProviderSettings

__version__ = "0.1.0"

IMAGES = frozenset({"image/png", "image/jpeg"})
CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), frozenset({"base64"}), IMAGES),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
    )
)


def _make(settings: ProviderSettings) -> Provider:
    from ._provider import NdjsonExampleProvider  # httpx loads here, on first use

    return NdjsonExampleProvider(SPEC, settings)


SPEC = ProviderSpec(
    name="ndjson-example",
    display_name="NDJSON Example",
    factory=_make,
    capabilities=CAPABILITIES,
    description="An Ollama-like service: /api/chat, newline-delimited JSON streaming.",
    default_model="llama3.2",
    default_base_url="http://localhost:11434",
    api_key_env="NDJSON_EXAMPLE_API_KEY",  # a local server takes none; a proxy may
    shared=True,
    provider_options=(*CLIENT_OPTIONS, "keep_alive", "options"),
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
