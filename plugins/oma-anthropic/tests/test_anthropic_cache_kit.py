"""The kit's caching checks (``oma_core.testing.cache_checks``) catch a plugin that loses cache
markers or cache counts: each check, run against a sabotaged Anthropic provider, fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic
from oma_anthropic.provider import AnthropicProvider
from test_anthropic_conformance import read_cache_markers

from oma_core import Agent, AgentConfig
from oma_core.testing import ScriptedReply
from oma_core.testing.cache_checks import CacheMarker
from oma_core.testing.conformance import ProviderConformance
from oma_core.toolkit import ProviderRequest, ProviderSettings


def _without_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


class _DropsMarkers(AnthropicProvider):
    """Sends every request without its cache_control breakpoints."""

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = _without_markers(super().render(request))
        return body


class _Sabotaged(ProviderConformance):
    """The Anthropic kit's hooks over a provider that drops its markers (not collected)."""

    provider_name = "anthropic"
    cache_markers = True
    cache_usage = frozenset({"read", "write"})

    def read_cache_markers(self, body: Mapping[str, Any]) -> list[CacheMarker]:
        return read_cache_markers(body)

    def script_text(self, server: FakeAnthropic, text: str) -> None:
        server.reply_text(text)

    def script_reply(self, server: FakeAnthropic, reply: ScriptedReply) -> None:
        # counts the cache apart (as the API does) but never reports it: a miscount
        server.reply_text(reply.text, input_tokens=reply.usage.input_tokens, output_tokens=1)

    opened: list[AnthropicProvider]

    def provider(self, server: Any, **options: Any) -> Any:
        built = _DropsMarkers(self.settings(server, **options))
        self.opened.append(built)
        return built

    def agent(self, server: Any, **config: Any) -> Agent:
        base = self.config(server, **config)
        values = {f: getattr(base, f) for f in ("name", "system_prompt", "cache", "max_retries")}
        return Agent(AgentConfig(provider=self.provider(server), **values))

    def settings(self, server: Any, **options: Any) -> ProviderSettings:
        return ProviderSettings(base_url=server.url, api_key="test-key", options=options)


@pytest.fixture
async def kit() -> AsyncIterator[_Sabotaged]:
    built = _Sabotaged()
    built.opened = []
    yield built
    for provider in built.opened:  # the agent does not close a provider object it was given
        await provider.aclose()


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    "check",
    [
        "test_a_cache_point_reaches_the_wire_on_the_block_before_it",
        "test_cache_auto_marks_each_declared_place",
        "test_cache_tokens_are_counted_in_usage",
    ],
)
async def test_each_caching_check_fails_on_a_sabotaged_provider(
    kit: _Sabotaged, server: FakeAnthropic, check: str, streaming: bool
) -> None:
    with pytest.raises(AssertionError):
        await getattr(kit, check)(server, streaming)


def test_a_provider_without_markers_left_out_the_marker_checks() -> None:
    class Without(ProviderConformance):
        provider_name = "anthropic"

    assert Without.test_a_cache_point_reaches_the_wire_on_the_block_before_it is None
    assert Without.test_cache_tokens_are_counted_in_usage is None
    assert Without.test_cache_points_never_reach_a_provider_without_markers is not None
    assert _Sabotaged.test_cache_points_never_reach_a_provider_without_markers is None
