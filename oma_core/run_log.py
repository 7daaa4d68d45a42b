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
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

__all__ = ["LoggedRun", "RunLog"]

#: How a media block of a stored row names its payload (a digest's ``sha256`` field).
_SHA256_FIELD = re.compile(r'"sha256": "([0-9a-f]{64})"')

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
        self, path: str | os.PathLike[str], *, media_dir: str | os.PathLike[str] | None = None
    ) -> None:
        from ._media_store import MediaStore

        self.path = Path(path)
        self.media = None if media_dir is None else MediaStore(media_dir)

    def __repr__(self) -> str:
        return f"RunLog({str(self.path)!r})"

    def plugin(self) -> object:
        """The call middleware that writes to this log: register it on a ``PluginHost``."""
        from .default_plugins.logs import RunLogger

        return RunLogger(self)

    @contextmanager
    def _connect(self, create: bool) -> Iterator[sqlite3.Connection]:
        if create and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        # Autocommit: each writer takes the write lock up front (BEGIN IMMEDIATE), so the media
        # files it keeps and the row that names them land under one lock.
        with closing(sqlite3.connect(self.path, timeout=10, isolation_level=None)) as db:
            if create:
                with _transaction(db):
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    _add_missing_columns(db)
            yield db

    def write(self, row: Mapping[str, Any], media: Iterable[bytes] = ()) -> list[str]:
        """Insert the run's row, or replace it by ``run_id`` (each call of a run updates it),
        keeping ``media`` (decoded payloads) in the media store when there is one.

        Returns what could not be done short of the row (media not kept), one line each: a
        row that cannot be written raises.
        """
        values = dict(row)
        for key in ("messages", "answer", "settings"):
            if values.get(key) is not None and not isinstance(values[key], str):
                values[key] = json.dumps(values[key], ensure_ascii=False)
        names = [name for name in _COLUMNS if name != "id" and name in values]
        placeholders = ", ".join("?" for _ in names)
        updates = ", ".join(f"{name} = excluded.{name}" for name in names if name != "run_id")
        problems: list[str] = []
        with self._connect(create=True) as db, _transaction(db):
            if self.media is not None:
                for raw in media:
                    try:
                        self.media.put(raw)
                    except OSError as exc:
                        reason = f"{type(exc).__name__}: {exc}"
                        problems.append(f"a media file was not kept in {self.media} ({reason})")
            db.execute(
                f"INSERT INTO runs ({', '.join(names)}) VALUES ({placeholders}) "
                f"ON CONFLICT(run_id) DO UPDATE SET {updates}",
                [values[name] for name in names],
            )
        return problems

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
            where.append("id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?)")
            args.append(keep)
        return self._delete(" OR ".join(where) if where else "0", args)

    def _delete(self, where: str, args: list[Any]) -> tuple[int, int]:
        if not self.path.exists():
            return 0, 0
        with self._connect(create=True) as db, _transaction(db):
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

    def runs(
        self,
        limit: int | None = 3,
        *,
        search: str | None = None,
        conversation_id: str | None = None,
    ) -> list[LoggedRun]:
        """The last ``limit`` runs (None: all), oldest first; ``search`` matches the prompt,
        system prompt or answer text; ``conversation_id`` keeps one conversation."""
        if not self.path.exists():
            return []
        where: list[str] = []
        args: list[Any] = []
        if search:
            where.append("(messages LIKE ? OR output LIKE ? OR system LIKE ?)")
            args.extend([f"%{search}%"] * 3)
        if conversation_id:
            where.append("conversation_id = ?")
            args.append(conversation_id)
        sql = "SELECT {columns} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._connect(create=False) as db:
            try:
                present = _present_columns(db)
                columns = ", ".join(name if name in present else "NULL" for name in _COLUMNS)
                rows = db.execute(sql.format(columns=columns), args).fetchall()
            except sqlite3.OperationalError:  # an empty file: no table yet
                return []
        return [_logged(row) for row in reversed(rows)]

    def last(self, conversation_id: str | None = None) -> LoggedRun | None:
        """The latest run (of ``conversation_id``, if given), or None."""
        found = self.runs(1, conversation_id=conversation_id)
        return found[0] if found else None


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


def _logged(row: Sequence[Any]) -> LoggedRun:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["messages"] = json.loads(values["messages"] or "[]")
    values["answer"] = json.loads(values["answer"]) if values["answer"] else None
    values["settings"] = json.loads(values["settings"]) if values["settings"] else {}
    return LoggedRun(**values)
