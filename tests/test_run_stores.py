"""Run stores: the store kit on the built-in stores (memory, SQLite), what SQLite adds (two
processes, file modes, no torn record, its layout), and ``open_store`` resolving what
``OpenMultiAgent(store=...)`` is given, plugins' URL schemes included."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from oma_core import PluginHost, hookimpl
from oma_core.errors import LeaseHeldError, NotRegisteredError, UsageError
from oma_core.stores import (
    MemoryRunStore,
    RunStore,
    SQLiteRunStore,
    StoreSpec,
    default_sqlite_path,
    open_store,
)
from oma_core.testing.run_stores import Clock, RunStoreConformance, stored_run


class TestMemoryStore(RunStoreConformance):
    @pytest.fixture
    def open_store(self) -> Callable[[Callable[[], float]], RunStore]:
        stores: list[MemoryRunStore] = []

        def make(clock: Callable[[], float]) -> RunStore:
            if not stores:
                stores.append(MemoryRunStore(clock=clock))
            return stores[0]

        return make


class TestSQLiteStore(RunStoreConformance):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Callable[[Callable[[], float]], RunStore]:
        return lambda clock: SQLiteRunStore(tmp_path / "runs.db", clock=clock)


# -- SQLite: what a file shared by processes adds -----------------------------------------------

#: A worker process: holds an hour's lease on ``run-1`` of the store at argv[1] as
#: ``worker-a``, taken at time ``HOLDER_TIME`` by its clock, until its stdin closes; then
#: releases it.
_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from oma_core.stores import SQLiteRunStore

    async def main():
        store = SQLiteRunStore(sys.argv[1], clock=lambda: 1000.0)
        await store.acquire("run-1", "worker-a", 3600)
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        await store.release("run-1", "worker-a")
        await store.aclose()
        print("released", flush=True)

    asyncio.run(main())
    """
)

HOLDER_TIME = 1000.0

