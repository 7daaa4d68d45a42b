"""Provider objects shared by the runs of one ``OpenMultiAgent``.

``run_agent`` builds a fresh ``Agent`` per run; without a pool each run would build (and
close) its own SDK client and connection pool, paying a new TCP/TLS handshake per call. The
pool keeps one provider per event loop and per settings (name, base URL, key, options) and
closes them in ``OpenMultiAgent.aclose``. Clients are bound to the loop they were made in, so
a provider is never handed to a run on another loop.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .capabilities import ProviderSpec
    from .providers import Provider, ProviderSettings

__all__ = ["ProviderPool"]

_Key = tuple[str, str | None, str | None, str]


class ProviderPool:
    """One provider object per event loop and settings, owned by the pool."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[_Key, Provider]
        ] = weakref.WeakKeyDictionary()

    def get(self, spec: ProviderSpec, settings: ProviderSettings) -> Provider:
        """The pooled provider for these settings on the running loop, made on first use."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (e.g. rendering a request): nothing to share
            return spec.factory(settings)
        providers = self._by_loop.get(loop)
        if providers is None:
            providers = self._by_loop[loop] = {}
        options = json.dumps(settings.options, sort_keys=True, default=repr)
        key = (spec.name, settings.base_url, settings.api_key, options)
        provider = providers.get(key)
        if provider is None:
            provider = providers[key] = spec.factory(settings)
        return provider

    def __len__(self) -> int:
        return sum(len(providers) for providers in self._by_loop.values())

    async def aclose(self) -> None:
        """Close the providers made on the running loop; forget those of other loops."""
        loop = asyncio.get_running_loop()
        providers: dict[_Key, Any] = self._by_loop.pop(loop, {})
        self._by_loop.clear()
        errors: list[BaseException] = []
        for provider in providers.values():
            close = getattr(provider, "aclose", None)
            if close is None:
                continue
            try:
                await close()
            except Exception as error:  # close every provider, then report the first failure
                errors.append(error)
        if errors:
            raise errors[0]
