"""No error holds a secret (the key, the prompt, the base64 image), whatever failed: the
kit's ``SecretsSuite``."""

from __future__ import annotations

from mistral_suite import MistralSuite

from oma_core.testing import SecretsSuite


class TestMistralSecrets(MistralSuite, SecretsSuite):
    api_key = "sk-oma-mistral-test-secret-0123456789abcdef"
    stream_error_type = "service_unavailable"
