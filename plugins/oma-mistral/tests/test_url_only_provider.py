"""A capability declaration can say "images by URL only": base64 images are then refused
locally, before any request, while URLs reach the wire."""

from __future__ import annotations

import base64
from typing import Any

from fake_mistral import API_KEY, FakeMistral
from oma_mistral import MistralProvider

from oma_core import Agent, AgentConfig, Capabilities, UnsupportedContentBlockError
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import BlockSupport, ProviderSettings

URL_ONLY = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), sources=frozenset({"url"})),
    )
)


class UrlOnlyMistral:
    """The Mistral provider, declared as a service that reads images by URL only."""

    capabilities = URL_ONLY
    display_name = "URL-only Mistral"
    name = "url-only-mistral"

    def __init__(self, server: FakeMistral) -> None:
        self._inner: Any = MistralProvider(
            ProviderSettings(base_url=server.base_url, api_key=API_KEY)
        )
        self.complete, self.stream = self._inner.complete, self._inner.stream
        self.render, self.aclose = self._inner.render, self._inner.aclose


def _image(source: dict[str, Any]) -> list[dict[str, Any]]:
    text = {"type": "text", "text": "what is this?"}
    return [{"role": "user", "content": [text, {"type": "image", "source": source}]}]


async def _run(provider: UrlOnlyMistral, conversation: Any) -> Any:
    async with Agent(AgentConfig(name="a", provider=provider)) as agent:
        return await agent.run(conversation)


async def test_a_base64_image_is_refused_before_any_request(server: FakeMistral) -> None:
    provider = UrlOnlyMistral(server)
    data = base64.b64encode(MEDIA_SAMPLES["image/png"]).decode()
    try:
        result = await _run(
            provider, _image({"type": "base64", "media_type": "image/png", "data": data})
        )
    finally:
        await provider.aclose()
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.provider == "URL-only Mistral" and error.block_type == "image"
    assert error.detail == "base64 sources are not supported in a user message"
    assert server.requests == []


async def test_an_image_url_reaches_the_wire(server: FakeMistral) -> None:
    provider = UrlOnlyMistral(server)
    url = "https://example.com/cat.png"
    try:
        result = await _run(
            provider, _image({"type": "url", "media_type": "image/png", "url": url})
        )
    finally:
        await provider.aclose()
    assert result.success, result.status.error
    parts = server.requests[0].json["messages"][0]["content"]
    assert {"type": "image_url", "image_url": url} in parts


def test_the_declaration_reports_url_native_and_base64_refused() -> None:
    assert URL_ONLY.mode("image", "user", "url") is not None
    assert URL_ONLY.mode("image", "user", "base64") is None
