"""oma provider plugin for Google Gemini (the Gemini API's ``generateContent``), video included.

Registers ``gemini``. Loading the plugin imports neither httpx nor httpx-sse: the factory
imports the provider on first use. What it carries, block by block, is in ``capabilities``
and in ``docs/providers/gemini.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oma_core import ProviderSpec, hookimpl
from oma_core.toolkit import CLIENT_OPTION_TYPES

from .capabilities import CAPABILITIES, DISPLAY_NAME

if TYPE_CHECKING:
    from oma_core.toolkit import Provider, ProviderSettings

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "SPEC", "create_provider", "oma_register_providers"]

__version__ = "0.1.0"


def create_provider(settings: ProviderSettings) -> Provider:
    """Build a ``GeminiProvider`` (httpx is imported here, on first use)."""
    from .provider import GeminiProvider

    return GeminiProvider(settings)


SPEC = ProviderSpec(
    name="gemini",
    display_name=DISPLAY_NAME,
    factory=create_provider,
    capabilities=CAPABILITIES,
    description="Google Gemini over the REST generateContent API (httpx; native video).",
    default_model="gemini-2.5-flash",
    # from the Gemini API's models page, read on 2026-12-02
    known_models=("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite"),
    default_base_url="https://generativelanguage.googleapis.com/v1beta",
    api_key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    shared=True,  # one httpx client per event loop serves concurrent runs
    requires_api_key=True,
    # client options, the inline limit, and the generateContent body fields oma does not fill
    provider_options={
        **CLIENT_OPTION_TYPES,
        "inline_limit": int,
        **{"generationConfig": dict, "safetySettings": list, "toolConfig": dict},
        "cachedContent": str,
    },
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
