"""What PostgreSQL adds to the store kit: workers in separate processes contending for one run,
the URL schemes the plugin registers, and a password that never shows."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from oma_postgres import PostgresRunStore, redacted
from psycopg_pool import PoolTimeout

from oma_core.errors import LeaseHeldError, UsageError
from oma_core.stores import open_store
from oma_core.testing.run_stores import stored_run

#: A worker: waits for "go" on stdin, then takes the lease on run-1 as argv[2] and prints
#: "won", or "lost OWNER" naming the holder; holds what it won until stdin closes.
_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from oma_core.errors import LeaseHeldError
    from oma_core.stores import open_store

    async def main():
        store = open_store(sys.argv[1])
        await store.load("warm-up")  # connected before the race starts
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        try:
            await store.acquire("run-1", sys.argv[2], 60)
            print("won", flush=True)
        except LeaseHeldError as error:
            print(f"lost {error.owner}", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        await store.aclose()

    asyncio.run(main())
    """
)


@pytest.fixture
def workers(fresh_database: str) -> Iterator[list[subprocess.Popen[str]]]:
    started = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, fresh_database, f"worker-{name}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


async def test_of_two_worker_processes_resuming_one_run_one_gets_the_lease(
    workers: list[subprocess.Popen[str]], fresh_database: str
) -> None:
    async def line(process: subprocess.Popen[str]) -> str:
        assert process.stdout is not None
        return (await asyncio.to_thread(process.stdout.readline)).strip()

    assert [await line(process) for process in workers] == ["ready", "ready"]
    for process in workers:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    said = {
        f"worker-{name}": await line(process) for name, process in zip("ab", workers, strict=True)
    }
    winners = [worker for worker, outcome in said.items() if outcome == "won"]
    assert len(winners) == 1, said
    (loser,) = set(said) - set(winners)
    assert said[loser] == f"lost {winners[0]}"
    store = PostgresRunStore(fresh_database)
    try:
        with pytest.raises(LeaseHeldError) as caught:
            await store.acquire("run-1", "worker-c", 60)
        assert caught.value.owner == winners[0]
    finally:
        await store.aclose()
    for process in workers:
        assert process.stdin is not None
        process.stdin.close()
        assert await asyncio.to_thread(process.wait, 30) == 0


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_both_url_schemes_open_a_postgres_store(fresh_database: str, scheme: str) -> None:
    url = scheme + fresh_database.removeprefix("postgresql")
    store = open_store(url)
    assert isinstance(store, PostgresRunStore)
    try:
        await store.save(stored_run())
        assert await store.load("run-1") == stored_run()
    finally:
        await store.aclose()


def test_the_password_never_shows_in_the_stores_repr() -> None:
    store = PostgresRunStore("postgresql://oma:hunter2@db.example:5432/runs?sslmode=require")
    assert (
        repr(store)
        == "PostgresRunStore('postgresql://oma:***@db.example:5432/runs?sslmode=require')"
    )
    assert "hunter2" not in redacted("host=db user=oma password=hunter2 dbname=runs")
    assert redacted("postgresql://db.example/runs") == "postgresql://db.example/runs"


async def test_an_unreachable_database_fails_the_first_call_never_showing_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://oma:hunter2@/runs?host={tmp_path}"  # no server listens there
    store = PostgresRunStore(url, open_timeout=0.5)  # building it connects to nothing
    try:
        with pytest.raises(PoolTimeout) as caught:
            await store.load("run-1")
        assert "hunter2" not in str(caught.value) and "hunter2" not in repr(store)
    finally:
        await store.aclose()


async def test_a_closed_store_refuses_calls(fresh_database: str) -> None:
    store = PostgresRunStore(fresh_database)
    await store.save(stored_run())
    await store.aclose()
    with pytest.raises(UsageError, match="closed"):
        await store.load("run-1")


async def test_the_tables_are_made_once_by_workers_starting_together(fresh_database: str) -> None:
    stores = [PostgresRunStore(fresh_database) for _ in range(4)]
    try:
        await asyncio.gather(
            *(store.save(stored_run(f"run-{n}")) for n, store in enumerate(stores))
        )
        assert len(await stores[0].runs()) == 4
    finally:
        await asyncio.gather(*(store.aclose() for store in stores))
