"""OpenTelemetry spans for agent runs, through ``opentelemetry-api`` only.

A run gets a span ``invoke_agent {name}`` (``RunSpan``, made the current span while the run
goes); each model call (each attempt) a child span ``chat {model}`` and each tool call a child
``execute_tool {name}``. All three are made by this module's middleware (a built-in plugin on
``oma_run`` / ``oma_model_call`` / ``oma_tool_call``, active when the run's settings carry a
tracer). Attributes follow the GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.agent.name``,
...) plus ``oma.run_id``.

Spans carry no prompt, output or media unless ``trace_content`` is on, and then only under the
"redacted" policy (secrets scrubbed, media replaced by a digest, cut at 8,192 characters).
Without it, an error on a span is its class and status only: a provider's error text may quote
the prompt. Nothing is recorded until the application configures a tracer provider (or passes
one): the API alone is a no-op. ``opentelemetry`` is imported on first use, never by
``import oma_core``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl
from .providers import ResponseComplete
from .redaction import cut, redact_text

if TYPE_CHECKING:
    from ._calls import CallEvent, ModelCall, RunContext, RunEvents, ToolInvocation
    from ._results import RunResult, StreamEvent
    from .messages import LLMMessage, ToolResultBlock

__all__ = ["RunSpan", "get_tracer", "usage_attributes"]

_INSTRUMENTATION = "oma_core"

# Filled on first use (``get_tracer`` runs for every orchestrated run, so it stays cheap).
_placeholders: tuple[type, ...] = ()
_global_provider: Callable[[], Any] | None = None


def get_tracer(tracer_provider: Any | None) -> Any | None:
    """A tracer from ``tracer_provider``, or from the global provider once one is configured.

    Returns None while the global provider is still OpenTelemetry's placeholder, so an
    application that never configured tracing pays nothing per run.
    """
    global _placeholders, _global_provider
    if _global_provider is None:
        from opentelemetry import trace

        _placeholders = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        _global_provider = trace.get_tracer_provider
    if tracer_provider is None:
        tracer_provider = _global_provider()
        if isinstance(tracer_provider, _placeholders):
            return None
    from . import __version__

    return tracer_provider.get_tracer(_INSTRUMENTATION, __version__)


#: ``Usage`` field → OTel GenAI attribute (semantic conventions, development status, 2026:
#: cache and reasoning counts are parts of the input and output counts).
_USAGE_ATTRIBUTES = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
    ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
)


def usage_attributes(usage: Any) -> list[tuple[str, int]]:
    """The ``gen_ai.usage.*`` attributes of ``usage``: input and output always, the cache and
    reasoning parts when not 0; a count that is not an int (a provider's bad report) is left
    out."""
    pairs = []
    for field, name in _USAGE_ATTRIBUTES:
        value = getattr(usage, field, None)
        whole = field in ("input_tokens", "output_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and (value or whole):
            pairs.append((name, value))
    return pairs


def _record_error(span: Any, error: BaseException, content: bool) -> None:
    """Mark ``span`` failed by ``error``: its class and status, and its (redacted) text only
    when content tracing is on."""
    from opentelemetry.trace import Status, StatusCode

    kind = type(error).__name__
    status = getattr(error, "status_code", None)
    summary = kind if status is None else f"{kind} (status {status})"
    text = redact_text(str(error))[:1024] if content else summary
    span.set_attribute("error.type", kind)
    span.add_event("exception", {"exception.type": kind, "exception.message": text})
    span.set_status(Status(StatusCode.ERROR, text))


def _common(run: RunContext) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.provider.name": run.config.provider_name,
        "gen_ai.agent.name": run.config.name,
        "oma.run_id": run.run_id,
    }
    return attributes


class RunSpan:
    """The span of one run: started before the run, made current while it goes, finished
    with its result (or its cancellation)."""

    def __init__(
        self,
        tracer: Any,
        *,
        agent: str,
        provider: str,
        model: str | None,
        run_id: str,
        trace_content: bool = False,
    ) -> None:
        from opentelemetry.trace import SpanKind

        self._content = trace_content
        attributes: dict[str, Any] = {
            "gen_ai.provider.name": provider,
            "gen_ai.agent.name": agent,
            "oma.run_id": run_id,
            "gen_ai.operation.name": "invoke_agent",
        }
        if model is not None:
            attributes["gen_ai.request.model"] = model
        self.span = tracer.start_span(
            f"invoke_agent {agent}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def record_input(self, input: str | tuple[LLMMessage, ...], system_prompt: str | None) -> None:
        """Put the redacted input on the span (only with ``trace_content``)."""
        if not self._content:
            return
        from ._payloads import build_payload

        self.span.set_attribute("gen_ai.input.messages", build_payload(input, "redacted"))
        if system_prompt:
            self.span.set_attribute("gen_ai.system_instructions", cut(redact_text(system_prompt)))

    def attach(self) -> object:
        """Make the span current (its calls' spans become its children); returns the token."""
        from opentelemetry import context
        from opentelemetry.trace import set_span_in_context

        return context.attach(set_span_in_context(self.span))

    @staticmethod
    def detach(token: object) -> None:
        from opentelemetry import context

        context.detach(token)  # type: ignore[arg-type]

    def finish(self, result: RunResult | None, error: BaseException | None = None) -> None:
        """End the span; ``result`` None means the run was cancelled (or ``error`` broke it)."""
        from opentelemetry.trace import Status, StatusCode

        span = self.span
        if result is not None:
            for name, value in usage_attributes(result.usage):
                span.set_attribute(name, value)
            span.set_attribute("oma.status", result.status.code)
            if self._content and result.output:
                span.set_attribute("gen_ai.output.messages", cut(redact_text(result.output)))
            failure = result.status.error
            if failure is not None:
                _record_error(span, failure, self._content)
            elif result.status.code == "suspended":  # waits for approvals: not a failure
                span.set_attribute("oma.pending", len(result.pending))
            elif result.status.code != "ok":
                span.set_status(Status(StatusCode.ERROR, result.status.code))
        elif error is not None:
            _record_error(span, error, self._content)
        else:
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        span.end()


# -- the middleware ----------------------------------------------------------------------------


@hookimpl(wrapper=True)
def oma_run(run: RunContext) -> Generator[None, Any, Any]:
    """The run's ``invoke_agent`` span, current while the run goes."""
    events = yield
    if run.settings.tracer is None:
        return events
    return _traced_run(events, run)


async def _traced_run(events: RunEvents, run: RunContext) -> AsyncGenerator[StreamEvent, None]:
    config = run.config
    span = RunSpan(
        run.settings.tracer,
        agent=config.name,
        provider=config.provider_name,
        model=config.model,
        run_id=run.run_id,
        trace_content=run.settings.trace_content,
    )
    span.record_input(run.input, config.system_prompt)
    token = span.attach()
    finished = False
    try:
        async for event in events:
            if event.type == "done":
                finished = True
                span.finish(event.data)
            yield event
    except BaseException as error:  # cancelled from outside (or a bug)
        if not finished:
            from .redaction import detached_error

            cancelled = isinstance(error, asyncio.CancelledError | GeneratorExit)
            span.finish(None, None if cancelled else detached_error(error))
        await events.aclose()
        raise
    finally:
        RunSpan.detach(token)


@hookimpl(wrapper=True)
def oma_model_call(call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
    """A ``chat`` span per attempt, started after the budgets clamped (or refused) it."""
    events = yield
    if run.settings.tracer is None:
        return events
    return _traced_call(events, call, run)


async def _traced_call(
    events: AsyncGenerator[CallEvent, None], call: ModelCall, run: RunContext
) -> AsyncGenerator[CallEvent, None]:
    from opentelemetry.trace import SpanKind

    request = call.request
    model = request.model or run.config.model
    attributes = _common(run)
    attributes["gen_ai.operation.name"] = "chat"
    if model is not None:
        attributes["gen_ai.request.model"] = model
    if request.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    if request.temperature is not None:
        attributes["gen_ai.request.temperature"] = request.temperature
    if request.stop:
        attributes["gen_ai.request.stop_sequences"] = request.stop
    tracer = run.settings.tracer
    assert tracer is not None
    span = tracer.start_span(
        f"chat {model or run.config.provider_name}", kind=SpanKind.CLIENT, attributes=attributes
    )
    try:
        async with aclosing(events) as inner:
            async for event in inner:
                if type(event) is ResponseComplete:
                    response = event.response
                    reason = response.stop_reason
                    if reason:
                        span.set_attribute("gen_ai.response.finish_reasons", (reason,))
                    if response.model:
                        span.set_attribute("gen_ai.response.model", response.model)
                    for name, value in usage_attributes(response.usage):
                        span.set_attribute(name, value)
                yield event
    except GeneratorExit:
        span.set_attribute("error.type", "cancelled")
        raise
    except BaseException as error:
        if isinstance(error, Exception):
            span.set_attribute("gen_ai.response.finish_reasons", ("error",))
            _record_error(span, error, run.settings.trace_content)
        else:
            span.set_attribute("error.type", "cancelled")
        raise
    finally:
        span.end()


@hookimpl(wrapper=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
    """An ``execute_tool`` span per tool call."""
    result = yield
    if run.settings.tracer is None:
        return result
    return _traced_tool(result, call, run)


async def _traced_tool(
    result: Awaitable[ToolResultBlock], call: ToolInvocation, run: RunContext
) -> ToolResultBlock:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    block = call.block
    attributes = _common(run)
    attributes.update(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": block.name,
            "gen_ai.tool.call.id": block.id,
        }
    )
    tracer = run.settings.tracer
    assert tracer is not None
    span = tracer.start_span(
        f"execute_tool {block.name}", kind=SpanKind.INTERNAL, attributes=attributes
    )
    try:
        outcome = await result
        if outcome.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
        return outcome
    except BaseException:
        span.set_attribute("error.type", "cancelled")
        raise
    finally:
        span.end()
