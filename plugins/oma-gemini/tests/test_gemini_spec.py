"""What the ``gemini`` spec declares to the core: a key it needs, the options it accepts and
the API's inline request limit, each enforced before any request."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

from fake_gemini import API_KEY, FakeGemini
from gemini_suite import GeminiSuite
from oma_gemini import SPEC
from oma_gemini.provider import OWN_OPTIONS

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError
from oma_core.testing import SpecSuite


class TestGeminiSpec(GeminiSuite, SpecSuite):
    key_variables = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    options_read = OWN_OPTIONS
    options_exact = False  # and the body fields:
    body_fields = ("generationConfig", "safetySettings", "toolConfig")
    misspelt_option = ("inline_limt", 5, "inline_limit")
    # generateContent's request body (v1beta reference), read 2026-12-02
    option_types: ClassVar[Mapping[str, str]] = {
        "generationConfig": "object",
        "toolConfig": "object",
        "safetySettings": "list",
        "cachedContent": "str",
    }


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
