"""Durable agent runs: the recorder a run reports its steps to, and what ``resume`` reads back.

With ``OpenMultiAgent(store=...)``, ``run_agent`` hands its run a ``Recorder`` (``handing``;
the agent puts it in ``RunContext.state`` under ``RECORDER``). The run reports to it when it
starts, after every model turn and after every tool result; each report saves one checkpoint
(``_checkpoints.encode``: versioned, digested JSON, media by reference) replacing the last, in
one atomic ``RunStore.save``. Without a store there is no recorder and the run pays one
``dict.get``. An external agent's run (``backend=``) reports no steps: it is checkpointed
as it starts (``Recorder.begun``) and as it ends, and a resume runs it again from its start.
Every checkpoint holds the shared ``Budget`` the run is charged to (``budget_json``), so a
resume goes on from what was spent (``continued_budget``).

``open_run`` reads a run back for ``resume``: the checkpoint, checked (``CheckpointError``
when it is not exactly what was written), the decisions on its approval requests (stored
first: the first stored wins), and the agent config to continue with (what a checkpoint
cannot hold — tools, provider objects, output types — comes from the ``config`` given again;
``ResumeMissingError`` names what is missing). A recorder made from it restores the run's
turns, usage and the tool results of the round under way, so no checkpointed tool runs twice.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from ._approvals import ApprovalRequest, as_approval, canonical_json, decision_record
from ._checkpoints import MediaRefs, decode, encode
from ._results import RunResult, RunStatus
from ._run_store import StoredRun
from .errors import (
    ApprovalMismatchError,
    CheckpointError,
    ResumeMissingError,
    RunError,
    UnknownApprovalError,
    UnknownRunError,
)
from .messages import LLMMessage, ToolResultBlock, ToolUseBlock
from .providers import Usage
from .redaction import redact_error

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._run_store import RunStore
    from .budgets import Budget

__all__ = [
    "FINISHED",
    "RECORDER",
    "OpenedRun",
    "Recorder",
    "budget_json",
    "config_from",
    "continued_budget",
    "handing",
    "open_run",
    "read_state",
    "recorded_usage",
    "taken",
]

#: The ``RunContext.state`` key a durable run's recorder is kept under.
RECORDER = "oma.durable"
#: Stored statuses of a run that ended: resuming it returns its result.
FINISHED = ("ok", "error", "timeout", "budget_exhausted")
#: How long a resume's lease lasts; it is renewed at checkpoints once half of it has passed.
LEASE_SECONDS = 120.0

_handed: ContextVar[Recorder | None] = ContextVar("oma_durable_recorder", default=None)


@contextmanager
def handing(recorder: Recorder) -> Iterator[None]:
    """Hand ``recorder`` to the run started (awaited) inside this block."""
    token = _handed.set(recorder)
    try:
        yield
    finally:
        _handed.reset(token)


def taken() -> Recorder | None:
    """The recorder handed to the run starting now, if any; taken once, so a run a tool
    starts inside it gets none."""
    recorder = _handed.get()
    if recorder is not None:
        _handed.set(None)
    return recorder


def config_head(config: AgentConfig) -> dict[str, Any]:
    """The plain part of ``config`` a checkpoint holds (never a key, a base URL or provider
    options, which may carry secrets), and what it cannot hold, by name."""
    provider = config.provider if isinstance(config.provider, str) else None
    return {
        "name": config.name,
        "provider": provider,
        "model": config.model,
        "system_prompt": config.system_prompt,
        "max_turns": config.max_turns,
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "stop": None if config.stop is None else list(config.stop),
        "thinking": config.thinking,
        "cache": config.cache,
        "fallback_models": list(config.fallback_models),
        "output_retries": config.output_retries,
        "output_mode": config.output_mode,
        "tools": [_tool_name(found) for found in config.tools],
        "backend": None if config.backend is None else str(config.backend["kind"]),
        "held": _held(config),
    }


def _tool_name(found: object) -> str:
    """A config's tool's name: a ``Tool``'s own, a function's ``__name__``."""
    name = getattr(found, "name", None)
    return name if isinstance(name, str) else str(getattr(found, "__name__", "?"))


def _held(config: AgentConfig) -> list[str]:
    """What of ``config`` a checkpoint cannot hold, as ``ResumeMissingError`` names it."""
    held = []
    if config.backend is not None:  # its options may name a command, an environment, a key
        held.append(f"the backend {config.backend['kind']!r} (config=AgentConfig(backend=...))")
    elif not isinstance(config.provider, str):
        held.append("the provider object (config=AgentConfig(provider=...))")
    if config.output_type is not None:
        held.append("the output type (config=AgentConfig(output_type=...))")
    if config.provider_options:
        held.append("the provider options (config=AgentConfig(provider_options=...))")
    if config.base_url is not None:
        held.append("the base URL (config=AgentConfig(base_url=...))")
    if config.before_run is not None or config.history:
        held.append("the agent config (config=AgentConfig(...))")
    return held


def _usage(data: Mapping[str, Any]) -> Usage:
    return Usage(**{field: int(data.get(field, 0)) for field in attrs.fields_dict(Usage)})


def recorded_usage(state: Mapping[str, Any]) -> Usage:
    """What the earlier lives of a run spent, as its checkpoint ``state`` holds it."""
    return _usage(state["usage"])


def _cap(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def budget_json(budget: Budget | None) -> dict[str, Any] | None:
    """The shared ``Budget`` of a run as a checkpoint holds it: its caps and what was spent
    against it when the checkpoint was written (an infinite cap is no cap: None)."""
    if budget is None:
        return None
    return {
        "max_tokens": _cap(budget.max_tokens),
        "max_cost": _cap(budget.max_cost),
        "used_tokens": int(budget.used_tokens),
        "used_cost": float(budget.used_cost) if math.isfinite(budget.used_cost) else None,
    }


def continued_budget(saved: Mapping[str, Any] | None, given: Budget | None) -> Budget | None:
    """The shared ``Budget`` a resumed run goes on with: ``given`` (its caps win) charged up
    to what the checkpoint ``saved`` says was spent (the same object, still in this process,
    has spent that much already: it is left as it is), else one rebuilt from ``saved``."""
    if saved is None:
        return given
    tokens = int(saved["used_tokens"])
    cost = math.inf if saved["used_cost"] is None else float(saved["used_cost"])
    if given is None:
        from .budgets import Budget

        given = Budget(max_tokens=saved["max_tokens"], max_cost=saved["max_cost"])
    given.used_tokens = max(given.used_tokens, tokens)
    given.used_cost = max(given.used_cost, cost)
    return given


class Recorder:
    """Where one durable agent run reports its steps; each report is one checkpoint.

    ``decisions`` are the approval decisions kept for the run (by call id); ``restored`` the
    state of the run's earlier life when it is resumed (None for a fresh run).
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        head: Mapping[str, Any],
        *,
        restored: Mapping[str, Any] | None = None,
        decisions: Mapping[str, Mapping[str, Any]] | None = None,
        lease: str | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.head = dict(head)
        self.restored = restored
        #: The shared ``Budget`` the run is charged to (``budget=``): each checkpoint holds
        #: what was spent against it, so a resume goes on from there.
        self.budget = budget
        self.decisions = dict(decisions or {})
        self.requested: list[str] = [] if restored is None else list(restored["requested"])
        self.round: list[ToolResultBlock] = []
        self.turns = self.corrections = 0
        #: The run reporting here (a ``Run``), once it started.
        self.run: Any = None
        self._media = MediaRefs(store, run_id)
        self._input: list[dict[str, Any]] = []
        # The run's turns as checkpoints hold them, each encoded (canonical JSON, media by
        # reference) once, and the messages they are, by identity.
        self._encoded: list[str] = []
        self._seen: list[LLMMessage] = []
        self._created = time.time() if restored is None else float(restored["created"])
        if restored is not None:  # a run that does not restore (a backend's) keeps it too
            self._input = list(restored["input"])
        self._lease = lease
        self._replaying = False
        self._renew_at = 0.0 if lease is None else asyncio.get_running_loop().time()

    @property
    def resuming(self) -> bool:
        return self.restored is not None

    # -- what the run reports ------------------------------------------------------------------

    async def started(self, run: Any, messages: tuple[LLMMessage, ...]) -> None:
        """A fresh run starts on ``messages`` (its input after the ``before_run`` hooks)."""
        self.run = run
        self._input = await self._media.dump(messages)
        await self.save(run)

    async def begun(self, messages: tuple[LLMMessage, ...]) -> None:
        """An external agent's run (``backend=``) starts on ``messages``: its one checkpoint
        before it ends (a backend's turn is not oma's to checkpoint as it goes)."""
        self._input = await self._media.dump(messages)
        await self.save(_Ended([], Usage(), 0, "", None))

    async def turned(self, run: Any, turns: int, corrections: int) -> None:
        """A model turn arrived (``run.produced[-1]``); its tool round is not under way yet
        (unless the turn is a resumed run's replayed one: its round's results are kept)."""
        self.turns, self.corrections = turns, corrections
        if self._replaying:
            self._replaying = False
            return
        self.round = []
        await self.save(run)

    async def tool_done(self, run: Any, results: list[ToolResultBlock]) -> None:
        """A tool result arrived: ``results`` are the round's results so far (with those
        a resumed run's checkpoint held for calls further on, kept: none of them runs again)."""
        known = {block.tool_use_id for block in results}
        self.round = [*results, *(block for block in self.round if block.tool_use_id not in known)]
        await self.save(run)

    async def save(
        self, run: Any, status: str = "running", extra: Mapping[str, Any] | None = None
    ) -> None:
        """One checkpoint of ``run`` as it stands, replacing the last (atomically)."""
        produced, seen = run.produced, self._seen
        same = 0  # messages are immutable: only the ones new or replaced since are dumped
        limit = min(len(produced), len(seen))
        while same < limit and produced[same] is seen[same]:
            same += 1
        if same < len(seen) or same < len(produced):
            del seen[same:], self._encoded[same:]
            dumped = await self._media.dump(produced[same:])
            self._encoded += [canonical_json(message) for message in dumped]
            seen += produced[same:]
        round_: list[Any] = []
        if self.round:
            (results,) = await self._media.dump([LLMMessage("user", tuple(self.round))])
            round_ = results["content"]
        state = {
            "kind": "agent",
            "status": status,
            "created": self._created,
            "agent": self.head,
            "input": self._input,
            "round": round_,
            "usage": attrs.asdict(run.usage),
            "tool_calls": run.tool_calls,
            "turns": self.turns,
            "corrections": self.corrections,
            "output": run.output,
            "stop_reason": run.stop_reason,
            "requested": self.requested,
            "pending": [],
            "result": None,
            "budget": budget_json(self.budget),
            **(extra or {}),
        }
        pending = len(state["pending"])
        turns = {"produced": "[" + ",".join(self._encoded) + "]"}
        data = encode(state, turns)
        stored = StoredRun(
            self.run_id, "agent", status, data, self._created, time.time(), None, pending
        )
        await self.store.save(stored)
        await self._renew()

    async def finish(self, result: RunResult) -> None:
        """The run ended (or suspended) with ``result``: its last checkpoint (a run that
        failed before it started, in a ``before_run`` hook, is kept as its result says)."""
        run = self.run
        if run is None:
            run = _Ended(list(result.messages), result.usage, 0, result.output, None)
        code = result.status.code
        self.requested += [request.call_id for request in result.pending]
        error = result.status.error
        structured = None
        if result.structured is not None:  # kept as JSON; re-validated when read back
            from ._output import output_json

            structured = json.loads(output_json(result.structured))
        extra = {
            "pending": [request.to_json() for request in result.pending],
            "result": {
                "success": result.success,
                "error": None if error is None else _plain_error(error),
                "structured": structured,
                "model": result.model,
            },
        }
        await self.save(run, code, extra)

    async def _renew(self) -> None:
        if self._lease is None:
            return
        now = asyncio.get_running_loop().time()
        if now >= self._renew_at:
            await self.store.acquire(self.run_id, self._lease, LEASE_SECONDS)
            self._renew_at = now + LEASE_SECONDS / 2

    # -- a resumed run -------------------------------------------------------------------------

    async def restore(self, run: Any) -> tuple[tuple[LLMMessage, ...], LLMMessage | None]:
        """Put the earlier life's state into ``run``; the run's input, and its last model
        turn when that turn's tool round (or its verdict) is still to come (it is replayed,
        not asked again)."""
        state = self.restored
        assert state is not None
        self.run = run
        self._input = list(state["input"])
        messages = await self._media.load(state["input"])
        produced = list(await self._media.load(state["produced"]))
        self._encoded = [canonical_json(message) for message in state["produced"]]
        self._seen = list(produced)
        run.usage = _usage(state["usage"])
        run.tool_calls = int(state["tool_calls"])
        run.output = str(state["output"])
        run.stop_reason = state["stop_reason"]
        self.turns, self.corrections = int(state["turns"]), int(state["corrections"])
        if state["round"]:
            (answered,) = await self._media.load([{"role": "user", "content": state["round"]}])
            self.round = [block for block in answered.content if isinstance(block, ToolResultBlock)]
        replay = None
        if produced and produced[-1].role == "assistant":
            replay = produced.pop()
            self._replaying = True
            self.turns -= 1  # counted again as it is replayed
        run.produced = produced
        return messages, replay

    def done_results(self) -> dict[str, ToolResultBlock]:
        """The results of the round under way that a checkpoint holds, by call id."""
        return {block.tool_use_id: block for block in self.round}


