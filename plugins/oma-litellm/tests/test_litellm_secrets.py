"""No error holds a secret (the key, the prompt, the base64 image), whatever failed: the kit's
``SecretsSuite`` on the ``openai/`` and ``anthropic/`` routes, and its ``ScrubbingSuite``."""

from __future__ import annotations

from litellm_suite import LiteLLMAnthropicRoute, LiteLLMOpenAIRoute

from oma_core.testing import ScrubbingSuite, SecretsSuite


class TestLiteLLMOpenAIRouteSecrets(LiteLLMOpenAIRoute, SecretsSuite):
    api_key = "sk-oma-test-secret-0123456789abcdef"


class TestLiteLLMAnthropicRouteSecrets(LiteLLMAnthropicRoute, SecretsSuite):
    api_key = "sk-ant-oma-test-secret-0123456789abcdef"
    stream_error_type = "overloaded_error"


class TestLiteLLMScrubbing(ScrubbingSuite):
    api_key = "sk-oma-property-secret-0123456789"
