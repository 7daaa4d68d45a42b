"""No error holds a secret (the key, the prompt, the base64 image), whatever failed, on each
transport: the kit's ``SecretsSuite``."""

from __future__ import annotations

from fake_openai import MalformedReply
from openai_suite import OpenAISuite

from oma_core.testing import Fault, SecretsSuite


class TestOpenAISecrets(OpenAISuite, SecretsSuite):
    api_key = "sk-oma-test-secret-0123456789abcdef"

    def malformed_reply(self) -> Fault:
        return MalformedReply("not_json")
