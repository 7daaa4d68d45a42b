"""Provider objects shared by several runs.

``run_agent`` builds a fresh ``Agent`` per run; without a pool each run would build (and
close) its own provider. A pool keeps one provider per event loop and per settings (name, base
URL, key, options). Two pools exist: ``OpenMultiAgent(share_providers=True)`` shares the
providers whose spec says ``shared`` (SDK clients: one connection pool instead of a handshake
per run) until ``OpenMultiAgent.aclose``; a team run shares every provider among its tasks and
its coordinator (so a scripted queue is played in order across them) until the team run ends.
Clients are bound to the loop they were made in, so a provider is never handed to another loop.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .capabilities import ProviderSpec
    from .plugins import PluginHost
    from .providers import Provider, ProviderSettings

__all__ = ["ProviderPool"]

_Key = tuple[str, str | None, str | None, str]


class ProviderPool:
    """One provider object per event loop and settings, owned by the pool.

    ``every_provider`` pools providers whatever their spec says; otherwise only ``shared`` ones.
    """

    def __init__(self, *, every_provider: bool = False) -> None:
        self._every_provider = every_provider
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[_Key, Provider]
        ] = weakref.WeakKeyDictionary()

    def get(
        self, spec: ProviderSpec, settings: ProviderSettings, host: PluginHost
    ) -> Provider | None:
        """The pooled provider for these settings on the running loop, made on first use;
        None when this pool does not share the spec's providers (the caller makes its own)."""
        if not (spec.shared or self._every_provider):
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (e.g. rendering a request): nothing to share
            return None
        providers = self._by_loop.get(loop)
        if providers is None:
            providers = self._by_loop[loop] = {}
        options = json.dumps(settings.options, sort_keys=True, default=repr)
        key = (spec.name, settings.base_url, settings.api_key, options)
        provider = providers.get(key)
        if provider is None:
            provider = providers[key] = host.build_provider(spec, settings)
        return provider

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
