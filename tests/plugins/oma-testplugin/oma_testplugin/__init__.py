"""A tiny plugin for oma-core's tests: the "shout" provider and a before_run hook.

Both are inert for everyone else: the provider is used only when named, and the hook rewrites
only prompts that start with ``testplugin:``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import oma_core
from oma_core import Capabilities, LLMMessage, ProviderSpec, TextBlock, Usage
from oma_core.toolkit import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
)

MARKER = "testplugin:"


class ShoutProvider:
    """Answers with the latest user text in capitals."""

    name = "shout"
    display_name = "Shout"

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def _answer(self, request: ProviderRequest) -> ProviderResponse:
        texts = [b.text for b in request.messages[-1].content if isinstance(b, TextBlock)]
        text = "".join(texts).upper()
        message = LLMMessage(role="assistant", content=(TextBlock(text),))
        return ProviderResponse(message, Usage(1, 1), stop_reason="end_turn")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self._answer(request)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        response = self._answer(request)
        yield TextDelta(response.message.content[0].text)  # type: ignore[union-attr]
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {"shout": [b.text for b in request.messages[-1].content if b.type == "text"]}

    async def aclose(self) -> None:
        pass


@oma_core.hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec(
            name="shout",
            display_name="Shout",
            factory=ShoutProvider,
            capabilities=Capabilities.text_only(),
            description="Test plugin: answers in capitals.",
        )
    ]


@oma_core.hookimpl
def oma_before_run(ctx: Any) -> dict[str, str] | None:
    """Rewrite ``testplugin: x`` to ``[rewritten by testplugin] x``; leave the rest alone."""
    if not ctx.prompt.startswith(MARKER):
        return None
    return {"prompt": "[rewritten by testplugin] " + ctx.prompt[len(MARKER) :].strip()}
