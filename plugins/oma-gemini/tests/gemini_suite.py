"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: the fake
Gemini API."""

from __future__ import annotations

from typing import Any

from fake_gemini import FakeGemini, Reply

from oma_core.testing import FakeServer, ProviderSuite


class GeminiSuite(ProviderSuite):
    provider_name = "gemini"
    model = "gemini-test"

    def make_server(self) -> FakeGemini:
        return FakeGemini(api_key=self.api_key)

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeGemini)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))
