"""SQLiteRunStore: durable runs in one SQLite file, shared by the tasks and processes of a machine.

Every call runs on the store's own thread, which holds its one connection: the event loop never
waits on the disk, and the calls of many tasks are serialised there. Several processes share
the file through SQLite's locking: in WAL mode readers never wait for the writer, and a writer
waits (``busy_timeout``) for another. A save is one statement, its own transaction: a crash
leaves the old record or the new one, never a torn one. A lease is a row, read and taken in one
``BEGIN IMMEDIATE`` transaction (the file's write lock), so two processes exclude each other.

When the store creates the file, it is made 0600, in a 0700 directory when it creates that
too: a checkpoint holds the conversation. SQLite gives its ``-wal`` and ``-shm`` files the
database file's mode. ``sqlite3`` is imported on first use, not with ``oma_core``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ._run_store import RunStore, StoredRun
from .errors import LeaseHeldError, UsageError

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SQLiteRunStore"]

#: The layout this module writes (``PRAGMA user_version``); a file with a later one was written
#: by a newer oma and is refused rather than misread.
SCHEMA_VERSION = 1

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL,
        checkpoint BLOB NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
        cost REAL, pending INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS runs_by_update ON runs (updated DESC)",
    "CREATE TABLE IF NOT EXISTS media (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)",
    """CREATE TABLE IF NOT EXISTS decisions (
        run_id TEXT NOT NULL, call_id TEXT NOT NULL, decision TEXT NOT NULL,
        PRIMARY KEY (run_id, call_id))""",
    """CREATE TABLE IF NOT EXISTS leases (
        run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)""",
)
_COLUMNS = "run_id, kind, status, checkpoint, created, updated, cost, pending"
_SAVE = f"INSERT OR REPLACE INTO runs ({_COLUMNS}) VALUES ({', '.join('?' * 8)})"

_T = TypeVar("_T")


class SQLiteRunStore(RunStore):
    """Runs kept in the SQLite file at ``path``: durable across crashes and restarts, shared by
    the processes of one machine (the ``oma`` command's store, the oma home's ``runs.db``).

    ``clock`` stamps leases (``time.time``; tests pass their own); ``busy_timeout`` is how
    many seconds a write waits for another process's before failing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._connection: sqlite3.Connection | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"SQLiteRunStore({str(self.path)!r})"

    # -- the store's thread ---------------------------------------------------------------

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(connection, *args)`` on the store's thread."""
        with self._lock:
            if self._closed:
                raise UsageError(f"{self!r} is closed")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="oma-sqlite-store")
            executor = self._executor
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, self._run, fn, args)

    def _run(self, fn: Callable[..., _T], args: tuple[Any, ...]) -> _T:
        if self._connection is None:
            self._connection = _open(self.path, self._busy_timeout)
        return fn(self._connection, *args)

    # -- records --------------------------------------------------------------------------

    async def save(self, run: StoredRun) -> None:
        row = (run.run_id, run.kind, run.status, bytes(run.checkpoint), run.created, run.updated)
        await self._call(_execute, _SAVE, (*row, run.cost, run.pending))

    async def load(self, run_id: str) -> StoredRun | None:
        rows = await self._call(_rows, f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return _stored(rows[0]) if rows else None

    async def runs(self, limit: int | None = None) -> list[StoredRun]:
        query = f"SELECT {_COLUMNS} FROM runs ORDER BY updated DESC LIMIT ?"
        rows = await self._call(_rows, query, (-1 if limit is None else limit,))
        return [_stored(row) for row in rows]

    # -- media ----------------------------------------------------------------------------

    async def put_media(self, sha256: str, data: bytes) -> None:
        query = "INSERT OR IGNORE INTO media (sha256, data) VALUES (?, ?)"
        await self._call(_execute, query, (sha256, bytes(data)))

    async def get_media(self, sha256: str) -> bytes | None:
        rows = await self._call(_rows, "SELECT data FROM media WHERE sha256 = ?", (sha256,))
        return bytes(rows[0][0]) if rows else None

    # -- decisions ------------------------------------------------------------------------

    async def decide(
        self, run_id: str, call_id: str, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        text = json.dumps(dict(decision), sort_keys=True, separators=(",", ":"))
        kept: str = await self._call(_decide, run_id, call_id, text)
        return dict(json.loads(kept))

    async def decisions(self, run_id: str) -> dict[str, Mapping[str, Any]]:
        query = "SELECT call_id, decision FROM decisions WHERE run_id = ? ORDER BY call_id"
        rows = await self._call(_rows, query, (run_id,))
        return {call_id: dict(json.loads(text)) for call_id, text in rows}

    # -- leases ---------------------------------------------------------------------------

    async def acquire(self, run_id: str, owner: str, seconds: float) -> None:
        now = self._clock()
        holder = await self._call(_acquire, run_id, owner, now, now + seconds)
        if holder is not None:
            raise LeaseHeldError(run_id, holder)

    async def release(self, run_id: str, owner: str) -> None:
        query = "DELETE FROM leases WHERE run_id = ? AND owner = ?"
        await self._call(_execute, query, (run_id, owner))

    async def aclose(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is None:
            return
        await asyncio.get_running_loop().run_in_executor(executor, self._close_connection)
        executor.shutdown(wait=True)  # its one thread is idle: joined at once

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _open(path: Path, busy_timeout: float) -> sqlite3.Connection:
    """The store's connection: the file (and its directory) made private when created here,
    WAL on, the schema made or checked."""
    import sqlite3

    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    connection = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        # In WAL mode, NORMAL syncs at checkpoints: a committed save survives a crash of the
        # process; only a power cut may lose the latest ones (never tearing one).
        connection.execute("PRAGMA synchronous = NORMAL")
        _migrate(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def _migrate(connection: sqlite3.Connection, path: Path) -> None:
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"{path} holds runs in layout {version}, written by a newer oma (this one reads "
            f"layout {SCHEMA_VERSION}): upgrade oma-core"
        )
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _execute(connection: sqlite3.Connection, query: str, args: tuple[Any, ...]) -> None:
    connection.execute(query, args)


def _rows(connection: sqlite3.Connection, query: str, args: tuple[Any, ...]) -> list[Any]:
    return connection.execute(query, args).fetchall()


def _stored(row: tuple[Any, ...]) -> StoredRun:
    run_id, kind, status, checkpoint, created, updated, cost, pending = row
    return StoredRun(run_id, kind, status, bytes(checkpoint), created, updated, cost, pending)


def _decide(connection: sqlite3.Connection, run_id: str, call_id: str, text: str) -> str:
    """Keep ``text`` unless a decision is kept for the call; the one kept. Decisions are never
    deleted, so the read after the insert sees the first one stored, whoever stored it."""
    connection.execute(
        "INSERT OR IGNORE INTO decisions (run_id, call_id, decision) VALUES (?, ?, ?)",
        (run_id, call_id, text),
    )
    query = "SELECT decision FROM decisions WHERE run_id = ? AND call_id = ?"
    (kept,) = connection.execute(query, (run_id, call_id)).fetchone()
    return str(kept)


def _acquire(
    connection: sqlite3.Connection, run_id: str, owner: str, now: float, expires: float
) -> str | None:
    """Take or renew the lease in one write transaction; the other holder when it runs."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        row = connection.execute(
            "SELECT owner, expires FROM leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is not None and row[0] != owner and row[1] > now:
            connection.execute("ROLLBACK")
            return str(row[0])
        connection.execute(
            "INSERT OR REPLACE INTO leases (run_id, owner, expires) VALUES (?, ?, ?)",
            (run_id, owner, expires),
        )
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return None
