"""What the ``anthropic`` spec declares to the core: a key it needs, the options it accepts and
the API's media size limits, each enforced before any request."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

from anthropic_suite import AnthropicSuite
from fake_anthropic import FakeAnthropic
from oma_anthropic.provider import _KNOWN_OPTIONS

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError
from oma_core.testing import SpecSuite


class TestAnthropicSpec(AnthropicSuite, SpecSuite):
    key_variables = ("ANTHROPIC_API_KEY",)
    options_read = _KNOWN_OPTIONS
    misspelt_option = ("max_token", 5, "max_tokens")
    # the Messages API reference (POST /v1/messages), read 2026-12-02
    option_types: ClassVar[Mapping[str, str]] = {
        "top_k": "int",
        "top_p": "number",
        "temperature": "number",
        "metadata": "object",
        "thinking": "object",
        "stop_sequences": "list",
        "service_tier": "str",
    }


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
