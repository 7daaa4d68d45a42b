"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: the strict
fake Chat Completions API (as OpenAI), and each provider once per transport."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import FakeChatCompletions, Reply

from oma_core.testing import FakeServer, ProviderSuite


class OpenAISuite(ProviderSuite):
    provider_name = "openai"
    model = "gpt-test"

    def make_server(self) -> FakeChatCompletions:
        return FakeChatCompletions(mode="strict", api_key=self.api_key)

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeChatCompletions)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    @pytest.fixture
    def provider_options(self, transport: str) -> dict[str, Any]:
        return {"transport": transport}
