"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: one class per
LiteLLM route the tests have a fake service for — ``openai/`` (LiteLLM drives the OpenAI SDK,
with the plugin's own client) against the fake Chat Completions API, and ``anthropic/``
(LiteLLM's own HTTP handler and translation) against the fake Messages API."""

from __future__ import annotations

from typing import Any

from fake_chat_completions import FakeChatCompletions
from fake_messages import FakeMessages

from oma_core.testing import FakeServer, ProviderSuite


class LiteLLMOpenAIRoute(ProviderSuite):
    provider_name = "litellm"
    model = "openai/gpt-fake"

    def make_server(self) -> FakeChatCompletions:
        return FakeChatCompletions(api_key=self.api_key or "test-key")

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeChatCompletions)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply_text(text)


class LiteLLMAnthropicRoute(ProviderSuite):
    provider_name = "litellm"
    model = "anthropic/claude-fake"

    def make_server(self) -> FakeMessages:
        return FakeMessages(api_key=self.api_key or "test-key")

    def script_text(self, server: Any, text: str) -> None:
        server.reply_text(text)
