"""``RunLog``: a SQLite log of runs — who was asked, what was sent, what came back.

One row per run (updated after each model call of it): provider, model, system prompt, the
conversation sent, the answer, usage, duration, attempts, error, and a conversation id that
ties the runs of one conversation together. The conversation is stored through
``oma_core.redaction.redact_json``: a media payload is kept only as its type, size and
SHA-256, URLs lose their query strings, secret-looking values and long base64 runs are
scrubbed, and an API key is never among what a row is made of. With a ``media_dir``, the
media bytes are kept there by hash (``oma_core._media_store``), outside the database, so a
conversation can be sent again whole. Nothing is logged unless a ``RunLog``'s plugin is
registered on the ``PluginHost`` a run uses::

    log = RunLog("runs.db")
    host = PluginHost()
    host.register(log.plugin())
    await Agent(config, plugins=host).run("hi", settings=RunSettings(
        metadata={"conversation_id": "c1"}))   # optional: without it, the run's own id

The ``oma`` command does this for every run (``oma logs off`` stops it).

Search (``runs(search=...)``) is full-text through SQLite's FTS5 where the SQLite has it: a
``runs_fts`` table indexes each run's text only (its system prompt, the text blocks of the
conversation sent, the answer's text; never media, digests or settings), written in the same
transaction as the row and removed with it by ``remove``/``prune``. A SQLite without FTS5
searches with ``LIKE`` instead, and a log written there is indexed by the next write from a
SQLite that has it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import attrs

__all__ = ["LoggedRun", "MalformedRunError", "RunLog"]

_T = TypeVar("_T")

#: How a media block of a stored row names its payload (a digest's ``sha256`` field).
_SHA256_FIELD = re.compile(r'"sha256"\s*:\s*"([0-9a-f]{64})"')

#: The full-text index of the runs' text (``rowid`` = ``runs.id``): word-start matches,
#: case and diacritics folded.
_FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE runs_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL,
    datetime_utc TEXT NOT NULL,
    agent TEXT,
    provider TEXT NOT NULL,
    model TEXT,
    system TEXT,
    messages TEXT NOT NULL,
    answer TEXT,
    output TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    base_url TEXT,
    settings TEXT
);
CREATE INDEX IF NOT EXISTS runs_conversation ON runs (conversation_id, id);
"""

_COLUMNS = (
    "id",
    "run_id",
    "conversation_id",
    "datetime_utc",
    "agent",
    "provider",
    "model",
    "system",
    "messages",
    "answer",
    "output",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "calls",
    "attempts",
    "error",
    "base_url",
    "settings",
)

#: Columns added after the first release, with their types: a database made before them gets
#: them (``ALTER TABLE ... ADD COLUMN``) on its next write; reading one without them reads NULL.
_ADDED_COLUMNS = (("base_url", "TEXT"), ("settings", "TEXT"))


