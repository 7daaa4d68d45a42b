"""Azure OpenAI with Microsoft Entra ID credentials (no API key) runs on the plugin's own
guarded client too. On each of LiteLLM's Entra ID paths, a token provider in LiteLLM's
``azure_ad_token_provider`` parameter, ``AZURE_AD_TOKEN`` as an ``oidc/`` reference that
LiteLLM exchanges at the Entra ID token endpoint, and a tenant, client id and secret that
azure-identity's ``ClientSecretCredential`` signs in with (against the fake Entra ID, through
a loopback proxy that serves ``login.microsoftonline.com``): the token reaches the fake Azure
server as a bearer token, a redirect is refused before anything reaches its target, a
compression bomb stops at ``max_response_bytes``, and the token shows in no error and no log
line. What cannot be had (no credential, no endpoint, a token service that refuses or fails)
is refused before anything is sent to Azure."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from azure_calls import STREAMING, VERSION, failure_of, text_of
from fake_chat_completions import FakeChatCompletions
from fake_entra import EntraProxy, FakeEntra

from oma_core.errors import MissingKeyError, PluginError
from oma_core.testing.fake_server import (
    EchoRequestError,
    FakeServer,
    HTTPError,
    RawBody,
    RecordedRequest,
    Redirect,
    Response,
    gzip_bomb,
)
from oma_core.toolkit import ProviderSettings

EACH_ROUTE = pytest.mark.parametrize("route", ["azure", "azure_text"])
#: The environment variables LiteLLM and the OpenAI SDK read an Azure credential or endpoint
#: from: cleared for every test, so that only what a test sets is there.
AZURE_VARIABLES = (
    "AZURE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_AD_TOKEN",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_USERNAME",
    "AZURE_PASSWORD",
    "AZURE_AUTHORITY_HOST",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_SCOPE",
    "AZURE_API_BASE",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_API_VERSION",
)


@pytest.fixture(autouse=True)
def _no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def token() -> str:
    """A fresh access token per test (LiteLLM caches exchanged tokens by what went in)."""
    return f"entra-access-{uuid.uuid4().hex}"


@pytest.fixture
def azure(fake_server_factory: Callable[..., Any], token: str) -> FakeChatCompletions:
    """The fake Azure OpenAI resource, taking only ``Authorization: Bearer <token>``."""
    return fake_server_factory(FakeChatCompletions, azure_token=token)  # type: ignore[no-any-return]


@pytest.fixture
def oidc(
    fake_server_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, token: str
) -> FakeEntra:
    """An ``oidc/env/`` reference in ``AZURE_AD_TOKEN``, with the tenant, client id and
    authority host (the fake Entra ID, over plain HTTP) LiteLLM's own exchange reads."""
    assertion = f"workload-oidc-{uuid.uuid4().hex}"
    entra: FakeEntra = fake_server_factory(
        FakeEntra, tenant="tenant-1", client_id="client-1", assertion=assertion, access_token=token
    )
    monkeypatch.setenv("OMA_TEST_WORKLOAD_OIDC", assertion)
    monkeypatch.setenv("AZURE_AD_TOKEN", "oidc/env/OMA_TEST_WORKLOAD_OIDC")
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-1")
    monkeypatch.setenv("AZURE_CLIENT_ID", "client-1")
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", entra.url)
    return entra


@pytest.fixture
def client_secret(
    fake_server_factory: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    token: str,
) -> Iterator[FakeEntra]:
    """A tenant, client id and secret in the environment, as azure-identity reads them; its
    sign-in reaches the fake Entra ID through ``EntraProxy`` (a fresh client id per test:
    LiteLLM keeps one credential per tenant, client and secret)."""
    client_id, secret = f"client-{uuid.uuid4().hex}", f"client-secret-{uuid.uuid4().hex}"
    entra: FakeEntra = fake_server_factory(
        FakeEntra, tenant="tenant-3", client_id=client_id, secret=secret, access_token=token
    )
    with EntraProxy(entra, tmp_path) as proxy:
        for name, value in {
            "AZURE_TENANT_ID": "tenant-3",
            "AZURE_CLIENT_ID": client_id,
            "AZURE_CLIENT_SECRET": secret,
            "REQUESTS_CA_BUNDLE": proxy.ca_file,
            **dict.fromkeys(("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"), proxy.url),
            **dict.fromkeys(("NO_PROXY", "no_proxy"), "127.0.0.1,localhost"),
        }.items():
            monkeypatch.setenv(name, value)
        yield entra
        assert set(proxy.hosts) <= {"login.microsoftonline.com:443"}, proxy.hosts


