"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: the fake
Messages API, and each provider once per transport."""

from __future__ import annotations

from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core.testing import ProviderSuite


class AnthropicSuite(ProviderSuite):
    provider_name = "anthropic"
    model = "claude-test"

    def make_server(self) -> FakeAnthropic:
        return FakeAnthropic(api_key=self.api_key)

    def script_text(self, server: Any, text: str) -> None:
        server.reply_text(text)

    @pytest.fixture
    def provider_options(self, transport: str) -> dict[str, Any]:
        return {"transport": transport}
