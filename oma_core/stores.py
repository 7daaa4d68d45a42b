"""Run stores: where a durable run's checkpoints, its media and its approval decisions live.

A store keeps, per ``run_id``, one ``StoredRun`` record, replaced whole by each ``save``
(atomically: a reader sees the old record or the new one, never half of either). The
checkpoint inside it is the core's encoded state (versioned and digested by the core); a
store never looks into it. Media payloads are kept once, by the SHA-256 of their bytes, so a
checkpoint refers to them instead of copying them. Decisions on approval requests are kept
per call: the first one stored wins. A lease lets one worker at a time resume a run.

Built in: ``MemoryRunStore`` (this process) and ``SQLiteRunStore`` (one machine, the
``oma`` command's default). Other stores are plugins (oma-postgres: many machines) that
return ``StoreSpec``s from ``oma_register_stores``; every store is held to the same shared
checks, the store kit (``oma_core.testing.run_stores``). ``open_store`` turns what
``OpenMultiAgent(store=...)`` is given into a store.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._run_store import RUN_STATES, MemoryRunStore, RunStore, StoredRun, StoreSpec
from ._sqlite_store import SQLiteRunStore
from .errors import NotRegisteredError, UsageError

if TYPE_CHECKING:
    from .plugins import PluginHost

__all__ = [
    "RUN_STATES",
    "MemoryRunStore",
    "RunStore",
    "SQLiteRunStore",
    "StoreSpec",
    "StoredRun",
    "default_sqlite_path",
    "open_store",
    "store_specs",
]


#: Schemes of store plugins this repository ships, and their distributions: named in the
#: error for a URL whose plugin is not installed.
KNOWN_SCHEMES = {"postgresql": "oma-postgres", "postgres": "oma-postgres"}


def default_sqlite_path() -> Path:
    """The oma home's ``runs.db``: where ``"sqlite"`` keeps runs and the ``oma`` command
    checkpoints (``$OMA_HOME`` when set, else the user's data directory, like the run log)."""
    home = os.environ.get("OMA_HOME")
    if home:
        return Path(home).expanduser() / "runs.db"
    import platformdirs

    return Path(platformdirs.user_data_dir("oma", appauthor=False)) / "runs.db"


def open_store(value: RunStore | str | None, *, host: PluginHost | None = None) -> RunStore | None:
    """The store ``OpenMultiAgent(store=value)`` stands for.

    ``None`` (no store), a ``RunStore`` (used as it is), ``"memory"``, ``"sqlite"`` (the oma
    home's ``runs.db``), ``"sqlite:PATH"``, or a URL whose scheme a store plugin registers
    (``postgresql://...`` with oma-postgres). Nothing is opened yet: a store connects on
    first use. An unknown scheme is ``NotRegisteredError`` (``kind="store"``) naming the
    scheme and the distributions that serve the known ones; no part of the URL but its
    scheme is ever put in an error (it may hold a password).
    """
    if value is None or isinstance(value, RunStore):
        return value
    if not isinstance(value, str):
        raise UsageError(
            "store= takes a RunStore, 'memory', 'sqlite', 'sqlite:PATH' or a store URL, got "
            f"a {type(value).__name__}"
        )
    from ._sqlite_store import SQLiteRunStore

    if value == "memory":
        return MemoryRunStore()
    if value == "sqlite":
        return SQLiteRunStore(default_sqlite_path())
    if value.startswith("sqlite:") and "://" not in value:
        path = value.removeprefix("sqlite:")
        if not path:
            raise UsageError("store='sqlite:' names no file: give 'sqlite:PATH' or 'sqlite'")
        return SQLiteRunStore(Path(path).expanduser())
    scheme, sep, _ = value.partition("://")
    if not sep or not scheme:
        raise UsageError(
            "store= takes 'memory', 'sqlite', 'sqlite:PATH' or a URL (SCHEME://...); the "
            "value given is none of them"
        )
    return _plugin_store(scheme.lower(), value, host)


def _plugin_store(scheme: str, url: str, host: PluginHost | None) -> RunStore:
    """The store a plugin registers for ``scheme``, built from ``url``."""
    from .plugins import PluginHost

    table = store_specs(host or PluginHost.default())
    found = table.get(scheme)
    if found is None:
        served = ", ".join(f"{name} ({owner})" for name, (_, owner) in sorted(table.items()))
        message = f"no run store serves the URL scheme {scheme!r}; served: {served or 'none'}"
        distribution = KNOWN_SCHEMES.get(scheme)
        if distribution is not None:
            message += (
                f". The scheme {scheme!r} comes from the {distribution} plugin, which is not "
                f"installed: pip install {distribution}"
            )
        else:
            known = ", ".join(f"{s} ({d})" for s, d in sorted(KNOWN_SCHEMES.items()))
            message += f"; store plugins oma knows: {known}"
        raise NotRegisteredError(
            message,
            name=scheme,
            kind="store",
            available=sorted(table),
            distribution=distribution,
        )
    spec, owner = found
    store = spec.factory(url)
    if not isinstance(store, RunStore):
        raise UsageError(
            f"plugin {owner!r}: the factory of store scheme {scheme!r} returned a "
            f"{type(store).__name__}, not a RunStore"
        )
    return store


def store_specs(host: PluginHost) -> dict[str, tuple[StoreSpec, str]]:
    """Every store scheme the loaded plugins register, with its spec and plugin.

    Each plugin's ``oma_register_stores`` is called alone; one that raises or returns
    something other than ``StoreSpec``s is skipped, so a broken store plugin never stops the
    others (``oma plugins`` reports plugins that fail to load). The first plugin in pluggy's
    call order to claim a scheme keeps it.
    """
    table: dict[str, tuple[StoreSpec, str]] = {}
    for call in host.hooks.stores():
        try:
            offered = call()
        except Exception:  # a broken plugin is skipped, like a failing observer
            continue
        for spec in offered if isinstance(offered, list | tuple) else ():
            if isinstance(spec, StoreSpec):
                for scheme in spec.schemes:
                    table.setdefault(scheme.lower(), (spec, call.plugin))
    return table
