"""HTTP helpers for provider plugins: the client, streamed replies, bounded reads, errors.

What a provider speaking HTTP (itself, or through an SDK) reuses, so that every provider reads
bounded replies, refuses redirects, scrubs its errors and maps them to ``ProviderError`` the
same way. The interfaces it implements are in ``oma_core.toolkit``; this module is re-exports
only, loaded on first access (httpx, httpx-sse and aiohttp are imported on first use: a plugin
using them declares them).

The groups:

- ``HttpProvider``, the base a provider over a JSON wire subclasses (its names, key, base URL,
  client and secrets read from its ``ProviderSpec`` through ``provider_settings``; the subclass
  writes ``render``, ``complete`` and ``stream``); ``check_api_key`` (a spec's key, or
  ``MissingKeyError``);
- httpx: ``http_client`` with ``HttpTimeouts`` (``LoopLocalClient``: one per event loop,
  configured by the ``CLIENT_OPTIONS``), ``post_json``, ``stream_sse`` / ``sse_events``
  (bounded events) / ``event_json``, ``stream_ndjson`` / ``ndjson_lines`` (bounded lines of
  newline-delimited JSON) / ``line_json`` / ``LineSplitter``;
- aiohttp, for throughput: ``AioHttpClient`` (one session per event loop), ``aio_post_json``,
  ``aio_stream_sse`` (``SSEParser``'s ``SSEMessage``s), ``aio_stream_ndjson``, each taking an
  optional ``StatusError`` builder, ``aio_read_body``; ``pool_size`` reads
  ``provider_options["max_connections"]`` (``POOL_OPTION``);
- failures as ``ProviderError``: ``error_from_response`` / ``error_from_streamed_response`` /
  ``error_from_event`` / ``error_from_exception`` / ``malformed_response``, scrubbed by
  ``scrub`` (``request_secrets`` lists what to blank out; ``oma_core.redaction`` for other
  text); ``innermost_cause`` and ``is_transport_error`` tell what an SDK's error really
  was; ``error_fields``, ``encode_json``, ``parse_retry_after``, ``retry_delay`` (Google's
  ``RetryInfo``);
- the mapping: ``JsonView`` (a decoded reply read with code written for an SDK's models),
  ``ToolCallAssembler``, ``assistant_response``, ``stream_end`` (what a stream yields last, or
  the error for one cut short), ``tool_call_events``, ``tool_result_text``, ``media_url``,
  ``missing_api_key``; for Chat Completions dialects ``chat_tools``, ``chat_usage``,
  ``chat_text``;
- bounded replies on every transport: ``ReadLimits`` (``max_response_bytes``,
  ``max_event_bytes``: the ``READ_OPTIONS``; ``DEFAULT_MAX_RESPONSE_BYTES``,
  ``DEFAULT_MAX_EVENT_BYTES``), ``BodyReader`` (decodes gzip step by step and counts),
  ``guard_hooks`` (an httpx client's ``event_hooks``: redirects refused, bodies bounded),
  ``redirect_refused``, ``too_large``, ``invalid_utf8``;
- default timeouts no run hangs on for long (``DEFAULT_FIRST_BYTE_TIMEOUT``, 120 s, and
  ``DEFAULT_IDLE_TIMEOUT``, 60 s between stream events), and errors that say which fired
  (``timeout_error``, ``idle_timeout``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# public name -> module that defines it: a submodule of this package, or (".name") of oma_core
_EXPORTS: dict[str, str] = {
    # the HttpProvider base and a spec's settings
    "HttpProvider": "_provider",
    "provider_settings": "._resolution",
    "check_api_key": "._resolution",
    # httpx
    "HttpTimeouts": "_client",
    "http_client": "_client",
    "LoopLocalClient": "_client",
    "CLIENT_OPTIONS": "_client",
    "post_json": "_client",
    "stream_sse": "_sse",
    "sse_events": "_sse",
    "event_json": "_sse",
    "stream_ndjson": "_ndjson",
    "ndjson_lines": "_ndjson",
    "line_json": "_ndjson",
    "LineSplitter": "_ndjson",
    # aiohttp
    "AioHttpClient": "_client",
    "aio_post_json": "_client",
    "aio_stream_sse": "_sse",
    "aio_stream_ndjson": "_ndjson",
    "aio_read_body": "_client",
    "StatusError": "_client",
    "SSEMessage": "_sse",
    "SSEParser": "_sse",
    "pool_size": "_client",
    "POOL_OPTION": "_client",
    # failures as ProviderError
    "error_from_response": "_client",
    "error_from_streamed_response": "_client",
    "error_from_event": "_client",
    "error_from_exception": "_client",
    "malformed_response": "_client",
    "scrub": "_client",
    "request_secrets": "_client",
    "innermost_cause": "_client",
    "is_transport_error": "_client",
    "error_fields": "_client",
    "encode_json": "_client",
    "parse_retry_after": ".retry",
    "retry_delay": "_client",
    # the mapping
    "JsonView": "_replies",
    "ToolCallAssembler": "_tool_calls",
    "assistant_response": "_replies",
    "stream_end": "_replies",
    "tool_call_events": "_replies",
    "tool_result_text": "_replies",
    "media_url": "_replies",
    "missing_api_key": "_replies",
    "chat_text": "_chat",
    "chat_tools": "_chat",
    "chat_usage": "_chat",
    # bounded replies and timeouts
    "ReadLimits": "_bounded",
    "READ_OPTIONS": "_bounded",
    "DEFAULT_MAX_RESPONSE_BYTES": "_bounded",
    "DEFAULT_MAX_EVENT_BYTES": "_sse",
    "BodyReader": "_bounded",
    "guard_hooks": "_bounded",
    "redirect_refused": "_bounded",
    "too_large": "_bounded",
    "invalid_utf8": "_bounded",
    "DEFAULT_FIRST_BYTE_TIMEOUT": "_bounded",
    "DEFAULT_IDLE_TIMEOUT": "_bounded",
    "timeout_error": "_client",
    "idle_timeout": "_bounded",
}

__all__ = [
    "AioHttpClient",
    "BodyReader",
    "CLIENT_OPTIONS",
    "DEFAULT_FIRST_BYTE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "HttpProvider",
    "HttpTimeouts",
    "JsonView",
    "LineSplitter",
    "LoopLocalClient",
    "POOL_OPTION",
    "READ_OPTIONS",
    "ReadLimits",
    "SSEMessage",
    "SSEParser",
    "StatusError",
    "ToolCallAssembler",
    "aio_post_json",
    "aio_read_body",
    "aio_stream_ndjson",
    "aio_stream_sse",
    "assistant_response",
    "chat_text",
    "chat_tools",
    "chat_usage",
    "check_api_key",
    "encode_json",
    "error_fields",
    "error_from_event",
    "error_from_exception",
    "error_from_response",
    "error_from_streamed_response",
    "event_json",
    "guard_hooks",
    "http_client",
    "idle_timeout",
    "innermost_cause",
    "invalid_utf8",
    "is_transport_error",
    "line_json",
    "malformed_response",
    "media_url",
    "missing_api_key",
    "ndjson_lines",
    "parse_retry_after",
    "pool_size",
    "post_json",
    "provider_settings",
    "redirect_refused",
    "request_secrets",
    "retry_delay",
    "scrub",
    "sse_events",
    "stream_end",
    "stream_ndjson",
    "stream_sse",
    "timeout_error",
    "too_large",
    "tool_call_events",
    "tool_result_text",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .._resolution import (
        check_api_key,
        provider_settings,
    )
    from ..retry import (
        parse_retry_after,
    )
    from ._bounded import (
        DEFAULT_FIRST_BYTE_TIMEOUT,
        DEFAULT_IDLE_TIMEOUT,
        DEFAULT_MAX_RESPONSE_BYTES,
        READ_OPTIONS,
        BodyReader,
        ReadLimits,
        guard_hooks,
        idle_timeout,
        invalid_utf8,
        redirect_refused,
        too_large,
    )
    from ._chat import (
        chat_text,
        chat_tools,
        chat_usage,
    )
    from ._client import (
        CLIENT_OPTIONS,
        POOL_OPTION,
        AioHttpClient,
        HttpTimeouts,
        LoopLocalClient,
        StatusError,
        aio_post_json,
        aio_read_body,
        encode_json,
        error_fields,
        error_from_event,
        error_from_exception,
        error_from_response,
        error_from_streamed_response,
        http_client,
        innermost_cause,
        is_transport_error,
        malformed_response,
        pool_size,
        post_json,
        request_secrets,
        retry_delay,
        scrub,
        timeout_error,
    )
    from ._ndjson import (
        LineSplitter,
        aio_stream_ndjson,
        line_json,
        ndjson_lines,
        stream_ndjson,
    )
    from ._provider import (
        HttpProvider,
    )
    from ._replies import (
        JsonView,
        assistant_response,
        media_url,
        missing_api_key,
        stream_end,
        tool_call_events,
        tool_result_text,
    )
    from ._sse import (
        DEFAULT_MAX_EVENT_BYTES,
        SSEMessage,
        SSEParser,
        aio_stream_sse,
        event_json,
        sse_events,
        stream_sse,
    )
    from ._tool_calls import (
        ToolCallAssembler,
    )
