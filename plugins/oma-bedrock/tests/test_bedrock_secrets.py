"""No error holds a secret (the credentials, the prompt, the base64 image), whatever failed: the
kit's ``SecretsSuite``, once per way Bedrock authenticates — a Bedrock API key sent as a bearer
token, and the AWS chain's credentials signing each request with SigV4 (the access key id in
the ``Authorization`` header, the session token in ``x-amz-security-token``, the secret access
key only inside the signature, which an echo also carries); and the kit's ``ScrubbingSuite``
for both kinds of key."""

from __future__ import annotations

from typing import Any

import pytest
from bedrock_suite import BedrockSuite
from fake_bedrock import ACCESS_KEY, SECRET_KEY, FakeBedrock

from oma_core import AgentConfig
from oma_core.testing import (
    EchoRequestError,
    FakeServer,
    Fault,
    HTTPError,
    ScrubbingSuite,
    SecretsSuite,
    assert_holds_no_secret,
)
from oma_core.toolkit import Provider, ProviderSettings

SESSION_TOKEN = "FwoGZXIvYXdzEOmaFakeSessionToken0123456789abcdef+/ZZ"


class TestBedrockApiKeySecrets(BedrockSuite, SecretsSuite):
    api_key = "ABSKQmVkcm9ja0FQSUtleS1vbWEtdGVzdC1zZWNyZXQtMDEyMzQ1Njc4OQ"
    stream_error_type = "internalServerException"


class TestBedrockSigV4Secrets(BedrockSuite, SecretsSuite):
    """The suite's ``api_key`` is the session token here (the secret that goes out in a
    header); the provider is given no key, so it signs with the chain's credentials."""

    api_key = SESSION_TOKEN
    stream_error_type = "internalServerException"

    @pytest.fixture(autouse=True)
    def _session_token(self, aws_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)

    def make_server(self) -> FakeBedrock:
        return FakeBedrock(session_token=SESSION_TOKEN)

    def provider(self, server: FakeServer, **options: Any) -> Provider:
        settings = ProviderSettings(base_url=self.base_url(server), options=options)
        return self.spec().factory(settings)

    def config(self, server: FakeServer, **config: Any) -> AgentConfig:
        return super().config(server, **{**config, "api_key": None})

    def secrets(self) -> tuple[str, ...]:
        return (*super().secrets(), ACCESS_KEY, SECRET_KEY)

    def call_faults(self) -> dict[str, Fault]:
        named = f"denied {ACCESS_KEY} {SECRET_KEY} {SESSION_TOKEN}"
        return {**super().call_faults(), "403 naming every credential": HTTPError(403, named)}

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    async def test_an_echoed_signature_is_scrubbed(
        self, secret_server: FakeServer, streaming: bool
    ) -> None:
        """A signature is valid for minutes: replayable, so as secret as the key."""
        secret_server.enqueue(EchoRequestError(400))
        request = self.request(self.conversation())
        error = await self.failure(self.provider(secret_server), streaming, request)
        authorization = secret_server.requests[0].headers["authorization"]
        signature = authorization.rsplit("Signature=", 1)[1]
        assert error.status_code == 400 and ACCESS_KEY in authorization
        assert_holds_no_secret(error, signature)


class TestBedrockApiKeyScrubbing(ScrubbingSuite):
    api_key = TestBedrockApiKeySecrets.api_key


class TestBedrockSecretKeyScrubbing(ScrubbingSuite):
    api_key = SECRET_KEY  # an AWS secret access key: base64 with "/" and "+"
