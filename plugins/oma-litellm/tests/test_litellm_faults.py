"""Faults through the bridge: the kit's ``FaultSuite`` on the ``openai/`` and ``anthropic/``
routes, each against its fake service."""

from __future__ import annotations

from litellm_suite import LiteLLMAnthropicRoute, LiteLLMOpenAIRoute

from oma_core.testing import FaultSuite, TruncatedStream


class TestLiteLLMOpenAIRouteFaults(LiteLLMOpenAIRoute, FaultSuite):
    stream_errors = (("server_error", None, True), ("invalid_request_error", None, False))
    unfinished_stream = TruncatedStream(after_events=3)  # no finish reason, no [DONE]
    unfinished_stream_says = "ended before"


class TestLiteLLMAnthropicRouteFaults(LiteLLMAnthropicRoute, FaultSuite):
    """Two things LiteLLM's Anthropic route hides from the bridge: an error event's type (it
    raises every one as a 500, so each is retryable, without a status: the stream had begun
    with 200), and ``message_stop`` (it ends the turn on ``message_delta``'s stop reason, so
    the unfinished stream here stops before that)."""

    server_error_statuses = (500, 529)
    stream_errors = (("overloaded_error", None, True), ("api_error", None, True))
    unfinished_stream = TruncatedStream(after_events=-2)  # no message_delta, no message_stop
    unfinished_stream_says = "ended before"