@pytest.fixture(params=["token_provider", "oidc", "client_secret"])
def credential(request: pytest.FixtureRequest, token: str) -> dict[str, Any]:
    """LiteLLM's Entra ID paths, as the provider_options each needs: its
    ``azure_ad_token_provider`` parameter; ``AZURE_AD_TOKEN=oidc/...`` exchanged at the fake
    Entra ID; a client secret that azure-identity signs in with at the fake Entra ID."""
    if request.param != "token_provider":
        request.getfixturevalue(request.param)
        return {}
    return {"azure_ad_token_provider": lambda: token}


def _provider(server: FakeServer, **options: Any) -> Any:
    from oma_litellm.provider import LiteLLMProvider

    settings = ProviderSettings(base_url=server.url, options={"api_version": VERSION, **options})
    return LiteLLMProvider(settings)


@EACH_ROUTE
@STREAMING
async def test_the_entra_id_token_reaches_azure_as_a_bearer_token_and_no_key(
    azure: FakeChatCompletions,
    credential: dict[str, Any],
    token: str,
    route: str,
    streaming: bool,
) -> None:
    azure.reply_text("hello through Entra ID")
    provider = _provider(azure, **credential)
    assert await text_of(provider, route, streaming) == "hello through Entra ID"
    [sent] = azure.requests
    assert sent.headers["authorization"] == f"Bearer {token}" and "api-key" not in sent.headers
    assert sent.path.startswith("/openai/deployments/") and f"api-version={VERSION}" in sent.query


async def test_the_oidc_reference_is_exchanged_at_the_entra_id_endpoint_once(
    azure: FakeChatCompletions, oidc: FakeEntra
) -> None:
    provider = _provider(azure)
    assert await text_of(provider, "azure", False) == azure.default_reply.text
    assert await text_of(provider, "azure", True) == azure.default_reply.text
    [exchange] = oidc.requests  # the second call uses the token LiteLLM cached
    assert exchange.path == "/tenant-1/oauth2/v2.0/token"
    assert parse_qs(exchange.body.decode())["client_assertion"] == [oidc.assertion]
    assert len(azure.requests) == 2


async def test_an_async_token_provider_is_awaited(azure: FakeChatCompletions, token: str) -> None:
    async def fetch() -> str:
        return token

    assert await text_of(_provider(azure, azure_ad_token_provider=fetch), "azure", False)
    assert azure.requests[0].headers["authorization"] == f"Bearer {token}"


@EACH_ROUTE
@STREAMING
async def test_a_redirect_on_the_entra_id_path_is_refused_and_the_other_host_gets_nothing(
    azure: FakeChatCompletions,
    credential: dict[str, Any],
    token: str,
    route: str,
    streaming: bool,
) -> None:
    with FakeChatCompletions(azure_token=token) as elsewhere:
        port = elsewhere.port
        azure.enqueue(Redirect(f"{elsewhere.url}/openai/deployments/x/chat/completions"))
        error = await failure_of(_provider(azure, **credential), route, streaming)
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in error.message
    assert len(azure.requests) == 1


@STREAMING
async def test_a_compression_bomb_on_the_entra_id_path_stops_at_max_response_bytes(
    azure: FakeChatCompletions, credential: dict[str, Any], streaming: bool
) -> None:
    limit = 64 * 1024
    kind = "text/event-stream" if streaming else "application/json"
    prefix = b'data: {"x": "' if streaming else b'{"x": "'
    headers = {"content-type": kind, "content-encoding": "gzip"}
    azure.enqueue(RawBody(gzip_bomb(64 * 1024 * 1024, prefix=prefix), headers=headers))
    options = {**credential, "max_response_bytes": limit, "max_event_bytes": 2 * limit}
    error = await failure_of(_provider(azure, **options), "azure", streaming)
    assert f"exceeds the limit of {limit} bytes" in error.message
    assert "max_response_bytes" in error.message and error.retryable is False
    assert len(azure.requests) == 1


