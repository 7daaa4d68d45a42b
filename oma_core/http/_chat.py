"""Pieces of the Chat Completions dialect many services speak (Mistral, Groq, vLLM, LiteLLM).

Their wire differs in details (ids, image parts, extra fields) but shares these: tools as
``{"type": "function", "function": {...}}``, ``usage`` as prompt and completion tokens, and a
message ``content`` that is a string or a list of typed chunks. Tool-call deltas are
``ToolCallAssembler.feed_chat``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..providers import ToolDefinition, Usage

__all__ = ["chat_text", "chat_tools", "chat_usage"]


def chat_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """Tools as Chat Completions ``tools`` entries."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.input_schema),
            },
        }
        for t in tools
    ]


def chat_usage(reply: Mapping[str, Any]) -> Usage | None:
    """A reply's (or a chunk's) ``usage`` as ``Usage``; None when it carries none.

    ``prompt_tokens`` counts the cached tokens too (``prompt_tokens_details.cached_tokens``
    is a part of it), as oma's ``input_tokens`` does; ``completion_tokens_details
    .reasoning_tokens`` is a part of ``completion_tokens``. A missing detail is 0.
    """
    usage = reply.get("usage")
    if not isinstance(usage, Mapping) or not usage:
        return None
    return Usage(
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        cache_read_tokens=_detail(usage, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_detail(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def _detail(usage: Mapping[str, Any], details: str, name: str) -> int:
    found = usage.get(details)
    value = found.get(name) if isinstance(found, Mapping) else None
    return value if type(value) is int and value >= 0 else 0


def chat_text(content: Any) -> str:
    """A message's or a delta's ``content``: a string, or the ``text`` of its text chunks."""
    if isinstance(content, list):
        return "".join(
            c.get("text") or ""
            for c in content
            if isinstance(c, Mapping) and c.get("type") == "text"
        )
    return content if isinstance(content, str) else ""
