"""Loading structured input: raw data in, immutable valid messages out, or one clear error.

``load_messages`` accepts plain dicts, message objects, or any mix of the two (a dict message
whose content holds block objects, ...). Dicts are checked once and built through a trusted
path; objects are valid by construction and are taken as they are, never scanned again.
The wire shape itself is described once, in the parser (``_model``); this module is its
public door: the input list, its length limit and the fast path for a tuple of messages.
The first violation, in document order, raises ``InvalidMessageError`` naming its place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._checks import DEFAULT_LIMITS, ValidationLimits, got
from ._model import parse_content, parse_message
from ._sources import Budget, new
from .errors import InvalidMessageError
from .messages import ContentBlock, LLMMessage

__all__ = ["ValidationLimits", "load_messages", "load_user_content"]


def load_messages(
    data: object,
    *,
    allow_empty: bool = False,
    limits: ValidationLimits | None = None,
    path: str = "messages",
) -> tuple[LLMMessage, ...]:
    """Validate ``data`` (a list or tuple of messages) and return it as immutable messages.

    ``allow_empty`` admits an empty list (a history may be empty; a run needs a message).
    ``limits`` bounds nesting and block count (default: 100 levels, 100,000 blocks).
    ``path`` is the name errors start from.

    Raises ``InvalidMessageError`` with ``f"{path} {reason}"``, e.g.
    ``messages[2].content[1].source.url must use HTTP or HTTPS``.
    """
    if not isinstance(data, list | tuple):
        raise InvalidMessageError(path, f"must be a list, {got(data)}")
    if not data and not allow_empty:
        raise InvalidMessageError(path, "must contain at least one message")
    checked = limits or DEFAULT_LIMITS
    if len(data) > checked.max_blocks:
        # Each message holds at least one block: a longer list is over the limit at once.
        raise InvalidMessageError(
            path, f"exceeds the limit of {checked.max_blocks} content blocks in one input"
        )
    budget = Budget(checked)
    if type(data) is tuple and all(type(m) is LLMMessage for m in data):
        for i, message in enumerate(data):
            budget.take(len(message.content), f"{path}[{i}].content")
        return data
    return tuple([parse_message(item, f"{path}[{i}]", budget) for i, item in enumerate(data)])


def load_user_content(
    blocks: Sequence[ContentBlock | Any], *, limits: ValidationLimits | None = None
) -> LLMMessage:
    """One user turn from a list of content blocks, as ``Agent.prompt`` receives it.

    Errors are named ``messages[0].content...``: the turn is checked as the first message of
    an input of its own.
    """
    budget = Budget(limits or DEFAULT_LIMITS)
    content = parse_content(blocks, "messages[0].content", "user", budget)
    return new(LLMMessage, role="user", content=content)
