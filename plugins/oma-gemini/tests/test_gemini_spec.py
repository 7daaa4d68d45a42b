"""What the ``gemini`` spec declares to the core: a key it needs, the options it accepts and
the API's inline request limit, each enforced before any request."""

from __future__ import annotations

import base64

import pytest
from fake_gemini import API_KEY, FakeGemini
from oma_gemini import SPEC

from oma_core import (
    Agent,
    AgentConfig,
    MediaTooLargeError,
    MissingKeyError,
    UnknownOptionError,
    image_base64,
)


def test_the_spec_needs_a_key_from_either_variable_the_provider_reads() -> None:
    assert SPEC.requires_api_key is True
    assert SPEC.key_variables == ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def test_the_spec_accepts_the_provider_s_own_options_and_the_body_fields() -> None:
    from oma_gemini.provider import OWN_OPTIONS

    assert SPEC.provider_options is not None
    assert set(OWN_OPTIONS) <= set(SPEC.provider_options)
    assert {"generationConfig", "safetySettings", "toolConfig"} <= set(SPEC.provider_options)


def test_a_misspelt_option_raises_when_the_agent_is_built() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'inline_limit'"):
        Agent(AgentConfig(name="a", provider="gemini", provider_options={"inline_limt": 5}))


def test_a_missing_key_raises_when_the_run_starts_before_any_request(
    server: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    agent = Agent(AgentConfig(name="a", provider="gemini", base_url=server.base_url))
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        agent.run_sync("hi")
    assert server.requests == []


async def test_inline_media_past_the_request_limit_are_refused_before_any_request(
    server: FakeGemini,
) -> None:
    image = image_base64(base64.b64encode(bytes(600)).decode("ascii"), "image/png")
    config = AgentConfig(
        name="a",
        provider="gemini",
        base_url=server.base_url,
        api_key=API_KEY,
        provider_options={"inline_limit": 1000},
    )
    async with Agent(config) as agent:
        result = await agent.run([{"role": "user", "content": [image, image]}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert (error.scope, error.size, error.limit) == ("request", 1200, 1000)
    assert 'provider_options["inline_limit"]' in str(error)
    assert server.requests == []


def test_the_request_limit_is_the_api_s_twenty_megabytes_by_default() -> None:
    from oma_gemini.mapping import DEFAULT_INLINE_LIMIT

    (limit,) = SPEC.capabilities.limits
    assert (limit.max_bytes, limit.scope, limit.option) == (
        DEFAULT_INLINE_LIMIT,
        "request",
        "inline_limit",
    )
