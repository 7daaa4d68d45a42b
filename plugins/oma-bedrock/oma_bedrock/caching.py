"""Prompt caching on Converse: ``CachePoint`` blocks and ``AgentConfig.cache="auto"`` as
``cachePoint`` blocks.

Following Amazon Bedrock's "Prompt caching for faster model inference" page and the Converse
API reference (read 2026-12-06), and botocore's ``bedrock-runtime`` service model
(``CachePointBlock``: ``type`` ``"default"``, an optional ``ttl`` ``"5m"`` or ``"1h"``): a
cache checkpoint is a block of its own, ``{"cachePoint": {"type": "default"}}``, in
``system``, in a message's ``content`` or in ``toolConfig.tools``, and caches the request up to
it, in the order tools, system, messages. A request holds at most four. Claude models cache
all three places; Amazon Nova models the system prompt and the messages, not the tools; other
models document no caching, so they are sent no checkpoint (a hint, not content), with a note.

- A ``CachePoint`` becomes a checkpoint right after the block before it: the nearest earlier
  block that can end a prefix (not reasoning, not empty text), in its message or an earlier
  one; with none before it, the checkpoint ends the tools and system prompt (after the system
  prompt, or without one after the last tool).
- ``cache="auto"`` puts one after the last tool (Claude only), one after the system prompt and
  one after the last block of the latest user turn, which moves forward with the
  conversation.
- Past four, the oldest are left out, with a one-line note at WARNING on the ``oma_bedrock``
  logger: the later checkpoints cache those prefixes too.
- ``provider_options["cache_ttl"]`` ``"1h"`` puts ``"ttl": "1h"`` on every checkpoint (the
  one-hour cache, for the Claude models Bedrock offers it on; "5m", the default, sends none).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from oma_core.capabilities import CACHE_PLACES, CacheSupport

__all__ = [
    "CACHING",
    "MAX_CHECKPOINTS",
    "Anchor",
    "caches",
    "markable",
    "place_checkpoints",
]

_LOG = logging.getLogger("oma_bedrock")
_DOCS = "Amazon Bedrock prompt caching documentation and botocore's CachePointBlock, 2026-12-06"
#: The most cache checkpoints Converse takes in one request.
MAX_CHECKPOINTS = 4
#: What the provider declares (``Capabilities.caching``).
CACHING = CacheSupport(max_markers=MAX_CHECKPOINTS, places=CACHE_PLACES, source=_DOCS)

#: Where a ``CachePoint`` put its checkpoint: after a rendered message block, or None for the
#: end of the tools and system prompt.
Anchor = dict[str, Any] | None
_Place = Literal["tools", "system", "block"]


def caches(model: str) -> frozenset[str]:
    """The places ``model`` takes checkpoints in: all three for Claude, the system prompt and
    messages for Nova, none for a model Bedrock documents no caching for."""
    if "anthropic.claude" in model:
        return frozenset(CACHE_PLACES)
    if "amazon.nova" in model:
        return frozenset({"system", "messages"})
    return frozenset()


def markable(block: Mapping[str, Any]) -> bool:
    """Whether a checkpoint may follow a rendered content block (not reasoning, not empty
    text)."""
    if "reasoningContent" in block:
        return False
    return not ("text" in block and not block["text"])


def place_checkpoints(
    body: dict[str, Any], anchors: Sequence[Anchor], auto: bool, model: str, ttl: str | None
) -> None:
    """Put ``cachePoint`` blocks into ``body``'s tools, system prompt and messages: where the
    request's ``CachePoint`` blocks put them (``anchors``) and, with ``auto``, where
    ``cache="auto"`` does; the oldest past the limit are left out with a note."""
    places = caches(model)
    if not places:
        _LOG.warning(
            "%s: cache markers left out: Bedrock documents prompt caching for Claude and Nova "
            "models only",
            model,
        )
        return
    wanted = _wanted(body, anchors, auto)
    chosen = {key: (kind, target) for key, kind, target in wanted if _allowed(kind, places)}
    keys = sorted(chosen)
    if len(keys) > MAX_CHECKPOINTS:
        dropped, keys = keys[: len(keys) - MAX_CHECKPOINTS], keys[len(keys) - MAX_CHECKPOINTS :]
        _LOG.warning(
            "%s: %d cache checkpoint(s) left out, the oldest: Converse takes at most %d in a "
            "request",
            model,
            len(dropped),
            MAX_CHECKPOINTS,
        )
    point: dict[str, Any] = {"type": "default"}
    if ttl is not None:
        point["ttl"] = ttl
    after: set[int] = set()
    for key in keys:
        kind, target = chosen[key]
        if kind == "tools":
            body["toolConfig"]["tools"].append({"cachePoint": dict(point)})
        elif kind == "system":
            body["system"].append({"cachePoint": dict(point)})
        else:
            after.add(id(target))
    for message in body["messages"]:
        content = []
        for block in message["content"]:
            content.append(block)
            if id(block) in after:
                content.append({"cachePoint": dict(point)})
        message["content"] = content


def _allowed(kind: _Place, places: frozenset[str]) -> bool:
    return ("messages" if kind == "block" else kind) in places


def _wanted(
    body: Mapping[str, Any], anchors: Sequence[Anchor], auto: bool
) -> list[tuple[tuple[int, int], _Place, Any]]:
    """Every checkpoint asked for, keyed by its place in the order a request is cached."""
    wanted: list[tuple[tuple[int, int], _Place, Any]] = []
    has_tools = bool((body.get("toolConfig") or {}).get("tools"))
    has_system = bool(body.get("system"))
    prefix_end: _Place | None = "system" if has_system else ("tools" if has_tools else None)
    if auto and has_tools:
        wanted.append(((-2, 0), "tools", None))
    if auto and has_system:
        wanted.append(((-1, 0), "system", None))
    positions = _positions(body["messages"])
    for anchor in anchors:
        if anchor is None:
            if prefix_end is not None:
                wanted.append(((-1 if prefix_end == "system" else -2, 0), prefix_end, None))
        elif id(anchor) in positions:
            wanted.append((positions[id(anchor)], "block", anchor))
    if auto:
        latest = _latest_user_block(body["messages"])
        if latest is not None:
            wanted.append((positions[id(latest)], "block", latest))
    return wanted


def _positions(messages: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Each rendered block's place ``(message, block)``, by the block's identity."""
    return {
        id(block): (i, j)
        for i, message in enumerate(messages)
        for j, block in enumerate(message["content"])
    }


def _latest_user_block(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block of the latest user turn that a checkpoint may follow."""
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        for block in reversed(message["content"]):
            if markable(block):
                return block  # type: ignore[no-any-return]
        return None
    return None
