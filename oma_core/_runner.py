"""The steps of one agent run: hooks, model calls on the retry ladder, tool rounds, backends.

The agent calls them in order (``Agent._events``): ``before_run``, then ``model_loop`` or
``backend_turn``, then ``result``. Every model call (each attempt) goes through the
``oma_model_call`` hook and every tool call through ``oma_tool_call``, so middleware —
the core's budgets, tracing and progress, or a plugin's cache — sees them all; this module
knows none of them. Nothing here raises for a provider, hook, tool or limit failure: the run
ends with a failed ``RunResult``. Only cancellation propagates, after the call's stream was
closed.

Limits: the run's deadline is computed once, when it starts, and each attempt's once, when it
starts, as the earlier of the run's and ``call_timeout`` after now (comparing deadlines, never
subtracting clock values). They apply around each await, never across a ``yield``: the
caller's own code between two stream events is never cancelled by oma's timeouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ._before_run import NamedHook, apply_before_run, text_of
from ._usage import charged_usage, reported_usage
from .calls import ModelCall, RunContext, ToolInvocation
from .errors import MaxTurnsExceededError, RunTimeoutError
from .messages import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock
from .providers import (
    ProviderRequest,
    ProviderResponse,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolDefinition,
    Usage,
)
from .redaction import detached_error
from .results import RunResult, RunStatus, StreamEvent
from .settings import new_run_id

if TYPE_CHECKING:
    from .capabilities import Capabilities
    from .config import AgentConfig
    from .plugins import PluginHost
    from .retry import RetryPolicy
    from .settings import RunSettings
    from .tools import Tool

__all__ = ["ModelTarget", "Run", "RunInput"]

T = TypeVar("T")

#: Checked input: a str (one user text message) or validated messages.
RunInput = str | tuple[LLMMessage, ...]


@attrs.frozen
class ModelTarget:
    """Everything a model run needs from its agent, resolved once the provider exists."""

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

    def request(self, messages: tuple[LLMMessage, ...]) -> ProviderRequest:
        """The model call for ``messages`` with this agent's settings."""
        return ProviderRequest(
            self.model,
            messages,
            self.system_prompt,
            self.tool_defs,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stop=self.stop,
        )