#: A worker process that saves ``run-1`` over and over, each record consistent with itself
#: (its status names the byte its 2 MiB checkpoint repeats), until it is killed.
_SAVER = textwrap.dedent(
    """
    import asyncio, sys
    from oma_core.stores import SQLiteRunStore, StoredRun

    async def main():
        store = SQLiteRunStore(sys.argv[1])
        number = 0
        while True:
            number += 1
            byte = number % 251
            run = StoredRun("run-1", "agent", str(byte), bytes([byte]) * (2 << 20), 1.0, number)
            await store.save(run)
            if number == 3:
                print("saving", flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    """Starts Python worker processes on the store file; kills any still running after."""
    started: list[subprocess.Popen[str]] = []

    def start(source: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", source, str(tmp_path / "runs.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


async def test_a_lease_held_by_another_process_is_refused_until_it_is_released(
    tmp_path: Path, worker: Callable[[str], subprocess.Popen[str]]
) -> None:
    holder = worker(_HOLDER)
    assert holder.stdout is not None and holder.stdin is not None
    assert await asyncio.to_thread(holder.stdout.readline) == "held\n"
    store = SQLiteRunStore(tmp_path / "runs.db", clock=Clock(now=HOLDER_TIME + 1))
    try:
        with pytest.raises(LeaseHeldError) as caught:
            await store.acquire("run-1", "worker-b", 60)
        assert caught.value.owner == "worker-a"
        holder.stdin.close()
        assert await asyncio.to_thread(holder.stdout.readline) == "released\n"
        await store.acquire("run-1", "worker-b", 60)
    finally:
        await store.aclose()
    assert await asyncio.to_thread(holder.wait, 30) == 0


async def test_a_lease_of_a_killed_process_is_taken_once_it_expires(
    tmp_path: Path, worker: Callable[[str], subprocess.Popen[str]]
) -> None:
    holder = worker(_HOLDER)
    assert holder.stdout is not None
    assert await asyncio.to_thread(holder.stdout.readline) == "held\n"
    holder.send_signal(signal.SIGKILL)
    await asyncio.to_thread(holder.wait, 30)
    clock = Clock(now=HOLDER_TIME + 3599)  # the last second of the holder's hour
    store = SQLiteRunStore(tmp_path / "runs.db", clock=clock)
    try:
        with pytest.raises(LeaseHeldError):
            await store.acquire("run-1", "worker-b", 60)
        clock.advance(1)
        await store.acquire("run-1", "worker-b", 60)
    finally:
        await store.aclose()


async def test_a_process_killed_while_saving_leaves_a_whole_record(
    tmp_path: Path, worker: Callable[[str], subprocess.Popen[str]]
) -> None:
    saver = worker(_SAVER)
    assert saver.stdout is not None
    assert await asyncio.to_thread(saver.stdout.readline) == "saving\n"
    saver.send_signal(signal.SIGKILL)
    await asyncio.to_thread(saver.wait, 30)
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        run = await store.load("run-1")
        assert run is not None and run.updated >= 3
        assert run.checkpoint == bytes([int(run.status)]) * (2 << 20)
    finally:
        await store.aclose()


async def test_a_record_outlives_the_store_that_saved_it(tmp_path: Path) -> None:
    first = SQLiteRunStore(tmp_path / "runs.db")
    await first.save(stored_run(status="suspended", pending=1))
    await first.decide("run-1", "call-1", {"approve": True})
    await first.aclose()
    second = SQLiteRunStore(tmp_path / "runs.db")
    try:
        assert await second.load("run-1") == stored_run(status="suspended", pending=1)
        assert await second.decisions("run-1") == {"call-1": {"approve": True}}
    finally:
        await second.aclose()


async def test_the_file_is_private_in_a_private_directory_when_the_store_creates_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "home" / "runs.db"
    store = SQLiteRunStore(path)
    try:
        await store.save(stored_run())
        assert _mode(path.parent) == 0o700
        for made in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert _mode(made) == 0o600, made
    finally:
        await store.aclose()


async def test_an_existing_directory_and_file_keep_their_modes(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.touch(mode=0o640)
    path.chmod(0o640)
    os.chmod(tmp_path, 0o755)
    store = SQLiteRunStore(path)
    try:
        await store.save(stored_run())
    finally:
        await store.aclose()
    assert _mode(path) == 0o640
    assert _mode(tmp_path) == 0o755


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_a_file_written_by_a_newer_oma_is_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 99")
    connection.close()
    store = SQLiteRunStore(path)
    try:
        with pytest.raises(UsageError, match="newer oma"):
            await store.load("run-1")
    finally:
        await store.aclose()


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    await store.save(stored_run())
    await store.aclose()
    with pytest.raises(UsageError, match="closed"):
        await store.load("run-1")


async def test_many_tasks_save_at_once_and_each_record_is_kept(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        runs = [stored_run(f"run-{n}", checkpoint=bytes([n]) * 1000) for n in range(40)]
        await asyncio.gather(*(store.save(run) for run in runs))
        loaded = await asyncio.gather(*(store.load(run.run_id) for run in runs))
        assert loaded == runs
    finally:
        await store.aclose()


def test_the_store_is_named_by_its_path_only(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    assert repr(SQLiteRunStore(path)) == f"SQLiteRunStore({str(path)!r})"


# -- open_store: what OpenMultiAgent(store=...) is given -----------------------------------------


def test_no_store_is_none_and_a_store_is_itself() -> None:
    store = MemoryRunStore()
    assert open_store(None) is None
    assert open_store(store) is store


def test_memory_is_a_new_store_in_memory() -> None:
    first, second = open_store("memory"), open_store("memory")
    assert isinstance(first, MemoryRunStore) and first is not second


def test_sqlite_is_the_oma_homes_runs_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    store = open_store("sqlite")
    assert isinstance(store, SQLiteRunStore)
    assert store.path == tmp_path / "home" / "runs.db" == default_sqlite_path()


def test_sqlite_without_an_oma_home_is_in_the_users_data_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platformdirs

    monkeypatch.delenv("OMA_HOME", raising=False)
    expected = Path(platformdirs.user_data_dir("oma", appauthor=False)) / "runs.db"
    assert default_sqlite_path() == expected


def test_sqlite_with_a_path_is_that_file(tmp_path: Path) -> None:
    store = open_store(f"sqlite:{tmp_path}/elsewhere.db")
    assert isinstance(store, SQLiteRunStore) and store.path == tmp_path / "elsewhere.db"


@pytest.mark.parametrize("value", ["sqlite:", "nonsense", "://host"])
def test_a_value_that_names_no_store_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match="store"):
        open_store(value)


def test_a_value_of_another_type_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="got a dict"):
        open_store({"kind": "memory"})  # type: ignore[arg-type]


def test_an_unknown_scheme_names_it_and_the_known_ones_and_never_the_password(host: Any) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        open_store("redis://user:hunter2@db.internal:6379/0", host=host)
    error = caught.value
    assert (error.name, error.kind, error.available) == ("redis", "store", ())
    assert "postgresql (oma-postgres)" in str(error)
    assert "hunter2" not in str(error) and "hunter2" not in repr(error)
    assert "db.internal" not in str(error)


def test_a_known_scheme_whose_plugin_is_missing_says_what_to_install(host: Any) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        open_store("postgresql://oma:hunter2@db/runs", host=host)
    assert caught.value.distribution == "oma-postgres"
    assert "pip install oma-postgres" in str(caught.value)
    assert "hunter2" not in str(caught.value)


class _UrlStore(MemoryRunStore):
    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url


class _StorePlugin:
    @hookimpl
    def oma_register_stores(self) -> list[StoreSpec]:
        return [StoreSpec(("acme", "acme+tls"), _UrlStore, "runs at Acme")]


class _BrokenStorePlugin:
    @hookimpl
    def oma_register_stores(self) -> list[StoreSpec]:
        raise RuntimeError("broken")


class _WrongFactoryPlugin:
    @hookimpl
    def oma_register_stores(self) -> list[StoreSpec]:
        return [StoreSpec(("odd",), lambda url: object())]  # type: ignore[arg-type,return-value]


def test_a_plugins_scheme_gets_its_store_built_from_the_whole_url(host: PluginHost) -> None:
    host.register(_BrokenStorePlugin(), "broken")
    host.register(_StorePlugin(), "acme")
    store = open_store("ACME+tls://runs.acme.example/team", host=host)
    assert isinstance(store, _UrlStore) and store.url == "ACME+tls://runs.acme.example/team"


def test_an_unknown_scheme_lists_the_schemes_plugins_serve(host: PluginHost) -> None:
    host.register(_StorePlugin(), "acme")
    with pytest.raises(NotRegisteredError) as caught:
        open_store("redis://h", host=host)
    assert caught.value.available == ("acme", "acme+tls")
    assert "acme (acme)" in str(caught.value)


def test_a_factory_that_returns_no_store_is_the_plugins_fault(host: PluginHost) -> None:
    host.register(_WrongFactoryPlugin(), "odd")
    with pytest.raises(UsageError, match=r"plugin 'odd'.*not a RunStore"):
        open_store("odd://x", host=host)
