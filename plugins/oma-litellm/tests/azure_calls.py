"""One call on LiteLLM's Azure and text-completion routes, for the tests of those routes: the
request each route's model names, and a call's text or its error (the provider closed after)."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core import ProviderError, load_messages
from oma_core.toolkit import ProviderRequest

VERSION = "2024-10-21"
#: Each route and the model it names.
MODELS = {
    "azure": "azure/gpt-fake",
    "azure_text": "azure_text/gpt-fake-instruct",
    "text-completion-openai": "text-completion-openai/gpt-fake-instruct",
}
STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


def request_for(route: str) -> ProviderRequest:
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    return ProviderRequest(model=MODELS[route], messages=messages)


async def text_of(provider: Any, route: str, streaming: bool) -> str:
    """The reply's text, completed or streamed."""
    try:
        if streaming:
            events = [e async for e in provider.stream(request_for(route))]
            response = events[-1].response
        else:
            response = await provider.complete(request_for(route))
    finally:
        await provider.aclose()
    return str(response.message.content[0].text)


async def failure_of(
    provider: Any, route: str, streaming: bool, error: type[Exception] = ProviderError
) -> Any:
    """The ``error`` the call raises, completed or streamed."""
    try:
        with pytest.raises(error) as caught:
            if streaming:
                [_ async for _ in provider.stream(request_for(route))]
            else:
                await provider.complete(request_for(route))
    finally:
        await provider.aclose()
    return caught.value
