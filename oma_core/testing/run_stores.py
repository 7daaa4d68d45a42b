"""The store kit: the shared checks every ``RunStore`` must pass (memory, SQLite, plugins).

A store's tests subclass ``RunStoreConformance`` and supply one fixture, ``open_store``: a
function that takes a clock (a callable giving seconds) and returns a new handle on one store
that is empty at the start of each test. Every call within a test must reach the same records
(for a database, a new connection to one fresh database; for ``MemoryRunStore``, the same
object), so the kit can play two workers::

    # tests/test_postgres_conformance.py
    import pytest
    from oma_core.testing.run_stores import RunStoreConformance

    class TestPostgresStore(RunStoreConformance):
        @pytest.fixture
        def open_store(self, fresh_database):            # the plugin's own fixture
            return lambda clock: PostgresRunStore(fresh_database, clock=clock)

The kit closes every handle it opens. Leases are checked on the kit's ``Clock``, moved by hand:
no check sleeps or depends on the machine's time. What is checked: a save loads back equal and
is replaced whole; ``runs`` order and limit; media kept once by digest; the first decision
stored wins, also when many are stored at once from two handles; decisions listed per run;
a lease excludes other owners, is renewed by its holder, released only by it, and taken
again once expired; of owners acquiring at once exactly one wins; closing twice is harmless.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest

from ..errors import LeaseHeldError
from ..stores import RunStore, StoredRun

__all__ = ["Clock", "RunStoreConformance", "stored_run"]

#: What ``open_store`` is: a clock in, a new handle on the test's store out.
OpenStore = Callable[[Callable[[], float]], RunStore]


@attrs.define
class Clock:
    """A clock the kit moves by hand (``advance``): seconds since the epoch, starting at
    ``now``."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def stored_run(run_id: str = "run-1", **fields: Any) -> StoredRun:
    """A ``StoredRun`` with plain values, changed by ``fields``."""
    values: dict[str, Any] = {
        "kind": "agent",
        "status": "running",
        "checkpoint": b"checkpoint",
        "created": 1_800_000_000.25,
        "updated": 1_800_000_000.5,
    }
    return StoredRun(run_id, **(values | fields))


