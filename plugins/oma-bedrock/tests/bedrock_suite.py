"""How the kit's shared suites (``oma_core.testing.suites``) reach this plugin: the fake
Converse API, signed with the AWS credentials the conftest sets (no key, no headers option),
or taking ``api_key`` as a Bedrock API key (a bearer token) when a suite sets one."""

from __future__ import annotations

from typing import Any

from fake_bedrock import FakeBedrock

from oma_core.testing import ProviderSuite


class BedrockSuite(ProviderSuite):
    provider_name = "bedrock"
    api_key: str | None = None

    def make_server(self) -> FakeBedrock:
        return FakeBedrock(api_key=self.api_key)

    def script_text(self, server: Any, text: str) -> None:
        server.reply_text(text)