@attrs.define
class _Ended:
    """What a checkpoint reads of a run, for a run that ended before it started."""

    produced: list[LLMMessage]
    usage: Usage
    tool_calls: int
    output: str
    stop_reason: str | None


def _plain_error(error: BaseException) -> dict[str, Any]:
    redacted = redact_error(error)
    return {"type": type(error).__name__, "message": str(redacted)}


# -- reading a run back ------------------------------------------------------------------------


@attrs.frozen
class OpenedRun:
    """A durable run read back from its store and checked: its ``state`` (the checkpoint)."""

    run_id: str
    state: Mapping[str, Any]

    @property
    def finished(self) -> bool:
        return self.state["status"] in FINISHED

    def pending(self) -> tuple[ApprovalRequest, ...]:
        return tuple(ApprovalRequest.from_json(data) for data in self.state["pending"])

    async def input(self, store: RunStore) -> tuple[LLMMessage, ...]:
        """The run's input (after its ``before_run`` hooks), media read back."""
        return await MediaRefs(store, self.run_id).load(self.state["input"])

    async def result(self, store: RunStore, output_type: Any = None) -> RunResult:
        """The stored result of a finished run. Its ``structured`` output is kept as JSON
        and validated again against ``output_type`` (the type cannot be stored); without
        one it is None. ``CheckpointError`` when the kept output does not validate."""
        state = self.state
        media = MediaRefs(store, self.run_id)
        produced = list(await media.load(state["produced"]))
        kept = state["result"] or {}
        error_data = kept.get("error")
        error = None
        if error_data is not None:
            error = RunError(f"{error_data['type']}: {error_data['message']}")
        return RunResult(
            bool(kept.get("success")),
            str(state["output"]),
            produced,
            _usage(state["usage"]),
            RunStatus(state["status"], error),
            self._structured(kept.get("structured"), output_type),
            run_id=self.run_id,
            model=kept.get("model"),
        )

    def _structured(self, value: Any, output_type: Any) -> Any:
        if value is None or output_type is None:
            return None
        from ._output import OutputInvalid, output_spec

        spec = output_spec(output_type)
        assert spec is not None
        try:
            return spec.validate(value)
        except OutputInvalid as invalid:
            reason = f"its output does not validate as the output type given: {invalid}"
            raise CheckpointError(self.run_id, reason) from None

    async def decide(self, store: RunStore, approvals: Mapping[str, Any] | None) -> None:
        """Store the decisions of ``approvals`` on this run's requests (the first stored
        wins); ``UnknownApprovalError`` for a call the run never asked about, and
        ``ApprovalMismatchError`` when a kept decision was made for another call."""
        requests = {request.call_id: request for request in self.pending()}
        requested = set(self.state["requested"])
        given = {
            call_id: as_approval(value, call_id) for call_id, value in (approvals or {}).items()
        }
        for call_id in given:  # all checked before any is stored
            if call_id not in requests and call_id not in requested:
                raise UnknownApprovalError(self.run_id, call_id)
        for call_id, approval in given.items():
            request = requests.get(call_id)
            if request is not None:  # else decided already, and the run went on past it
                await store.decide(self.run_id, call_id, decision_record(approval, request.digest))
        kept = await store.decisions(self.run_id)
        for call_id, request in requests.items():
            decision = kept.get(call_id)
            if decision is not None and decision.get("digest") != request.digest:
                raise ApprovalMismatchError(self.run_id, call_id)

    def config(self, given: AgentConfig | None) -> AgentConfig:
        """The agent config to continue with: ``given`` (which must hold the tools the run
        used), or one rebuilt from the checkpoint when it held all of it."""
        return config_from(self.run_id, self.state["agent"], given)


