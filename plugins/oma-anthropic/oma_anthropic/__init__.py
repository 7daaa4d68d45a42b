"""oma provider plugin for the Anthropic Messages API (Claude).

Registers one provider, ``anthropic``. Loading the plugin imports neither the ``anthropic`` SDK
nor httpx: the factory imports them when an agent first uses the provider. What it carries,
block by block, is in ``capabilities`` and in ``docs/providers/anthropic.md``.
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
    """Build an ``AnthropicProvider`` (the SDK is imported here, on first use)."""
    from .provider import AnthropicProvider

    return AnthropicProvider(settings)


SPEC = ProviderSpec(
    name="anthropic",
    display_name=DISPLAY_NAME,
    factory=create_provider,
    capabilities=CAPABILITIES,
    description="Claude through the Anthropic Messages API (official anthropic SDK).",
    default_model="claude-sonnet-4-6",
    # from Anthropic's models overview, read on 2026-12-02
    known_models=("claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5", "claude-sonnet-4-5"),
    api_key_env="ANTHROPIC_API_KEY",
    shared=True,  # one SDK client serves concurrent runs
    requires_api_key=True,
    # what AnthropicProvider reads: client options, body fields, max_tokens, model, extra_body
    provider_options={
        **CLIENT_OPTION_TYPES,
        **{"transport": str, "max_connections": int},
        **{"metadata": dict, "service_tier": str, "stop_sequences": list, "temperature": float},
        **{"thinking": dict, "tool_choice": dict, "top_k": int, "top_p": float},
        **{"max_tokens": int, "model": str, "extra_body": dict, "cache_ttl": str},
    },
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
