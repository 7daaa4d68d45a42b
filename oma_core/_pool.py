"""Provider objects shared by several runs, closed with their owner or their event loop.

``run_agent`` builds a fresh ``Agent`` per run; without a pool each run would build (and
close) its own provider — for an SDK, a new client, SSL context and connection pool per run. A
pool keeps one provider per event loop and per settings (name, base URL, key, options: runs
that differ in any of these never share a provider, so never a connection pool). Two pools
exist: each ``OpenMultiAgent`` has one (unless ``share_providers=False``) for the providers
whose spec says ``shared``; a team run shares every provider among its tasks and its
coordinator (so a scripted queue is played in order across them) until the team run ends.
Clients are bound to the loop they were made in, so a provider is never handed to another loop.

What cannot leak: the providers a pool made on a loop are closed by ``aclose`` (on that loop);
if the pool is dropped unclosed, in a task on that loop; and at the latest when the loop shuts
down — one keeper per loop, an async generator started on it, closes what is left in its
``finally`` when ``loop.shutdown_asyncgens()`` runs (``asyncio.run`` and ``asyncio.Runner``
call it before they return).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .capabilities import ProviderSpec
    from .plugins import PluginHost
    from .providers import Provider, ProviderSettings

__all__ = ["Closables", "ProviderPool"]

_log = logging.getLogger("oma.providers")

_Key = tuple[str, str | None, str | None, str]
_Providers = dict[Any, Any]  # providers by settings, or closables by id


class ProviderPool:
    """One provider object per event loop and settings, owned by the pool.

    ``every_provider`` pools providers whatever their spec says; otherwise only ``shared`` ones.
    """

    def __init__(self, *, every_provider: bool = False) -> None:
        self._every_provider = every_provider
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Providers] = (
            weakref.WeakKeyDictionary()
        )
        # Dropped unclosed: hand what is still open to each loop's keeper.
        weakref.finalize(self, _orphan, self._by_loop)

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
            keeper = _keeper(loop)
            if keeper is None:  # the loop is shutting down: the caller makes its own
                return None
            providers = self._by_loop[loop] = {}
            keeper.pools.add(providers)
        options = json.dumps(settings.options, sort_keys=True, default=repr)
        key = (spec.name, settings.base_url, settings.api_key, options)
        provider = providers.get(key)
        if provider is None:
            provider = providers[key] = host.build_provider(spec, settings)
        return provider

    async def aclose(self) -> None:
        """Close the providers made on the running loop; forget those of other loops (their
        loops' keepers close them)."""
        await _close_loop(self._by_loop)


class Closables:
    """Objects opened on first use and closed with their owner — the toolsets of an agent or
    an ``OpenMultiAgent`` (an MCP server's process): by ``aclose`` on the loop they were used
    on, and at the latest when that loop shuts down (the same keeper as the providers').

    Unlike a provider pool's, an owner dropped unclosed does not close them early: a toolset
    outlives a one-off ``Agent(...).run()`` (the caller may hold it open with ``async with``).
    """

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def add(self, item: Any) -> None:
        """Close ``item`` (with its ``aclose``) with this owner, on the running loop."""
        loop = asyncio.get_running_loop()
        items = self._by_loop.get(loop)
        if items is None:
            keeper = _keeper(loop)
            if keeper is None:  # the loop is shutting down: nothing to keep it for
                return
            items = self._by_loop[loop] = {}
            keeper.pools.add(items)
        items.setdefault(id(item), item)

    async def aclose(self) -> None:
        """Close what was used on the running loop (each one even if another fails)."""
        await _close_loop(self._by_loop)


async def _close_loop(by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]) -> None:
    """Close what ``by_loop`` holds for the running loop; hand the rest to their loops."""
    loop = asyncio.get_running_loop()
    items = by_loop.pop(loop, None)
    _orphan(by_loop)
    if items is None:
        return
    keeper = _KEEPERS.get(loop)
    if keeper is not None:
        keeper.pools.discard(items)
    errors = await _close_all(list(items.values()))
    items.clear()
    if errors:
        raise errors[0]


class _PoolSet:
    """Providers dicts held by identity (a dict is not hashable)."""

    def __init__(self) -> None:
        self.items: dict[int, _Providers] = {}

    def add(self, item: _Providers) -> None:
        self.items[id(item)] = item

    def discard(self, item: _Providers) -> None:
        self.items.pop(id(item), None)

    def drain(self) -> list[Provider]:
        """Every provider of every dict, each dict emptied and forgotten."""
        providers = [p for item in self.items.values() for p in item.values()]
        for item in self.items.values():
            item.clear()
        self.items.clear()
        return providers


class _Keeper:
    """What one loop closes when it shuts down: the providers of the pools in use on it, and
    those of dropped pools not yet closed (``orphans``)."""

    def __init__(self) -> None:
        self.pools = _PoolSet()
        self.orphans: list[Provider] = []
        self.generator: AsyncGenerator[None, None] | None = None


#: one keeper per live loop (a loop holds the async generators it will close only weakly)
_KEEPERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Keeper] = (
    weakref.WeakKeyDictionary()
)


def _keeper(loop: asyncio.AbstractEventLoop) -> _Keeper | None:
    """The running loop's keeper, started on first use; None if the loop is shutting down."""
    if getattr(loop, "_asyncgens_shutdown_called", False):
        return None
    keeper = _KEEPERS.get(loop)
    if keeper is not None:
        return keeper
    keeper = _Keeper()
    generator = _keep(keeper)
    # Its first step only reaches the ``yield``, so it is taken here, synchronously; taking it
    # on the running loop registers the generator with the loop (the loop's firstiter hook),
    # whose ``shutdown_asyncgens`` then closes it.
    with contextlib.suppress(StopIteration):
        generator.asend(None).send(None)
    keeper.generator = generator
    _KEEPERS[loop] = keeper
    return keeper


async def _keep(keeper: _Keeper) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        # The loop is shutting down: close everything still open on it.
        while keeper.orphans or keeper.pools.items:
            left = keeper.pools.drain() + keeper.orphans
            keeper.orphans = []
            for error in await _close_all(left):
                _log.warning("closing a shared provider failed: %s", type(error).__name__)


def _orphan(by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Providers]) -> None:
    """Hand each loop's providers in ``by_loop`` to that loop's keeper, and ask the loop to
    close them soon (the keeper closes whatever that task has not when the loop shuts down)."""
    for loop, providers in list(by_loop.items()):
        keeper = _KEEPERS.get(loop)
        if keeper is None or not providers:
            continue
        keeper.pools.discard(providers)
        keeper.orphans.extend(providers.values())
        providers.clear()
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile: its keeper ran
                loop.call_soon_threadsafe(_close_orphans_soon, loop, keeper)
    by_loop.clear()


def _close_orphans_soon(loop: asyncio.AbstractEventLoop, keeper: _Keeper) -> None:
    if keeper.orphans:
        loop.create_task(_close_orphans(keeper))


async def _close_orphans(keeper: _Keeper) -> None:
    while keeper.orphans:
        provider = keeper.orphans[0]
        for error in await _close_all([provider]):
            _log.warning("closing a shared provider failed: %s", type(error).__name__)
        if keeper.orphans and keeper.orphans[0] is provider:
            keeper.orphans.pop(0)


async def _close_all(providers: list[Any]) -> list[BaseException]:
    """Close every provider (each one even if another fails); the failures, in order."""
    errors: list[BaseException] = []
    for provider in providers:
        close = getattr(provider, "aclose", None)
        if close is None:
            continue
        try:
            await close()
        except Exception as error:
            errors.append(error)
    return errors
