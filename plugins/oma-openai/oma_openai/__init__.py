"""oma-openai: OpenAI (Responses and Chat Completions) and OpenAI-compatible services.

Registers one provider per preset (``openai``, ``minimax``, ``deepseek``, ``groq``,
``openrouter``, ``together``, ``ollama``, ``vllm``, ``lmstudio``, ``openai-compatible``).
Loading this module imports no SDK: each provider's factory imports ``openai`` when the
provider is first used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oma_core import ProviderSpec, hookimpl
from oma_core.errors import PluginError
from oma_core.toolkit import OptionSpec, ProviderSettings

from .presets import PRESETS, Preset, preset

if TYPE_CHECKING:
    from .provider import OpenAIChatProvider

__all__ = ["OPTIONS", "PRESETS", "Preset", "make_provider", "oma_register_providers", "preset"]
__version__ = "0.1.0"


_JSON = (dict, list, str, int, float, bool)

#: What the provider reads from ``provider_options``: the SDK client's options, the Chat
#: Completions body fields, and ``extra_body`` (fields oma does not know, merged into the body
#: as the OpenAI SDK's ``extra_body`` is: a compatible service's own fields go there).
OPTIONS = (
    OptionSpec("organization", str, "OpenAI-Organization header"),
    OptionSpec("project", str, "OpenAI-Project header"),
    OptionSpec("timeout", float, "seconds per request"),
    OptionSpec("default_headers", dict, "headers sent with every request"),
    OptionSpec("headers", dict, "the same as default_headers"),
    OptionSpec("default_query", dict, "query parameters sent with every request"),
    OptionSpec("transport", str, '"httpx" (default), "aiohttp" or "direct"'),
    OptionSpec("api", str, '"responses" (default for openai on api.openai.com) or "chat"'),
    OptionSpec("max_connections", int, "the direct transport's pool size"),
    OptionSpec("max_response_bytes", int, "the largest reply body read, decoded"),
    OptionSpec("max_event_bytes", int, "the largest stream event read"),
    OptionSpec("temperature", float),
    OptionSpec("top_p", float),
    OptionSpec("max_tokens", int),
    OptionSpec("max_completion_tokens", int),
    OptionSpec("stop", (str, list)),
    OptionSpec("seed", int),
    OptionSpec("n", int),
    OptionSpec("presence_penalty", float),
    OptionSpec("frequency_penalty", float),
    OptionSpec("logit_bias", dict),
    OptionSpec("logprobs", bool),
    OptionSpec("top_logprobs", int),
    OptionSpec("reasoning_effort", str, '"minimal", "low", "medium" or "high"'),
    OptionSpec("verbosity", str),
    OptionSpec("response_format", dict),
    OptionSpec("tool_choice", (str, dict)),
    OptionSpec("parallel_tool_calls", bool),
    OptionSpec("user", str),
    OptionSpec("safety_identifier", str),
    OptionSpec("prompt_cache_key", str, "routes requests sharing a prefix to one cache"),
    OptionSpec("prompt_cache_options", dict, 'e.g. {"ttl": "12h"} or {"mode": "explicit"}'),
    OptionSpec("prompt_cache_retention", str, '"in_memory" or "24h" (deprecated by OpenAI)'),
    OptionSpec("service_tier", str),
    OptionSpec("store", bool),
    OptionSpec("metadata", dict),
    OptionSpec("modalities", list),
    OptionSpec("audio", dict),
    OptionSpec("prediction", dict),
    OptionSpec("web_search_options", dict),
    OptionSpec("reasoning", dict, "the Responses API's reasoning settings"),
    OptionSpec("include", list, "the Responses API's include"),
    OptionSpec("truncation", str),
    OptionSpec("max_output_tokens", int),
    OptionSpec("text", dict, "the Responses API's text settings"),
    OptionSpec("extra_body", dict, "body fields oma does not know, sent as given"),
)
_CLIENT_NAMES = frozenset(
    {"organization", "project", "timeout", "default_headers", "headers", "default_query"}
    | {"transport", "max_connections", "max_response_bytes", "max_event_bytes", "api"}
)


def _flatten_extra_body(options: dict[str, Any], name: str) -> dict[str, Any]:
    """``options`` with ``extra_body``'s fields as body fields of their own (a declared
    option given beside it wins; a client option's name inside it stays a body field's name
    only in the body, so it is refused rather than read as client configuration)."""
    extra = options.pop("extra_body", None) or {}
    clash = sorted(name for name in extra if name in _CLIENT_NAMES)
    if clash:
        raise PluginError(
            f'provider_options["extra_body"] holds client options {clash}: '
            "give them as options of their own",
            name=name,
        )
    return {**extra, **options}


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
        if "extra_body" in settings.options:
            options = _flatten_extra_body(dict(settings.options), preset.name)
            settings = ProviderSettings(settings.base_url, settings.api_key, options)
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
            # a compatible service's own fields go in extra_body
            provider_options=OPTIONS,
            known_models=p.known_models,
        )
        for p in PRESETS
    ]
