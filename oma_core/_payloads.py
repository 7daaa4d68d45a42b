"""What a payload privacy policy lets out of a run: ``build_payload``.

Apart from the evaluator so that tracing (below the agent) and the evaluator and its judges
(above it) share one rule without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .redaction import DEFAULT_LIMIT, cut, redact_json

if TYPE_CHECKING:
    from .messages import LLMMessage

__all__ = ["build_payload"]


def build_payload(
    value: str | Sequence[LLMMessage],
    policy: str,
    limit: int = DEFAULT_LIMIT,
    *,
    kind: str = "input",
) -> str:
    """The stored form of an input (or, with ``kind="output"``, an output text)."""
    if policy == "none":
        if isinstance(value, str):
            return f"[string {kind} omitted; {len(value)} characters]"
        return f"[array {kind} omitted; {len(value)} items]"
    data: Any
    if isinstance(value, str):
        data = value
    else:
        from .serialization import dump_messages

        data = dump_messages(value)
    if policy == "redacted":
        data = redact_json(data)
    if kind == "output" and isinstance(data, str):
        return cut(data, limit)
    return cut(json.dumps(data, ensure_ascii=False), limit)
