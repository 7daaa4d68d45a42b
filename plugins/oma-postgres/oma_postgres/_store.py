"""PostgresRunStore: durable runs in a PostgreSQL database, shared by workers on many machines.

Each call takes a connection from a small pool (psycopg 3, ``psycopg_pool``), opened on first
use; every statement commits on its own (autocommit), and each is whole on its own: a save is
one upsert, a decision one ``INSERT ... ON CONFLICT DO NOTHING`` (the first stored wins, and a
second inserter waits for the first to commit), a lease one upsert whose ``WHERE`` lets it
through only for its holder or once the lease has run out, so of two workers taking it at
once exactly one gets it. The tables (``oma_runs``, ``oma_media``, ``oma_decisions``,
``oma_leases``) are made on first use, under an advisory lock so that workers starting
together do not race to make them.

Lease times come from the worker's clock (``time.time`` unless given), so workers sharing a
database keep their clocks in sync (NTP), as any lease by expiry needs.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from oma_core.errors import LeaseHeldError, UsageError
from oma_core.stores import RunStore, StoredRun

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresRunStore"]

#: An advisory lock key (any constant): held while the tables are made.
_SCHEMA_LOCK = 0x6F6D6153  # "omaS"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS oma_runs (
        run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL,
        checkpoint BYTEA NOT NULL, created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL, cost DOUBLE PRECISION, pending INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS oma_runs_by_update ON oma_runs (updated DESC)",
    "CREATE TABLE IF NOT EXISTS oma_media (sha256 TEXT PRIMARY KEY, data BYTEA NOT NULL)",
    """CREATE TABLE IF NOT EXISTS oma_decisions (
        run_id TEXT NOT NULL, call_id TEXT NOT NULL, decision JSONB NOT NULL,
        PRIMARY KEY (run_id, call_id))""",
    """CREATE TABLE IF NOT EXISTS oma_leases (
        run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)""",
)
_COLUMNS = "run_id, kind, status, checkpoint, created, updated, cost, pending"
_SAVE = f"""INSERT INTO oma_runs ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (run_id) DO UPDATE SET kind = EXCLUDED.kind, status = EXCLUDED.status,
    checkpoint = EXCLUDED.checkpoint, created = EXCLUDED.created, updated = EXCLUDED.updated,
    cost = EXCLUDED.cost, pending = EXCLUDED.pending"""
_ACQUIRE = """INSERT INTO oma_leases (run_id, owner, expires) VALUES (%s, %s, %s)
    ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires
    WHERE oma_leases.owner = EXCLUDED.owner OR oma_leases.expires <= %s
    RETURNING owner"""
#: The password of a URL (``scheme://user:PASSWORD@host``) or of a key/value DSN.
_PASSWORD = re.compile(r"(?<=://)([^:/@]*):[^@/]*@|(password\s*=\s*)(\S+)", re.I)


def redacted(dsn: str) -> str:
    """``dsn`` with its password, if any, replaced by ``***``: for reprs and messages."""
    return _PASSWORD.sub(
        lambda m: f"{m.group(1)}:***@" if m.group(2) is None else f"{m.group(2)}***", dsn
    )


class PostgresRunStore(RunStore):
    """Runs kept in the PostgreSQL database ``dsn`` names (a ``postgresql://`` or
    ``postgres://`` URL, or a libpq key/value string).

    ``clock`` stamps leases (``time.time``); ``max_connections`` bounds the pool;
    ``open_timeout`` is how long the first call waits for the database. Nothing connects
    before the first call. ``repr`` and errors never show the password.
    """

    def __init__(
        self,
        dsn: str,
        *,
        clock: Callable[[], float] = time.time,
        max_connections: int = 4,
        open_timeout: float = 30.0,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise UsageError("PostgresRunStore needs a DSN: postgresql://USER@HOST/DATABASE")
        self._dsn = dsn
        self._clock = clock
        self._max_connections = max_connections
        self._open_timeout = open_timeout
        self._pool: AsyncConnectionPool | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresRunStore({redacted(self._dsn)!r})"

    async def _connected(self) -> AsyncConnectionPool:
        """The pool, opened (and the tables made) on first use."""
        if self._closed:
            raise UsageError(f"{self!r} is closed")
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                self._pool = await self._open()
        return self._pool

    async def _open(self) -> AsyncConnectionPool:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._max_connections,
            kwargs={"autocommit": True},
            open=False,
            name="oma-postgres",
        )
        try:
            await pool.open(wait=True, timeout=self._open_timeout)
            async with pool.connection() as connection, connection.transaction():
                await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    await connection.execute(statement)
        except BaseException:
            await pool.close()
            raise
        return pool

    async def _rows(self, query: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        pool = await self._connected()
        async with pool.connection() as connection:
            cursor = await connection.execute(query, args)
            return await cursor.fetchall() if cursor.description else []

    # -- records --------------------------------------------------------------------------

    async def save(self, run: StoredRun) -> None:
        row = (run.run_id, run.kind, run.status, bytes(run.checkpoint), run.created, run.updated)
        await self._rows(_SAVE, (*row, run.cost, run.pending))

    async def load(self, run_id: str) -> StoredRun | None:
        query = f"SELECT {_COLUMNS} FROM oma_runs WHERE run_id = %s"
        rows = await self._rows(query, (run_id,))
        return _stored(rows[0]) if rows else None

    async def runs(self, limit: int | None = None) -> list[StoredRun]:
        query = f"SELECT {_COLUMNS} FROM oma_runs ORDER BY updated DESC LIMIT %s"
        return [_stored(row) for row in await self._rows(query, (limit,))]

    # -- media ----------------------------------------------------------------------------

    async def put_media(self, sha256: str, data: bytes) -> None:
        query = "INSERT INTO oma_media (sha256, data) VALUES (%s, %s) ON CONFLICT DO NOTHING"
        await self._rows(query, (sha256, bytes(data)))

    async def get_media(self, sha256: str) -> bytes | None:
        rows = await self._rows("SELECT data FROM oma_media WHERE sha256 = %s", (sha256,))
        return bytes(rows[0][0]) if rows else None

    # -- decisions ------------------------------------------------------------------------

    async def decide(
        self, run_id: str, call_id: str, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        from psycopg.types.json import Jsonb

        insert = """INSERT INTO oma_decisions (run_id, call_id, decision) VALUES (%s, %s, %s)
            ON CONFLICT DO NOTHING"""
        await self._rows(insert, (run_id, call_id, Jsonb(dict(decision))))
        # Decisions are never deleted: the row read now is the first one committed.
        select = "SELECT decision FROM oma_decisions WHERE run_id = %s AND call_id = %s"
        rows = await self._rows(select, (run_id, call_id))
        return dict(rows[0][0])

    async def decisions(self, run_id: str) -> dict[str, Mapping[str, Any]]:
        query = "SELECT call_id, decision FROM oma_decisions WHERE run_id = %s ORDER BY call_id"
        return {call_id: dict(kept) for call_id, kept in await self._rows(query, (run_id,))}

    # -- leases ---------------------------------------------------------------------------

    async def acquire(self, run_id: str, owner: str, seconds: float) -> None:
        now = self._clock()
        for _ in range(3):  # a holder found gone when named was released meanwhile: try again
            if await self._rows(_ACQUIRE, (run_id, owner, now + seconds, now)):
                return
            rows = await self._rows("SELECT owner FROM oma_leases WHERE run_id = %s", (run_id,))
            if rows:
                raise LeaseHeldError(run_id, str(rows[0][0]))
        raise LeaseHeldError(run_id, "another worker")

    async def release(self, run_id: str, owner: str) -> None:
        query = "DELETE FROM oma_leases WHERE run_id = %s AND owner = %s"
        await self._rows(query, (run_id, owner))

    async def aclose(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


def _stored(row: tuple[Any, ...]) -> StoredRun:
    run_id, kind, status, checkpoint, created, updated, cost, pending = row
    return StoredRun(run_id, kind, status, bytes(checkpoint), created, updated, cost, pending)