def config_from(
    run_id: str, head: Mapping[str, Any], given: AgentConfig | None, where: str = "config"
) -> AgentConfig:
    """The agent config a run whose checkpoint holds ``head`` (``config_head``) goes on
    with: ``given`` (which must hold the tools the run used), or one rebuilt from ``head``
    when it held all of it; ``ResumeMissingError`` names what is missing (``where``: how the
    config is given again, for the message)."""
    tools = list(head["tools"])
    if given is not None:
        kind = None if given.backend is None else str(given.backend["kind"])
        if kind != head.get("backend"):  # .get: checkpoints written before it was kept
            ran = head.get("backend")
            said = "a model" if ran is None else f"the backend {ran!r}"
            raise CheckpointError(run_id, f"it ran on {said}; the config given does not")
        names = {_tool_name(found) for found in given.tools}
        missing = [name for name in tools if name not in names]
        if missing:
            raise ResumeMissingError(run_id, f"the tools {missing!r} (in {where})")
        return given
    if tools:
        if where == "config":
            raise ResumeMissingError(run_id, f"the tools {tools!r} (config=AgentConfig(tools=...))")
        raise ResumeMissingError(run_id, f"agent {head['name']!r}'s tools {tools!r} ({where})")
    if head["held"]:
        raise ResumeMissingError(run_id, head["held"][0])
    return _rebuilt(head)


