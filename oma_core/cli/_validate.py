"""``oma validate`` on a file, parsed streaming: memory bounded by the largest message, not
the file.

The conversation file's messages are read one at a time (``ijson``, a C parser) from a top-
level list or a ``{"messages": [...]}`` object, each checked as ``load_messages`` checks it
(one block budget shared by the whole input) and described, then let go. A valid file is
described whole without ever being in memory. Anything else (invalid JSON, another shape, an
invalid or empty conversation, NaN, a byte-order mark) gives None, and the command checks the
file the whole-file way, whose errors (and exit codes) are the command's own: the streaming
path only ever says "valid", so what is refused and how is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO


class _NotStreamed(Exception):
    """The file is not one of the shapes read streaming."""


def described_messages(path: str) -> list[str] | None:
    """Each message of the valid conversation file ``path`` described (``describe_message``),
    or None when the file is not a valid conversation read streaming (see the module)."""
    import ijson  # type: ignore[import-untyped]

    from .._checks import DEFAULT_LIMITS
    from .._model import parse_message
    from .._sources import Budget
    from ..default_plugins.echo import describe_message
    from ..errors import OmaError

    lines: list[str] = []
    budget = Budget(DEFAULT_LIMITS)
    try:
        with open(path, "rb") as file:
            prefix = _prefix(file)
            file.seek(0)
            items = ijson.items(file, prefix, use_float=True)
            for index, item in enumerate(items):
                message = parse_message(item, f"messages[{index}]", budget)
                lines.append(describe_message(message))
    except (_NotStreamed, ijson.JSONError, OmaError, ValueError, RecursionError, OSError):
        return None
    return lines or None


def _prefix(file: BinaryIO) -> str:
    """Where the messages are: ``item`` (a list) or ``messages.item`` (an object with one
    ``messages`` list); anything else is ``_NotStreamed``."""
    import ijson

    events: Iterator[tuple[str, str, Any]] = ijson.parse(file, use_float=True)
    first = next(events, None)
    if first is None or first[:2] == ("", "start_array"):
        return "item"
    if first[:2] != ("", "start_map"):
        raise _NotStreamed
    found = 0
    for parent, event, value in events:
        if parent == "" and event == "map_key" and value == "messages":
            found += 1
            _, kind, _ = next(events)
            if kind != "start_array":
                raise _NotStreamed
    if found != 1:  # none, or a repeated key (the last wins when the file is loaded)
        raise _NotStreamed
    return "messages.item"
