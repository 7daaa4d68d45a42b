"""The run store interface (``RunStore``, ``StoredRun``, ``StoreSpec``) and ``MemoryRunStore``.

Public through ``oma_core.stores``. A store is where a durable run's checkpoints, its media
and its approval decisions live.

A store keeps, per ``run_id``, one ``StoredRun`` record, replaced whole by each ``save``
(atomically: a reader sees the old record or the new one, never half of either). The
checkpoint inside it is the core's encoded state (versioned and digested by the core); a
store never looks into it. Media payloads are kept once, by the SHA-256 of their bytes, so a
checkpoint refers to them instead of copying them. Decisions on approval requests are kept
per call: the first one stored wins. A lease lets one worker at a time resume a run.

``MemoryRunStore`` lives here, ``SQLiteRunStore`` in ``oma_core._sqlite_store``; other stores
are plugins (oma-postgres) that return ``StoreSpec``s from ``oma_register_stores``.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from .errors import LeaseHeldError

__all__ = ["RUN_STATES", "MemoryRunStore", "RunStore", "StoreSpec", "StoredRun"]

#: What a run's ``status`` may be in a store: under way (or crashed while under way), waiting
#: for approvals, or one of ``RunStatus.code``'s endings.
RUN_STATES = ("running", "suspended", "ok", "error", "timeout", "budget_exhausted")


@attrs.frozen
class StoredRun:
    """One run as a store keeps it: what ``oma runs`` lists, and the checkpoint to resume.

    ``kind`` is "agent", "tasks" or "team"; ``checkpoint`` the core's encoded state (opaque
    here); ``created``/``updated`` seconds since the epoch; ``cost`` spent so far (None when
    not priced); ``pending`` how many approval requests wait for a decision.
    """

    run_id: str
    kind: str
    status: str
    checkpoint: bytes
    created: float
    updated: float
    cost: float | None = None
    pending: int = 0


class RunStore(abc.ABC):
    """Where durable runs are kept. Every method is a coroutine; a store is safe to use from
    many tasks at once (and, for a shared database, from many processes)."""

    @abc.abstractmethod
    async def save(self, run: StoredRun) -> None:
        """Keep ``run``, replacing the record of its ``run_id`` whole and atomically."""

    @abc.abstractmethod
    async def load(self, run_id: str) -> StoredRun | None:
        """The record of ``run_id``; None when there is none."""

    @abc.abstractmethod
    async def runs(self, limit: int | None = None) -> list[StoredRun]:
        """Every run kept, most recently updated first (at most ``limit``); runs updated at
        the same time come in no set order."""

    @abc.abstractmethod
    async def put_media(self, sha256: str, data: bytes) -> None:
        """Keep a media payload under the SHA-256 (hex) of ``data``; keeping it twice is a
        no-op."""

    @abc.abstractmethod
    async def get_media(self, sha256: str) -> bytes | None:
        """The payload kept under ``sha256``; None when there is none."""

    @abc.abstractmethod
    async def decide(
        self, run_id: str, call_id: str, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """Keep ``decision`` (JSON-ready) for ``call_id`` of ``run_id`` unless one is kept
        already; return the one kept (the first stored wins)."""

    @abc.abstractmethod
    async def decisions(self, run_id: str) -> dict[str, Mapping[str, Any]]:
        """The decisions kept for ``run_id``, by call id."""

    @abc.abstractmethod
    async def acquire(self, run_id: str, owner: str, seconds: float) -> None:
        """Take the lease on ``run_id`` for ``seconds`` from now (or renew it for that long
        when ``owner`` holds it); raises ``LeaseHeldError`` while another owner's lease runs.
        Of owners acquiring at once, one wins. A lease is not a record: a run need not be
        saved to be leased."""

    @abc.abstractmethod
    async def release(self, run_id: str, owner: str) -> None:
        """Give the lease up, if ``owner`` holds it."""

    async def aclose(self) -> None:  # noqa: B027 (a store with nothing to close)
        """Close connections and files; the store is not used after. Closing twice is
        harmless."""


class MemoryRunStore(RunStore):
    """A store in this process's memory: for tests, and runs that need to survive an error or
    wait for an approval but not the process. ``clock`` gives the time leases and records
    are stamped with (``time.time`` by default)."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._runs: dict[str, StoredRun] = {}
        self._media: dict[str, bytes] = {}
        self._decisions: dict[str, dict[str, Mapping[str, Any]]] = {}
        self._leases: dict[str, tuple[str, float]] = {}

    async def save(self, run: StoredRun) -> None:
        self._runs[run.run_id] = run

    async def load(self, run_id: str) -> StoredRun | None:
        return self._runs.get(run_id)

    async def runs(self, limit: int | None = None) -> list[StoredRun]:
        ordered = sorted(self._runs.values(), key=lambda run: run.updated, reverse=True)
        return ordered if limit is None else ordered[:limit]

    async def put_media(self, sha256: str, data: bytes) -> None:
        self._media.setdefault(sha256, data)

    async def get_media(self, sha256: str) -> bytes | None:
        return self._media.get(sha256)

    async def decide(
        self, run_id: str, call_id: str, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        return dict(self._decisions.setdefault(run_id, {}).setdefault(call_id, dict(decision)))

    async def decisions(self, run_id: str) -> dict[str, Mapping[str, Any]]:
        return {call: dict(kept) for call, kept in self._decisions.get(run_id, {}).items()}

    async def acquire(self, run_id: str, owner: str, seconds: float) -> None:
        now = self._clock()
        held = self._leases.get(run_id)
        if held is not None and held[0] != owner and held[1] > now:
            raise LeaseHeldError(run_id, held[0])
        self._leases[run_id] = (owner, now + seconds)

    async def release(self, run_id: str, owner: str) -> None:
        held = self._leases.get(run_id)
        if held is not None and held[0] == owner:
            del self._leases[run_id]


def _schemes(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class StoreSpec:
    """A run store a plugin offers, returned from ``oma_register_stores``.

    ``schemes`` are the URL schemes it serves (``("postgresql", "postgres")``); ``factory``
    receives the whole URL ``OpenMultiAgent(store=...)`` was given and returns a ``RunStore``.
    The factory must connect to nothing: a store connects on first use.
    """

    schemes: tuple[str, ...] = attrs.field(converter=_schemes)
    factory: Callable[[str], RunStore]
    description: str = ""
