"""No error holds a secret (the key, the prompt, the base64 image), whatever failed, on each
transport: the kit's ``SecretsSuite``."""

from __future__ import annotations

from anthropic_suite import AnthropicSuite
from fake_anthropic import MalformedReply

from oma_core.testing import Fault, SecretsSuite


class TestAnthropicSecrets(AnthropicSuite, SecretsSuite):
    api_key = "sk-ant-oma-test-secret-0123456789abcdef"
    stream_error_type = "overloaded_error"

    def malformed_reply(self) -> Fault:
        return MalformedReply("not_json")
