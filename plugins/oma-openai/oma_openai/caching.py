"""Prompt caching on OpenAI: explicit cache breakpoints from ``CachePoint`` blocks and
``AgentConfig.cache="auto"``, and a stable ``prompt_cache_key``.

Following OpenAI's prompt caching guide and API reference (read 2026-12-06) and the installed
``openai`` SDK's types (``PromptCacheBreakpoint``, ``PromptCacheOptions``): OpenAI caches every
prompt of 1,024 tokens or more by itself (one implicit breakpoint); GPT-5.6 and later models
also take explicit breakpoints, ``"prompt_cache_breakpoint": {"mode": "explicit"}`` on an input
content part (text, image, file or audio; of a system, developer, user or tool message: never
an assistant's), each ending a prefix the service writes to its cache. A request writes at most
four: the implicit one and the latest three explicit ones, or four explicit ones with
``prompt_cache_options.mode = "explicit"``. Tools have no breakpoint (they come first: a
breakpoint after them caches them too). Reads are ``cached_tokens``, writes
``cache_write_tokens`` (billed at 1.25x on GPT-5.6 and later).

- A ``CachePoint`` puts a breakpoint on the part before it: the nearest earlier part of its
  message or of an earlier user or tool message (an assistant turn cannot hold one); with none
  before it, the system prompt (on the Responses API it then goes as the first input item, a
  ``system`` message, since ``instructions`` is a plain string).
- ``cache="auto"`` marks the system prompt and the last part of the latest user turn (a user
  message or a tool result), and sends a ``prompt_cache_key`` made from the model, the system
  prompt and the tools, so that requests sharing that prefix reach the same cache (the key a
  caller gives in ``provider_options`` wins).
- Past the limit, the oldest breakpoints are left out with a note at WARNING on the
  ``oma.openai`` logger. Models before GPT-5.6 (GPT-4.x, the o-series, GPT-5 to 5.5) take no
  explicit breakpoints: none is sent to them (their caching is implicit); a model name oma does
  not know gets them, for the service to judge.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from oma_core.capabilities import CacheSupport
from oma_core.messages import CachePoint, thaw_json
from oma_core.toolkit import ProviderRequest

__all__ = [
    "BREAKPOINT",
    "CACHING",
    "Anchor",
    "add_cache_key",
    "cache_key",
    "mark",
    "place_breakpoints",
    "takes_breakpoints",
    "wants_breakpoints",
]

_LOG = logging.getLogger("oma.openai")
_DOCS = "OpenAI prompt caching guide and API reference (openai SDK 3.63), 2026-12-06"
#: The most breakpoints a request writes (the implicit one included, unless turned off).
MAX_BREAKPOINTS = 4
#: The breakpoint oma sends (the request's ``prompt_cache_options.ttl``, 30 minutes by default).
BREAKPOINT = {"mode": "explicit"}
#: What the ``openai`` provider declares (``Capabilities.caching``): it caches by itself, and
#: places explicit breakpoints on the system prompt and the messages.
CACHING = CacheSupport(
    max_markers=MAX_BREAKPOINTS, places=("system", "messages"), implicit=True, source=_DOCS
)

#: Where a breakpoint goes: a rendered item or message (``holder``), the key of its content
#: (a string, or a list of parts), and the part's index in that list (-1: the last). None: the
#: system prompt.
Anchor = tuple[dict[str, Any], str, int] | None

_LATER = re.compile(r"gpt-5\.(\d+)")
_MAJOR = re.compile(r"gpt-(\d+)")
_EARLIER = re.compile(r"(?:gpt-[34]|chatgpt-|o\d|gpt-5(?:$|-))")


def takes_breakpoints(model: str) -> bool:
    """Whether ``model`` takes explicit breakpoints: GPT-5.6 and later, and names oma does not
    know (a fine-tune, ``ft:NAME:...``, as the model it was made from)."""
    name = model.lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    later = _LATER.match(name)
    if later is not None:
        return int(later.group(1)) >= 6
    major = _MAJOR.match(name)
    if major is not None and int(major.group(1)) >= 6:
        return True
    return _EARLIER.match(name) is None


def cache_key(request: ProviderRequest, model: str) -> str:
    """A ``prompt_cache_key`` for ``cache="auto"``: the same for every request with this model,
    system prompt and tools (an agent's requests), so they reach the same cache."""
    tools = [(t.name, t.description, thaw_json(t.input_schema)) for t in request.tools]
    prefix = json.dumps([model, request.system_prompt, tools], sort_keys=True)
    return "oma-" + hashlib.sha256(prefix.encode()).hexdigest()[:32]


def wants_breakpoints(request: ProviderRequest, caching: CacheSupport | None, model: str) -> bool:
    """Whether the request gets cache breakpoints: the preset places them (``caching``,
    OpenAI's), the model takes them, and the request asks (``cache="auto"`` or a
    ``CachePoint``). Both APIs' request builders ask this."""
    if caching is None or not caching.markers or not takes_breakpoints(model):
        return False
    return request.cache == "auto" or any(
        isinstance(b, CachePoint) for m in request.messages for b in m.content
    )


def add_cache_key(
    body: dict[str, Any], request: ProviderRequest, caching: CacheSupport | None, model: str
) -> None:
    """``cache="auto"`` on a preset that caches: a stable ``prompt_cache_key`` (one given in
    ``provider_options`` wins)."""
    if request.cache == "auto" and caching is not None:
        body.setdefault("prompt_cache_key", cache_key(request, model))


def mark(anchor: tuple[dict[str, Any], str, int], text_type: str) -> None:
    """Put a breakpoint on the part ``anchor`` names (a string content becomes one part of
    ``text_type``, the form that can hold one)."""
    holder, key, index = anchor
    content = holder[key]
    if isinstance(content, str):
        content = holder[key] = [{"type": text_type, "text": content}]
    content[index]["prompt_cache_breakpoint"] = dict(BREAKPOINT)


def place_breakpoints(
    body: dict[str, Any],
    anchors: Sequence[Anchor],
    latest: Anchor,
    *,
    auto: bool,
    system: bool,
    text_type: str,
) -> list[Anchor]:
    """Mark ``body``'s breakpoints: with ``auto``, the system prompt's (when it has one,
    ``system``) and the latest user turn's (``latest``); each ``CachePoint``'s (``anchors``;
    None: the system prompt); past the limit the oldest are left out with a note. The system
    prompt is left to the caller, which puts it where it can hold one: the list returned (the
    breakpoints kept, oldest first) holds None when it has one."""
    wanted: list[Anchor] = []
    if auto and system:
        wanted.append(None)
    wanted.extend(anchors)
    if auto and latest is not None:
        wanted.append(latest)
    chosen: dict[tuple[int, int] | None, Anchor] = {}
    for anchor in wanted:
        chosen.setdefault(_identity(anchor), anchor)
    options = body.get("prompt_cache_options")
    explicit = isinstance(options, dict) and options.get("mode") == "explicit"
    limit = MAX_BREAKPOINTS if explicit else MAX_BREAKPOINTS - 1
    kept = list(chosen.values())
    if len(kept) > limit:
        _LOG.warning(
            "%s: %d cache breakpoint(s) left out, the oldest: a request writes at most %d "
            "(prompt_cache_options.mode %s)",
            body.get("model"),
            len(kept) - limit,
            limit,
            "explicit" if explicit else "implicit, which takes one",
        )
        kept = kept[len(kept) - limit :]
    for anchor in kept:
        if anchor is not None:
            mark(anchor, text_type)
    return kept


def _identity(anchor: Anchor) -> tuple[int, int] | None:
    """The part an anchor names, by its holder's identity and a non-negative index."""
    if anchor is None:
        return None
    holder, key, index = anchor
    content = holder[key]
    if index < 0:
        index += len(content) if isinstance(content, list) else 1
    return (id(holder), index)
