"""Checkpoint bytes: a durable run's state as versioned, digested JSON, media kept by reference.

A checkpoint is ``{"oma_checkpoint": VERSION, "sha256": DIGEST, "state": STATE}`` where
DIGEST is the SHA-256 of the canonical JSON of STATE (sorted keys, no spaces). ``decode``
fails closed with ``CheckpointError`` on another version, a digest that does not match, or
bytes that are not such JSON: a run is resumed from exactly what was written, or not at all.

Conversations are kept in the message JSON shape (``dump_messages``), except each base64
media payload: it is put into the store once, under the SHA-256 of its bytes, and the message
refers to it as ``{"type": "stored", "media_type": ..., "sha256": ...}``, so a checkpoint
written after every step never copies an image again. A checkpoint never holds a key: it is
built from plain run data only (``plain_settings`` picks the fields).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._approvals import canonical_json
from .errors import CheckpointError

if TYPE_CHECKING:
    from .messages import LLMMessage
    from .stores import RunStore

__all__ = ["VERSION", "MediaRefs", "decode", "encode"]

#: The checkpoint format's version; a checkpoint of another version is refused, never guessed.
VERSION = 1

#: Stands for an entry ``encode`` is given encoded: no run's data holds this process's nonce.
_MARK = f"\x00oma-encoded-{os.urandom(16).hex()}:"


def encode(state: Mapping[str, Any], encoded: Mapping[str, str] | None = None) -> bytes:
    """``state`` (plain JSON data) as checkpoint bytes. ``encoded``: top-level entries given
    as their canonical JSON already (a run's turns, encoded once each as they arrive, not
    again at every checkpoint); the bytes are the same as if ``state`` held their values."""
    if encoded:  # encoded as a whole around markers, which are then replaced
        body = canonical_json({**state, **{key: _MARK + key for key in encoded}})
        for key, text in encoded.items():
            body = body.replace(canonical_json(_MARK + key), text, 1)
    else:
        body = canonical_json(state)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    head = f'{{"oma_checkpoint":{VERSION},"sha256":"{digest}","state":'
    return (head + body + "}").encode("utf-8")


def decode(run_id: str, data: bytes) -> dict[str, Any]:
    """The state in checkpoint bytes; ``CheckpointError`` unless they are exactly what
    ``encode`` wrote, at this version."""
    try:
        outer = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CheckpointError(run_id, "it is not checkpoint JSON") from None
    if not isinstance(outer, dict) or "oma_checkpoint" not in outer:
        raise CheckpointError(run_id, "it is not checkpoint JSON")
    version = outer["oma_checkpoint"]
    if version != VERSION:
        raise CheckpointError(
            run_id, f"it was written as version {version!r}; this oma reads version {VERSION}"
        )
    state = outer.get("state")
    if not isinstance(state, dict):
        raise CheckpointError(run_id, "it holds no state")
    digest = hashlib.sha256(canonical_json(state).encode("utf-8")).hexdigest()
    if digest != outer.get("sha256"):
        raise CheckpointError(run_id, "its digest does not match: it was changed after writing")
    return state


class MediaRefs:
    """Puts a conversation's media payloads into ``store`` once each and refers to them;
    reads them back. ``kept`` remembers what this object put already (one write per
    payload per run)."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._store = store
        self._run_id = run_id
        self._kept: set[str] = set()

    async def dump(self, messages: Sequence[LLMMessage]) -> list[dict[str, Any]]:
        """``messages`` in the message JSON shape, media payloads replaced by references."""
        from .serialization import dump_messages

        dumped = dump_messages(messages)
        for message in dumped:
            await self._refer(message.get("content"))
        return dumped

    async def load(self, data: Any) -> tuple[LLMMessage, ...]:
        """The messages of ``dump``'s output, payloads read back from the store (each checked
        against its SHA-256); ``CheckpointError`` when one is missing or changed."""
        from .errors import InvalidMessageError
        from .validation import load_messages

        if not isinstance(data, list):
            raise CheckpointError(self._run_id, "its conversation is not a list")
        if not data:  # a run that stopped before its first turn produced nothing yet
            return ()
        for message in data:
            if isinstance(message, dict):
                await self._resolve(message.get("content"))
        try:
            return load_messages(data)
        except InvalidMessageError as error:
            raise CheckpointError(self._run_id, f"its conversation is invalid: {error}") from None

    async def _refer(self, content: Any) -> None:
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            source = block.get("source")
            if isinstance(source, dict) and source.get("type") == "base64":
                raw = base64.b64decode(source["data"])
                digest = hashlib.sha256(raw).hexdigest()
                if digest not in self._kept:
                    await self._store.put_media(digest, raw)
                    self._kept.add(digest)
                block["source"] = {
                    "type": "stored",
                    "media_type": source.get("media_type"),
                    "sha256": digest,
                }
            elif block.get("type") == "tool_result":
                await self._refer(block.get("content"))

    async def _resolve(self, content: Any) -> None:
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            source = block.get("source")
            if isinstance(source, dict) and source.get("type") == "stored":
                block["source"] = await self._payload(source)
            elif block.get("type") == "tool_result":
                await self._resolve(block.get("content"))

    async def _payload(self, source: Mapping[str, Any]) -> dict[str, Any]:
        digest = source.get("sha256")
        raw = await self._store.get_media(digest) if isinstance(digest, str) else None
        if raw is None or hashlib.sha256(raw).hexdigest() != digest:
            raise CheckpointError(self._run_id, f"its media {digest!r} is missing or changed")
        self._kept.add(digest)
        data = base64.b64encode(raw).decode("ascii")
        return {"type": "base64", "media_type": source.get("media_type"), "data": data}