@pytest.fixture
def every_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record at DEBUG, LiteLLM's, the SDK's and httpx's included."""
    for name in (None, "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai", "httpx"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


class _EchoToken(EchoRequestError):
    """A 401 whose message quotes the bearer token bare (without ``Bearer``), as a service
    that echoes what it got might: only the plugin's own record of the token can scrub it."""

    async def apply(self, server: FakeServer, request: RecordedRequest, make: Any) -> Response:
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        return server.error_response(401, f"token {given} has expired")


@STREAMING
@pytest.mark.parametrize("echo", [_EchoToken(), EchoRequestError(401)], ids=["bare", "headers"])
async def test_an_error_that_echoes_the_token_does_not_show_it(
    azure: FakeChatCompletions,
    credential: dict[str, Any],
    token: str,
    echo: EchoRequestError,
    streaming: bool,
) -> None:
    azure.enqueue(echo)
    error = await failure_of(_provider(azure, **credential), "azure", streaming)
    assert (error.status_code, error.retryable) == (401, False)
    assert "has expired" in error.message or "could not process" in error.message
    assert token not in str(error) and token not in repr(error.__dict__)
    assert error.__cause__ is None


@STREAMING
@pytest.mark.parametrize("fails", [False, True], ids=["answered", "refused"])
async def test_no_log_line_holds_the_token_even_at_debug(
    azure: FakeChatCompletions,
    credential: dict[str, Any],
    token: str,
    every_log: pytest.LogCaptureFixture,
    fails: bool,
    streaming: bool,
) -> None:
    if fails:
        azure.enqueue(HTTPError(401, "the token has expired"))
        await failure_of(_provider(azure, **credential), "azure", streaming)
    else:
        await text_of(_provider(azure, **credential), "azure", streaming)
    assert azure.requests[0].headers["authorization"] == f"Bearer {token}"
    assert len(every_log.records) > 10, "the positive control: LiteLLM's debug log was captured"
    assert not [r for r in every_log.records if token in r.getMessage()]
    assert token not in every_log.text


async def test_a_refused_oidc_exchange_is_a_final_error_and_azure_gets_nothing(
    azure: FakeChatCompletions, oidc: FakeEntra
) -> None:
    message = "AADSTS700024: Client assertion is not within its valid time range."
    oidc.enqueue(HTTPError(400, message, error_type="invalid_client"))
    error = await failure_of(_provider(azure), "azure", False)
    assert error.retryable is False and "AADSTS700024" in error.message
    assert "Entra ID token" in error.message and oidc.assertion not in error.message
    assert azure.total_connections == 0


async def test_an_unavailable_token_service_is_retryable_and_azure_gets_nothing(
    azure: FakeChatCompletions, oidc: FakeEntra
) -> None:
    oidc.enqueue(HTTPError(503, "service unavailable"))
    error = await failure_of(_provider(azure), "azure", True)
    assert error.retryable is True and "Entra ID token" in error.message
    assert azure.total_connections == 0
    # the next call gets its token and goes through
    assert await text_of(_provider(azure), "azure", True) == azure.default_reply.text


@pytest.mark.parametrize("given", [lambda: "", lambda: None], ids=["empty", "none"])
async def test_a_token_provider_that_gives_no_token_is_refused_before_any_request(
    azure: FakeChatCompletions, given: Callable[[], Any]
) -> None:
    error = await failure_of(_provider(azure, azure_ad_token_provider=given), "azure", False)
    assert error.retryable is False and "gave none" in error.message
    assert azure.total_connections == 0


async def test_a_token_provider_that_raises_is_a_final_error_without_a_known_secret(
    azure: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"vault-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("VAULT_CLIENT_SECRET", secret)

    def broken() -> str:
        raise RuntimeError(f"the vault refused client secret {secret}")

    error = await failure_of(_provider(azure, azure_ad_token_provider=broken), "azure", True)
    assert error.retryable is False and "RuntimeError: the vault refused" in error.message
    assert secret not in error.message and error.__cause__ is None
    assert azure.total_connections == 0


async def test_client_secret_credentials_never_reach_the_network_without_a_usable_authority(
    azure: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tenant, client id and secret from the environment are LiteLLM's client-secret path
    (azure-identity's ``ClientSecretCredential``): without azure-identity it is refused
    naming the package; with it, an ``http://`` authority is refused by azure-identity
    itself. Either way nothing is sent, and the secret is in no message. (A proxy on a
    closed loopback port keeps any slip off the internet.)"""
    secret = f"client-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-2")
    monkeypatch.setenv("AZURE_CLIENT_ID", f"client-{uuid.uuid4().hex}")
    monkeypatch.setenv("AZURE_CLIENT_SECRET", secret)
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", "http://127.0.0.1:9")
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    error = await failure_of(_provider(azure), "azure", False)
    assert error.retryable is False and "Entra ID token" in error.message
    assert re.search(r"azure-identity|https", error.message), error.message
    assert secret not in error.message
    assert azure.total_connections == 0


@STREAMING
async def test_without_any_credential_the_call_is_refused_before_any_request(
    azure: FakeChatCompletions, streaming: bool
) -> None:
    error = await failure_of(_provider(azure), "azure", streaming, error=MissingKeyError)
    assert "AZURE_API_KEY" in str(error) and "AZURE_AD_TOKEN" in str(error)
    assert azure.total_connections == 0


async def test_without_an_endpoint_the_call_is_refused_before_any_request(token: str) -> None:
    from oma_litellm.provider import LiteLLMProvider

    settings = ProviderSettings(options={"azure_ad_token_provider": lambda: token})
    error = await failure_of(LiteLLMProvider(settings), "azure", False, error=PluginError)
    assert "AZURE_API_BASE" in str(error) and "base_url" in str(error)


async def test_the_sdk_s_own_endpoint_variable_is_read_through_the_plugin_s_client(
    azure: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    from oma_litellm.provider import LiteLLMProvider

    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", azure.url)
    settings = ProviderSettings(
        options={"api_version": VERSION, "azure_ad_token_provider": lambda: token}
    )
    azure.enqueue(Redirect(f"{azure.url}/elsewhere"))
    error = await failure_of(LiteLLMProvider(settings), "azure", False)
    assert error.status_code == 307  # refused: the plugin's guarded client
    assert azure.requests[0].headers["authorization"] == f"Bearer {token}"


# -- Azure's v1 API (api_version "v1"/"latest"/"preview"): OpenAI's shape under /openai/v1/,
# which LiteLLM serves with an AsyncOpenAI; the plugin builds that client too


@pytest.mark.parametrize("version", ["v1", "latest"])
@STREAMING
async def test_azure_s_v1_api_is_called_in_openai_s_shape_with_the_key_as_bearer(
    azure: FakeChatCompletions, version: str, streaming: bool
) -> None:
    from oma_litellm.provider import LiteLLMProvider

    azure.azure_token = None  # a key this time
    settings = ProviderSettings(
        base_url=azure.url, api_key="test-key", options={"api_version": version}
    )
    assert await text_of(LiteLLMProvider(settings), "azure", streaming)
    [sent] = azure.requests
    assert sent.path == "/openai/v1/chat/completions" and sent.json["model"] == "gpt-fake"
    assert sent.headers["authorization"] == "Bearer test-key" and "api-key" not in sent.headers


@STREAMING
async def test_azure_s_v1_api_takes_the_entra_id_token_and_refuses_a_redirect(
    azure: FakeChatCompletions, credential: dict[str, Any], token: str, streaming: bool
) -> None:
    options = {**credential, "api_version": "v1"}
    assert await text_of(_provider(azure, **options), "azure", streaming)
    assert azure.requests[0].path == "/openai/v1/chat/completions"
    assert azure.requests[0].headers["authorization"] == f"Bearer {token}"
    with FakeChatCompletions(azure_token=token) as elsewhere:
        azure.enqueue(Redirect(f"{elsewhere.url}/openai/v1/chat/completions"))
        error = await failure_of(_provider(azure, **options), "azure", streaming)
        assert elsewhere.total_connections == 0
    assert (error.status_code, error.retryable) == (307, False)
