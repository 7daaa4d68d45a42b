"""oma-openai: OpenAI Chat Completions and OpenAI-compatible services as oma providers.

Registers one provider per preset (``openai``, ``minimax``, ``deepseek``, ``groq``,
``openrouter``, ``together``, ``ollama``, ``vllm``, ``lmstudio``, ``openai-compatible``).
Loading this module imports no SDK: each provider's factory imports ``openai`` when the
provider is first used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from oma_core import PluginError, ProviderSpec, hookimpl
from oma_core.toolkit import ProviderSettings

from .presets import PRESETS, Preset, preset

if TYPE_CHECKING:
    from .provider import OpenAIChatProvider

__all__ = ["PRESETS", "Preset", "make_provider", "oma_register_providers", "preset"]
__version__ = "0.1.0"


def make_provider(preset: Preset, settings: ProviderSettings) -> OpenAIChatProvider:
    """Build the provider for ``preset``; this is where the openai SDK gets imported."""
    if preset.base_url is None and not settings.base_url:
        raise PluginError(
            f'the "{preset.name}" provider needs a base URL: set AgentConfig.base_url '
            '(--base-url), e.g. "http://localhost:8080/v1"',
            name=preset.name,
        )
    from .provider import OpenAIChatProvider

    return OpenAIChatProvider(preset, settings)


def _factory(preset: Preset) -> Callable[[ProviderSettings], OpenAIChatProvider]:
    def factory(settings: ProviderSettings) -> OpenAIChatProvider:
        return make_provider(preset, settings)

    return factory


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    """One ``ProviderSpec`` per preset."""
    return [
        ProviderSpec(
            name=p.name,
            display_name=p.display_name,
            factory=_factory(p),
            capabilities=p.capabilities,
            description=p.description,
            default_model=p.default_model,
            default_base_url=p.base_url,
            api_key_env=p.api_key_env,
            shared=True,  # one SDK client serves concurrent runs
            # a local server's preset sends a placeholder; a hosted one needs a real key
            requires_api_key=p.api_key_env is not None and p.key_placeholder is None,
            # None: body fields are forwarded, and compatible services have fields of their own
            provider_options=None,
        )
        for p in PRESETS
    ]
