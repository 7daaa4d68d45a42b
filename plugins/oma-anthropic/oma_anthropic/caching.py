"""Prompt caching on the Messages API: ``CachePoint`` blocks and ``AgentConfig.cache="auto"`` as
``cache_control`` breakpoints.

Following Anthropic's prompt caching documentation (read 2026-12-06) and the SDK's
``CacheControlEphemeralParam``: a breakpoint is ``"cache_control": {"type": "ephemeral"}`` on a
tool, a system text block or a message content block, and caches the request up to and
including it, in the order tools, system, messages. A request holds at most four (the top-level
``cache_control`` a caller may send through ``extra_body`` counts as one). Thinking blocks and
empty text blocks cannot hold one.

- A ``CachePoint`` puts a breakpoint on the block before it: the nearest earlier block that can
  hold one, in its message or an earlier one; a ``CachePoint`` with none before it (first in
  the first message) ends the prefix of tools and system prompt, so it marks the system prompt
  (sent as one text block) or, without one, the last tool.
- ``cache="auto"`` puts one on the last tool, one on the system prompt and one on the last
  block of the latest user turn, which moves forward with the conversation (the previous
  turn's prefix is read back from the cache, the new one written).
- Past four, the oldest (first in that order) are left out, with a one-line note at WARNING on
  the ``oma_anthropic`` logger: the later breakpoints cache those prefixes too.
- ``provider_options["cache_ttl"]`` ``"1h"`` puts ``"ttl": "1h"`` on every breakpoint (the
  one-hour cache, whose writes Anthropic bills at twice the input rate, against 1.25 times for
  the five-minute one); "5m", the default, sends none.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from oma_core.capabilities import CACHE_PLACES, CacheSupport

__all__ = [
    "CACHING",
    "EPHEMERAL",
    "MAX_BREAKPOINTS",
    "Anchor",
    "markable",
    "place_breakpoints",
]

_LOG = logging.getLogger("oma_anthropic")
_DOCS = "Anthropic prompt caching documentation, 2026-12-06"
#: The most ``cache_control`` breakpoints the Messages API takes in one request.
MAX_BREAKPOINTS = 4
#: The breakpoint oma sends (the default five-minute lifetime).
EPHEMERAL = {"type": "ephemeral"}
#: What the provider declares (``Capabilities.caching``).
CACHING = CacheSupport(max_markers=MAX_BREAKPOINTS, places=CACHE_PLACES, source=_DOCS)

#: Where a ``CachePoint`` put its breakpoint: a rendered message block, or None for the end of
#: the tools and system prompt.
Anchor = dict[str, Any] | None


def markable(block: dict[str, Any]) -> bool:
    """Whether a rendered content block can hold a breakpoint (not thinking, not empty text)."""
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    return not (kind == "text" and not block.get("text"))


def place_breakpoints(
    body: dict[str, Any],
    anchors: Sequence[Anchor],
    auto: bool,
    model: str,
    ttl: str | None = None,
) -> None:
    """Put ``cache_control`` on ``body``'s tools, system prompt and message blocks: where the
    request's ``CachePoint`` blocks put them (``anchors``) and, with ``auto``, where
    ``cache="auto"`` does, with ``ttl`` when given; the oldest past the limit are left out
    with a note."""
    wanted: list[tuple[tuple[int, int], Literal["tool", "system", "block"], Any]] = []
    tools = body.get("tools")
    last_tool = tools[-1] if isinstance(tools, list) and tools else None
    system = body.get("system")
    has_system = bool(system) if isinstance(system, str | list) else False
    prefix_end: Any = ("system", None) if has_system else ("tool", last_tool)
    if auto:
        if last_tool is not None:
            wanted.append(((-2, 0), "tool", last_tool))
        if has_system:
            wanted.append(((-1, 0), "system", None))
    positions = _positions(body.get("messages"))
    for anchor in anchors:
        if anchor is None:
            kind, target = prefix_end
            if kind == "system" or target is not None:
                wanted.append(((-1, 0) if kind == "system" else (-2, 0), kind, target))
        elif id(anchor) in positions:
            wanted.append((positions[id(anchor)], "block", anchor))
    if auto:
        latest = _latest_user_block(body.get("messages"))
        if latest is not None:
            wanted.append((positions[id(latest)], "block", latest))
    chosen = {key: (kind, target) for key, kind, target in sorted(wanted, key=lambda w: w[0])}
    limit = MAX_BREAKPOINTS - (1 if "cache_control" in body else 0)
    keys = sorted(chosen)
    if len(keys) > limit:
        dropped, keys = keys[: len(keys) - limit], keys[len(keys) - limit :]
        _LOG.warning(
            "%s: %d cache breakpoint(s) left out, the oldest: the Messages API takes at most %d "
            "in a request",
            model,
            len(dropped),
            MAX_BREAKPOINTS,
        )
    control = {**EPHEMERAL, "ttl": ttl} if ttl is not None else EPHEMERAL
    for key in keys:
        kind, target = chosen[key]
        if kind == "system":
            _mark_system(body, control)
        else:
            target["cache_control"] = dict(control)


def _positions(messages: Any) -> dict[int, tuple[int, int]]:
    """Each rendered block's place ``(message, block)``, by the block's identity."""
    places: dict[int, tuple[int, int]] = {}
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            places[id(block)] = (i, j)
    return places


def _latest_user_block(messages: Any) -> dict[str, Any] | None:
    """The last block of the latest user turn that can hold a breakpoint."""
    for message in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        for block in reversed(content if isinstance(content, list) else []):
            if isinstance(block, dict) and markable(block):
                return block
        return None
    return None


def _mark_system(body: dict[str, Any], control: Mapping[str, str]) -> None:
    """The system prompt with a breakpoint: a string becomes one text block holding it."""
    system = body["system"]
    if isinstance(system, str):
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(control)}]
    elif isinstance(system[-1], dict):
        system[-1]["cache_control"] = dict(control)