class Run:
    """One run's state (usage, the turns it produced, its output) and its steps."""

    def __init__(
        self,
        host: PluginHost,
        config: AgentConfig,
        settings: RunSettings,
        retry: RetryPolicy,
        *,
        streaming: bool,
        session: bool = False,
    ) -> None:
        self.context = RunContext(settings.run_id or new_run_id(), config, settings)
        self._hook = host.hook
        self._retry = retry
        self.streaming = streaming
        self.session = session
        self.usage = Usage()
        self.produced: list[LLMMessage] = []
        self.output = ""
        self.tool_calls = 0
        timeout = settings.timeout
        self.deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout

    # -- the steps -------------------------------------------------------------------------

    async def before_run(
        self, messages: tuple[LLMMessage, ...], hooks: Sequence[NamedHook]
    ) -> tuple[tuple[LLMMessage, ...], bool]:
        """The input after the ``before_run`` hooks, and whether they replaced the messages."""
        return await self._within(apply_before_run(messages, hooks, self.context.config))

    async def model_loop(
        self, target: ModelTarget, messages: tuple[LLMMessage, ...]
    ) -> AsyncGenerator[StreamEvent, None]:
        """Model calls and tool rounds until a turn without tool calls (or ``max_turns``)."""
        streaming = self.streaming
        conversation = list(messages)
        checked = 0
        turns = 0
        while True:
            # Messages are immutable: each is checked once, the input before the first call.
            target.capabilities.check(conversation, target.display_name, start=checked)
            checked = len(conversation)
            call = ModelCall(
                target.request(tuple(conversation)),
                "model",
                target.provider_name,
                target.display_name,
                target.provider,
                stream=streaming,
            )
            turns += 1
            emitted: set[str] = set()
            events = self._call(call, emitted)
            try:
                async for event in events:
                    yield event
            except BaseException:  # failed, or closed from above: close the call too
                await events.aclose()
                raise
            message = self.produced[-1]
            conversation.append(message)
            calls = [block for block in message.content if isinstance(block, ToolUseBlock)]
            if streaming:
                for call_block in calls:
                    if call_block.id not in emitted:
                        yield StreamEvent("tool_use", call_block)
            if not calls:
                return
            if turns >= target.max_turns:
                raise MaxTurnsExceededError(target.max_turns)
            results: list[ToolResultBlock] = []
            for call_block in calls:
                cap = self.context.settings.max_tool_calls
                if cap is not None and self.tool_calls >= cap:
                    result = ToolResultBlock(call_block.id, _over_cap(cap), True)
                else:
                    self.tool_calls += 1
                    invocation = ToolInvocation(call_block, target.tools)
                    result = await self._within(
                        self._hook.oma_tool_call(call=invocation, run=self.context)
                    )
                if streaming:
                    yield StreamEvent("tool_result", result)
                results.append(result)
            tool_turn = LLMMessage("user", tuple(results))
            self.produced.append(tool_turn)
            conversation.append(tool_turn)

    async def backend_turn(
        self, backend: Any, kind: str, display_name: str, prompt: str
    ) -> AsyncGenerator[StreamEvent, None]:
        """One turn of an external agent: one model call (budgets, spans, ``call_timeout``
        apply), never retried (a turn may have acted on the world)."""
        from .backends import BackendRequest

        settings = self.context.settings
        system_prompt = self.context.config.system_prompt
        # The turn's time limit is the smaller of the two, taken as given: never clock
        # arithmetic (``(now + 0.2) - now`` need not be 0.2).
        limits = [] if settings.call_timeout is None else [settings.call_timeout]
        if self.deadline is not None:
            limits.append(max(0.0, self.deadline - asyncio.get_running_loop().time()))
        request = BackendRequest(prompt, system_prompt, self.session, min(limits, default=None))
        call = ModelCall(
            ProviderRequest(None, (_user_text(prompt),), system_prompt),
            "backend",
            kind,
            display_name,
            backend,
            stream=self.streaming,
            backend_request=request,
        )
        events = self._call(call, set(), retry=False)
        try:
            async for event in events:
                yield event
        except BaseException:
            await events.aclose()
            raise

    def result(self, error: BaseException | None) -> RunResult:
        """The ``RunResult``; a failure is handed out detached (see ``detached_error``)."""
        if error is None:
            return RunResult(True, self.output, self.produced, self.usage, RunStatus("ok", None))
        code: Any = getattr(error, "status", "error")
        if code not in ("timeout", "budget_exhausted"):
            code = "error"
        return RunResult(
            False, self.output, self.produced, self.usage, RunStatus(code, detached_error(error))
        )

    # -- one model call, on the retry ladder -------------------------------------------------

    async def _call(
        self, call: ModelCall, emitted: set[str], *, retry: bool = True
    ) -> AsyncGenerator[StreamEvent, None]:
        """Make ``call`` through the middleware; its answer ends up in ``self.produced``.

        A failed attempt is retried while the ladder allows, unless output was already handed
        on (the caller would see it twice) or the answer already arrived (a budget stop after
        it): then the error ends the run, keeping that answer.
        """
        policy = self._retry
        streaming = self.streaming
        retries = 0
        while True:
            deadline, scope, seconds = self._call_limit()
            arrived = 0
            handed_on = False
            response: ProviderResponse | None = None
            try:
                events = self._hook.oma_model_call(call=call, run=self.context)
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
                            response = event.response
                            self._record(response)
                            if streaming and not handed_on:  # it arrived whole: replay it
                                for whole in _whole_turn_events(response.message):
                                    yield whole
                            continue
                        if kind is TextDelta:
                            arrived += len(event.text)
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
                if retries >= policy.max_retries or not policy.is_retryable(error):
                    raise
                retries += 1
                wait = policy.delay_for(retries, error)
                if self.deadline is not None and (
                    asyncio.get_running_loop().time() + wait > self.deadline
                ):
                    raise  # the run would time out while waiting: fail now, with the cause
                await policy.sleep(wait)
                call = attrs.evolve(
                    call, attempt=call.attempt + 1, retry_of=error, retry_delay=wait
                )
                continue
            if response is None:
                from .errors import ProviderError

                raise ProviderError(
                    "the provider stream ended without a complete response",
                    provider=call.display_name,
                    retryable=False,
                )
            return

    def _record(self, response: ProviderResponse) -> None:
        """Keep an answer the moment it arrives (a budget stop after it must not lose it)."""
        message = response.message
        self.usage = self.usage + reported_usage(response.usage)
        self.produced.append(message)
        self.output = text_of(message)

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


def _over_cap(cap: int) -> str:
    return f"not run: this run may make at most {cap} tool calls; answer without tools"


def _user_text(text: str) -> LLMMessage:
    return LLMMessage("user", (TextBlock(text),))


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