class MalformedRunError(ValueError):
    """A logged row that cannot be read back: its ``column`` of run ``run_id`` is not what oma
    writes there (``reason``). The log was written by something else, or damaged."""

    def __init__(self, run_id: str, column: str, reason: str) -> None:
        self.run_id = run_id
        self.column = column
        self.reason = reason
        super().__init__(f"the logged run {run_id}: {column} {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.run_id, self.column, self.reason))


@attrs.frozen
class LoggedRun:
    """One row of the log. ``messages`` is the conversation sent (media as
    ``{"media_type", "bytes", "sha256"}``), ``answer`` the assistant message that came back
    (None when the run failed before one), ``output`` its text.

    ``base_url`` is the base URL the run talked to (None: the provider's default), without
    user info or query; ``settings`` what else ``oma run -c`` needs to talk the same way: the
    requested ``model``, ``provider_options``, ``temperature``, ``max_tokens``, ``stop``, and
    under ``not_kept`` the names of what held a secret and was not logged (``"base_url"``,
    ``"provider_options.NAME"``). Never a key.
    """

    id: int
    run_id: str
    conversation_id: str
    datetime_utc: str
    agent: str | None
    provider: str
    model: str | None
    system: str | None
    messages: list[dict[str, Any]]
    answer: dict[str, Any] | None
    output: str | None
    input_tokens: int
    output_tokens: int
    duration_ms: int
    calls: int
    attempts: int
    error: str | None
    base_url: str | None = None
    settings: dict[str, Any] = attrs.field(factory=dict)

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class RunLog:
    """The log database at ``path`` (created, with its directory, on first write; the file is
    made readable by its owner only).

    ``media_dir``: where the media of logged runs are kept by content hash (a ``MediaStore``:
    0700, files 0600), so a conversation can be continued with its media; None (the default)
    keeps no media, only their type, size and SHA-256 in the rows.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        media_dir: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        from ._media_store import MediaStore

        self.path = Path(path)
        self.media = None if media_dir is None else MediaStore(media_dir)
        #: The longest a write waits for the database's lock (held by another process, say),
        #: retrying with back-off, before it gives up (and the run warns that it was not logged).
        self.timeout = timeout
        self._ready = False
        #: Whether this log's database has a usable full-text index (known once it is set up).
        self._fts = False
        self._queue: deque[tuple[Callable[[], list[str]], Future[list[str]]]] = deque()
        self._writing = False
        self._writer_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RunLog({str(self.path)!r})"

    def plugin(self) -> object:
        """The call middleware that writes to this log: register it on a ``PluginHost``."""
        from ._run_logger import RunLogger

        return RunLogger(self)

    @contextmanager
    def _connect(self, create: bool, deadline: float | None = None) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode: each writer takes the write lock up front (BEGIN
        IMMEDIATE), so the media files it keeps and the row that names them land under one
        lock. SQLite's own wait for a lock ends at ``deadline``."""
        if create and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        _tighten(self.path)
        wait = self.timeout if deadline is None else max(0.0, deadline - time.monotonic())
        with closing(sqlite3.connect(self.path, timeout=wait, isolation_level=None)) as db:
            if create and not self._ready:
                # WAL: readers never wait for the writer, and a writer's commit is one append.
                db.execute("PRAGMA journal_mode=WAL")
                with _transaction(db):
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    _add_missing_columns(db)
                    self._fts = _full_text_index(db)
                self._ready = True
            yield db

    def _retrying(self, action: Callable[[float], _T], deadline: float) -> _T:
        """``action(deadline)``, again after a back-off while the database is locked or busy
        (SQLite returns that at once in some cases its wait does not cover), until
        ``deadline``."""
        delay = 0.01
        while True:
            try:
                return action(deadline)
            except sqlite3.OperationalError as exc:
                left = deadline - time.monotonic()
                if not _busy(exc) or left <= 0:
                    raise
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.5)

    def write(
        self, row: Mapping[str, Any], media: Iterable[bytes] = (), *, deadline: float | None = None
    ) -> list[str]:
        """Insert the run's row, or replace it by ``run_id`` (each call of a run updates it),
        keeping ``media`` (decoded payloads) in the media store when there is one.

        Waits for the database's lock until ``deadline`` (``time.monotonic()``; by default
        ``timeout`` from now). Returns what could not be done short of the row (media not
        kept), one line each; a row that cannot be written raises ``sqlite3.Error`` or
        ``OSError``. Blocking: from a coroutine, use ``write_soon``.
        """
        values = dict(row)
        for key in ("messages", "answer", "settings"):
            if values.get(key) is not None and not isinstance(values[key], str):
                values[key] = json.dumps(values[key], ensure_ascii=False)
        names = [name for name in _COLUMNS if name != "id" and name in values]
        placeholders = ", ".join("?" for _ in names)
        updates = ", ".join(f"{name} = excluded.{name}" for name in names if name != "run_id")
        sql = (
            f"INSERT INTO runs ({', '.join(names)}) VALUES ({placeholders}) "
            f"ON CONFLICT(run_id) DO UPDATE SET {updates}"
        )
        payloads = list(media) if self.media is not None else []
        text = _searchable(values)

        def attempt(deadline: float) -> list[str]:
            problems: list[str] = []
            with self._connect(create=True, deadline=deadline) as db, _transaction(db):
                if self.media is not None:
                    for raw in payloads:
                        try:
                            self.media.put(raw)
                        except OSError as exc:
                            reason = f"{type(exc).__name__}: {exc}"
                            problems.append(f"a media file was not kept in {self.media} ({reason})")
                db.execute(sql, [values[name] for name in names])
                if self._fts:
                    (rowid,) = db.execute(
                        "SELECT id FROM runs WHERE run_id = ?", [values["run_id"]]
                    ).fetchone()
                    db.execute("DELETE FROM runs_fts WHERE rowid = ?", [rowid])
                    db.execute("INSERT INTO runs_fts (rowid, text) VALUES (?, ?)", [rowid, text])
            return problems

        return self._retrying(attempt, deadline or time.monotonic() + self.timeout)

    async def write_soon(
        self, make: Callable[[], tuple[Mapping[str, Any], Iterable[bytes]]]
    ) -> list[str]:
        """``write(*make())`` in this log's writer thread, awaited: the event loop never waits
        on SQLite (nor on building the row: redaction hashes every media payload).

        The wait for the lock is bounded by ``timeout`` from the call, even behind other
        writes. The write is shielded: a cancelled caller stops waiting, the write is still
        done (before the interpreter exits, at the latest).
        """
        deadline = time.monotonic() + self.timeout

        def job() -> list[str]:
            row, media = make()
            return self.write(row, media, deadline=deadline)

        return await asyncio.shield(asyncio.wrap_future(self._submit(job)))

    def _submit(self, job: Callable[[], list[str]]) -> Future[list[str]]:
        """Queue ``job`` for this log's writer thread, starting it if it is not running.

        One thread per log: its writes queue there (SQLite takes one writer at a time anyway)
        and never hold the threads the event loop needs for other work. It ends when the queue
        is empty, so an idle log holds no thread; it is not a daemon, so a queued write is done
        before the interpreter exits.
        """
        future: Future[list[str]] = Future()
        with self._writer_lock:
            self._queue.append((job, future))
            if not self._writing:
                self._writing = True
                threading.Thread(target=self._drain, name="oma-run-log").start()
        return future

    def _drain(self) -> None:
        while True:
            with self._writer_lock:
                if not self._queue:
                    self._writing = False
                    return
                job, future = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # handed to the waiting coroutine
                future.set_exception(exc)

    def media_of(self, sha256: str, size: int | None = None) -> bytes | None:
        """The kept bytes of a logged media block (by its ``sha256``), checked against the
        hash; None without a store, or when they are missing or changed."""
        return None if self.media is None else self.media.get(sha256, size)

    def remove(self, conversation_id: str) -> tuple[int, int]:
        """Remove one conversation's runs, then the media no run refers to any more: how many
        runs and media files were removed."""
        return self._delete("conversation_id = ?", [conversation_id])

    def prune(
        self, *, older_than: datetime | None = None, keep: int | None = None
    ) -> tuple[int, int]:
        """Remove the runs logged before ``older_than`` and those beyond the newest ``keep``,
        then the media no run refers to any more (with neither: only those media)."""
        where: list[str] = []
        args: list[Any] = []
        if older_than is not None:
            where.append("datetime_utc < ?")
            args.append(older_than.astimezone(UTC).isoformat(timespec="seconds"))
        if keep is not None:
            keep = min(keep, _MAX_INTEGER)  # more than SQLite can count keeps them all
            where.append("id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?)")
            args.append(keep)
        return self._delete(" OR ".join(where) if where else "0", args)

    def _delete(self, where: str, args: list[Any]) -> tuple[int, int]:
        if not self.path.exists():
            return 0, 0

        def attempt(deadline: float) -> tuple[int, int]:
            with self._connect(create=True, deadline=deadline) as db, _transaction(db):
                if self._fts:
                    db.execute(
                        f"DELETE FROM runs_fts WHERE rowid IN (SELECT id FROM runs WHERE {where})",
                        args,
                    )
                runs = db.execute(f"DELETE FROM runs WHERE {where}", args).rowcount
                removed = 0
                if self.media is not None:
                    referenced: set[str] = set()
                    for messages, answer in db.execute("SELECT messages, answer FROM runs"):
                        for text in (messages, answer):
                            if isinstance(text, str):
                                referenced.update(_SHA256_FIELD.findall(text))
                    removed = self.media.remove_all_but(referenced)
            return runs, removed

        return self._retrying(attempt, time.monotonic() + self.timeout)

    def runs(
        self,
        limit: int | None = 3,
        *,
        search: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        since: datetime | None = None,
    ) -> list[LoggedRun]:
        """The last ``limit`` runs (None: all), oldest first; ``search`` keeps the runs whose
        prompt, system prompt or answer holds every word of it (full-text: a word matches the
        start of a word, in any case; without FTS5, anywhere); ``conversation_id`` keeps one
        conversation; ``model`` the runs of one model (``MODEL`` or ``PROVIDER:MODEL``);
        ``since`` those logged at or after that moment. A row that cannot be read back raises
        its ``MalformedRunError``."""
        found: list[LoggedRun] = []
        for run in self.each(
            limit, search=search, conversation_id=conversation_id, model=model, since=since
        ):
            if isinstance(run, MalformedRunError):
                raise run
            found.append(run)
        return found

    def each(
        self,
        limit: int | None = None,
        *,
        search: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        since: datetime | None = None,
    ) -> Generator[LoggedRun | MalformedRunError, None, None]:
        """The runs ``runs`` returns (all by default), one at a time as SQLite reads them, so
        a log of any size is listed in the memory of one row; a row that cannot be read back
        is its ``MalformedRunError``, in its place, and the others still come. The database
        stays open until the iterator is exhausted or closed."""
        if not self.path.exists():
            return
        if limit is not None and limit > _MAX_INTEGER:  # more than SQLite can count: all
            limit = None
        where: list[str] = []
        args: list[Any] = []
        # SQLite ends a query string at NUL ("unterminated string"): NULs are no search text
        words = [w for w in (search or "").replace("\x00", " ").split() if w]
        if conversation_id:
            where.append("conversation_id = ?")
            args.append(conversation_id)
        if model:
            where.append("(model = ? OR provider || ':' || model = ?)")
            args.extend([model, model])
        if since is not None:
            where.append("datetime_utc >= ?")
            args.append(since.astimezone(UTC).isoformat(timespec="seconds"))
        with self._connect(create=False) as db:
            db.text_factory = _text
            present = _present_columns(db)
            if not present:  # an empty file: no table yet
                return
            if words:
                found, found_args = _search(db, words)
                where.append(found)
                args.extend(found_args)
            condition = " AND ".join(where) or "1"
            if limit is not None:  # from the limit-th newest of them on, in one statement
                if limit == 0:
                    return
                condition = (
                    f"{condition} AND id >= coalesce((SELECT id FROM runs WHERE {condition} "
                    "ORDER BY id DESC LIMIT 1 OFFSET ?), 0)"
                )
                args = [*args, *args, limit - 1]
            columns = ", ".join(name if name in present else "NULL" for name in _COLUMNS)
            rows = db.execute(f"SELECT {columns} FROM runs WHERE {condition} ORDER BY id", args)
            for row in rows:
                try:
                    yield _logged(row)
                except MalformedRunError as exc:
                    yield exc

    def count(self) -> int:
        """How many runs the log holds."""
        if not self.path.exists():
            return 0
        with self._connect(create=False) as db:
            if not _present_columns(db):
                return 0
            (found,) = db.execute("SELECT count(*) FROM runs").fetchone()
        return int(found)

    def last(self, conversation_id: str | None = None) -> LoggedRun | None:
        """The latest run (of ``conversation_id``, if given), or None."""
        found = self.runs(1, conversation_id=conversation_id)
        return found[0] if found else None


