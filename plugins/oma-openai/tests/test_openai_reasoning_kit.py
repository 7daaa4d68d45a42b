"""The kit's reasoning-provenance checks (``oma_core.testing.reasoning_checks``) can fail.

A deliberately broken provider (the Responses provider under another name, with one mistake)
is put through the kit's check of signed reasoning on the Responses API; the check must fail
for each mistake, and pass for the same provider without it:

- ``drops-signature``: the provider forgets the reasoning item's signature before it sends a
  request (the reasoning is then left out of the wire: the model loses its train of thought);
- ``unlabelled``: the provider does not say it issued its reasoning (``provider`` None), so
  the block cannot be told apart from another provider's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
import pytest
import test_openai_responses_conformance as responses_kit
from fake_responses import FakeResponses
from oma_openai import preset
from oma_openai.provider import OpenAIChatProvider

from oma_core import LLMMessage, PluginHost, ProviderSpec, ReasoningBlock, hookimpl
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
)

BROKEN = "openai-broken-kit"


def _unsigned(request: ProviderRequest) -> ProviderRequest:
    """``request`` with every reasoning block's signature forgotten."""
    messages = tuple(
        LLMMessage(
            m.role,
            [ReasoningBlock(b.text, provider=b.provider) if isinstance(b, ReasoningBlock) else b
             for b in m.content],
        )
        for m in request.messages
    )  # fmt: skip
    return attrs.evolve(request, messages=messages)


def _unlabelled(response: ProviderResponse) -> ProviderResponse:
    """``response`` with its reasoning blocks' ``provider`` forgotten."""
    content = [
        ReasoningBlock(b.text, b.signature, b.redacted_data) if isinstance(b, ReasoningBlock) else b
        for b in response.message.content
    ]
    return attrs.evolve(response, message=LLMMessage("assistant", content))


class _Broken(OpenAIChatProvider):
    """The Responses provider with one mistake (``mistake``)."""

    mistake = ""

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        if self.mistake == "drops-signature":
            request = _unsigned(request)
        response = await super().complete(request)
        return _unlabelled(response) if self.mistake == "unlabelled" else response

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        if self.mistake == "drops-signature":
            request = _unsigned(request)
        events = super().stream(request)
        try:
            async for event in events:
                if self.mistake == "unlabelled" and isinstance(event, ResponseComplete):
                    event = ResponseComplete(_unlabelled(event.response))
                yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]


class _BrokenPlugin:
    def __init__(self, mistake: str) -> None:
        self.mistake = mistake

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        broken = attrs.evolve(preset("openai"), name=BROKEN, display_name="Broken OpenAI")
        mistake = self.mistake

        def factory(settings: ProviderSettings) -> _Broken:
            provider = _Broken(broken, settings)
            provider.mistake = mistake
            return provider

        return [ProviderSpec(name=BROKEN, display_name="Broken OpenAI", factory=factory,
                             capabilities=broken.capabilities)]  # fmt: skip


class _BrokenKit(responses_kit.TestOpenAIResponsesConformance):
    provider_name = BROKEN


@pytest.fixture
def server() -> Iterator[FakeResponses]:
    with FakeResponses(mode="strict") as srv:
        yield srv  # type: ignore[misc]
        assert srv.handler_errors == []


def _kit(transport: str) -> Any:
    kit = _BrokenKit()
    kit.transport = transport
    return kit


@pytest.mark.parametrize(
    ("mistake", "says"),
    [
        ("drops-signature", "did not reach the wire unchanged"),
        ("unlabelled", "as its provider"),
    ],
)
@pytest.mark.parametrize("turn", ["tool-loop", "next-turn"])
@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_the_check_of_signed_reasoning_fails_a_provider_that_loses_it(
    server: FakeResponses, mistake: str, says: str, turn: str, streaming: bool
) -> None:
    host = PluginHost.default()
    name = host.register(_BrokenPlugin(mistake), "broken-kit-" + mistake)
    try:
        with pytest.raises(AssertionError, match=says):
            await _kit("httpx").test_signed_reasoning_goes_back_unchanged(server, streaming, turn)
    finally:
        host.unregister(name=name)


@pytest.mark.parametrize("turn", ["tool-loop", "next-turn"])
async def test_the_same_provider_without_a_mistake_passes(server: FakeResponses, turn: str) -> None:
    host = PluginHost.default()
    name = host.register(_BrokenPlugin(""), "broken-kit-none")
    try:
        await _kit("direct").test_signed_reasoning_goes_back_unchanged(server, True, turn)
    finally:
        host.unregister(name=name)
    assert len(server.requests) == 2
