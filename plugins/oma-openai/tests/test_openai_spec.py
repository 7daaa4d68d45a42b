"""What the presets' specs declare to the core: which need a key (hosted services) and which
do not (local servers with a placeholder), options forwarded as body fields, and OpenAI's
image size limits enforced before any request."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

import pytest
from fake_openai import API_KEY, FakeChatCompletions
from oma_openai import PRESETS, Preset, oma_register_providers
from oma_openai.convert import CLIENT_OPTIONS
from openai_suite import OpenAISuite

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError
from oma_core.testing import SpecSuite

SPECS = {spec.name: spec for spec in oma_register_providers()}


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_a_hosted_preset_needs_its_key_and_a_local_one_does_not(preset: Preset) -> None:
    spec = SPECS[preset.name]
    hosted = preset.key_placeholder is None and preset.api_key_env is not None
    assert spec.requires_api_key is hosted


def test_the_hosted_presets_are_the_ones_with_a_key_variable() -> None:
    needing = {name for name, spec in SPECS.items() if spec.requires_api_key}
    assert needing == {"openai", "minimax", "deepseek", "groq", "openrouter", "together"}


def test_a_local_server_runs_without_a_key(
    compatible_server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent(
        AgentConfig(name="a", provider="vllm", base_url=compatible_server.base_url, model="m")
    )
    agent.run_sync("hi")
    assert len(compatible_server.requests) == 1


async def test_an_image_past_twenty_megabytes_is_refused_before_any_request(
    server: FakeChatCompletions,
) -> None:
    data = base64.b64encode(bytes(20_000_001)).decode("ascii")
    config = AgentConfig(name="a", provider="openai", base_url=server.base_url, api_key=API_KEY)
    async with Agent(config) as agent:
        result = await agent.run([{"role": "user", "content": [image_base64(data, "image/png")]}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert "limit of 20000000 bytes per image" in str(error)
    assert server.requests == []


class TestOpenAISpec(OpenAISuite, SpecSuite):
    key_variables = ("OPENAI_API_KEY",)
    options_read = CLIENT_OPTIONS  # every client option it reads; the body fields beside
    options_exact = False
    misspelt_option = ("tempreature", 0.3, "temperature")
    # the Chat Completions reference (POST /v1/chat/completions), read 2026-12-02
    option_types: ClassVar[Mapping[str, str]] = {
        "seed": "int",
        "n": "int",
        "max_completion_tokens": "int",
        "temperature": "number",
        "top_p": "number",
        "stop": "str or list",
        "user": "str",
        "logit_bias": "object",
        "parallel_tool_calls": "bool",
    }
