"""One agent run, top to bottom: what the built-in implementation of the ``oma_run`` hook
(``default_plugins/run``) does.

The agent resolves the run's target and calls ``oma_run`` (``Agent.run``/``stream``/
``prompt``); pluggy composes the run wrappers (progress, the run span, evaluation, closing)
around the built-in implementation, ``Run(run).events()``, which does the run: the
``before_run`` hooks, then the model loop (or the external agent's turn), then the result.
Every model call (each attempt) goes through the ``oma_model_call`` hook and every tool call
through ``oma_tool_call``, so
middleware — the core's budgets, tracing and progress, or a plugin's cache — sees them all;
this module knows none of them. Nothing here raises for a provider, hook, tool or limit
failure: the run ends with a failed ``RunResult``. Only cancellation propagates, after the
call's stream was closed.

Limits: the run's deadline is computed once, when it starts, and each attempt's once, when it
starts, as the earlier of the run's and ``call_timeout`` after now (comparing deadlines, never
subtracting clock values). They apply around each await, never across a ``yield``: the
caller's own code between two stream events is never cancelled by oma's timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from ._approvals import call_digest, needs_approval
from ._before_run import NamedHook, apply_before_run
from ._calls import ModelCall, RunContext, RunHooks, RunInput, ToolInvocation
from ._durable import RECORDER, request_for
from ._output import OutputMode, OutputSpec, choose_mode, output_spec
from ._output_modes import (
    TEXT_OUTPUT,
    OutputHandler,
    PromptedOutput,
    Verdict,
    output_handler,
    with_instructions,
)
from ._reasoning import for_provider
from ._results import RunResult, RunStatus, StreamEvent
from ._usage import charged_usage, reported_usage
from .errors import (
    ApprovalMismatchError,
    ApprovalUnavailableError,
    HookError,
    MaxTurnsExceededError,
    OutputValidationError,
    ProviderError,
    RunTimeoutError,
)
from .messages import (
    LLMMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    prompt_of,
    text_of,
    user_text,
)
from .providers import (
    ProviderRequest,
    ProviderResponse,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
    Usage,
)
from .redaction import detached_error, redact_error
from .tools import list_toolsets

if TYPE_CHECKING:
    from ._approvals import ApprovalRequest
    from ._durable import Recorder
    from ._pool import Closables
    from .capabilities import BackendSpec, Capabilities
    from .tools import Tool

__all__ = ["BackendTarget", "ModelTarget", "Run", "RunInput", "with_instructions", "with_output"]

T = TypeVar("T")

_NO_USAGE = Usage()
_OK = RunStatus("ok", None)


@attrs.frozen
class ModelTarget:
    """Everything a model run needs from its agent, resolved once before the run starts.

    ``owned``: the provider was made for this target (not the caller's object, not a pool's)
    and ``aclose`` closes it; ``close_after_run``: the run that uses it closes it when it ends
    (an agent made for one run, as ``OpenMultiAgent.run_agent`` makes). ``fallbacks``: the
    config's ``fallback_models``, each a name and what makes its target (when the run falls
    back to it, never before).
    """

    provider: Any
    provider_name: str
    capabilities: Capabilities
    display_name: str
    model: str | None
    system_prompt: str | None
    tools: Mapping[str, Tool]
    tool_defs: tuple[ToolDefinition, ...]
    max_turns: int
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] | None = None
    thinking: str | int | None = None
    cache: Literal["auto"] | None = None
    owned: bool = False
    close_after_run: bool = False
    toolsets: tuple[Any, ...] = ()
    opened: Closables | None = None
    fallbacks: tuple[tuple[str, Callable[[], ModelTarget]], ...] = ()

    def call(self, request: ProviderRequest, stream: bool) -> ModelCall:
        """The model call that sends ``request`` to this target."""
        return ModelCall(
            request, "model", self.provider_name, self.display_name, self.provider, stream=stream
        )

    def request(
        self,
        messages: tuple[LLMMessage, ...],
        tool_defs: tuple[ToolDefinition, ...] | None = None,
    ) -> ProviderRequest:
        """The model call for ``messages`` with this agent's settings (and ``tool_defs``, the
        tools listed for this call, in place of the agent's own)."""
        return ProviderRequest(
            self.model,
            self.capabilities.outgoing(messages),  # CachePoint hints only where carried
            self.system_prompt,
            self.tool_defs if tool_defs is None else tool_defs,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stop=self.stop,
            thinking=self.thinking,
            cache=self.cache,
        )

    async def listed_tools(self) -> tuple[Mapping[str, Tool], tuple[ToolDefinition, ...]]:
        """The agent's tools and their definitions with its toolsets' tools listed now.

        Each toolset is handed to its owner on first use, which closes it (``aclose``). Raises
        ``ToolError`` when two tools would share a name.
        """
        if self.opened is not None:
            for toolset in self.toolsets:
                self.opened.add(toolset)
        listed = await list_toolsets(list(self.tools), self.toolsets)
        definitions = tuple(found.definition() for found in listed.values())
        return {**self.tools, **listed}, self.tool_defs + definitions

    async def aclose(self) -> None:
        """Close the provider if it was made for this target (best effort)."""
        if not self.owned:
            return
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()


