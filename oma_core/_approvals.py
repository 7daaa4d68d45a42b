"""Approvals: a tool call that waits for a person's decision before it runs.

A tool made with ``tool(fn, needs_approval=True | callable)`` does not run when the model calls
it: the run finishes the other calls of that turn, then ends ``suspended`` with an
``ApprovalRequest`` per waiting call (``RunResult.pending``). ``OpenMultiAgent.resume(run_id,
approvals={call_id: True | False | Approval(...)})`` stores each decision (the first stored
wins), then runs the approved calls and answers the denied ones with an error result giving
the reason.

A decision is bound to the exact call reviewed by its ``digest``: SHA-256 over the tool's
name, the canonical JSON of its arguments, the call id and the run id. The run recomputes it
from the call it is about to run; any difference fails closed (``ApprovalMismatchError``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .messages import ToolUseBlock
    from .tools import Tool

__all__ = [
    "Approval",
    "ApprovalRequest",
    "as_approval",
    "call_digest",
    "canonical_json",
    "decision_record",
    "needs_approval",
]


@attrs.frozen
class ApprovalRequest:
    """One tool call waiting for a decision.

    ``run_id`` is the agent run it belongs to (a team task's own run inside a team run);
    ``call_id`` the model's id of the call; ``tool``/``arguments`` what would run; ``agent``
    the agent's name; ``task`` the team task's title (None outside a team); ``digest`` binds a
    decision to this exact call (see ``call_digest``).
    """

    run_id: str
    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    agent: str
    task: str | None
    digest: str

    def to_json(self) -> dict[str, Any]:
        """The request as plain JSON data (what a checkpoint and the command show)."""
        return {
            "run_id": self.run_id,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "agent": self.agent,
            "task": self.task,
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        return cls(
            data["run_id"],
            data["call_id"],
            data["tool"],
            dict(data["arguments"]),
            data["agent"],
            data.get("task"),
            data["digest"],
        )


@attrs.frozen
class Approval:
    """A decision on an ``ApprovalRequest``: run it (``approve=True``) or not, and why."""

    approve: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    reason: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: one text per value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_digest(run_id: str, block: ToolUseBlock) -> str:
    """The SHA-256 (hex) binding a decision to the call ``block`` of run ``run_id``."""
    text = canonical_json(
        {"tool": block.name, "arguments": block.plain_input(), "call_id": block.id, "run": run_id}
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def as_approval(value: object, call_id: str) -> Approval:
    """``True``/``False``/``Approval`` as an ``Approval``; ``TypeError`` for anything else."""
    if isinstance(value, Approval):
        return value
    if isinstance(value, bool):
        return Approval(value)
    raise TypeError(
        f"the decision on call {call_id!r} must be True, False or an Approval, "
        f"got {type(value).__name__}"
    )


def decision_record(approval: Approval, digest: str) -> dict[str, Any]:
    """A decision as a store keeps it."""
    return {"approve": approval.approve, "reason": approval.reason, "digest": digest}


async def needs_approval(found: Tool, block: ToolUseBlock) -> bool:
    """Whether the call ``block`` of ``found`` waits for a decision: the tool's
    ``needs_approval`` (True, or a callable given the call, sync or async)."""
    rule = found.needs_approval
    if rule is True or rule is False:
        return rule
    answer = rule(block)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)
