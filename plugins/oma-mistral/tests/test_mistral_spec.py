"""What the ``mistral`` spec declares to the core: a key it needs, the options it accepts and
its image size limit, each enforced before any request."""

from __future__ import annotations

import base64

import pytest
from fake_mistral import API_KEY, FakeMistral
from oma_mistral import SPEC

from oma_core import Agent, AgentConfig, MediaTooLargeError, UnknownOptionError, image_base64
from oma_core.toolkit import CLIENT_OPTIONS


def test_the_spec_needs_a_key_from_mistral_api_key() -> None:
    assert SPEC.requires_api_key is True
    assert SPEC.key_variables == ("MISTRAL_API_KEY",)


def test_the_spec_accepts_the_client_options_and_the_documented_body_fields() -> None:
    assert SPEC.provider_options is not None
    assert set(CLIENT_OPTIONS) <= set(SPEC.provider_options)
    assert {"random_seed", "safe_prompt", "response_format", "top_p"} <= set(SPEC.provider_options)


def test_a_misspelt_option_raises_when_the_agent_is_built() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'random_seed'"):
        Agent(AgentConfig(name="a", provider="mistral", provider_options={"random_sed": 1}))


async def test_an_image_past_ten_megabytes_is_refused_before_any_request(
    server: FakeMistral,
) -> None:
    big = base64.b64encode(bytes(10_000_001)).decode("ascii")
    config = AgentConfig(name="a", provider="mistral", base_url=server.base_url, api_key=API_KEY)
    async with Agent(config) as agent:
        result = await agent.run([{"role": "user", "content": [image_base64(big, "image/png")]}])
    assert isinstance(result.status.error, MediaTooLargeError)
    assert "limit of 10000000 bytes per image" in str(result.status.error)
    assert server.requests == []