class BackendTarget:
    """An external agent backend: its kind, and the backend object, made on its first turn
    (after the ``before_run`` hooks passed, so a refused run starts nothing) and kept for the
    next turns until ``aclose``."""

    __slots__ = ("_backend", "_options", "_spec", "close_after_run", "kind")

    def __init__(
        self, spec: BackendSpec, options: Mapping[str, Any], *, close_after_run: bool = False
    ) -> None:
        self.kind = spec.kind
        self._spec = spec
        self._options = dict(options)
        self._backend: Any = None
        self.close_after_run = close_after_run

    def backend(self) -> Any:
        """The backend object, made on first use."""
        if self._backend is None:
            self._backend = self._spec.factory(self._options)
        return self._backend

    async def aclose(self) -> None:
        """Close the backend, if one was made; the next turn makes a new one."""
        backend, self._backend = self._backend, None
        if backend is not None:
            await backend.aclose()


class Run:
    """One run's state (usage, the turns it produced, its output) and its steps."""

    def __init__(self, context: RunContext) -> None:
        settings = context.settings
        self.context = context
        hooks = context.hooks
        assert hooks is not None, "the agent hands every run its host's hooks"
        self._hooks: RunHooks = hooks
        self.streaming = context.stream
        self.usage = _NO_USAGE
        self.produced: list[LLMMessage] = []
        self.output = ""
        self.tool_calls = 0
        self.stop_reason: str | None = None
        #: Where a durable run reports its steps (``_durable``); None without a run store.
        self.recorder: Recorder | None = context.state.get(RECORDER)
        #: The calls waiting for a decision when the run suspends.
        self.pending: list[ApprovalRequest] = []
        #: A resumed run's last model turn, taken again instead of asking the model.
        self.replay: LLMMessage | None = None
        #: The validated output (``RunResult.structured``); None without an output type.
        self.structured: Any = None
        #: The fallback model answering in the model's place (None: the model itself); the
        #: fallbacks tried so far, and the targets made for them (closed when the run ends).
        self.fallen: ModelTarget | None = None
        self.fallbacks_tried = 0
        self.fallbacks_made: list[ModelTarget] = []
        #: The call whose reply came last: its model is ``RunResult.model``.
        self.answered: ModelCall | None = None
        self.wanted_mode: str | None = None
        self.output_spec: OutputSpec | None = None
        if settings.output_type is not None or context.config.output_type is not None:
            output_type, self.wanted_mode = settings.output(context.config)
            self.output_spec = output_spec(output_type)
        timeout = settings.timeout
        self.deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout

    def events(self) -> AsyncGenerator[StreamEvent, None]:
        """The run as events: the ``before_run`` hooks, the model loop or the backend's turn,
        then ``done`` with the ``RunResult`` (after an ``error`` event when streaming and
        failed). A model run is one generator, loop and all: each streamed chunk passes
        through as few frames as can be."""
        target = self.context.target
        if isinstance(target, BackendTarget | Exception):
            return self._other_run(target)
        if target.fallbacks:
            return self._closing_fallbacks(self._model_run(target))
        return self._model_run(target)

    async def _closing_fallbacks(
        self, events: AsyncGenerator[StreamEvent, None]
    ) -> AsyncGenerator[StreamEvent, None]:
        """A run with fallback models: its events, then the fallbacks' providers it made
        closed (best effort: the run's outcome is already said)."""
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()
            for made in self.fallbacks_made:
                with contextlib.suppress(Exception):
                    await made.aclose()

    async def _other_run(
        self, target: BackendTarget | Exception
    ) -> AsyncGenerator[StreamEvent, None]:
        """An external agent's turn, or a run whose target could not be resolved (that error
        is the run's first failure)."""
        error: Exception | None = None
        try:
            if isinstance(target, Exception):
                raise target
            messages, replaced = await self._input()
            if replaced:
                raise HookError(
                    "before_run changed messages, but the external agent backend "
                    f'"{target.kind}" takes one string prompt: changed messages cannot be '
                    "forwarded without loss; change ctx.prompt instead"
                )
            turn = self.backend_turn(target, prompt_of(messages))
            try:
                async for event in turn:
                    yield event
            except BaseException:  # failed, or closed from above: close the turn too
                await turn.aclose()
                raise
        except Exception as exc:
            error = exc
        result = self.result(error)
        if self.streaming and result.status.error is not None:
            yield StreamEvent("error", result.status.error)
        yield StreamEvent("done", result)

    async def _input(self) -> tuple[tuple[LLMMessage, ...], bool]:
        """The run's messages after the ``before_run`` hooks, and whether a hook replaced
        them (not just the prompt)."""
        input = self.context.input
        messages = (user_text(input),) if isinstance(input, str) else input
        hooks = self._before_run_hooks()
        if not hooks:
            return messages, False
        applied = apply_before_run(messages, hooks, self.context.config)
        return await (applied if self.deadline is None else self._within(applied))

    def _before_run_hooks(self) -> list[NamedHook]:
        """Package ``oma_before_run`` hooks in pluggy's order, then the config's own."""
        calls = self._hooks.before_run_calls
        own = self.context.config.before_run
        if not calls and own is None:
            return []
        hooks: list[NamedHook] = [(call.label, call) for call in calls]
        if own is not None:
            hooks.append(("AgentConfig.before_run", own))
        return hooks

    async def _model_run(self, target: ModelTarget) -> AsyncGenerator[StreamEvent, None]:
        """A model run: the ``before_run`` hooks, then turns (a model call, then the tool round
        of its calls) until an answer, ``max_turns`` (corrective turns count) or calls waiting
        for a decision; then ``done``. A call's events pass through here: few frames up."""
        error: Exception | None = None
        events: AsyncGenerator[Any, None] | None = None  # the call or round under way
        try:
            if self.recorder is None:
                messages, _ = await self._input()
            else:  # durable: a resumed run has its earlier turns in ``produced`` already
                messages = await self._start(self.recorder)
            output = self._output_handler(target)
            conversation = for_provider(messages, target.provider_name) + self.produced
            checked, turns, corrections = self._counts()
            tools, tool_defs = target.tools, target.tool_defs
            while not self.pending:  # calls waiting for a decision suspend the run
                checked = self._checked(target, conversation, checked)
                if target.toolsets:  # listed before every call: a server's list may change
                    tools, tool_defs = await self._within(target.listed_tools())
                turns += 1
                emitted: set[str] = set()
                partials = output.partials() if self.streaming else None
                request = output.request(target.request(tuple(conversation), tool_defs))
                events = self._turn(target.call(request, self.streaming), emitted, partials)
                async for event in events:
                    if partials is None:  # (no ToolCallDelta: none was asked for)
                        yield event  # type: ignore[misc]
                        continue
                    for shown in partials.read(event):
                        yield shown
                if partials is not None:
                    for shown in partials.flush():
                        yield shown
                message = self.produced[-1]
                conversation.append(message)
                if self.recorder is not None:
                    await self.recorder.turned(self, turns, corrections)
                content = message.content
                calls = (
                    []  # a text reply, the common last turn (kept: a bench pays)
                    if len(content) == 1 and type(content[0]) is TextBlock
                    else [block for block in content if isinstance(block, ToolUseBlock)]
                )
                if self.streaming:
                    for block in _unshown(calls, emitted, output.output_tool):
                        yield StreamEvent("tool_use", block)
                verdict = output.judge(message, calls, self.output, self.stop_reason)
                if verdict is None:  # not an answer: its tool calls are run, then a new turn
                    if turns >= target.max_turns:
                        raise MaxTurnsExceededError(target.max_turns)
                    events = self._tool_round(calls, tools)
                    async for event in events:
                        yield event
                    conversation.append(self.produced[-1])
                    continue
                self._take(verdict)
                if verdict.errors is None:
                    break  # answered: the run ends well
                conversation.append(self._correction(verdict, corrections, turns, target))
                corrections += 1
            if partials is not None:
                for shown in partials.answered(calls, emitted):
                    yield shown
        except Exception as exc:
            error = exc
            if events is not None:  # a no-op unless it was stopped half way
                await events.aclose()
        except BaseException:  # closed from above, or cancelled: close the call too
            if events is not None:
                await events.aclose()
            raise
        if error is None and not self.pending:  # ``result``'s success (kept: a bench pays)
            result = RunResult(
                True, self.output, self.produced, self.usage, _OK, self.structured, model=self.model
            )
        else:
            result = self.result(error)
        if self.streaming and result.status.error is not None:
            yield StreamEvent("error", result.status.error)
        yield StreamEvent("done", result)

    def _checked(self, target: ModelTarget, conversation: list[LLMMessage], checked: int) -> int:
        """Check the messages past ``checked`` against the model (messages are immutable: each
        is checked once, the input before the first call); how many are checked now. Once a
        fallback answers, ``_onto`` checks its whole request each turn instead: the failed
        model's capabilities no longer matter."""
        if self.fallen is None:
            target.capabilities.check(conversation, target.display_name, start=checked)
        return len(conversation)

    def _counts(self) -> tuple[int, int, int]:
        """The messages checked, model turns and corrective turns so far: none, or a resumed
        run's turns and corrections (its messages were checked in its earlier life)."""
        recorder = self.recorder
        if recorder is None or not recorder.resuming:
            return 0, 0, 0
        return 0, recorder.turns, recorder.corrections

    def _turn(
        self, call: ModelCall, emitted: set[str], partials: Any
    ) -> AsyncGenerator[StreamEvent | ToolCallDelta, None]:
        """The events of the model turn: ``call`` made, or a resumed run's last turn replayed
        (a function, not a generator: no frame more per chunk)."""
        replay = self.replay
        if replay is None:
            if self.fallen is not None:  # the model failed earlier: its fallback answers
                call = self._onto_fallen(call)
            return self._call(call, emitted, deltas=partials is not None and partials.deltas)
        self.replay = None
        return self._replayed(replay)

    async def _start(self, recorder: Recorder) -> tuple[LLMMessage, ...]:
        """A durable run's input: a fresh run's (checkpointed as it starts), or a resumed
        run's with its earlier turns restored and the last one to replay (see ``Recorder``)."""
        if not recorder.resuming:
            messages, _ = await self._input()
            await recorder.started(self, messages)
            return messages
        messages, self.replay = await recorder.restore(self)
        emit = self.context.settings.progress
        if emit is not None:
            emit("run_resumed", {"turns": recorder.turns, "tool_calls": self.tool_calls})
        return messages

    async def _replayed(self, message: LLMMessage) -> AsyncGenerator[StreamEvent, None]:
        """A resumed run's last model turn, kept by its checkpoint: taken as if it arrived
        now (its usage counted already), never asked of the model again."""
        self.produced.append(message)
        self.output = text_of(message)
        return
        yield  # an async generator, like the call it stands for

    def _output_handler(self, target: ModelTarget) -> OutputHandler:
        """The run's output mode: text without an output type, else the one wanted, or the
        best the provider declares."""
        spec = self.output_spec
        if spec is None:
            return TEXT_OUTPUT
        wanted = self.wanted_mode
        mode = choose_mode(target.capabilities.output_modes, wanted, target.display_name)
        return output_handler(spec, mode)

    def _take(self, verdict: Verdict) -> None:
        """Keep what the output mode judged of the last reply."""
        if verdict.output is not None:
            self.output = verdict.output
        if verdict.kept is not None:
            self.produced[-1] = verdict.kept
        if verdict.errors is None:
            self.structured = verdict.structured

    def _correction(
        self, verdict: Verdict, corrections: int, turns: int, target: ModelTarget
    ) -> LLMMessage:
        """The corrective turn for a reply that is not the output, kept in the run's turns;
        raises when ``output_retries`` or ``max_turns`` (a corrective turn is a model call
        too) allow no more."""
        assert verdict.errors is not None and verdict.correction is not None
        if corrections >= self.context.config.output_retries:
            raise OutputValidationError(verdict.errors, self.output)
        if turns >= target.max_turns:
            raise MaxTurnsExceededError(target.max_turns)
        self.produced.append(verdict.correction)
        return verdict.correction

    async def _tool_round(
        self, calls: list[ToolUseBlock], tools: Mapping[str, Tool]
    ) -> AsyncGenerator[StreamEvent, None]:
        """Run a reply's tool calls, in order, each through ``oma_tool_call`` (past the run's
        ``max_tool_calls``, answered "not run" instead); their results are the next turn.

        A durable run checkpoints each result, and a resumed one takes the results its
        checkpoint holds instead of running those calls again. A call that needs approval
        and has no decision yet waits (``self.pending``): the round's other calls run, then
        the run suspends."""
        recorder = self.recorder
        gated = await self._gated(calls, tools)
        done = None if recorder is None else recorder.done_results()
        results: list[ToolResultBlock] = []
        for block in calls:
            result = None if done is None else done.get(block.id)
            if result is None:
                result = await self._tool_result(block, tools, gated)
                if result is None:  # waits for a decision
                    continue
                results.append(result)
                if recorder is not None:
                    await recorder.tool_done(self, results)
            else:
                results.append(result)
            if self.streaming:
                yield StreamEvent("tool_result", result)
        if self.pending:
            self._suspend()
            return
        self.produced.append(LLMMessage("user", tuple(results)))

    async def _gated(self, calls: list[ToolUseBlock], tools: Mapping[str, Tool]) -> set[str]:
        """The ids of ``calls`` that need approval; ``ApprovalUnavailableError`` (before any
        call runs) when one does and the run has no store to wait in."""
        gated: set[str] = set()
        for block in calls:
            found = tools.get(block.name)
            rule = getattr(found, "needs_approval", False)
            if rule is not False and found is not None and await needs_approval(found, block):
                if self.recorder is None:
                    raise ApprovalUnavailableError(block.name, block.id)
                gated.add(block.id)
        return gated

    async def _tool_result(
        self, block: ToolUseBlock, tools: Mapping[str, Tool], gated: set[str]
    ) -> ToolResultBlock | None:
        """The result of the call ``block``: run through ``oma_tool_call``, or not run (past
        ``max_tool_calls``, or denied); None when it waits for a decision."""
        if block.id in gated:
            assert self.recorder is not None
            digest = call_digest(self.context.run_id, block)
            decision = self.recorder.decisions.get(block.id)
            if decision is None:
                self.pending.append(request_for(self, block, digest))
                return None
            if decision.get("digest") != digest:
                raise ApprovalMismatchError(self.context.run_id, block.id)
            if not decision.get("approve"):
                return ToolResultBlock(block.id, _denied(decision.get("reason")), True)
        cap = self.context.settings.max_tool_calls
        if cap is not None and self.tool_calls >= cap:
            return ToolResultBlock(block.id, _over_cap(cap), True)
        self.tool_calls += 1
        invocation = ToolInvocation(block, tools)
        return await self._within(self._hooks.tool_call(call=invocation, run=self.context))

    def _suspend(self) -> None:
        """The run waits for decisions on ``self.pending``: tell the observers."""
        emit = self.context.settings.progress
        if emit is None:
            return
        for request in self.pending:
            emit("approval_requested", request.to_json())
        emit("run_suspended", {"pending": [request.call_id for request in self.pending]})

    async def backend_turn(
        self, target: BackendTarget, prompt: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """One turn of an external agent: one model call (budgets, spans, ``call_timeout``
        apply), never retried (a turn may have acted on the world)."""
        from .backends import BackendRequest

        context = self.context
        settings = context.settings
        system_prompt = context.config.system_prompt
        spec = self.output_spec
        if spec is not None:  # prompted, and checked once: a turn is never asked again
            instructions = spec.instructions
            system_prompt = f"{system_prompt}\n\n{instructions}" if system_prompt else instructions
        backend = target.backend()
        # The turn's time limit is the smaller of the two, taken as given: never clock
        # arithmetic (``(now + 0.2) - now`` need not be 0.2).
        limits = [] if settings.call_timeout is None else [settings.call_timeout]
        if self.deadline is not None:
            limits.append(max(0.0, self.deadline - asyncio.get_running_loop().time()))
        request = BackendRequest(prompt, system_prompt, context.session, min(limits, default=None))
        call = ModelCall(
            ProviderRequest(None, (user_text(prompt),), system_prompt),
            "backend",
            target.kind,
            str(getattr(backend, "display_name", None) or target.kind),
            backend,
            stream=self.streaming,
            backend_request=request,
        )
        events = self._call(call, set(), retry=False)
        try:
            async for event in events:
                if isinstance(event, StreamEvent):  # always (no deltas were asked for)
                    yield event
        except BaseException:
            await events.aclose()
            raise
        if spec is not None:  # checked once: a turn is never asked again
            verdict = PromptedOutput(spec).check(self.output, self.stop_reason)
            self._take(verdict)
            if verdict.errors is not None:
                raise OutputValidationError(verdict.errors, self.output)

    @property
    def model(self) -> str | None:
        """``provider:model`` of the model whose reply came last (``RunResult.model``); None
        when none replied in this run."""
        answered = self.answered
        return None if answered is None else _model_name(answered)

    def result(self, error: BaseException | None) -> RunResult:
        """The ``RunResult``; a failure is handed out detached (see ``detached_error``)."""
        if error is None and self.pending:
            return RunResult(
                False,
                self.output,
                self.produced,
                self.usage,
                RunStatus("suspended"),
                pending=tuple(self.pending),
                model=self.model,
            )
        if error is None:
            return RunResult(
                True, self.output, self.produced, self.usage, _OK, self.structured, model=self.model
            )
        code: Any = getattr(error, "status", "error")
        if code not in ("timeout", "budget_exhausted"):
            code = "error"
        status = RunStatus(code, detached_error(error))
        return RunResult(False, self.output, self.produced, self.usage, status, model=self.model)

    # -- one model call, on the retry ladder -------------------------------------------------

    async def _call(
        self, call: ModelCall, emitted: set[str], *, retry: bool = True, deltas: bool = False
    ) -> AsyncGenerator[StreamEvent | ToolCallDelta, None]:
        """Make ``call`` through the middleware; its answer ends up in ``self.produced``.

        A failed attempt is retried while the ladder allows (the next attempt is this method
        again), unless output was already handed on (the caller would see it twice) or the
        answer already arrived (a budget stop after it): then the error ends the run, keeping
        that answer. ``deltas``: the provider's ``ToolCallDelta`` events are handed on as they
        are (tool mode reads them for partial output); otherwise they are dropped, the whole
        ``ToolCall`` being the call.
        """
        streaming = self.streaming
        if self.deadline is None and self.context.settings.call_timeout is None:
            deadline, scope, seconds = None, "run", 0.0  # ``_call_limit``'s (kept: a bench pays)
        else:
            deadline, scope, seconds = self._call_limit()
        arrived = 0
        handed_on = False
        response: ProviderResponse | None = None
        events: Any = None
        try:
            events = self._hooks.model_call(call=call, run=self.context)
            bounded = events if deadline is None else _Bounded(events, deadline, scope, seconds)
            async for event in bounded:
                kind = type(event)
                if kind is TextDelta:  # the one event of most chunks: first, and inline
                    arrived += len(event.text)
                    if streaming:
                        handed_on = True
                        yield StreamEvent("text", event.text)
                elif kind is ResponseComplete:
                    # Kept the moment it arrives (a budget stop after it must not lose it).
                    response = event.response
                    self.answered = call
                    for whole in self._record(response, replay=streaming and not handed_on):
                        yield whole
                elif kind is ToolCallDelta:
                    if deltas:  # asked for by a streamed run in tool mode only
                        handed_on = True  # it may show as a partial: never retried
                        yield event
                elif streaming:
                    streamed = _stream_event(event, emitted)
                    if streamed is not None:
                        handed_on = True
                        yield streamed
        except Exception as error:
            if events is not None:  # failed: close the call too
                await events.aclose()
            if response is None and arrived:  # cut short: count what arrived
                self.usage = self.usage + charged_usage(call.request, None, arrived=arrived)
            again = None
            if response is None and not handed_on and retry:
                again = await self._next_attempt(call, error) or self._fall_back(call, error)
            if again is None:
                raise
        except BaseException:  # closed from above, or cancelled: close the call too
            if events is not None:
                await events.aclose()
            raise
        else:
            await events.aclose()  # ended: a no-op on a provider generator that returned
            if response is None:  # the one place this is said, whichever layer ended early
                raise ProviderError(
                    "the provider stream ended without a complete response",
                    provider=call.display_name,
                    retryable=False,
                )
            return
        async for event in self._call(again, emitted, deltas=deltas):
            yield event

    async def _next_attempt(self, call: ModelCall, error: Exception) -> ModelCall | None:
        """The next attempt of ``call`` after ``error``, once the ladder's wait is over; None
        when the ladder says no (or the run would time out while waiting)."""
        policy = self.context.settings.retry or self.context.config.retry_policy()
        retries = call.attempt  # the number of this retry
        if retries > policy.max_retries or not policy.is_retryable(error):
            return None
        wait = policy.delay_for(retries, error)
        if self.deadline is not None and (asyncio.get_running_loop().time() + wait > self.deadline):
            return None  # the run would time out while waiting: fail now, with the cause
        emit = self.context.settings.progress
        if emit is not None:  # as the wait begins: the user learns of it at once
            emit("retry", {"attempt": retries, "delay": wait, "error": redact_error(error)})
        await policy.sleep(wait)
        return attrs.evolve(call, attempt=call.attempt + 1, retry_of=error, retry_delay=wait)

    def _fall_back(self, call: ModelCall, error: Exception) -> ModelCall | None:
        """The first attempt on the next fallback model after a retryable ``error`` spent
        ``call``'s retries; None for an error the request caused, or when none is left."""
        fallbacks = getattr(self.context.target, "fallbacks", ())
        policy = self.context.settings.retry or self.context.config.retry_policy()
        if call.kind != "model" or self.fallbacks_tried >= len(fallbacks):
            return None
        if not policy.is_retryable(error):
            return None
        return self._next_fallback(call, error, _model_name(call))

    def _onto_fallen(self, call: ModelCall) -> ModelCall:
        """``call`` (made for the model) sent to the fallback answering in its place, checked
        against what it is sent this turn; when it cannot carry the conversation (a tool
        returned an image, say), the next fallback that can answers instead, or the run fails
        with the reason, before anything is sent."""
        fallen = self.fallen
        assert fallen is not None
        try:
            return _onto(call, fallen)
        except Exception as error:
            again = self._next_fallback(call, error, _target_name(fallen))
            if again is None:
                raise
            return again

    def _next_fallback(self, call: ModelCall, error: Exception, failed: str) -> ModelCall | None:
        """``call`` sent to the next fallback model not tried yet that can be used (a key) and
        can carry it (``_onto``), which answers from now on; None when none is left. The
        ``fallback`` progress event says which model failed (``failed``), which answers now,
        which were skipped and why."""
        fallbacks = getattr(self.context.target, "fallbacks", ())
        again: ModelCall | None = None
        skipped: list[dict[str, str]] = []
        for name, make in fallbacks[self.fallbacks_tried :]:
            self.fallbacks_tried += 1
            try:
                target = make()
                self.fallbacks_made.append(target)
                again = _onto(call, target)
            except Exception as why:
                skipped.append({"model": name, "reason": str(redact_error(why))})
                continue
            self.fallen = target
            break
        emit = self.context.settings.progress
        if emit is not None:
            event = {"from": failed, "to": None if again is None else name}
            emit("fallback", {**event, "error": redact_error(error), "skipped": skipped})
        return again

    def _record(self, response: ProviderResponse, *, replay: bool) -> list[StreamEvent]:
        """The one place a response is kept: its usage added to the run's (as reported, made
        sane), its message to the turns, its text as the output so far, its stop reason.
        ``replay``: the events of a turn that arrived whole, for a streaming caller."""
        usage = response.usage
        if not (  # ints >= 0: ``reported_usage`` would hand it back as is (kept: a bench pays)
            type(usage) is Usage
            and type(usage.input_tokens) is int
            and type(usage.output_tokens) is int
            and usage.input_tokens >= 0 <= usage.output_tokens
        ):
            usage = reported_usage(usage)
        self.usage = usage if self.usage is _NO_USAGE else self.usage + usage
        message = response.message
        self.produced.append(message)
        content = message.content
        if len(content) == 1 and type(content[0]) is TextBlock:
            self.output = content[0].text  # ``text_of``'s common case (kept: a bench pays)
        else:
            self.output = text_of(message)
        self.stop_reason = response.stop_reason
        return _whole_turn_events(message) if replay else []

    def _call_limit(self) -> tuple[float | None, str, float]:
        """This attempt's deadline, which limit it is, and that limit in seconds."""
        call_timeout = self.context.settings.call_timeout
        run_deadline = self.deadline
        if call_timeout is None and run_deadline is None:
            return None, "run", 0.0
        if call_timeout is None:
            return run_deadline, "run", self.context.settings.timeout or 0.0
        call_deadline = asyncio.get_running_loop().time() + call_timeout
        if run_deadline is not None and run_deadline <= call_deadline:
            return run_deadline, "run", self.context.settings.timeout or 0.0
        return call_deadline, "call", call_timeout

    async def _within(self, awaitable: Awaitable[T]) -> T:
        """Await under the run's deadline."""
        if self.deadline is None:
            return await awaitable
        return await _bounded(awaitable, self.deadline, "run", self.context.settings.timeout or 0)


# -- helpers -----------------------------------------------------------------------------------


async def _bounded(awaitable: Awaitable[T], deadline: float, scope: str, seconds: float) -> T:
    try:
        async with asyncio.timeout_at(deadline) as timeout:
            return await awaitable
    except TimeoutError:
        if timeout.expired():
            raise RunTimeoutError(scope, seconds) from None
        raise


def with_output(request: ProviderRequest, spec: OutputSpec, mode: OutputMode) -> ProviderRequest:
    """``request`` held to ``spec`` in ``mode`` (what ``Agent.build_request`` shows)."""
    return output_handler(spec, mode).request(request)


def _unshown(
    calls: list[ToolUseBlock], emitted: set[str], output_tool: str | None
) -> list[ToolUseBlock]:
    """The reply's tool calls the streaming caller was not shown yet (the output tool's
    calls are the output: never shown as calls)."""
    return [block for block in calls if block.id not in emitted and block.name != output_tool]


class _Bounded:
    """A call's events, each awaited under the attempt's deadline."""

    __slots__ = ("_deadline", "_events", "_scope", "_seconds")

    def __init__(self, events: Any, deadline: float, scope: str, seconds: float) -> None:
        self._events = events
        self._deadline = deadline
        self._scope = scope
        self._seconds = seconds

    def __aiter__(self) -> _Bounded:
        return self

    def __anext__(self) -> Awaitable[Any]:
        return _bounded(anext(self._events), self._deadline, self._scope, self._seconds)


def _onto(call: ModelCall, target: ModelTarget) -> ModelCall:
    """``call``'s request sent to ``target`` instead (another model, maybe another provider):
    its messages as that provider may receive them, checked against what it can carry first,
    output mode included (raises ``UnsupportedContentBlockError`` or ``OutputTypeError``
    before anything is sent)."""
    messages = for_provider(call.request.messages, target.provider_name)
    target.capabilities.check(messages, target.display_name)
    output = call.request.output
    if output is not None:  # the run's output mode, which the fallback must declare too
        choose_mode(target.capabilities.output_modes, output.mode, target.display_name)
    outgoing = target.capabilities.outgoing(messages)
    request = attrs.evolve(call.request, model=target.model, messages=outgoing)
    return target.call(request, call.stream)


def _model_name(call: ModelCall) -> str:
    """``provider:model`` of a call, as ``fallback_models`` names models."""
    model = call.request.model
    return call.provider if model is None else f"{call.provider}:{model}"


def _target_name(target: ModelTarget) -> str:
    """``provider:model`` of a target, as ``fallback_models`` names models."""
    model = target.model
    return target.provider_name if model is None else f"{target.provider_name}:{model}"


def _denied(reason: object) -> str:
    why = f": {reason}" if reason else ""
    return f"not run: a person denied this call{why}"


def _over_cap(cap: int) -> str:
    return f"not run: this run may make at most {cap} tool calls; answer without tools"


def _whole_turn_events(message: LLMMessage) -> list[StreamEvent]:
    """Events for a turn that arrived whole (a provider without ``stream``, a cache)."""
    events = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            events.append(StreamEvent("text", block.text))
        elif block.type == "reasoning":
            events.append(StreamEvent("reasoning", getattr(block, "text", "")))
    return events


def _stream_event(event: Any, emitted: set[str]) -> StreamEvent | None:
    """The caller's event for one call event (None: nothing to show)."""
    kind = type(event)
    if kind is TextDelta:
        return StreamEvent("text", event.text)
    if kind is ReasoningDelta:
        return StreamEvent("reasoning", event.text)
    if kind is ToolCall:
        emitted.add(event.block.id)
        return StreamEvent("tool_use", event.block)
    from .backends import BackendToolCall, BackendToolResult

    if kind is BackendToolCall:
        return StreamEvent("tool_use", _backend_tool_use(event))
    if kind is BackendToolResult:
        return StreamEvent("tool_result", _backend_tool_result(event))
    return None


def _backend_tool_use(event: Any) -> Any:
    try:
        data = event.input if isinstance(event.input, Mapping) else {"input": event.input}
        return ToolUseBlock(event.id, event.name, data)
    except Exception:  # not JSON: pass the backend's own event on
        return event


def _backend_tool_result(event: Any) -> Any:
    try:
        return ToolResultBlock(event.id, event.content, event.is_error)
    except Exception:
        return event
