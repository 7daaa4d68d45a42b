"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: the fake
Mistral service."""

from __future__ import annotations

from typing import Any

from fake_mistral import FakeMistral, Reply

from oma_core.testing import FakeServer, ProviderSuite


class MistralSuite(ProviderSuite):
    provider_name = "mistral"
    model = "mistral-test"

    def make_server(self) -> FakeMistral:
        return FakeMistral(api_key=self.api_key)

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeMistral)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))
