"""What the ``litellm`` spec declares to the core: no key of its own (each provider behind
LiteLLM reads its own variable), the options it accepts, no media limits of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from oma_litellm import SPEC
from oma_litellm.provider import OPTIONS

from oma_core.testing import SpecSuite


class TestLiteLLMSpec(SpecSuite):
    provider_name = "litellm"
    requires_api_key = False
    options_read = OPTIONS
    misspelt_option = ("api_versoin", "1", "api_version")
    # litellm.acompletion's parameters
    option_types: ClassVar[Mapping[str, str]] = {"api_version": "str", "timeout": "number"}


def test_the_spec_declares_no_media_limits_the_routed_providers_differ_on() -> None:
    assert SPEC.capabilities.limits == ()