#: The largest integer SQLite takes (a limit past it is no limit).
_MAX_INTEGER = (1 << 63) - 1


def _text(raw: bytes) -> str:
    """A text column as read: UTF-8, with what is not UTF-8 (a foreign writer's bytes) shown
    as U+FFFD rather than making the row, and the rows after it, unreadable."""
    return raw.decode("utf-8", "replace")


def _has_fts5() -> bool:
    """Whether this process's SQLite has the FTS5 module (asked once)."""
    global _FTS5
    if _FTS5 is None:
        with closing(sqlite3.connect(":memory:")) as db:
            try:
                db.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
            except sqlite3.OperationalError:
                _FTS5 = False
            else:
                _FTS5 = True
    return _FTS5


_FTS5: bool | None = None


def _has_index(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs_fts'")
    return found.fetchone() is not None


def _full_text_index(db: sqlite3.Connection) -> bool:
    """Make the full-text index (in the schema's transaction) when this SQLite can, and
    rebuild it when it does not cover the rows (a log written without FTS5, or before it):
    whether the index is there to use."""
    if not _has_fts5():
        return False
    if not _has_index(db):
        db.execute(_FTS_SCHEMA)
    rows = db.execute("SELECT count(*), coalesce(max(id), 0) FROM runs").fetchone()
    indexed = db.execute("SELECT count(*), coalesce(max(rowid), 0) FROM runs_fts").fetchone()
    if tuple(rows) != tuple(indexed):
        db.execute("DELETE FROM runs_fts")
        for rowid, system, messages, output in db.execute(
            "SELECT id, system, messages, output FROM runs"
        ).fetchall():
            text = _searchable({"system": system, "messages": messages, "output": output})
            db.execute("INSERT INTO runs_fts (rowid, text) VALUES (?, ?)", [rowid, text])
    return True


def _searchable(row: Mapping[str, Any]) -> str:
    """What the full-text index holds of a row: its system prompt, the text blocks of the
    messages sent and the answer's text, one per line. Media (kept as digests), URLs,
    settings and everything else of the row are not indexed."""
    parts: list[str] = []
    if isinstance(row.get("system"), str):
        parts.append(row["system"])
    messages = row.get("messages")
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except ValueError:
            messages = None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
    if isinstance(row.get("output"), str):
        parts.append(row["output"])
    return "\n".join(parts)


def _search(db: sqlite3.Connection, words: Sequence[str]) -> tuple[str, list[Any]]:
    """The condition (and its arguments) keeping the runs that hold every one of ``words``:
    through the full-text index when the database has one this SQLite can read, else with
    ``LIKE`` over the stored text (``%`` and ``_`` taken literally). A word with no letter or
    digit is no word to the index: it is left out of a full-text query, and a query of such
    words only is searched with ``LIKE``."""
    indexed = [word for word in words if any(c.isalnum() for c in word)]
    if indexed and _has_fts5() and _has_index(db):
        query = " ".join('"' + word.replace('"', '""') + '"*' for word in indexed)
        return "id IN (SELECT rowid FROM runs_fts WHERE runs_fts MATCH ?)", [query]
    conditions: list[str] = []
    args: list[Any] = []
    for word in words:
        pattern = "%" + re.sub(r"([\\%_])", r"\\\1", word) + "%"
        conditions.append(_LIKE)
        args.extend([pattern] * 3)
    return " AND ".join(conditions), args


#: One word of a search without FTS5: in the system prompt, a text block of the messages sent
#: (read with SQLite's JSON functions, so no JSON key or media digest matches), or the answer.
_LIKE = """(
    system LIKE ? ESCAPE '\\'
    OR EXISTS (
        SELECT 1
        FROM json_each(CASE WHEN json_valid(runs.messages) THEN runs.messages ELSE '[]' END)
            AS message,
            json_each(CASE WHEN message.type = 'object' THEN message.value ELSE '{}' END,
                '$.content') AS block
        WHERE CASE WHEN block.type = 'object' THEN json_extract(block.value, '$.type') END
                = 'text'
            AND CASE WHEN block.type = 'object' THEN json_extract(block.value, '$.text') END
                LIKE ? ESCAPE '\\'
    )
    OR output LIKE ? ESCAPE '\\'
)"""


def _busy(error: sqlite3.OperationalError) -> bool:
    """Whether ``error`` is SQLite's "database is locked" (or busy): worth waiting for."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(error)
    return "locked" in text or "busy" in text


def _tighten(path: Path) -> None:
    """The database (and its WAL files) readable by its owner only: a log made looser, by
    hand or by an older oma, is tightened when it is next opened."""
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            info = os.lstat(name)
        except FileNotFoundError:
            continue
        loose = stat.S_IMODE(info.st_mode) & 0o077
        if stat.S_ISREG(info.st_mode) and loose and info.st_uid == os.getuid():
            os.chmod(name, 0o600)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, holding the write lock from its start."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if db.in_transaction:  # (SQLite may have rolled back already, on a full disk say)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _present_columns(db: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in db.execute("PRAGMA table_info(runs)")}


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring a database made by an older oma up to ``_COLUMNS``."""
    present = _present_columns(db)
    for name, kind in _ADDED_COLUMNS:
        if name not in present:
            try:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise


_INTEGERS = ("id", "input_tokens", "output_tokens", "duration_ms", "calls", "attempts")
_TEXTS = ("run_id", "conversation_id", "datetime_utc", "provider")
_OPTIONAL_TEXTS = ("agent", "model", "system", "output", "error", "base_url")


def _logged(row: Sequence[Any]) -> LoggedRun:
    """A row read back, its shape checked: a row a broken or foreign writer left (JSON of the
    wrong shape, a number where text belongs) is a ``MalformedRunError`` naming it."""
    values = dict(zip(_COLUMNS, row, strict=True))
    run_id = values["run_id"] if isinstance(values["run_id"], str) else repr(values["run_id"])

    def bad(column: str, reason: str) -> MalformedRunError:
        return MalformedRunError(run_id, column, reason)

    for name in _INTEGERS:
        if not isinstance(values[name], int):
            raise bad(name, "is not an integer")
    for name in _TEXTS:
        if not isinstance(values[name], str):
            raise bad(name, "is not text")
    for name in _OPTIONAL_TEXTS:
        if values[name] is not None and not isinstance(values[name], str):
            raise bad(name, "is not text")
    messages = _json_column(values["messages"] or "[]", "messages", bad)
    if not isinstance(messages, list) or not all(_is_message(m) for m in messages):
        raise bad("messages", "is not a list of messages (objects with a role and content blocks)")
    answer = _json_column(values["answer"], "answer", bad) if values["answer"] else None
    if answer is not None and not _is_message(answer):
        raise bad("answer", "is not a message (an object with a role and content blocks)")
    settings = _json_column(values["settings"], "settings", bad) if values["settings"] else {}
    if not (
        isinstance(settings, dict)
        and isinstance(settings.get("model"), str | None)
        and isinstance(settings.get("provider_options", {}), dict)
        and isinstance(settings.get("not_kept", []), list)
        and all(isinstance(name, str) for name in settings.get("not_kept", []))
    ):
        raise bad("settings", "is not an object of settings")
    values.update(messages=messages, answer=answer, settings=settings)
    return LoggedRun(**values)


def _json_column(text: Any, column: str, bad: Callable[[str, str], MalformedRunError]) -> Any:
    if not isinstance(text, str):
        raise bad(column, "is not JSON text")
    try:
        return json.loads(text)
    except ValueError:
        raise bad(column, "is not valid JSON") from None


def _is_message(value: Any) -> bool:
    """A logged message's shape, as far as reading it back needs: an object with a text role
    and a list of content blocks, each an object whose ``source`` (if any) is an object."""
    if not isinstance(value, dict) or not isinstance(value.get("role"), str):
        return False
    content = value.get("content")
    return isinstance(content, list) and all(
        isinstance(block, dict)
        and isinstance(block.get("source", {}), dict)
        and isinstance(block.get("type"), str)
        for block in content
    )
