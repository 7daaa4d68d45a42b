"""What the ``anthropic`` spec declares to the core: a key it needs, the options it accepts and
the API's media size limits, each enforced before any request."""

from __future__ import annotations

import base64

import pytest
from fake_anthropic import FakeAnthropic
from oma_anthropic import SPEC

from oma_core import (
    Agent,
    AgentConfig,
    MediaTooLargeError,
    MissingKeyError,
    UnknownOptionError,
    image_base64,
)


def test_the_spec_needs_a_key_from_anthropic_api_key() -> None:
    assert SPEC.requires_api_key is True
    assert SPEC.key_variables == ("ANTHROPIC_API_KEY",)


def test_the_spec_accepts_exactly_the_options_the_provider_reads() -> None:
    from oma_anthropic.provider import _KNOWN_OPTIONS

    assert set(SPEC.provider_options or ()) == _KNOWN_OPTIONS


def test_a_misspelt_option_raises_when_the_agent_is_built() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'max_tokens'"):
        Agent(AgentConfig(name="a", provider="anthropic", provider_options={"max_token": 5}))


def test_a_missing_key_raises_when_the_run_starts_before_any_request(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = Agent(AgentConfig(name="a", provider="anthropic", base_url=server.url))
    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY"):
        agent.run_sync("hi")
    assert server.requests == []


async def test_an_image_past_five_megabytes_of_base64_is_refused_before_any_request(
    server: FakeAnthropic,
) -> None:
    data = base64.b64encode(bytes(4 * 1024 * 1024)).decode("ascii")  # 5.33 MiB of base64
    config = AgentConfig(name="a", provider="anthropic", base_url=server.url, api_key="test-key")
    async with Agent(config) as agent:
        result = await agent.run([{"role": "user", "content": [image_base64(data, "image/png")]}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert (error.limit, error.measure) == (5 * 1024 * 1024, "base64")
    assert "limit of 5242880 bytes of base64 per image" in str(error)
    assert server.requests == []
