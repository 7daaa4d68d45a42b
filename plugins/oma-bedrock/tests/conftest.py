"""Fixtures shared by the plugin's tests: the fake Converse API, AWS settings that point only
at it, and providers built for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fake_bedrock import ACCESS_KEY, REGION, SECRET_KEY, FakeBedrock

from oma_core.toolkit import ProviderSettings

pytest_plugins = [
    "oma_core.testing.hypothesis_timing",
    "oma_core.testing.pytest_plugin",
    "oma_core.testing.closed_generators",
]


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[None]:
    """Credentials from the environment (the first link of the AWS chain), no shared files
    of this machine, and never the instance metadata service: nothing leaves 127.0.0.1."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_DEFAULT_REGION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeBedrock:
    return fake_server_factory(FakeBedrock)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeBedrock) -> AsyncIterator[Any]:
    from oma_bedrock import create_provider

    built = create_provider(ProviderSettings(base_url=server.url))
    yield built
    await built.aclose()
