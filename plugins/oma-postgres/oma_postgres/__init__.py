"""oma-postgres: durable runs in PostgreSQL, for many workers on many machines.

``OpenMultiAgent(store="postgresql://USER@HOST/DATABASE")``; see ``docs/run-stores.md``.
Importing this package (which ``PluginHost`` does when plugins load) imports no psycopg: it is
imported when a store first connects.
"""

from __future__ import annotations

from oma_core import hookimpl
from oma_core.stores import StoreSpec

from ._store import PostgresRunStore, redacted

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = ["PostgresRunStore", "oma_register_stores", "redacted"]


@hookimpl
def oma_register_stores() -> list[StoreSpec]:
    return [
        StoreSpec(
            ("postgresql", "postgres"),
            PostgresRunStore,
            description="runs in a PostgreSQL database, shared by workers on many machines",
        )
    ]
