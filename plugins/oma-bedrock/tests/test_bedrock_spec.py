"""What the ``bedrock`` spec declares to the core: no key required (the AWS chain signs), the
options it accepts and Converse's media size limits, each enforced before any request."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

from bedrock_suite import BedrockSuite
from fake_bedrock import FakeBedrock
from oma_bedrock.provider import OPTIONS

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError
from oma_core.testing import SpecSuite


class TestBedrockSpec(BedrockSuite, SpecSuite):
    key_variables = ("AWS_BEARER_TOKEN_BEDROCK",)  # optional: the AWS chain signs without it
    requires_api_key = False
    options_read = OPTIONS
    misspelt_option = ("regoin", "x", "region")
    # Converse's additionalModelRequestFields is a JSON document; region and profile are names
    option_types: ClassVar[Mapping[str, str]] = {
        "additional_model_request_fields": "object",
        "region": "str",
        "profile": "str",
    }


def test_a_run_without_a_bedrock_key_is_signed_by_the_aws_chain(server: FakeBedrock) -> None:
    agent = Agent(AgentConfig(name="a", provider="bedrock", base_url=server.url))
    assert agent.run_sync("hi").success
    assert len(server.requests) == 1


async def test_an_image_past_3_75_megabytes_is_refused_before_any_request(
    server: FakeBedrock,
) -> None:
    data = base64.b64encode(bytes(3_750_001)).decode("ascii")
    async with Agent(AgentConfig(name="a", provider="bedrock", base_url=server.url)) as agent:
        result = await agent.run([{"role": "user", "content": [image_base64(data, "image/png")]}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert "limit of 3750000 bytes per image" in str(error)
    assert server.requests == []
