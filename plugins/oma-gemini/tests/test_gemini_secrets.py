"""No error holds a secret (the key, the prompt, the base64 video), whatever failed: the
kit's ``SecretsSuite``."""

from __future__ import annotations

from gemini_suite import GeminiSuite

from oma_core.testing import SecretsSuite


class TestGeminiSecrets(GeminiSuite, SecretsSuite):
    api_key = "AIzaSyOmaTestSecret0123456789abcdefghij"
    media_type = "video/mp4"
    stream_error_type = "UNAVAILABLE"
