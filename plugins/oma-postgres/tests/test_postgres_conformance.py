"""The store kit on PostgreSQL: a real server (conftest), a fresh database per test, two
handles with their own connection pools playing two workers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from oma_postgres import PostgresRunStore

from oma_core.stores import RunStore
from oma_core.testing.run_stores import RunStoreConformance


class TestPostgresStore(RunStoreConformance):
    @pytest.fixture
    def open_store(self, fresh_database: str) -> Callable[[Callable[[], float]], RunStore]:
        return lambda clock: PostgresRunStore(fresh_database, clock=clock)
