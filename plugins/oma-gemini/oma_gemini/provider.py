"""The Gemini provider: ``models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``.

Over httpx with the oma toolkit (no Google SDK: it takes far longer to import than this
plugin, see ``docs/providers/gemini.md``). The key goes in the ``x-goog-api-key`` header, never
in the URL. ``base_url`` may carry any API version (``.../v1``, ``.../v1beta``, a proxy's
prefix); a bare host gets ``/v1beta``. A streamed reply is a whole ``GenerateContentResponse``
per event with no end marker: a stream that ends before a ``finishReason`` was cut short.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any
from urllib.parse import urlsplit

from oma_core import ReasoningBlock, TextBlock, ToolUseBlock, Usage
from oma_core.errors import PluginError
from oma_core.http import (
    CLIENT_OPTIONS,
    LoopLocalClient,
    event_json,
    malformed_response,
    missing_api_key,
    post_json,
    request_secrets,
    stream_sse,
)
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
)

from .capabilities import DEFAULT_INLINE_LIMIT, DISPLAY_NAME
from .mapping import build_body, read_candidate, read_usage, response_of

__all__ = ["DEFAULT_BASE_URL", "GeminiProvider", "api_root"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_MODEL = "gemini-2.5-flash"
#: ``provider_options`` the provider reads itself; any other key goes into the body as it is
#: (``safetySettings``, ``toolConfig``, ``cachedContent``, ``generationConfig`` fields, ...).
OWN_OPTIONS = (*CLIENT_OPTIONS, "inline_limit")


def api_root(base_url: str | None) -> str:
    """The URL ``models/...`` is appended to: ``base_url`` as given when it has a path (any
    version prefix), else the host plus ``/v1beta``."""
    root = (base_url or DEFAULT_BASE_URL).rstrip("/")
    return root if urlsplit(root).path not in ("", "/") else f"{root}/v1beta"


class GeminiProvider:
    """See ``docs/providers/gemini.md``."""

    name = "gemini"
    display_name = DISPLAY_NAME

    def __init__(self, settings: ProviderSettings) -> None:
        options = settings.options
        limit = options.get("inline_limit", DEFAULT_INLINE_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise PluginError(
                f"provider option inline_limit must be a number of bytes >= 0, not {limit!r}",
                name=self.name,
            )
        self._inline_limit = limit
        self._key = (
            settings.api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        )
        self._root = api_root(settings.base_url)
        self._options = {k: v for k, v in options.items() if k not in OWN_OPTIONS}
        key = {"x-goog-api-key": self._key} if self._key else {}
        self._clients = LoopLocalClient.from_options(options, headers=key, provider=DISPLAY_NAME)

    # -- the provider interface

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        options: Mapping[str, Any] = self._options
        if request.options:
            options = {**options, **request.options}
        return build_body(request, options, self._inline_limit, self._model(request))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body = self.render(request)
        reply = await post_json(
            self._client(),
            self._url(request, "generateContent"),
            body,
            provider=DISPLAY_NAME,
            secrets=self._secrets(request),
        )
        if not isinstance(reply, dict):
            raise malformed_response(DISPLAY_NAME, "the reply is not a JSON object")
        blocks, reason = read_candidate(reply)
        return response_of(blocks, reason, read_usage(reply), reply.get("modelVersion"))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        body = self.render(request)
        blocks: list[Any] = []
        reason: str | None = None
        usage, model = Usage(), None
        events = stream_sse(
            self._client(),
            self._url(request, "streamGenerateContent"),
            body,
            provider=DISPLAY_NAME,
            secrets=self._secrets(request),
            params={"alt": "sse"},
        )
        async with aclosing(events):
            async for event in events:
                reply = event_json(event, provider=DISPLAY_NAME, secrets=self._secrets(request))
                got, reason = read_candidate(reply)
                if reply.get("usageMetadata"):
                    usage = read_usage(reply)
                model = reply.get("modelVersion") or model
                for block in got:
                    if isinstance(block, TextBlock) and block.text:
                        yield TextDelta(block.text)
                    elif isinstance(block, ReasoningBlock) and block.text:
                        yield ReasoningDelta(block.text)
                blocks.extend(got)
                if reason is not None:
                    break
        if reason is None:  # cut short: the same request may well succeed when sent again
            raise malformed_response(DISPLAY_NAME, "the stream ended before a finishReason")
        response = response_of(blocks, reason, usage, model)
        for block in response.message.content:
            if isinstance(block, ToolUseBlock):
                yield ToolCall(block)
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        await self._clients.aclose()

    # -- helpers

    def _url(self, request: ProviderRequest, method: str) -> str:
        return f"{self._root}/models/{self._model(request)}:{method}"

    @staticmethod
    def _model(request: ProviderRequest) -> str:
        return (request.model or DEFAULT_MODEL).removeprefix("models/")

    def _client(self) -> Any:
        if not self._key:
            raise missing_api_key(DISPLAY_NAME, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        return self._clients.get()

    def _secrets(self, request: ProviderRequest) -> tuple[str, ...]:
        """The key and the request's text and media: none may show in an error."""
        return request_secrets(request, self._key)
