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
import json
from collections.abc import AsyncGenerator, Awaitable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ._before_run import NamedHook, apply_before_run
from ._calls import ModelCall, RunContext, RunHooks, RunInput, ToolInvocation
from ._output import (
    OutputInvalid,
    OutputMode,
    OutputSpec,
    PartialText,
    StreamedOutputCall,
    choose_mode,
    output_spec,
    stopped_short,
)
from ._reasoning import for_provider
from ._results import RunResult, RunStatus, StreamEvent
from ._usage import charged_usage, reported_usage
from .errors import (
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
    from ._pool import Closables
    from .capabilities import BackendSpec, Capabilities
    from .retry import RetryPolicy
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
    (an agent made for one run, as ``OpenMultiAgent.run_agent`` makes).
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
    owned: bool = False
    close_after_run: bool = False
    toolsets: tuple[Any, ...] = ()
    opened: Closables | None = None

    def request(
        self,
        messages: tuple[LLMMessage, ...],
        tool_defs: tuple[ToolDefinition, ...] | None = None,
    ) -> ProviderRequest:
        """The model call for ``messages`` with this agent's settings (and ``tool_defs``, the
        tools listed for this call, in place of the agent's own)."""
        return ProviderRequest(
            self.model,
            messages,
            self.system_prompt,
            self.tool_defs if tool_defs is None else tool_defs,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stop=self.stop,
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
        #: The validated output (``RunResult.structured``); None without an output type.
        self.structured: Any = None
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
        return self._model_run(target)

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
        """A model run: the ``before_run`` hooks, then model calls and tool rounds until a
        turn without tool calls (or ``max_turns``, which counts every model call, corrective
        turns included), then ``done``."""
        error: Exception | None = None
        try:
            messages, _ = await self._input()
            streaming = self.streaming
            conversation = for_provider(messages, target.provider_name)  # see _reasoning
            checked = 0
            turns = 0
            spec = self.output_spec
            corrections = 0
            mode: OutputMode = "prompted"
            if spec is not None:
                mode = choose_mode(
                    target.capabilities.output_modes, self.wanted_mode, target.display_name
                )
            #: The output tool's name in tool mode (its calls are the output, never run).
            out_tool = spec.request("tool").name if spec is not None and mode == "tool" else None
            #: Native mode: a partial of the reply's text is unwrapped as the output will be.
            unwrap = spec.wire_partial if spec is not None and mode == "native" else None
            tools, tool_defs = target.tools, target.tool_defs
            while True:
                # Messages are immutable: each is checked once, the input before the first call.
                target.capabilities.check(conversation, target.display_name, start=checked)
                checked = len(conversation)
                if target.toolsets:  # listed before every call: a server's list may change
                    tools, tool_defs = await self._within(target.listed_tools())
                request = ProviderRequest(  # ``ModelTarget.request``, inline: once per call
                    target.model,
                    tuple(conversation),
                    target.system_prompt,
                    tool_defs,
                    max_tokens=target.max_tokens,
                    temperature=target.temperature,
                    stop=target.stop,
                )
                if spec is not None:
                    request = with_output(request, spec, mode)
                call = ModelCall(
                    request,
                    "model",
                    target.provider_name,
                    target.display_name,
                    target.provider,
                    stream=streaming,
                )
                turns += 1
                emitted: set[str] = set()
                # tool mode, streaming: the output call's argument pieces come up too
                pieces = None
                if out_tool is not None and streaming:
                    assert spec is not None
                    pieces = StreamedOutputCall(spec, out_tool)
                events = self._call(call, emitted, deltas=pieces is not None)
                # this call's text so far, for partial output (prompted and native modes)
                arrived = None
                if spec is not None and out_tool is None and streaming:
                    arrived = PartialText()
                shown: Any = None
                try:
                    async for event in events:
                        if isinstance(event, ToolCallDelta):  # tool mode, streaming: a piece
                            assert pieces is not None
                            partial = pieces.feed(event)
                            if partial is not None and partial != shown:
                                shown = partial
                                yield StreamEvent("partial", partial)
                            continue
                        if (
                            out_tool is not None
                            and event.type == "tool_use"
                            and event.data.name == out_tool
                        ):  # the output tool's call is the output, shown as a partial: not a tool
                            assert spec is not None
                            whole = spec.wire_partial(event.data.input)
                            if whole != shown:  # its pieces may have shown it all already
                                shown = whole
                                yield StreamEvent("partial", whole)
                            continue
                        yield event
                        if arrived is not None and event.type == "text":
                            partial = arrived.feed(event.data)
                            if partial is not None and unwrap is not None:
                                partial = unwrap(partial)
                            if partial is not None and partial != shown:
                                shown = partial
                                yield StreamEvent("partial", partial)
                except BaseException:  # failed, or closed from above: close the call too
                    await events.aclose()
                    raise
                if arrived is not None:  # the end of the text, which reading may have skipped
                    partial = arrived.flush()
                    if partial is not None and unwrap is not None:
                        partial = unwrap(partial)
                    if partial is not None and partial != shown:
                        shown = partial
                        yield StreamEvent("partial", partial)
                message = self.produced[-1]
                conversation.append(message)
                content = message.content
                calls = (
                    []  # a text reply, the common last turn
                    if len(content) == 1 and type(content[0]) is TextBlock
                    else [block for block in content if isinstance(block, ToolUseBlock)]
                )
                if streaming:
                    for call_block in calls:
                        if call_block.id not in emitted and call_block.name != out_tool:
                            yield StreamEvent("tool_use", call_block)
                if spec is not None and out_tool is not None:
                    outputs = [block for block in calls if block.name == out_tool]
                    if outputs or not calls:
                        answered = self._check_tool_output(spec, outputs)
                        if answered is None:
                            if streaming and outputs and outputs[0].id not in emitted:
                                whole = spec.wire_partial(outputs[0].input)
                                if whole != shown:  # pieces may have shown it all already
                                    yield StreamEvent("partial", whole)
                            break  # answered: the run ends well
                        if corrections >= self.context.config.output_retries:
                            raise OutputValidationError(answered, self.output)
                        if turns >= target.max_turns:  # a corrective turn is a model call too
                            raise MaxTurnsExceededError(target.max_turns)
                        corrections += 1
                        correction = _tool_correction(spec, calls, outputs, answered)
                        self.produced.append(correction)
                        conversation.append(correction)
                        continue
                if not calls:
                    if spec is None:
                        break  # answered: the run ends well
                    errors = self._check_output(spec, mode)
                    if errors is None:
                        break  # answered: the run ends well
                    if corrections >= self.context.config.output_retries:
                        raise OutputValidationError(errors, self.output)
                    if turns >= target.max_turns:  # a corrective turn is a model call too
                        raise MaxTurnsExceededError(target.max_turns)
                    corrections += 1
                    correction = user_text(spec.corrective_prompt(errors))
                    self.produced.append(correction)
                    conversation.append(correction)
                    continue
                if turns >= target.max_turns:
                    raise MaxTurnsExceededError(target.max_turns)
                results: list[ToolResultBlock] = []
                for call_block in calls:
                    cap = self.context.settings.max_tool_calls
                    if cap is not None and self.tool_calls >= cap:
                        result = ToolResultBlock(call_block.id, _over_cap(cap), True)
                    else:
                        self.tool_calls += 1
                        invocation = ToolInvocation(call_block, tools)
                        result = await self._within(
                            self._hooks.tool_call(call=invocation, run=self.context)
                        )
                    if streaming:
                        yield StreamEvent("tool_result", result)
                    results.append(result)
                tool_turn = LLMMessage("user", tuple(results))
                self.produced.append(tool_turn)
                conversation.append(tool_turn)
        except Exception as exc:
            error = exc
        if error is None:  # ``result``'s success, inline: most runs end here
            ended = RunResult(True, self.output, self.produced, self.usage, _OK, self.structured)
        else:
            ended = self.result(error)
        if self.streaming and ended.status.error is not None:
            yield StreamEvent("error", ended.status.error)
        yield StreamEvent("done", ended)

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
        if spec is not None:
            errors = self._check_output(spec)
            if errors is not None:
                raise OutputValidationError(errors, self.output)

    def _check_output(self, spec: OutputSpec, mode: OutputMode = "prompted") -> list[str] | None:
        """Validate the final reply against the output type: keep the output and return None,
        or return what is wrong with it. A reply cut at ``max_tokens`` or refused is never
        parsed: it ends the run at once (asking again would be cut or refused the same way)."""
        self._refuse_short()
        try:
            if mode == "native":
                self.structured = spec.validate_native(self.output)
            else:
                self.structured = spec.validate_text(self.output)
        except OutputInvalid as invalid:
            return invalid.errors
        return None

    def _check_tool_output(self, spec: OutputSpec, outputs: list[ToolUseBlock]) -> list[str] | None:
        """Tool mode: validate the first output tool call's arguments. Valid, the output is
        kept, ``RunResult.output`` becomes its JSON text and the reply's output call becomes
        that text in the turns the run hands back (so a history never holds a call nobody
        answered); None is returned. Otherwise: what is wrong (a turn with no output call
        is wrong too)."""
        self._refuse_short()
        if not outputs:
            return [f"the reply did not call {outputs_name(spec)}: give the answer by calling it"]
        arguments = dict(outputs[0].input)
        # the output's raw text: the arguments as JSON (unwrapped when the output is wrapped)
        self.output = json.dumps(spec.wire_partial(arguments), ensure_ascii=False)
        try:
            self.structured = spec.validate_wire(arguments)
        except OutputInvalid as invalid:
            return invalid.errors
        message = self.produced[-1]
        kept = tuple(b for b in message.content if not isinstance(b, ToolUseBlock))
        kept = tuple(b for b in kept if not (isinstance(b, TextBlock) and not b.text))
        self.produced[-1] = LLMMessage("assistant", (*kept, TextBlock(self.output)))
        return None

    def _refuse_short(self) -> None:
        if stopped_short(self.stop_reason):
            raise OutputValidationError(
                [f"the reply stopped early ({self.stop_reason}): it is not a whole answer"],
                self.output,
            )

    def result(self, error: BaseException | None) -> RunResult:
        """The ``RunResult``; a failure is handed out detached (see ``detached_error``)."""
        if error is None:
            return RunResult(True, self.output, self.produced, self.usage, _OK, self.structured)
        code: Any = getattr(error, "status", "error")
        if code not in ("timeout", "budget_exhausted"):
            code = "error"
        return RunResult(
            False, self.output, self.produced, self.usage, RunStatus(code, detached_error(error))
        )

    # -- one model call, on the retry ladder -------------------------------------------------

    async def _call(
        self, call: ModelCall, emitted: set[str], *, retry: bool = True, deltas: bool = False
    ) -> AsyncGenerator[StreamEvent | ToolCallDelta, None]:
        """Make ``call`` through the middleware; its answer ends up in ``self.produced``.

        A failed attempt is retried while the ladder allows, unless output was already handed
        on (the caller would see it twice) or the answer already arrived (a budget stop after
        it): then the error ends the run, keeping that answer. ``deltas``: the provider's
        ``ToolCallDelta`` events are handed on as they are (tool mode reads them for partial
        output); otherwise they are dropped, the whole ``ToolCall`` being the call.
        """
        policy: RetryPolicy | None = None  # looked up on the first failure: most calls have none
        streaming = self.streaming
        retries = 0
        while True:
            if self.deadline is None and self.context.settings.call_timeout is None:
                deadline, scope, seconds = None, "run", 0.0  # no limit: most runs
            else:
                deadline, scope, seconds = self._call_limit()
            arrived = 0
            handed_on = False
            response: ProviderResponse | None = None
            try:
                events: Any = self._hooks.model_call(call=call, run=self.context)
                try:
                    while True:
                        try:
                            if deadline is None:
                                event = await anext(events)
                            else:
                                event = await _bounded(anext(events), deadline, scope, seconds)
                        except StopAsyncIteration:
                            break
                        kind = type(event)
                        if kind is ResponseComplete:
                            # Kept the moment it arrives (a budget stop after it must not
                            # lose it).
                            response = event.response
                            message = response.message
                            usage = response.usage
                            if not (  # ints >= 0: reported_usage would hand it back as is
                                type(usage) is Usage
                                and type(usage.input_tokens) is int
                                and type(usage.output_tokens) is int
                                and usage.input_tokens >= 0 <= usage.output_tokens
                            ):
                                usage = reported_usage(usage)
                            self.usage = usage if self.usage is _NO_USAGE else self.usage + usage
                            self.produced.append(message)
                            content = message.content
                            if len(content) == 1 and type(content[0]) is TextBlock:
                                self.output = content[0].text  # text_of's common case
                            else:
                                self.output = text_of(message)
                            self.stop_reason = response.stop_reason
                            if streaming and not handed_on:  # it arrived whole: replay it
                                for whole in _whole_turn_events(response.message):
                                    yield whole
                            continue
                        if kind is TextDelta:  # the one event of most chunks: inline
                            arrived += len(event.text)
                            if streaming:
                                handed_on = True
                                yield StreamEvent("text", event.text)
                            continue
                        if kind is ToolCallDelta:
                            if deltas:  # asked for by a streamed run in tool mode only
                                handed_on = True  # it may show as a partial: never retried
                                yield event
                            continue
                        if streaming:
                            streamed = _stream_event(event, emitted)
                            if streamed is not None:
                                handed_on = True
                                yield streamed
                except BaseException:  # failed, or closed from above: close the call too
                    await events.aclose()
                    raise
            except Exception as error:
                if response is None and arrived:  # cut short: count what arrived
                    self.usage = self.usage + charged_usage(call.request, None, arrived=arrived)
                if response is not None or handed_on or not retry:
                    raise
                if policy is None:
                    policy = self.context.settings.retry or self.context.config.retry_policy()
                if retries >= policy.max_retries or not policy.is_retryable(error):
                    raise
                retries += 1
                wait = policy.delay_for(retries, error)
                if self.deadline is not None and (
                    asyncio.get_running_loop().time() + wait > self.deadline
                ):
                    raise  # the run would time out while waiting: fail now, with the cause
                emit = self.context.settings.progress
                if emit is not None:  # as the wait begins: the user learns of it at once
                    emit("retry", {"attempt": retries, "delay": wait, "error": redact_error(error)})
                await policy.sleep(wait)
                call = attrs.evolve(
                    call, attempt=call.attempt + 1, retry_of=error, retry_delay=wait
                )
                continue
            if response is None:  # the one place this is said, whichever layer ended early
                raise ProviderError(
                    "the provider stream ended without a complete response",
                    provider=call.display_name,
                    retryable=False,
                )
            return

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


def with_instructions(request: ProviderRequest, spec: OutputSpec) -> ProviderRequest:
    """``request`` with the output type's instructions after its system prompt (prompted
    mode: what every provider and backend can do)."""
    system = request.system_prompt
    instructions = spec.instructions
    return attrs.evolve(
        request, system_prompt=instructions if not system else f"{system}\n\n{instructions}"
    )


def with_output(request: ProviderRequest, spec: OutputSpec, mode: OutputMode) -> ProviderRequest:
    """``request`` held to ``spec`` in ``mode``: the instructions in the system prompt
    (prompted), or ``ProviderRequest.output`` for the provider to map (native, tool)."""
    if mode == "prompted":
        return with_instructions(request, spec)
    return attrs.evolve(request, output=spec.request(mode))


def outputs_name(spec: OutputSpec) -> str:
    """The output tool's name in tool mode."""
    return spec.request("tool").name


def _tool_correction(
    spec: OutputSpec, calls: list[ToolUseBlock], outputs: list[ToolUseBlock], errors: list[str]
) -> LLMMessage:
    """Tool mode's corrective turn: each output call answered with an error result carrying
    the validation errors, any other call of the same turn with a not-run result (the turn
    was meant to be the answer); a turn with no call at all gets a user text."""
    if not calls:
        return user_text(spec.corrective_prompt(errors) + f" Call {outputs_name(spec)}.")
    correction = spec.tool_correction(errors)
    results = [
        ToolResultBlock(
            block.id,
            correction if block in outputs else "not run: give the final answer instead",
            True,
        )
        for block in calls
    ]
    return LLMMessage("user", tuple(results))


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
