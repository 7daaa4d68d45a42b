"""Which reasoning a request may carry: a provider's signed or redacted reasoning goes back only
to that provider.

A ``ReasoningBlock``'s ``signature`` and ``redacted_data`` are tokens only the service that
issued them can read; another service refuses the request or, worse, misreads them. So a block
whose ``provider`` names another provider and that carries either token is left out of the
request (logged at debug level). A block without ``provider`` (a conversation saved before
oma recorded it) is sent as it is, as before; so is unsigned reasoning text. The run's
messages keep every block: only what is sent changes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .messages import LLMMessage, ReasoningBlock

__all__ = ["for_provider"]

_log = logging.getLogger("oma.reasoning")


def _foreign(block: object, provider: str) -> bool:
    return (
        type(block) is ReasoningBlock
        and block.provider is not None
        and block.provider != provider
        and (block.signature is not None or block.redacted_data is not None)
    )


def for_provider(messages: Sequence[LLMMessage], provider: str) -> list[LLMMessage]:
    """``messages`` as ``provider`` may receive them: without another provider's signed or
    redacted reasoning blocks (an assistant turn left with no block is left out too).

    The messages themselves are reused when nothing is left out (the common case: one scan).
    """
    kept: list[LLMMessage] = []
    for index, message in enumerate(messages):
        if message.role != "assistant" or not any(_foreign(b, provider) for b in message.content):
            kept.append(message)
            continue
        content = [b for b in message.content if not _foreign(b, provider)]
        dropped = len(message.content) - len(content)
        _log.debug(
            "left %d reasoning block(s) of messages[%d] out of the request to %s: "
            "their signature or redacted data was issued by another provider",
            dropped,
            index,
            provider,
        )
        if content:
            kept.append(LLMMessage("assistant", content))
    return kept
