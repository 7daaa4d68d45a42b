"""What the ``litellm`` spec declares to the core: no key of its own (each provider behind
LiteLLM reads its own variable), the options it accepts, no media limits of its own."""

from __future__ import annotations

import pytest
from oma_litellm import SPEC

from oma_core import Agent, AgentConfig, UnknownOptionError


def test_the_spec_needs_no_key_of_its_own() -> None:
    assert SPEC.requires_api_key is False
    assert SPEC.key_variables == ()


def test_the_spec_accepts_exactly_the_options_the_provider_reads() -> None:
    from oma_litellm.provider import OPTIONS

    assert set(SPEC.provider_options or ()) == OPTIONS


def test_a_misspelt_option_raises_when_the_agent_is_built() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'api_version'"):
        Agent(AgentConfig(name="a", provider="litellm", provider_options={"api_versoin": "1"}))


def test_the_spec_declares_no_media_limits_the_routed_providers_differ_on() -> None:
    assert SPEC.capabilities.limits == ()
