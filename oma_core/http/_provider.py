"""``HttpProvider``: the part of an HTTP provider plugin that is the same for every service.

What a provider over a JSON wire repeats, whatever the service: its names, its key (from
``AgentConfig.api_key`` or its environment variable), its base URL (or the default), the
``provider_options`` its client takes, a client per event loop with real timeouts and bounded
replies, the key kept out of every error, and closing. All of it is read from the plugin's
``ProviderSpec`` (``resolution.provider_settings``), so a subclass writes only the wire:
``render``, ``complete`` and ``stream``. httpx is imported on first use.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from .._resolution import provider_settings
from ._bounded import ReadLimits
from ._client import CLIENT_OPTIONS, LoopLocalClient, post_json
from ._ndjson import stream_ndjson
from ._replies import missing_api_key
from ._sse import stream_sse

if TYPE_CHECKING:
    import httpx
    from httpx_sse import ServerSentEvent

    from ..capabilities import ProviderSpec
    from ..providers import ProviderEvent, ProviderRequest, ProviderResponse, ProviderSettings

__all__ = ["HttpProvider"]


class HttpProvider:
    """A base for a provider over HTTP and JSON; a subclass writes ``render``, ``complete``
    and ``stream`` (the service's wire) and nothing else.

    Built with the plugin's ``ProviderSpec`` and the agent's ``ProviderSettings`` by the
    spec's factory (``def _make(settings): from ._provider import MyProvider; return
    MyProvider(SPEC, settings)``: the module, and httpx, imported on first use), it holds:

    - ``name`` and ``display_name``, the spec's;
    - ``api_key``: ``settings.api_key``, else the first set variable of ``api_key_env``;
      ``base_url``: ``settings.base_url``, else ``default_base_url`` (no trailing slash);
    - ``options``: the ``provider_options`` that are not the client's (``CLIENT_OPTIONS``:
      ``timeout``, ``headers``, ``max_response_bytes``, ``max_event_bytes``), for the body;
    - a ``LoopLocalClient`` sending ``headers()`` (``authorization: Bearer <key>`` by
      default; override for another scheme) on every request.

    ``post_json``, ``stream_sse`` and ``stream_ndjson`` send to ``base_url + path`` through
    the toolkit functions of the same names, with the key as a secret; ``client()`` refuses
    a call without a key when the spec ``requires_api_key`` (``missing_api_key``, before
    anything is sent); ``aclose`` closes the client.
    """

    def __init__(self, spec: ProviderSpec, settings: ProviderSettings) -> None:
        resolved = provider_settings(spec, settings)
        self.spec = spec
        self.name = spec.name
        self.display_name = spec.display_name
        self.api_key = resolved.api_key
        self.base_url = (resolved.base_url or "").rstrip("/")
        self.options: Mapping[str, Any] = {
            k: v for k, v in resolved.options.items() if k not in CLIENT_OPTIONS
        }
        self.limits = ReadLimits.from_options(resolved.options, name=self.display_name)
        self.clients = LoopLocalClient.from_options(
            resolved.options, headers=self.headers(), provider=self.display_name
        )

    # -- the wire: a subclass writes these

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        """The exact JSON body ``complete`` sends for ``request`` (``oma render`` prints it;
        the conformance kit holds the two equal, byte for byte)."""
        raise NotImplementedError

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        """A coroutine: send ``render(request)`` and return the whole assistant turn."""
        raise NotImplementedError

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """An async generator: send the streaming body and yield events, ending with
        ``stream_end``'s."""
        raise NotImplementedError

    # -- what every HTTP provider shares

    def headers(self) -> dict[str, str]:
        """The headers every request carries: the key as a bearer token, when there is one."""
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no error message may quote (``scrub``'s secrets): the key."""
        return (self.api_key,) if self.api_key else ()

    def client(self) -> httpx.AsyncClient:
        """The running loop's client (call from a coroutine); without a key the spec
        requires, the non-retryable ``missing_api_key`` error, before anything is sent."""
        if self.spec.requires_api_key and not self.api_key:
            raise missing_api_key(self.display_name, *self.spec.key_variables)
        return self.clients.get()

    async def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        """A coroutine: POST ``body`` to ``base_url + path``; the decoded JSON reply, or a
        ``ProviderError`` (``post_json``)."""
        return await post_json(
            self.client(), self.base_url + path, body, provider=self.display_name,
            secrets=self.secrets,
        )  # fmt: skip

    def stream_sse(
        self, path: str, body: Mapping[str, Any]
    ) -> AsyncGenerator[ServerSentEvent, None]:
        """An async generator: POST ``body`` to ``base_url + path`` and yield the reply's
        server-sent events (``stream_sse``); close it with ``aclosing``."""
        return stream_sse(
            self.client(), self.base_url + path, body, provider=self.display_name,
            secrets=self.secrets, max_event_bytes=self.limits.max_event_bytes,
        )  # fmt: skip

    def stream_ndjson(
        self, path: str, body: Mapping[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        """An async generator: POST ``body`` to ``base_url + path`` and yield the reply's
        lines as JSON objects (``stream_ndjson``); close it with ``aclosing``."""
        return stream_ndjson(
            self.client(), self.base_url + path, body, provider=self.display_name,
            secrets=self.secrets, max_event_bytes=self.limits.max_event_bytes,
        )  # fmt: skip

    async def aclose(self) -> None:
        """A coroutine: close the client of the running loop."""
        await self.clients.aclose()
