"""Trimming a prompt conversation to a token limit, oldest turns first.

A conversation may only be cut before a user turn that carries no tool result: so a
``tool_use`` is never separated from its ``tool_result`` and the kept part never starts with a
tool result (or with an assistant turn). The newest turn is always kept, even alone over the
limit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .messages import LLMMessage, ToolResultBlock

__all__ = ["trim_history"]


def trim_history(
    messages: Sequence[LLMMessage],
    max_tokens: int,
    estimate: Callable[[Sequence[LLMMessage]], int] | None = None,
) -> tuple[LLMMessage, ...]:
    """The longest tail of ``messages`` that fits ``max_tokens`` and starts at a safe cut.

    ``estimate`` counts the tokens of some messages (``estimate_tokens`` by default); it is
    applied one message at a time, so the sum may slightly overestimate the whole.
    """
    if not messages:
        return ()
    if estimate is None:
        from ._tokens import estimate_tokens

        estimate = estimate_tokens
    cuts = [i for i, message in enumerate(messages) if _is_cut(message)]
    last = len(messages) - 1
    newest = max((i for i in cuts if i <= last), default=0)
    total = 0
    keep_from = newest
    index = last
    for cut in reversed(cuts):
        while index >= cut:
            total += estimate((messages[index],))
            index -= 1
        if cut <= newest and total <= max_tokens:
            keep_from = cut
        elif total > max_tokens:
            break
    return tuple(messages[keep_from:])


def _is_cut(message: LLMMessage) -> bool:
    """Whether a conversation may start at ``message``."""
    return message.role == "user" and not any(
        isinstance(block, ToolResultBlock) for block in message.content
    )
