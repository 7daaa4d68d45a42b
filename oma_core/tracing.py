"""OpenTelemetry spans for agent runs, through ``opentelemetry-api`` only.

A run gets a span ``invoke_agent {name}``; each model call (each attempt) a child span
``chat {model}``; each tool call a child ``execute_tool {name}``. Attributes follow the GenAI
semantic conventions (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.agent.name``, ...) plus ``oma.run_id``.

Spans carry no prompt, output or media unless ``trace_content`` is on, and then only under the
"redacted" policy (secrets scrubbed, media replaced by a digest, cut at 8,192 characters).
Errors are recorded with redacted text and no traceback. Nothing is recorded until the
application configures a tracer provider (or passes one): the API alone is a no-op.

``opentelemetry`` is imported on first use, never by ``import oma_core``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._controls import RunObserver
from .redaction import cut, redact_text

if TYPE_CHECKING:
    from .agent import RunResult
    from .messages import LLMMessage, ToolResultBlock, ToolUseBlock
    from .providers import ProviderRequest, ProviderResponse, Usage

__all__ = ["RunTrace", "get_tracer"]

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


def _error_attributes(span: Any, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    text = redact_text(str(error))[:1024]
    span.set_attribute("error.type", type(error).__name__)
    span.add_event("exception", {"exception.type": type(error).__name__, "exception.message": text})
    span.set_status(Status(StatusCode.ERROR, text))


class RunTrace(RunObserver):
    """The spans of one run; the orchestrator starts it, plugs it in and finishes it."""

    def __init__(
        self,
        tracer: Any,
        *,
        agent: str,
        provider: str,
        model: str | None,
        run_id: str | None,
        trace_content: bool = False,
    ) -> None:
        self._tracer = tracer
        self._agent = agent
        self._provider = provider
        self._model = model
        self._run_id = run_id
        self._content = trace_content
        self._calls: list[Any] = []
        self._tools: dict[str, Any] = {}
        self._context: Any = None
        self.span: Any = None

    def _common(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.provider.name": self._provider,
            "gen_ai.agent.name": self._agent,
        }
        if self._run_id is not None:
            attributes["oma.run_id"] = self._run_id
        return attributes

    def start(self, input: str | tuple[LLMMessage, ...], system_prompt: str | None) -> Any:
        """Open the run span; returns it (the orchestrator makes it current during the run)."""
        from opentelemetry.trace import SpanKind, set_span_in_context

        attributes = self._common()
        attributes["gen_ai.operation.name"] = "invoke_agent"
        if self._model is not None:
            attributes["gen_ai.request.model"] = self._model
        if self._content:
            from .evaluation import build_payload

            attributes["gen_ai.input.messages"] = build_payload(input, "redacted")
            if system_prompt:
                attributes["gen_ai.system_instructions"] = cut(redact_text(system_prompt))
        self.span = self._tracer.start_span(
            f"invoke_agent {self._agent}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._context = set_span_in_context(self.span)
        return self.span

    def before_call(self, request: ProviderRequest) -> ProviderRequest:
        from opentelemetry.trace import SpanKind

        model = request.model or self._model
        attributes = self._common()
        attributes["gen_ai.operation.name"] = "chat"
        if model is not None:
            attributes["gen_ai.request.model"] = model
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        span = self._tracer.start_span(
            f"chat {model or self._provider}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        self._calls.append(span)
        return request

    def closer(self) -> RunObserver:
        """The observer that ends call spans; the orchestrator puts it *first*.

        ``RunTrace`` itself goes last, so a call span starts after the budgets clamped (or
        refused) the call, and ends before a budget stops the run after it.
        """
        return _SpanCloser(self)

    def _on_response(self, response: ProviderResponse) -> None:
        if self._calls:
            span = self._calls[-1]
            if response.stop_reason:
                span.set_attribute("gen_ai.response.finish_reasons", (response.stop_reason,))
            if response.model:
                span.set_attribute("gen_ai.response.model", response.model)

    def _after_call(self, usage: Usage, error: BaseException | None) -> None:
        if not self._calls:
            return
        span = self._calls.pop()
        for name, value in (
            ("gen_ai.usage.input_tokens", getattr(usage, "input_tokens", None)),
            ("gen_ai.usage.output_tokens", getattr(usage, "output_tokens", None)),
        ):
            if isinstance(value, int) and not isinstance(value, bool):
                span.set_attribute(name, value)
        if error is not None:
            span.set_attribute("gen_ai.response.finish_reasons", ("error",))
            _error_attributes(span, error)
        span.end()

    def on_retry(self, attempt: int, delay: float, error: BaseException) -> None:
        if self.span is not None:
            self.span.add_event(
                "oma.retry",
                {
                    "oma.retry.attempt": attempt,
                    "oma.retry.delay": delay,
                    "error.type": type(error).__name__,
                },
            )

    def before_tool(self, call: ToolUseBlock) -> None:
        from opentelemetry.trace import SpanKind

        attributes = self._common()
        attributes.update(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
            }
        )
        self._tools[call.id] = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )

    def after_tool(self, call: ToolUseBlock, result: ToolResultBlock) -> None:
        from opentelemetry.trace import Status, StatusCode

        span = self._tools.pop(call.id, None)
        if span is None:
            return
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
        span.end()

    def finish(self, result: RunResult | None, error: BaseException | None = None) -> None:
        """End every span still open; ``result`` None means the run was cancelled."""
        from opentelemetry.trace import Status, StatusCode

        for span in [*self._calls, *self._tools.values()]:
            span.set_attribute("error.type", "cancelled" if result is None else "unfinished")
            span.end()
        self._calls.clear()
        self._tools.clear()
        span = self.span
        if span is None:
            return
        if result is not None:
            usage = result.usage
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            span.set_attribute("oma.status", result.status.code)
            if self._content and result.output:
                span.set_attribute("gen_ai.output.messages", cut(redact_text(result.output)))
            failure = result.status.error
            if failure is not None:
                _error_attributes(span, failure)
            elif result.status.code != "ok":
                span.set_status(Status(StatusCode.ERROR, result.status.code))
        elif error is not None:
            _error_attributes(span, error)
        else:
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        span.end()
        self.span = None


class _SpanCloser(RunObserver):
    """Ends ``RunTrace``'s call spans (see ``RunTrace.closer``)."""

    __slots__ = ("_trace",)

    def __init__(self, trace: RunTrace) -> None:
        self._trace = trace

    def on_response(self, request: ProviderRequest, response: ProviderResponse) -> None:
        self._trace._on_response(response)

    def after_call(
        self,
        request: ProviderRequest,
        usage: Usage,
        *,
        error: BaseException | None,
        partial_text: str,
    ) -> None:
        self._trace._after_call(usage, error)
