"""Checkpoint bytes and approval digests: what a durable run writes, and how it fails closed."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core import load_messages, tool
from oma_core._approvals import (
    Approval,
    ApprovalRequest,
    as_approval,
    call_digest,
    decision_record,
    needs_approval,
)
from oma_core._checkpoints import VERSION, MediaRefs, decode, encode
from oma_core.errors import (
    ApprovalMismatchError,
    ApprovalUnavailableError,
    CheckpointError,
    ResumeMissingError,
    ToolError,
    UnknownApprovalError,
    UnknownRunError,
)
from oma_core.messages import ToolUseBlock
from oma_core.stores import MemoryRunStore

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), _json, max_size=6))
def test_a_checkpoint_decodes_to_the_state_it_encodes(state: dict[str, Any]) -> None:
    assert decode("r", encode(state)) == state


def test_a_changed_checkpoint_fails_closed() -> None:
    data = encode({"arguments": {"to": "alice@example.com"}})
    tampered = data.replace(b"alice", b"mallory")
    with pytest.raises(CheckpointError) as caught:
        decode("r1", tampered)
    assert caught.value.run_id == "r1"
    assert "digest" in caught.value.reason


def test_a_checkpoint_of_another_version_fails_closed() -> None:
    data = encode({"a": 1}).replace(
        f'"oma_checkpoint":{VERSION}'.encode(), f'"oma_checkpoint":{VERSION + 1}'.encode()
    )
    with pytest.raises(CheckpointError, match="version"):
        decode("r", data)


@pytest.mark.parametrize("data", [b"", b"\xff", b"[]", b'{"state": {}}', b"null"])
def test_bytes_that_are_not_a_checkpoint_fail_closed(data: bytes) -> None:
    with pytest.raises(CheckpointError):
        decode("r", data)


def _with_image(payload: bytes) -> Any:
    source = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(payload)}
    image = {"type": "image", "source": {**source, "data": source["data"].decode()}}
    return load_messages([{"role": "user", "content": [{"type": "text", "text": "see"}, image]}])


def test_media_is_kept_once_by_sha256_and_read_back() -> None:
    async def main() -> None:
        store = MemoryRunStore()
        refs = MediaRefs(store, "r")
        messages = _with_image(b"\x89PNG-bytes")
        first = await refs.dump(messages)
        second = await refs.dump(messages)
        digest = hashlib.sha256(b"\x89PNG-bytes").hexdigest()
        assert first == second
        assert first[0]["content"][1]["source"] == {
            "type": "stored",
            "media_type": "image/png",
            "sha256": digest,
        }
        assert b"PNG-bytes" not in encode({"c": first})  # referred to, never copied
        assert await store.get_media(digest) == b"\x89PNG-bytes"
        assert await MediaRefs(store, "r").load(first) == messages

    asyncio.run(main())


def test_missing_or_changed_media_fails_closed() -> None:
    async def main() -> None:
        store = MemoryRunStore()
        dumped = await MediaRefs(store, "r").dump(_with_image(b"one"))
        with pytest.raises(CheckpointError, match="media"):
            await MediaRefs(MemoryRunStore(), "r").load(dumped)
        changed = MemoryRunStore()
        await changed.put_media(dumped[0]["content"][1]["source"]["sha256"], b"two")
        with pytest.raises(CheckpointError, match="media"):
            await MediaRefs(changed, "r").load(dumped)

    asyncio.run(main())


def test_the_digest_binds_tool_arguments_call_and_run() -> None:
    block = ToolUseBlock("c1", "pay", {"amount": 10, "to": "bob"})
    same = ToolUseBlock("c1", "pay", {"to": "bob", "amount": 10})  # key order is not content
    digest = call_digest("r", block)
    assert call_digest("r", same) == digest
    for other in (
        call_digest("r", ToolUseBlock("c1", "pay", {"amount": 11, "to": "bob"})),
        call_digest("r", ToolUseBlock("c2", "pay", {"amount": 10, "to": "bob"})),
        call_digest("r", ToolUseBlock("c1", "refund", {"amount": 10, "to": "bob"})),
        call_digest("r2", block),
    ):
        assert other != digest


def test_decisions_are_booleans_or_approvals() -> None:
    assert as_approval(True, "c") == Approval(True)
    assert as_approval(Approval(False, "too much"), "c").reason == "too much"
    with pytest.raises(TypeError, match="'c'"):
        as_approval("yes", "c")
    assert decision_record(Approval(False, "no"), "d") == {
        "approve": False,
        "reason": "no",
        "digest": "d",
    }


def test_an_approval_request_round_trips_as_json() -> None:
    request = ApprovalRequest("r", "c", "pay", {"amount": 1}, "clerk", None, "d")
    assert ApprovalRequest.from_json(request.to_json()) == request


def test_needs_approval_is_a_flag_or_a_rule_that_sees_the_call() -> None:
    def pay(amount: int) -> str:
        return "paid"

    async def over_100(block: ToolUseBlock) -> bool:
        return bool(block.input["amount"] > 100)

    small, large = (
        ToolUseBlock("c1", "pay", {"amount": 5}),
        ToolUseBlock("c2", "pay", {"amount": 500}),
    )
    assert asyncio.run(needs_approval(tool(pay), small)) is False
    assert asyncio.run(needs_approval(tool(pay, needs_approval=True), small)) is True
    ruled = tool(pay, needs_approval=over_100)
    assert asyncio.run(needs_approval(ruled, small)) is False
    assert asyncio.run(needs_approval(ruled, large)) is True
    with pytest.raises(ToolError):
        tool(pay, needs_approval="always")  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "error",
    [
        UnknownRunError("r"),
        CheckpointError("r", "its digest does not match"),
        ResumeMissingError("r", "tool 'pay'"),
        UnknownApprovalError("r", "c"),
        ApprovalMismatchError("r", "c"),
        ApprovalUnavailableError("pay", "c"),
    ],
)
def test_durable_errors_pickle_with_their_fields(error: Exception) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert back.__dict__ == error.__dict__


@given(st.dictionaries(st.text(), _json, max_size=6), st.dictionaries(st.text(), _json, max_size=3))
def test_entries_given_encoded_make_the_same_bytes(
    state: dict[str, Any], more: dict[str, Any]
) -> None:
    from oma_core._approvals import canonical_json

    whole = {**state, **more}
    encoded = {key: canonical_json(value) for key, value in more.items()}
    assert encode(state, encoded) == encode(whole)
    assert decode("r", encode(state, encoded)) == whole