def _rebuilt(head: Mapping[str, Any]) -> AgentConfig:
    """An agent config made again from a checkpoint's ``config_head``."""
    from ._config import AgentConfig

    fields = ("model", "system_prompt", "max_turns", "max_tokens", "temperature")
    return AgentConfig(
        name=head["name"],
        provider=head["provider"],
        stop=head["stop"],
        thinking=head["thinking"],
        cache=head.get("cache"),  # .get: checkpoints written before these were kept
        fallback_models=tuple(head.get("fallback_models", ())),
        output_retries=head["output_retries"],
        **{field: head[field] for field in fields},
    )


async def read_state(store: RunStore, run_id: str) -> dict[str, Any]:
    """The checked checkpoint state of ``run_id`` (any kind): ``UnknownRunError`` when
    ``store`` holds no such run, ``CheckpointError`` when it fails its checks."""
    stored = await store.load(run_id)
    if stored is None:
        raise UnknownRunError(run_id)
    return decode(run_id, stored.checkpoint)


async def open_run(store: RunStore, run_id: str) -> OpenedRun:
    """``run_id`` read back from ``store``: ``UnknownRunError`` when it holds no such run,
    ``CheckpointError`` when its checkpoint fails its checks or is not an agent run's."""
    state = await read_state(store, run_id)
    if state.get("kind") != "agent":
        raise CheckpointError(run_id, f"it is a {state.get('kind')!r} run, not an agent run")
    needed = ("status", "agent", "input", "produced", "round", "usage", "requested", "pending")
    if any(key not in state for key in needed):
        raise CheckpointError(run_id, "it lacks part of an agent run's state")
    return OpenedRun(run_id, state)


def request_for(run: Any, block: ToolUseBlock, digest: str) -> ApprovalRequest:
    """The ``ApprovalRequest`` for the call ``block`` of ``run`` (a ``Run``)."""
    context = run.context
    return ApprovalRequest(
        context.run_id,
        block.id,
        block.name,
        block.plain_input(),
        context.config.name,
        context.settings.task,
        digest,
    )
