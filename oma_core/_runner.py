"""The engine of one agent run: hooks, model calls on the retry ladder, tool rounds, backends.

One async generator (``Run.events``) implements every kind of run: ``stream`` hands its events
to the caller, ``run`` drains it and keeps the ``done`` result. Nothing here raises for a
provider, hook, tool or limit failure: the run ends with a failed ``RunResult``. Only
cancellation propagates, after the provider or backend stream was closed.

Limits are applied around each await, never across a ``yield``: the caller's own code between
two stream events is never cancelled by oma's timeouts.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ._controls import RunControls, RunObserver
from .before_run import NamedHook, apply_before_run, prompt_of, text_of
from .capabilities import Capabilities
from .errors import (
    BudgetExceededError,
    HookError,
    MaxTurnsExceededError,
    PluginError,
    ProviderError,
    RunTimeoutError,
)
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
from .results import RunResult, RunStatus, StatusCode, StreamEvent
from .retry import RetryPolicy
from .tools import Tool, call_tool

if TYPE_CHECKING:
    from .agent import AgentConfig

__all__ = ["ModelTarget", "Run", "RunInput"]

T = TypeVar("T")


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if math.isfinite(value) and value >= 0 else 0


def _reported(usage: object) -> Usage:
    """The usage a provider reported, with missing, negative or non-numeric counts as 0.

    Observers (budgets) still receive the raw value and charge an estimate for bad counts.
    """
    return Usage(
        _count(getattr(usage, "input_tokens", 0)), _count(getattr(usage, "output_tokens", 0))
    )


#: Checked input: a str (one user text message) or validated messages.
RunInput = str | tuple[LLMMessage, ...]


@attrs.frozen
class ModelTarget:
    """Everything a model run needs from its agent, resolved once the provider exists."""

    provider: Any
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


@attrs.define
class Run:
    """One run. ``target`` and ``backend`` are called only when the run needs them (after
    the hooks passed), so a refused run creates no provider and spawns no process."""

    config: AgentConfig
    hooks: Callable[[], list[NamedHook]]
    target: Callable[[], ModelTarget]
    backend: Callable[[], Any]
    controls: RunControls
    streaming: bool
    session: bool = False
    usage: Usage = Usage()
    produced: list[LLMMessage] = attrs.Factory(list)
    output: str = ""
    deadline: float | None = None
    _response: ProviderResponse | None = attrs.field(init=False, default=None)

    async def events(self, checked: RunInput) -> AsyncGenerator[StreamEvent, None]:
        """The run as events; the last is always ``done`` with the ``RunResult``."""
        controls = self.controls
        error: Exception | None = None
        if controls.timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + controls.timeout
        try:
            messages = (_user_text(checked),) if isinstance(checked, str) else checked
            hooks = self.hooks()
            if hooks:
                messages, replaced = await self._within(
                    apply_before_run(messages, hooks, self.config)
                )
            else:
                replaced = False
            if self.config.backend is not None:
                if replaced:
                    raise HookError(
                        "before_run changed messages, but the external agent backend "
                        f'"{self.config.backend["kind"]}" takes one string prompt: changed '
                        "messages cannot be forwarded without loss; change ctx.prompt instead"
                    )
                turn = self._backend_turn(prompt_of(messages))
            else:
                turn = self._model_loop(messages)
            async with aclosing(turn) as events:
                async for event in events:
                    yield event
        except Exception as exc:
            error = exc
        result = RunResult(
            success=error is None,
            output=self.output,
            messages=self.produced,
            usage=self.usage,
            status=RunStatus(_status_code(error), error),
        )
        for observer in controls.observers:
            try:
                observer.on_run_end(result)
            except Exception:  # an observer never fails a finished run
                continue
        if self.streaming and error is not None:
            yield StreamEvent("error", error)
        yield StreamEvent("done", result)

    async def result(self, checked: RunInput) -> RunResult:
        """The run drained: its ``RunResult``."""
        result: RunResult | None = None
        async for event in self.events(checked):
            result = event.data
        assert result is not None
        return result

    # -- the model loop --------------------------------------------------------------------

    async def _model_loop(
        self, messages: tuple[LLMMessage, ...]
    ) -> AsyncGenerator[StreamEvent, None]:
        """Model calls and tool rounds until a turn without tool calls (or ``max_turns``)."""
        target = self.target()
        observers = self.controls.observers
        streaming = self.streaming
        streamed = streaming and hasattr(target.provider, "stream")
        conversation = list(messages)
        checked = 0
        turns = 0
        while True:
            # Messages are immutable: each is checked once, the input before the first call.
            target.capabilities.check(conversation[checked:], target.display_name)
            checked = len(conversation)
            request = target.request(tuple(conversation))
            turns += 1
            emitted: set[str] = set()
            if streamed:
                async with aclosing(self._stream_call(target, request, emitted)) as events:
                    async for event in events:
                        yield event
                response = self._response
                assert response is not None
            else:
                response = await self._complete_call(target, request)
            message = response.message
            self.produced.append(message)
            conversation.append(message)
            self.output = text_of(message)
            calls = [block for block in message.content if isinstance(block, ToolUseBlock)]
            if streaming:
                if not streamed:  # the turn arrived whole: replay it
                    for event in _whole_turn_events(message):
                        yield event
                for call in calls:
                    if call.id not in emitted:
                        yield StreamEvent("tool_use", call)
            if not calls:
                return
            if turns >= target.max_turns:
                raise MaxTurnsExceededError(target.max_turns)
            results: list[ToolResultBlock] = []
            for call in calls:
                for observer in observers:
                    observer.before_tool(call)
                result = await self._within(call_tool(target.tools, call))
                for observer in observers:
                    observer.after_tool(call, result)
                if streaming:
                    yield StreamEvent("tool_result", result)
                results.append(result)
            tool_turn = LLMMessage("user", tuple(results))
            self.produced.append(tool_turn)
            conversation.append(tool_turn)

    # -- one model call, on the retry ladder -------------------------------------------------

    async def _complete_call(
        self, target: ModelTarget, request: ProviderRequest
    ) -> ProviderResponse:
        controls = self.controls
        observers = controls.observers
        unbounded = controls.call_timeout is None and self.deadline is None
        retry = 0
        while True:
            attempt = request
            for observer in observers:
                attempt = observer.before_call(attempt)
            try:
                if unbounded:
                    response = await _complete(target, attempt)
                else:
                    response = await self._within(
                        _complete(target, attempt), _call_deadline(controls)
                    )
            except Exception as exc:
                for observer in observers:
                    observer.after_call(attempt, Usage(), error=exc, partial_text="")
                retry = await self._before_retry(exc, retry)
                continue
            self._succeeded(attempt, response)
            return response

    async def _stream_call(
        self, target: ModelTarget, request: ProviderRequest, emitted: set[str]
    ) -> AsyncGenerator[StreamEvent, None]:
        """One call through ``stream``; the response is left in ``self._response``.

        An attempt that already handed output to the caller is never retried: the caller
        would see that output twice.
        """
        controls = self.controls
        observers = controls.observers
        bounded = controls.call_timeout is not None or self.deadline is not None
        retry = 0
        while True:
            attempt = request
            for observer in observers:
                attempt = observer.before_call(attempt)
            parts: list[str] = []
            yielded = False
            response: ProviderResponse | None = None
            events: Any = None
            call_deadline = _call_deadline(controls)
            try:
                try:
                    events = target.provider.stream(attempt)
                    while True:
                        if bounded:
                            event = await self._within(anext(events), call_deadline)
                        else:
                            event = await anext(events)
                        kind = type(event)
                        if kind is TextDelta:
                            parts.append(event.text)
                            yielded = True
                            yield StreamEvent("text", event.text)
                        elif kind is ReasoningDelta:
                            yielded = True
                            yield StreamEvent("reasoning", event.text)
                        elif kind is ToolCall:
                            yielded = True
                            emitted.add(event.block.id)
                            yield StreamEvent("tool_use", event.block)
                        elif kind is ResponseComplete:
                            response = event.response
                            break
                except StopAsyncIteration:
                    raise ProviderError(
                        "the provider stream ended without a complete response",
                        provider=target.display_name,
                        retryable=False,
                    ) from None
                finally:
                    close = getattr(events, "aclose", None)
                    if close is not None:
                        await close()
            except Exception as exc:
                partial = "".join(parts)
                usage = _estimate_usage(attempt, partial)
                self.usage = self.usage + usage
                for observer in observers:
                    observer.after_call(attempt, usage, error=exc, partial_text=partial)
                if yielded:
                    raise
                retry = await self._before_retry(exc, retry)
                continue
            assert response is not None
            self._succeeded(attempt, response)
            self._response = response
            return

    def _succeeded(self, attempt: ProviderRequest, response: ProviderResponse) -> None:
        """Count a successful attempt's usage and tell the observers."""
        self.usage = self.usage + _reported(response.usage)
        for observer in self.controls.observers:
            on_response = getattr(observer, "on_response", None)  # the finish reason, for spans
            if on_response is not None:
                on_response(attempt, response)
            observer.after_call(attempt, response.usage, error=None, partial_text="")

    async def _before_retry(self, error: Exception, retry: int) -> int:
        """Wait for the next attempt, or re-raise ``error`` when it may not be retried."""
        policy: RetryPolicy = self.controls.retry
        if retry >= policy.max_retries or not policy.is_retryable(error):
            raise error
        retry += 1
        wait = policy.delay_for(retry, error)
        deadline = self.deadline
        if deadline is not None and asyncio.get_running_loop().time() + wait > deadline:
            raise error  # the run would time out while waiting: fail now, with the cause
        observers: tuple[RunObserver, ...] = self.controls.observers
        for observer in observers:
            observer.on_retry(retry, wait, error)
        await policy.sleep(wait)
        return retry

    async def _within(self, awaitable: Awaitable[T], call_deadline: float | None = None) -> T:
        """Await under the run deadline and, for a model call, the call deadline."""
        deadline = self.deadline
        if deadline is None and call_deadline is None:
            return await awaitable
        controls = self.controls
        if call_deadline is not None and (deadline is None or call_deadline < deadline):
            limit, scope, seconds = call_deadline, "call", controls.call_timeout
        else:
            assert deadline is not None
            limit, scope, seconds = deadline, "run", controls.timeout
        try:
            async with asyncio.timeout_at(limit) as timeout:
                return await awaitable
        except TimeoutError:
            if timeout.expired():
                raise RunTimeoutError(scope, seconds or 0.0) from None
            raise

    # -- external backends -------------------------------------------------------------------

    async def _backend_turn(self, prompt: str) -> AsyncGenerator[StreamEvent, None]:
        """One turn of an external agent, its events mapped onto the agent's.

        The turn counts as one model call: observers (budgets, tracing) see it before it starts
        and after it ends, and ``call_timeout`` bounds it.
        """
        from .backends import BackendRequest, BackendResult, BackendToolCall, BackendToolResult

        backend = self.backend()
        observers = self.controls.observers
        call = ProviderRequest(None, (_user_text(prompt),), self.config.system_prompt)
        for observer in observers:
            call = observer.before_call(call)
        now = asyncio.get_running_loop().time()
        call_timeout = self.controls.call_timeout
        call_deadline = None if call_timeout is None else now + call_timeout
        # A limit is never float arithmetic on the clock: (now + 0.2) - now may not be 0.2.
        limits = [call_timeout] if call_timeout is not None else []
        if self.deadline is not None:
            limits.append(max(0.0, self.deadline - now))
        remaining = min(limits) if limits else None
        streaming = self.streaming
        request = BackendRequest(prompt, self.config.system_prompt, self.session, remaining)
        events = backend.run(request)
        parts: list[str] = []
        try:
            while True:
                try:
                    event = await self._within(anext(events), call_deadline)
                except StopAsyncIteration:
                    raise PluginError(
                        f"the external agent backend {backend.kind!r} ended without a result"
                    ) from None
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    if streaming:
                        yield StreamEvent("text", event.text)
                elif isinstance(event, ReasoningDelta):
                    if streaming:
                        yield StreamEvent("reasoning", event.text)
                elif isinstance(event, BackendToolCall):
                    if streaming:
                        yield StreamEvent("tool_use", _backend_tool_use(event))
                elif isinstance(event, BackendToolResult):
                    if streaming:
                        yield StreamEvent("tool_result", _backend_tool_result(event))
                elif isinstance(event, BackendResult):
                    result = event
                    break
        except Exception as exc:
            partial = "".join(parts)
            for observer in observers:
                observer.after_call(call, Usage(), error=exc, partial_text=partial)
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        output = result.output if result.output or not parts else "".join(parts)
        self.usage = self.usage + _reported(result.usage)
        self.output = output
        self.produced.append(LLMMessage("assistant", (TextBlock(output),)))
        for observer in observers:  # may raise BudgetExceededError: the turn is recorded first
            observer.after_call(call, result.usage, error=None, partial_text="")