class RunStoreConformance:
    """The store kit: subclass it and supply the ``open_store`` fixture (module docstring)."""

    @pytest.fixture
    def open_store(self) -> OpenStore:
        raise NotImplementedError("a store's suite supplies the open_store fixture")

    @pytest.fixture
    def clock(self) -> Clock:
        return Clock()

    @pytest.fixture
    async def handles(self, open_store: OpenStore, clock: Clock) -> AsyncIterator[list[RunStore]]:
        """Two handles on the test's store: two workers (the same object for a store in
        memory); both closed after the test."""
        first = open_store(clock)
        second = open_store(clock)
        try:
            yield [first, second]
        finally:
            await first.aclose()
            await second.aclose()

    @pytest.fixture
    def store(self, handles: list[RunStore]) -> RunStore:
        return handles[0]

    # -- records --------------------------------------------------------------------------

    async def test_an_unknown_run_loads_as_none(self, store: RunStore) -> None:
        assert await store.load("never-saved") is None

    async def test_a_saved_run_loads_back_equal(self, store: RunStore) -> None:
        run = stored_run(
            "run-é/1", kind="team", status="suspended", checkpoint=bytes(range(256)) * 4,
            cost=0.125, pending=2,
        )  # fmt: skip
        await store.save(run)
        assert await store.load("run-é/1") == run

    async def test_a_large_checkpoint_loads_back_equal(self, store: RunStore) -> None:
        checkpoint = hashlib.sha256(b"seed").digest() * (4 * 1024 * 1024 // 32)
        await store.save(stored_run(checkpoint=checkpoint))
        loaded = await store.load("run-1")
        assert loaded is not None and loaded.checkpoint == checkpoint

    async def test_a_save_replaces_the_record_whole(self, store: RunStore) -> None:
        await store.save(stored_run(status="running", checkpoint=b"a" * 100, cost=1.5, pending=3))
        second = stored_run(status="ok", checkpoint=b"b", cost=None, pending=0, updated=2e9)
        await store.save(second)
        assert await store.load("run-1") == second
        assert [run.run_id for run in await store.runs()] == ["run-1"]

    async def test_a_record_saved_by_one_handle_loads_from_another(
        self, handles: list[RunStore]
    ) -> None:
        await handles[0].save(stored_run())
        assert await handles[1].load("run-1") == stored_run()

    async def test_runs_are_listed_most_recently_updated_first(self, store: RunStore) -> None:
        for run_id, updated in (("b", 20.0), ("a", 30.0), ("c", 10.0)):
            await store.save(stored_run(run_id, updated=updated))
        await store.save(stored_run("c", updated=40.0))
        assert [run.run_id for run in await store.runs()] == ["c", "a", "b"]
        assert (await store.runs())[0] == stored_run("c", updated=40.0)

    async def test_runs_keeps_to_the_limit(self, store: RunStore) -> None:
        for number in range(5):
            await store.save(stored_run(f"run-{number}", updated=float(number)))
        assert [run.run_id for run in await store.runs(limit=2)] == ["run-4", "run-3"]
        assert await store.runs(limit=0) == []
        assert len(await store.runs(limit=10)) == 5

    async def test_an_empty_store_lists_no_run(self, store: RunStore) -> None:
        assert await store.runs() == []

    # -- media ----------------------------------------------------------------------------

    async def test_media_is_kept_by_its_digest(self, store: RunStore) -> None:
        data = bytes(range(256)) * 64
        digest = hashlib.sha256(data).hexdigest()
        await store.put_media(digest, data)
        assert await store.get_media(digest) == data
        assert await store.get_media(hashlib.sha256(b"other").hexdigest()) is None

    async def test_media_kept_twice_is_kept_once(self, handles: list[RunStore]) -> None:
        data = b"\x89PNG\r\n" + bytes(1000)
        digest = hashlib.sha256(data).hexdigest()
        await asyncio.gather(*(handle.put_media(digest, data) for handle in handles * 4))
        assert await handles[1].get_media(digest) == data

    # -- decisions ------------------------------------------------------------------------

    async def test_the_first_decision_stored_wins(self, store: RunStore) -> None:
        first = {"approve": True, "reason": None, "digest": "d1"}
        assert await store.decide("run-1", "call-1", first) == first
        assert await store.decide("run-1", "call-1", {"approve": False}) == first
        assert await store.decisions("run-1") == {"call-1": first}

    async def test_of_decisions_stored_at_once_from_two_workers_one_wins(
        self, handles: list[RunStore]
    ) -> None:
        tries = [
            handles[number % 2].decide("run-1", "call-1", {"approve": number % 3 == 0, "n": number})
            for number in range(24)
        ]
        kept = await asyncio.gather(*tries)
        assert len({repr(sorted(decision.items())) for decision in kept}) == 1
        assert await handles[0].decisions("run-1") == {"call-1": kept[0]}
        assert await handles[1].decisions("run-1") == {"call-1": kept[0]}

    async def test_decisions_are_listed_per_run(self, store: RunStore) -> None:
        await store.decide("run-1", "call-1", {"approve": True})
        await store.decide("run-1", "call-2", {"approve": False, "reason": "too dear"})
        await store.decide("run-2", "call-1", {"approve": False})
        assert await store.decisions("run-1") == {
            "call-1": {"approve": True},
            "call-2": {"approve": False, "reason": "too dear"},
        }
        assert await store.decisions("run-2") == {"call-1": {"approve": False}}
        assert await store.decisions("run-3") == {}

    async def test_a_stored_decision_is_a_copy(self, store: RunStore) -> None:
        decision: dict[str, Any] = {"approve": True}
        await store.decide("run-1", "call-1", decision)
        decision["approve"] = False
        assert await store.decisions("run-1") == {"call-1": {"approve": True}}

    # -- leases ---------------------------------------------------------------------------

    async def test_a_lease_excludes_another_owner(self, handles: list[RunStore]) -> None:
        await handles[0].acquire("run-1", "worker-a", 60)
        with pytest.raises(LeaseHeldError) as caught:
            await handles[1].acquire("run-1", "worker-b", 60)
        assert (caught.value.run_id, caught.value.owner) == ("run-1", "worker-a")

    async def test_leases_are_per_run(self, store: RunStore) -> None:
        await store.acquire("run-1", "worker-a", 60)
        await store.acquire("run-2", "worker-b", 60)
        with pytest.raises(LeaseHeldError):
            await store.acquire("run-2", "worker-a", 60)

    async def test_the_holder_renews_its_lease(self, handles: list[RunStore], clock: Clock) -> None:
        await handles[0].acquire("run-1", "worker-a", 60)
        clock.advance(50)
        await handles[0].acquire("run-1", "worker-a", 60)  # now runs to 110
        clock.advance(50)  # 100: past the first term, within the renewed one
        with pytest.raises(LeaseHeldError):
            await handles[1].acquire("run-1", "worker-b", 60)

    async def test_an_expired_lease_is_taken_by_another_owner(
        self, handles: list[RunStore], clock: Clock
    ) -> None:
        await handles[0].acquire("run-1", "worker-a", 60)
        clock.advance(59.5)
        with pytest.raises(LeaseHeldError):
            await handles[1].acquire("run-1", "worker-b", 60)
        clock.advance(0.5)  # the term has run out
        await handles[1].acquire("run-1", "worker-b", 60)
        with pytest.raises(LeaseHeldError) as caught:
            await handles[0].acquire("run-1", "worker-a", 60)
        assert caught.value.owner == "worker-b"

    async def test_a_released_lease_is_free(self, handles: list[RunStore]) -> None:
        await handles[0].acquire("run-1", "worker-a", 60)
        await handles[0].release("run-1", "worker-a")
        await handles[1].acquire("run-1", "worker-b", 60)

    async def test_only_the_holder_releases_a_lease(self, handles: list[RunStore]) -> None:
        await handles[0].acquire("run-1", "worker-a", 60)
        await handles[1].release("run-1", "worker-b")
        await handles[1].release("run-2", "worker-a")
        with pytest.raises(LeaseHeldError):
            await handles[1].acquire("run-1", "worker-b", 60)

    async def test_of_owners_acquiring_at_once_exactly_one_wins(
        self, handles: list[RunStore]
    ) -> None:
        tries = [
            handles[number % 2].acquire("run-1", f"worker-{number}", 60) for number in range(12)
        ]
        outcomes = await asyncio.gather(*tries, return_exceptions=True)
        winners = [number for number, outcome in enumerate(outcomes) if outcome is None]
        assert len(winners) == 1, outcomes
        losers = [outcome for outcome in outcomes if outcome is not None]
        assert all(isinstance(outcome, LeaseHeldError) for outcome in losers), losers
        assert {outcome.owner for outcome in losers if isinstance(outcome, LeaseHeldError)} == {
            f"worker-{winners[0]}"
        }

    # -- closing --------------------------------------------------------------------------

    async def test_closing_twice_is_harmless(self, open_store: OpenStore, clock: Clock) -> None:
        store = open_store(clock)
        await store.save(stored_run())
        await store.aclose()
        await store.aclose()
