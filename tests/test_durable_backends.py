"""A durable ``run_agent`` on an external agent (``backend=``): checkpointed as it starts and
as it ends, since a backend's steps are its own. A finished run is read back, not run again;
one interrupted is run again from its start, and says so (``run_resumed`` with
``from_start``); its backend, whose options a checkpoint does not hold, is given again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from _builders import builtin_host

from oma_core import AgentConfig, BackendSpec, OpenMultiAgent, ProgressEvent, hookimpl
from oma_core.backends import BackendRequest, BackendResult
from oma_core.errors import CheckpointError, ResumeMissingError
from oma_core.providers import TextDelta, Usage
from oma_core.stores import MemoryRunStore


class HeldBackend:
    """Answers ``re:<prompt>``; while ``hold`` is set, a turn waits at its start (``started``
    says it is there) until it is cancelled."""

    kind = display_name = "held"

    def __init__(self, plugin: HeldBackendPlugin) -> None:
        self.plugin = plugin

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self.plugin.prompts.append(request.prompt)
        if self.plugin.hold:
            self.plugin.started.set()
            await asyncio.Event().wait()  # until cancelled
        yield TextDelta("re:" + request.prompt)
        yield BackendResult(output="re:" + request.prompt, usage=Usage(5, 2))

    async def aclose(self) -> None:
        return None


class HeldBackendPlugin:
    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.started = asyncio.Event()
        self.prompts: list[str] = []

    def _factory(self, options: Mapping[str, Any]) -> HeldBackend:
        return HeldBackend(self)

    @hookimpl
    def oma_register_backends(self) -> list[BackendSpec]:
        return [BackendSpec(kind="held", display_name="Held", factory=self._factory)]


CONFIG = AgentConfig(name="outside", backend={"kind": "held", "command": ["agent", "--key=x"]})


async def test_a_finished_backend_run_is_kept_and_read_back_not_run_again() -> None:
    store = MemoryRunStore()
    plugin = HeldBackendPlugin()
    oma = OpenMultiAgent(store=store, plugins=builtin_host(plugin))
    result = await oma.run_agent(CONFIG, "hello")
    assert result.output == "re:hello" and result.run_id is not None
    kept = await store.load(result.run_id)
    assert kept is not None and (kept.kind, kept.status) == ("agent", "ok")
    assert b"--key=x" not in kept.checkpoint  # the backend's options are not kept
    again = await oma.resume(result.run_id)  # finished: no config needed
    assert again.output == "re:hello" and again.usage == Usage(5, 2)
    assert plugin.prompts == ["hello"]


async def test_an_interrupted_backend_run_runs_again_from_its_start_and_says_so() -> None:
    store = MemoryRunStore()
    first = HeldBackendPlugin(hold=True)
    oma = OpenMultiAgent(store=store, plugins=builtin_host(first))
    run = asyncio.create_task(oma.run_agent(CONFIG, "hello", run_id="out-1"))
    await first.started.wait()
    kept = await store.load("out-1")  # checkpointed as it started
    assert kept is not None and kept.status == "running"
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    events: list[ProgressEvent] = []
    second = HeldBackendPlugin()
    oma = OpenMultiAgent(events.append, store=store, plugins=builtin_host(second))
    with pytest.raises(ResumeMissingError, match="backend 'held'"):
        await oma.resume("out-1")  # its options are not in the checkpoint
    with pytest.raises(CheckpointError, match="backend 'held'"):
        await oma.resume("out-1", config=AgentConfig(name="outside", provider="echo"))
    resumed = await oma.resume("out-1", config=CONFIG)
    assert resumed.success and resumed.output == "re:hello" and resumed.run_id == "out-1"
    assert second.prompts == ["hello"]  # the same input, from the start
    (said,) = [event for event in events if event.type == "run_resumed"]
    assert said.run_id == "out-1" and said.data["from_start"] is True
    assert "runs again from its start" in said.data["message"]
    kept = await store.load("out-1")
    assert kept is not None and kept.status == "ok"
    assert (await oma.resume("out-1")).output == "re:hello"  # now read back
