"""The kit's caching checks (``oma_core.testing.cache_checks``) catch a Bedrock plugin that loses
cache checkpoints or cache counts: each check, run against a sabotaged Bedrock provider, fails;
the same hooks over the real provider pass (the kit's run of them is
``test_bedrock_conformance.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

import pytest
from fake_bedrock import FakeBedrock
from oma_bedrock.provider import BedrockProvider
from test_bedrock_conformance import CLAUDE, read_cache_markers

from oma_core import Agent, AgentConfig
from oma_core.testing import ScriptedReply
from oma_core.testing.cache_checks import CacheMarker
from oma_core.testing.conformance import ProviderConformance
from oma_core.toolkit import ProviderRequest, ProviderSettings


def _without_checkpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_checkpoints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_checkpoints(v) for v in value if not _is_checkpoint(v)]
    return value


def _is_checkpoint(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"cachePoint"}


class _DropsCheckpoints(BedrockProvider):
    """Sends every request without its cachePoint blocks."""

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = _without_checkpoints(super().render(request))
        return body


def _without_ttl(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ttl(v) for k, v in value.items() if k != "ttl"}
    if isinstance(value, list):
        return [_without_ttl(v) for v in value]
    return value


class _DropsTtl(BedrockProvider):
    """Sends every checkpoint without the lifetime it was asked for."""

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = _without_ttl(super().render(request))
        return body


class _Kit(ProviderConformance):
    """The Bedrock kit's caching hooks over a provider class (not collected)."""

    provider_name = "bedrock"
    model = CLAUDE
    cache_markers = True
    cache_usage = frozenset({"read", "write"})
    cache_ttl_options: ClassVar[Mapping[str, Any]] = {"cache_ttl": "1h"}
    sabotaged = True
    provider_class: type[BedrockProvider] = _DropsCheckpoints
    opened: list[BedrockProvider]

    def read_cache_markers(self, body: Mapping[str, Any]) -> list[CacheMarker]:
        return read_cache_markers(body)

    def script_text(self, server: FakeBedrock, text: str) -> None:
        server.reply_text(text)

    def script_reply(self, server: FakeBedrock, reply: ScriptedReply) -> None:
        usage = reply.usage
        if self.sabotaged:  # the cache counted apart (as Converse does) but never reported
            server.reply_text(reply.text, input_tokens=usage.input_tokens, output_tokens=1)
            return
        read, written = usage.cache_read_tokens, usage.cache_write_tokens
        server.reply_text(
            reply.text,
            input_tokens=usage.input_tokens - read - written,
            output_tokens=usage.output_tokens,
            cache_read=read,
            cache_write=written,
        )

    def provider(self, server: Any, **options: Any) -> Any:
        kind = self.provider_class if self.sabotaged else BedrockProvider
        built = kind(self.settings(server, **options))
        self.opened.append(built)
        return built

    def agent(self, server: Any, **config: Any) -> Agent:
        base = self.config(server, **config)
        values = {f: getattr(base, f) for f in ("name", "system_prompt", "cache", "max_retries")}
        return Agent(AgentConfig(provider=self.provider(server), model=CLAUDE, **values))

    def settings(self, server: Any, **options: Any) -> ProviderSettings:
        return ProviderSettings(base_url=server.url, options=options)


@pytest.fixture
async def kit() -> AsyncIterator[_Kit]:
    built = _Kit()
    built.opened = []
    yield built
    for provider in built.opened:  # the agent does not close a provider object it was given
        await provider.aclose()


CHECKS = [
    "test_a_cache_point_reaches_the_wire_on_the_block_before_it",
    "test_cache_auto_marks_each_declared_place",
    "test_cache_tokens_are_counted_in_usage",
    "test_the_one_hour_cache_reaches_every_marker",
]


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("check", CHECKS)
async def test_each_caching_check_fails_on_a_sabotaged_provider(
    kit: _Kit, server: FakeBedrock, check: str, streaming: bool
) -> None:
    with pytest.raises(AssertionError):
        await getattr(kit, check)(server, streaming)


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_one_hour_check_fails_a_provider_that_drops_the_lifetime(
    kit: _Kit, server: FakeBedrock, streaming: bool
) -> None:
    kit.provider_class = _DropsTtl
    with pytest.raises(AssertionError, match="did not"):
        await kit.test_the_one_hour_cache_reaches_every_marker(server, streaming)


@pytest.mark.parametrize("check", CHECKS)
async def test_each_caching_check_passes_the_same_hooks_without_sabotage(
    kit: _Kit, server: FakeBedrock, check: str
) -> None:
    kit.sabotaged = False
    await getattr(kit, check)(server, True)
