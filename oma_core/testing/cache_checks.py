"""The conformance kit's checks of prompt caching: cache markers on the wire where a provider
declares them, absent where it does not, and the cache counts of a reply in ``Usage``.

``CacheConformance`` is mixed into ``ProviderConformance`` (whose ``spec``, ``agent``,
``provider``, ``model`` and ``script_reply`` it uses). A plugin states what its provider does,
and the kit holds that to ``Capabilities.caching``:

- ``cache_markers``: the provider places markers (``CacheSupport.markers``). Then it supplies
  ``read_cache_markers(body)``, the wire reader of markers written from the service's
  documentation, and the kit checks that a ``CachePoint`` reaches the wire on the block before
  it, that ``cache="auto"`` marks each place the provider declares (the tools, the system
  prompt, the latest user turn), and that no request carries more than ``max_markers``.
  Without markers, the kit checks that a conversation holding ``CachePoint`` blocks runs and
  that nothing of them reaches the wire (a hint, not content).
- ``cache_usage``: which cache counts the service reports (``"read"``, ``"write"``); the
  plugin's ``script_reply`` writes ``ScriptedReply.usage``'s ``cache_read_tokens`` and
  ``cache_write_tokens`` in the service's shape (``input_tokens`` in oma's convention counts
  them, so a service that counts them apart gets the difference), and the kit checks they come
  back in ``Usage``, complete and streamed. A plugin that drops or double-counts them fails.

- ``cache_ttl_options``: the ``provider_options`` that ask for the service's one-hour cache
  (``{"cache_ttl": "1h"}`` on Anthropic and Bedrock); with them, the kit checks that every
  marker of a ``cache="auto"`` request carries that lifetime (``CacheMarker.ttl``, which the
  plugin's ``read_cache_markers`` reads from the wire).

Checks that cannot apply are left out (not skipped), as ``ProviderConformance`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs
import pytest

from ..providers import ProviderRequest, ToolDefinition, Usage
from ..validation import load_messages
from .neutral import ScriptedReply

if TYPE_CHECKING:
    from ..agent import Agent, RunResult
    from ..capabilities import CacheSupport, ProviderSpec
    from ..providers import Provider
    from .fake_server import FakeServer

__all__ = ["CACHE_CHECKS", "CacheConformance", "CacheMarker"]

_STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
#: The texts of the kit's cached conversation: what a marker's ``text`` names.
PREFIX = "kit cache prefix: the long document every question shares"
QUESTION = "kit cache question: what does it say?"
SYSTEM = "kit cache system prompt: answer from the document."
TOOL = ToolDefinition(
    "kit_cache_lookup",
    "Look a word up.",
    {"type": "object", "properties": {"w": {"type": "string"}}},
)


@attrs.frozen
class CacheMarker:
    """One cache marker the service sees in a request body: its ``place`` (``"tools"``,
    ``"system"`` or ``"messages"``) and what it is on: the tool's name, the system prompt's text,
    or the text of the message block it ends (None for a block without text). ``ttl`` is the
    lifetime the marker asks for as the service writes it (``"1h"``; None: the default), not
    compared: two markers at one place are equal whatever their lifetime."""

    place: Literal["tools", "system", "messages"]
    text: str | None = None
    ttl: str | None = attrs.field(default=None, eq=False)


#: Every check of this mixin, by what it needs.
_MARKER_CHECKS = (
    "test_a_cache_point_reaches_the_wire_on_the_block_before_it",
    "test_cache_auto_marks_each_declared_place",
)
_NO_MARKER_CHECKS = ("test_cache_points_never_reach_a_provider_without_markers",)
_USAGE_CHECKS = ("test_cache_tokens_are_counted_in_usage",)
_TTL_CHECKS = ("test_the_one_hour_cache_reaches_every_marker",)
CACHE_CHECKS = (
    "test_caching_is_declared_as_the_kit_is_told",
    *_MARKER_CHECKS,
    *_NO_MARKER_CHECKS,
    *_USAGE_CHECKS,
    *_TTL_CHECKS,
)


def _user(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


_CACHED = [_user(_text(PREFIX), {"type": "cache_point"}, _text(QUESTION))]


class CacheConformance:
    """The prompt-caching checks (see the module docstring); mixed into
    ``ProviderConformance``, whose hooks they use."""

    #: Whether the provider places cache markers (``Capabilities.caching`` with markers).
    cache_markers: ClassVar[bool] = False
    #: The cache counts the service reports, "read" and/or "write" (none: the check is left
    #: out).
    cache_usage: ClassVar[frozenset[str]] = frozenset()
    #: The ``provider_options`` that ask for the one-hour cache (None: the check is left out).
    cache_ttl_options: ClassVar[Mapping[str, Any] | None] = None

    if TYPE_CHECKING:  # the hooks and helpers of ProviderConformance
        model: str | None

        def spec(self) -> ProviderSpec: ...
        def agent(self, server: FakeServer, **config: Any) -> Agent: ...
        def provider(self, server: FakeServer, **options: Any) -> Provider: ...
        def script_reply(self, server: Any, reply: ScriptedReply) -> None: ...
        def script_text(self, server: Any, text: str) -> None: ...

    def read_cache_markers(self, body: Mapping[str, Any]) -> Sequence[CacheMarker]:
        """The wire reader of cache markers: where the service sees them in the JSON ``body``,
        written from its documentation (never from the plugin's code). Needed when
        ``cache_markers`` is True."""
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        left_out: set[str] = set(_NO_MARKER_CHECKS if cls.cache_markers else _MARKER_CHECKS)
        if not cls.cache_usage:
            left_out.update(_USAGE_CHECKS)
        if not cls.cache_markers or cls.cache_ttl_options is None:
            left_out.update(_TTL_CHECKS)
        for name in CACHE_CHECKS:
            if name in left_out:
                setattr(cls, name, None)
            elif getattr(cls, name) is None:  # a base left it out; this class has it
                setattr(cls, name, getattr(CacheConformance, name))

    # -- helpers ---------------------------------------------------------------------------

    def _caching(self) -> CacheSupport:
        caching = self.spec().capabilities.caching
        assert caching is not None and caching.markers, "the provider declares no markers"
        return caching

    def _markers(self, body: Mapping[str, Any], what: str) -> list[CacheMarker]:
        markers = list(self.read_cache_markers(body))
        limit = self._caching().max_markers
        assert len(markers) <= limit, f"{what}: {len(markers)} markers, past the {limit} declared"
        assert "cache_point" not in json.dumps(body), f"{what}: the CachePoint itself was sent"
        return markers

    async def _run(
        self, server: FakeServer, streaming: bool, messages: Any = _CACHED, **config: Any
    ) -> RunResult:
        async with self.agent(server, **config) as agent:
            if streaming:
                async with agent.stream(load_messages(messages)) as events:
                    return [e async for e in events][-1].data  # type: ignore[no-any-return]
            return await agent.run(load_messages(messages))

    # -- the checks --------------------------------------------------------------------------

    def test_caching_is_declared_as_the_kit_is_told(self) -> None:
        caching = self.spec().capabilities.caching
        declared = caching is not None and caching.markers
        assert declared == self.cache_markers, (
            f"Capabilities.caching says markers={declared}; the kit's cache_markers says "
            f"{self.cache_markers}"
        )

    @_STREAMING
    async def test_a_cache_point_reaches_the_wire_on_the_block_before_it(
        self, server: FakeServer, streaming: bool
    ) -> None:
        self.script_text(server, "cached")
        result = await self._run(server, streaming, system_prompt=SYSTEM)
        assert result.success, result.status.error
        markers = self._markers(server.requests[-1].json, "a CachePoint")
        assert CacheMarker("messages", PREFIX) in markers, (
            f"the CachePoint after {PREFIX!r} is not on the wire as a marker on it: {markers}"
        )
        assert CacheMarker("messages", QUESTION) not in markers, "a marker after the CachePoint"

    @_STREAMING
    async def test_cache_auto_marks_each_declared_place(
        self, server: FakeServer, streaming: bool
    ) -> None:
        places = self._caching().places
        messages = load_messages([_user(_text(QUESTION))])
        request = ProviderRequest(
            self.model or self.spec().default_model, messages, SYSTEM, (TOOL,), cache="auto"
        )
        self.script_text(server, "cached")
        provider = self.provider(server)
        try:
            if streaming:
                _ = [event async for event in provider.stream(request)]
            else:
                await provider.complete(request)
        finally:
            await provider.aclose()
        markers = self._markers(server.requests[-1].json, 'cache="auto"')
        wanted = {
            "tools": CacheMarker("tools", TOOL.name),
            "system": CacheMarker("system", SYSTEM),
            "messages": CacheMarker("messages", QUESTION),
        }
        for place, marker in wanted.items():
            if place in places:
                assert marker in markers, f'cache="auto" put no marker on the {place}: {markers}'

    @_STREAMING
    async def test_the_one_hour_cache_reaches_every_marker(
        self, server: FakeServer, streaming: bool
    ) -> None:
        messages = load_messages(_CACHED)
        request = ProviderRequest(
            self.model or self.spec().default_model, messages, SYSTEM, (TOOL,), cache="auto"
        )
        self.script_text(server, "cached")
        provider = self.provider(server, **dict(self.cache_ttl_options or {}))
        try:
            if streaming:
                _ = [event async for event in provider.stream(request)]
            else:
                await provider.complete(request)
        finally:
            await provider.aclose()
        markers = self._markers(server.requests[-1].json, "the one-hour cache")
        assert markers, "the one-hour cache: no marker reached the wire"
        short = [m for m in markers if m.ttl != "1h"]
        assert not short, f"cache_ttl_options asked for one hour; these markers did not: {short}"

    @_STREAMING
    async def test_cache_points_never_reach_a_provider_without_markers(
        self, server: FakeServer, streaming: bool
    ) -> None:
        self.script_text(server, "cached")
        result = await self._run(server, streaming, cache="auto")
        assert result.success, result.status.error  # a hint: never refused
        body = server.requests[-1].body
        assert b"cache_point" not in body, "a CachePoint reached a provider without markers"
        assert PREFIX.encode() in body and QUESTION.encode() in body, "content was lost"

    @_STREAMING
    async def test_cache_tokens_are_counted_in_usage(
        self, server: FakeServer, streaming: bool
    ) -> None:
        read = 3000 if "read" in self.cache_usage else 0
        write = 500 if "write" in self.cache_usage else 0
        usage = Usage(3600, 7, cache_read_tokens=read, cache_write_tokens=write)
        self.script_reply(server, ScriptedReply(text="cached", usage=usage))
        result = await self._run(server, streaming, [_user(_text(QUESTION))])
        assert result.success, result.status.error
        got = result.usage
        assert (got.input_tokens, got.cache_read_tokens, got.cache_write_tokens) == (
            3600,
            read,
            write,
        ), f"usage {got} for 3600 tokens in, {read} read from the cache, {write} written to it"
