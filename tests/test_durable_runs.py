"""Durable ``run_agent`` runs: a run killed with SIGKILL at each step resumes in another
process to the output an uninterrupted run gives, every checkpointed tool's side effect once;
resume's errors; what a store holds (media by reference)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import durable_child
import pytest
from _waiting import until

from oma_core import AgentConfig, OpenMultiAgent, load_messages
from oma_core.errors import CheckpointError, LeaseHeldError, ResumeMissingError, UnknownRunError
from oma_core.serialization import dump_messages
from oma_core.stores import MemoryRunStore, SQLiteRunStore, StoredRun

CHILD = Path(durable_child.__file__)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteRunStore]:
    kept = SQLiteRunStore(tmp_path / "runs.db")
    yield kept
    asyncio.run(kept.aclose())


def _kill_at(tmp_path: Path, stop: str, line: str) -> tuple[str, Path]:
    """Start the child run, wait for it to print ``line`` (it then waits at ``stop``), kill
    it with SIGKILL; the run's id and its tool's log."""
    run_id, log = f"run-{stop}", tmp_path / f"{stop}.log"
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path / "runs.db"), run_id, str(log), stop],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == line + "\n"  # blocks until the child says it
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=60) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)
        assert process.stdout is not None
        process.stdout.close()
    return run_id, log


def _uninterrupted(tmp_path: Path) -> Any:
    """The run, in one life, on a store of its own."""

    async def main() -> Any:
        store = SQLiteRunStore(tmp_path / "reference.db")
        try:
            oma = OpenMultiAgent(store=store)
            config = durable_child.make_config(tmp_path / "reference.log")
            return await oma.run_agent(config, "add 1, 2 and 3")
        finally:
            await store.aclose()

    return asyncio.run(main())


def _done(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("done")]


@pytest.mark.parametrize(
    ("stop", "line", "started"),
    [
        # killed while waiting for the second model call: both tools of turn 1 checkpointed
        ("model", "in model call 1", ["c1", "c2", "c3"]),
        # killed after c1's result was checkpointed, before c2 started
        ("checkpoint", "checkpointed a tool result", ["c1", "c2", "c3"]),
        # killed inside c2: it runs again, with the same call id (its side effect is
        # idempotent by that id)
        ("tool", "in tool c2", ["c1", "c2", "c2", "c3"]),
    ],
)
def test_a_killed_run_resumes_to_the_uninterrupted_result_each_side_effect_once(
    tmp_path: Path, store: SQLiteRunStore, stop: str, line: str, started: list[str]
) -> None:
    reference = _uninterrupted(tmp_path)
    run_id, log = _kill_at(tmp_path, stop, line)
    kept = asyncio.run(store.load(run_id))
    assert kept is not None and kept.status == "running"

    async def resume() -> Any:
        oma = OpenMultiAgent(store=store)
        return await oma.resume(run_id, config=durable_child.make_config(log))

    result = asyncio.run(resume())
    assert result.status.code == "ok" and result.run_id == run_id
    assert result.output == reference.output == "the total is 6"
    assert dump_messages(result.messages) == dump_messages(reference.messages)
    assert result.usage == reference.usage  # summed over both lives, no call counted twice
    assert _done(log) == ["done c1", "done c2", "done c3"]
    assert [entry.split()[1] for entry in log.read_text().splitlines() if "start" in entry] == (
        started
    )
    again = asyncio.run(OpenMultiAgent(store=store).resume(run_id))  # finished: read back
    assert again.output == reference.output and again.usage == reference.usage
    assert again.model == result.model == reference.model is not None  # who answered, kept
    assert _done(log) == ["done c1", "done c2", "done c3"]


# -- resume's errors ---------------------------------------------------------------------------


def _config(responses: list[Any], **fields: Any) -> AgentConfig:
    return AgentConfig(
        name="a", provider="scripted", provider_options={"responses": responses}, **fields
    )


async def test_an_unknown_run_is_an_unknown_run_error() -> None:
    with pytest.raises(UnknownRunError) as caught:
        await OpenMultiAgent(store="memory").resume("nope")
    assert caught.value.run_id == "nope"


async def test_a_tampered_or_other_version_checkpoint_fails_closed() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    result = await oma.run_agent(_config(["hello alice"]), "hi")
    kept = await store.load(result.run_id or "")
    assert kept is not None
    for bad in (
        kept.checkpoint.replace(b"alice", b"mallory"),
        kept.checkpoint.replace(b'"oma_checkpoint":1', b'"oma_checkpoint":2'),
    ):
        await store.save(StoredRun(kept.run_id, "agent", "running", bad, 0.0, 0.0))
        with pytest.raises(CheckpointError):
            await oma.resume(kept.run_id)


async def test_a_resume_names_what_the_checkpoint_cannot_hold(tmp_path: Path) -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    # an unfinished run: its checkpoint after the first model turn, tools named
    tools_config = durable_child.make_config(tmp_path / "log")
    config = _config([durable_child.RESPONSES[0]], tools=tools_config.tools)
    first = await oma.run_agent(config, "go")
    assert first.status.code == "error"  # the script ran out after turn 1's tools
    kept = await store.load(first.run_id or "")
    assert kept is not None and kept.status == "error"
    # rewind it to a running run: what a crash leaves
    from oma_core._checkpoints import decode, encode

    state = decode(kept.run_id, kept.checkpoint)
    state["status"] = "running"
    await store.save(StoredRun(kept.run_id, "agent", "running", encode(state), 0.0, 0.0))
    with pytest.raises(ResumeMissingError) as caught:
        await oma.resume(kept.run_id)
    assert "bump" in caught.value.missing
    with pytest.raises(ResumeMissingError, match="bump"):
        await oma.resume(kept.run_id, config=_config(["x"]))
    with pytest.raises(ResumeMissingError, match="provider options"):
        state["agent"]["tools"] = []
        await store.save(StoredRun(kept.run_id, "agent", "running", encode(state), 0.0, 0.0))
        await oma.resume(kept.run_id)


async def test_a_run_another_worker_resumes_is_refused_with_lease_held() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    result = await oma.run_agent(_config(["hi"]), "hi")
    from oma_core._checkpoints import decode, encode

    kept = await store.load(result.run_id or "")
    assert kept is not None
    state = decode(kept.run_id, kept.checkpoint)
    state["status"] = "running"
    await store.save(StoredRun(kept.run_id, "agent", "running", encode(state), 0.0, 0.0))
    await store.acquire(kept.run_id, "another worker", 60)
    with pytest.raises(LeaseHeldError) as caught:
        await oma.resume(kept.run_id, config=_config(["hi"]))
    assert caught.value.owner == "another worker"


async def test_media_is_stored_once_by_reference_not_in_each_checkpoint(png_base64: str) -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    image["source"]["data"] = png_base64  # type: ignore[index]
    conversation = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "what is it?"}, image]}]
    )
    result = await oma.run_agent(_config(["a cat"]), conversation)
    assert result.output == "a cat"
    kept = await store.load(result.run_id or "")
    assert kept is not None and kept.status == "ok"
    assert png_base64[:200].encode() not in kept.checkpoint
    assert b'"type":"stored"' in kept.checkpoint
    again = await oma.resume(kept.run_id)
    assert again.output == "a cat"


async def test_without_a_store_a_run_keeps_nothing_and_has_no_run_id() -> None:
    result = await OpenMultiAgent().run_agent(_config(["hi"]), "hi")
    assert result.output == "hi" and result.run_id is None
    with pytest.raises(Exception, match="run store"):
        await OpenMultiAgent().resume("any")


async def test_a_cancelled_run_resumes_from_its_last_checkpoint(tmp_path: Path) -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    log = tmp_path / "cancelled.log"
    config = durable_child.make_config(log, "model")  # waits in its second model call
    provider = config.provider
    run = asyncio.create_task(oma.run_agent(config, "add 1, 2 and 3", run_id="cancelled"))
    await until(lambda: provider.calls == 2)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    kept = await store.load("cancelled")
    assert kept is not None and kept.status == "running"
    result = await oma.resume("cancelled", config=durable_child.make_config(log))
    assert result.output == "the total is 6"
    assert _done(log) == ["done c1", "done c2", "done c3"]


async def test_a_checkpoint_never_holds_a_key_or_provider_options() -> None:
    store = MemoryRunStore()
    config = AgentConfig(
        name="a",
        provider="scripted",
        api_key="sk-test-KEY-4f1d",
        provider_options={"responses": ["hi", "OPTION-9c2e"]},
    )
    result = await OpenMultiAgent(store=store).run_agent(config, "hello")
    assert result.output == "hi"
    kept = await store.load(result.run_id or "")
    assert kept is not None and kept.status == "ok"
    assert b"KEY-4f1d" not in kept.checkpoint and b"OPTION-9c2e" not in kept.checkpoint


async def test_a_run_that_failed_before_its_first_turn_resumes_to_its_stored_result() -> None:
    oma = OpenMultiAgent(store=MemoryRunStore())
    failed = await oma.run_agent(_config([]), "hi", run_id="first-call")  # no reply scripted
    assert failed.status.code == "error" and failed.run_id == "first-call"
    again = await oma.resume("first-call")  # nothing produced: an empty conversation kept
    assert again.status.code == "error" and again.output == failed.output


async def test_a_config_rebuilt_from_its_checkpoint_keeps_cache_and_fallbacks() -> None:
    from oma_core._durable import open_run

    store = MemoryRunStore()
    config = AgentConfig(name="a", provider="echo", cache="auto", fallback_models=("scripted",))
    result = await OpenMultiAgent(store=store).run_agent(config, "hello", run_id="kept")
    assert result.success
    rebuilt = (await open_run(store, "kept")).config(None)
    assert rebuilt.cache == "auto" and rebuilt.fallback_models == ("scripted",)


async def test_a_resumed_run_s_per_run_budget_counts_the_first_life_s_spending(
    tmp_path: Path,
) -> None:
    # turns cost 110, 112 and 114 tokens: a cap of 230 stops the run after its third turn,
    # in one life or two (a fresh ledger would see 112 + 114 = 226 and let it finish)
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store, max_token_budget=230)
    reference = await OpenMultiAgent(max_token_budget=230).run_agent(
        durable_child.make_config(tmp_path / "reference.log"), "add 1, 2 and 3"
    )
    assert reference.status.code == "budget_exhausted"
    log = tmp_path / "budget.log"
    config = durable_child.make_config(log, "model")  # waits in its second model call
    provider = config.provider
    run = asyncio.create_task(oma.run_agent(config, "add 1, 2 and 3", run_id="capped"))
    await until(lambda: provider.calls == 2)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    result = await oma.resume("capped", config=durable_child.make_config(log))
    assert result.status.code == "budget_exhausted"
    assert result.usage == reference.usage


async def test_a_finished_run_keeps_its_structured_output_validated_again_on_resume() -> None:
    import attrs as attrs_

    @attrs_.frozen
    class Total:
        total: int

    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    typed = _config(['{"total": 6}'], output_type=Total)
    first = await oma.run_agent(typed, "add", run_id="typed")
    assert first.structured == Total(6)
    again = await oma.resume("typed", config=typed)
    assert again.structured == Total(6) and again.output == first.output
    plain = await oma.resume("typed")  # no output type given: its text only
    assert plain.structured is None and plain.output == '{"total": 6}'

    @attrs_.frozen
    class Named:
        name: str

    with pytest.raises(CheckpointError, match="output type"):
        await oma.resume("typed", config=_config(["x"], output_type=Named))