# -- helpers -----------------------------------------------------------------------------------


def _user_text(text: str) -> LLMMessage:
    return LLMMessage("user", (TextBlock(text),))


def _whole_turn_events(message: LLMMessage) -> list[StreamEvent]:
    """Events for a turn that arrived whole (a provider without ``stream``)."""
    events = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            events.append(StreamEvent("text", block.text))
        elif block.type == "reasoning":
            events.append(StreamEvent("reasoning", getattr(block, "text", "")))
    return events


async def _complete(target: ModelTarget, request: ProviderRequest) -> ProviderResponse:
    """One call through ``complete``, or by draining ``stream`` when a provider has only that."""
    provider = target.provider
    complete = getattr(provider, "complete", None)
    if complete is not None:
        response: ProviderResponse = await complete(request)
        return response
    events = provider.stream(request)
    try:
        async for event in events:
            if isinstance(event, ResponseComplete):
                return event.response
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    raise ProviderError(
        "the provider stream ended without a complete response",
        provider=target.display_name,
        retryable=False,
    )


def _call_deadline(controls: RunControls) -> float | None:
    if controls.call_timeout is None:
        return None
    return asyncio.get_running_loop().time() + controls.call_timeout


def _estimate_usage(request: ProviderRequest, partial: str) -> Usage:
    """What a cut-short call probably cost: nothing if nothing arrived."""
    if not partial:
        return Usage()
    from .tokens import estimate_tokens

    return Usage(estimate_tokens(request.messages), math.ceil(len(partial) / 4))


def _status_code(error: BaseException | None) -> StatusCode:
    if error is None:
        return "ok"
    if isinstance(error, BudgetExceededError):
        return "budget_exhausted"
    if isinstance(error, RunTimeoutError):
        return "timeout"
    return "error"


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
