"""oma provider plugin for Amazon Bedrock's Converse API, with native video, documents and audio.

Registers one provider, ``bedrock``. Loading the plugin imports neither botocore nor httpx:
the factory imports them when an agent first uses the provider. What it carries, block by
block, is in ``capabilities`` and in ``docs/providers/bedrock.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oma_core import ProviderSpec, hookimpl

from .capabilities import CAPABILITIES, DEFAULT_MAX_INLINE_BYTES, DISPLAY_NAME

if TYPE_CHECKING:
    from oma_core.toolkit import Provider, ProviderSettings

__all__ = [
    "CAPABILITIES",
    "DEFAULT_MAX_INLINE_BYTES",
    "DISPLAY_NAME",
    "SPEC",
    "create_provider",
    "oma_register_providers",
]

__version__ = "0.1.0"


def create_provider(settings: ProviderSettings) -> Provider:
    """Build a ``BedrockProvider`` (botocore and httpx are imported here, on first use)."""
    from .provider import BedrockProvider

    return BedrockProvider(settings)


SPEC = ProviderSpec(
    name="bedrock",
    display_name=DISPLAY_NAME,
    factory=create_provider,
    capabilities=CAPABILITIES,
    description=(
        "Amazon Bedrock's Converse API (botocore signing, httpx transport), native video, "
        "documents and audio."
    ),
    default_model="amazon.nova-pro-v1:0",
    # model ids from Bedrock's supported-models page, read on 2026-12-02 (a Region may need
    # an inference profile's id instead, such as "us.anthropic...")
    known_models=(
        *("amazon.nova-pro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-micro-v1:0"),
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "meta.llama3-3-70b-instruct-v1:0",
    ),
    api_key_env="AWS_BEARER_TOKEN_BEDROCK",  # optional: the AWS credential chain works too
    shared=True,  # one httpx pool per event loop serves concurrent runs
    requires_api_key=False,
    provider_options={
        **{"region": str, "profile": str, "max_inline_bytes": int, "timeout": float},
        "max_document_bytes": int,
        **{"max_response_bytes": int, "max_event_bytes": int},
        "additional_model_request_fields": dict,
        "cache_ttl": str,
    },
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]
