"""What the ``mistral`` spec declares to the core: a key it needs, the options it accepts and
its image size limit, each enforced before any request."""

from __future__ import annotations

import base64

import pytest
from fake_mistral import API_KEY, FakeMistral
from mistral_suite import MistralSuite
from oma_mistral import SPEC

from oma_core import Agent, AgentConfig, image_base64
from oma_core.errors import MediaTooLargeError, OptionTypeError
from oma_core.http import CLIENT_OPTIONS
from oma_core.testing import SpecSuite


class TestMistralSpec(MistralSuite, SpecSuite):
    key_variables = ("MISTRAL_API_KEY",)
    options_read = CLIENT_OPTIONS
    options_exact = False  # and the documented body fields:
    body_fields = ("random_seed", "safe_prompt", "response_format", "top_p")
    misspelt_option = ("random_sed", 1, "random_seed")


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


#: A value of each declared type, for the check below.
_SAMPLES: dict[object, object] = {str: "x", float: 0.5, int: 3, bool: True, dict: {}, list: []}
_DECLARED = SPEC.provider_options
assert _DECLARED is not None


def test_every_option_has_a_type_and_the_client_options_are_among_them() -> None:
    assert _DECLARED is not None
    assert set(CLIENT_OPTIONS) <= set(_DECLARED)
    assert all(option.type is not object for option in _DECLARED.values())


@pytest.mark.parametrize("option", list(_DECLARED.values()), ids=lambda o: o.name)
def test_every_declared_option_is_accepted_with_its_type_and_refused_with_another(
    option: object,
) -> None:
    from oma_core.toolkit import OptionSpec

    assert isinstance(option, OptionSpec)
    kinds = option.type if isinstance(option.type, tuple) else (option.type,)
    good = {option.name: _SAMPLES[kinds[0]]}
    Agent(AgentConfig(name="a", provider="mistral", api_key="k", provider_options=good))
    wrong = next(v for v in _SAMPLES.values() if not option.accepts(v))
    with pytest.raises(OptionTypeError, match=option.name):
        bad = {option.name: wrong}
        Agent(AgentConfig(name="a", provider="mistral", api_key="k", provider_options=bad))
