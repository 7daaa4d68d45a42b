"""oma provider plugin bridging to the providers oma has no plugin for, through LiteLLM.

Registers one provider, ``litellm``, whose model names take LiteLLM's ``provider/model``
form (``openai/gpt-4o-mini``, ``anthropic/claude-sonnet-4-6``, ``groq/llama-3.1-8b``...).
Loading the plugin does not import LiteLLM, which takes seconds: the factory does, on first
use. What it carries is in ``capabilities`` and in ``docs/providers/litellm.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from oma_core import ProviderSpec, hookimpl
from oma_core.toolkit import CLIENT_OPTION_TYPES

from .capabilities import CAPABILITIES, DISPLAY_NAME

if TYPE_CHECKING:
    from oma_core.toolkit import Provider, ProviderSettings

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "SPEC", "create_provider", "oma_register_providers"]

__version__ = "0.1.0"


def create_provider(settings: ProviderSettings) -> Provider:
    """Build a ``LiteLLMProvider`` (LiteLLM is imported here, on first use)."""
    from .provider import LiteLLMProvider

    return LiteLLMProvider(settings)


SPEC = ProviderSpec(
    name="litellm",
    display_name=DISPLAY_NAME,
    factory=create_provider,
    capabilities=CAPABILITIES,
    description="Any provider LiteLLM reaches, with model names as provider/model.",
    shared=True,  # stateless: LiteLLM keeps its own clients
    requires_api_key=False,  # each provider behind LiteLLM reads its own variable
    provider_options={
        **CLIENT_OPTION_TYPES,
        "api_version": str,
        "azure_ad_token_provider": Callable,
    },
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
