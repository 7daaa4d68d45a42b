"""What the ``mistral`` spec declares to the core: a key it needs, the options it accepts and
its image size limit, each enforced before any request."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

from fake_mistral import API_KEY, FakeMistral
from mistral_suite import MistralSuite
from oma_mistral import SPEC

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError
from oma_core.http import CLIENT_OPTIONS
from oma_core.testing import SpecSuite


class TestMistralSpec(MistralSuite, SpecSuite):
    key_variables = ("MISTRAL_API_KEY",)
    options_read = CLIENT_OPTIONS
    options_exact = False  # and the documented body fields:
    body_fields = ("random_seed", "safe_prompt", "response_format", "top_p")
    misspelt_option = ("random_sed", 1, "random_seed")
    # Mistral's chat completion request (ChatCompletionRequest), read 2026-12-02
    option_types: ClassVar[Mapping[str, str]] = {
        "random_seed": "int",
        "n": "int",
        "temperature": "number",
        "top_p": "number",
        "safe_prompt": "bool",
        "parallel_tool_calls": "bool",
        "stop": "str or list",
    }


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


def test_every_option_has_a_type_and_the_client_options_are_among_them() -> None:
    declared = SPEC.provider_options
    assert declared is not None
    assert set(CLIENT_OPTIONS) <= set(declared)
    assert all(option.type is not object for option in declared.values())
