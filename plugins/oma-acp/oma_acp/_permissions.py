"""What a ``permission`` callable receives: plain values, no acp types (cheap to import)."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["PermissionOption", "PermissionRequest"]


@attrs.frozen
class PermissionOption:
    """One answer the agent offers: ``kind`` is allow_once, allow_always, reject_once or
    reject_always."""

    id: str
    name: str
    kind: str


@attrs.frozen
class PermissionRequest:
    """What a ``permission`` callable receives: the tool call the agent wants to make."""

    session_id: str
    tool_call_id: str
    title: str | None
    kind: str | None
    input: Any
    options: tuple[PermissionOption, ...]
