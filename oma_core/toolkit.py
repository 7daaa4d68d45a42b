"""The plugin author's surface: everything a provider or backend plugin needs from the core.

An application imports from ``oma_core``; a plugin imports from here (and from
``oma_core.testing`` in its tests). Every bundled plugin takes what it uses from one of the
two, never from another module of the core. Names load on first access, like ``oma_core``'s,
so importing this module is cheap.

The groups:

- registration: ``hookimpl``, ``ProviderSpec``, ``BackendSpec``, ``Capabilities``,
  ``BlockSupport``, ``MediaLimit``, ``Mode``, ``IN_TOOL_RESULT``;
- the provider interface: ``Provider``, ``ProviderRequest`` (with ``OutputRequest``),
  ``ProviderResponse``, ``ProviderSettings``, its events (``TextDelta``, ``ReasoningDelta``,
  ``ToolCall``, ``ResponseComplete``), ``ToolDefinition``, ``Usage``;
- the backend interface: ``Backend``, ``BackendRequest``, its events and ``BackendResult``;
- the executor interface: ``ExecutorSpec``, ``Executor``, ``ExecutionContext``, ``TaskRun``,
  ``TaskRunner``, ``RunDefaults``, ``EXECUTOR_FEATURES``, ``WorkerLostError``;
- middleware: ``ModelCall``, ``ToolInvocation``, ``RunContext`` (with ``RunSettings``),
  ``CallEvent``, ``RunEvents`` — what ``oma_run`` / ``oma_model_call`` / ``oma_tool_call``
  wrappers receive;
- toolsets: ``Toolset`` (tools listed at run time, e.g. an MCP server's), ``ToolsetSpec``
  (a kind of toolset a plugin registers) and ``ToolOutput``
  (a tool's error result or parts);
- the message model a mapping reads (``LLMMessage`` and its blocks and sources);
- errors to raise: ``ProviderError``, ``BackendError``, ``PluginError``,
  ``UnsupportedContentBlockError``, ``RunTimeoutError``;
- helpers: ``parse_retry_after``, redaction (``redact_text``, ``REDACTED``) and the POSIX
  child-process helpers backends share (``child_environment``, ``stop_process_group``, ...);
- HTTP providers (httpx and httpx-sse, imported on first use; a plugin using these declares
  both): ``HttpProvider``, the base a provider over a JSON wire subclasses (its names, key,
  base URL, client and secrets read from its ``ProviderSpec`` through ``provider_settings``;
  the subclass writes ``render``, ``complete`` and ``stream``); ``http_client`` with
  ``HttpTimeouts`` (``LoopLocalClient``: one per event loop, configured by the
  ``CLIENT_OPTIONS``), ``post_json``, ``stream_sse`` / ``sse_events`` (bounded events) /
  ``event_json``, ``stream_ndjson`` / ``ndjson_lines`` (bounded lines of newline-delimited
  JSON) / ``line_json`` / ``LineSplitter``,
  ``error_from_response`` / ``error_from_streamed_response`` / ``error_from_event`` /
  ``error_from_exception`` / ``malformed_response`` (failures as ``ProviderError``, scrubbed
  by ``scrub``; ``request_secrets`` lists what it must blank out of an error about a request;
  ``innermost_cause`` and ``is_transport_error`` tell what an SDK's error really was),
  ``encode_json``, ``error_fields``, ``retry_delay`` (Google's ``RetryInfo``),
  ``ToolCallAssembler``; for the mapping, ``assistant_response``, ``stream_end`` (what a
  stream yields last, or the error for one cut short), ``tool_call_events``,
  ``tool_result_text``, ``media_url`` and ``missing_api_key``; for Chat Completions
  dialects, ``chat_tools``, ``chat_usage``, ``chat_text`` (and ``ToolCallAssembler.feed_chat``);
- the same over aiohttp, for throughput (aiohttp imported on first use): ``AioHttpClient``
  (one session per event loop), ``aio_post_json``, ``aio_stream_sse`` (``SSEParser``'s
  ``SSEMessage``s), ``aio_stream_ndjson`` (lines as JSON objects), each taking an optional
  ``StatusError`` builder; ``JsonView`` to read a
  decoded reply with code written for an SDK's models;
- bounded replies on every transport: ``ReadLimits`` (``max_response_bytes``,
  ``max_event_bytes``: the ``READ_OPTIONS``), ``BodyReader`` (decodes gzip step by step and
  counts), ``guard_hooks`` (an httpx or httpx2 client's ``event_hooks``: redirects refused,
  bodies bounded; what an SDK's client is given), ``aio_read_body``, ``redirect_refused``,
  ``too_large``, ``invalid_utf8``; ``pool_size`` reads ``provider_options["max_connections"]``
  (``POOL_OPTION``) for a plugin's own aiohttp client, past which calls queue;
- default timeouts no run hangs on for long (``DEFAULT_FIRST_BYTE_TIMEOUT``, 120 s, and
  ``DEFAULT_IDLE_TIMEOUT``, 60 s between stream events), and errors that say which fired
  (``timeout_error``, ``idle_timeout``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # registration
    "ProviderSpec": "capabilities",
    "OptionSpec": "capabilities",
    "BackendSpec": "capabilities",
    "Capabilities": "capabilities",
    "BlockSupport": "capabilities",
    "MediaLimit": "capabilities",
    "Mode": "capabilities",
    "IN_TOOL_RESULT": "capabilities",
    # the provider interface
    "OutputRequest": "providers",
    "Provider": "providers",
    "ProviderRequest": "providers",
    "ProviderResponse": "providers",
    "ProviderSettings": "providers",
    "ProviderEvent": "providers",
    "TextDelta": "providers",
    "ReasoningDelta": "providers",
    "ToolCall": "providers",
    "ToolCallDelta": "providers",
    "ResponseComplete": "providers",
    "ToolDefinition": "providers",
    "Usage": "providers",
    # the backend interface
    "Backend": "backends",
    "BackendEvent": "backends",
    "BackendRequest": "backends",
    "BackendResult": "backends",
    "BackendToolCall": "backends",
    "BackendToolResult": "backends",
    # the executor interface
    "EXECUTOR_FEATURES": "executors",
    "ExecutionContext": "executors",
    "Executor": "executors",
    "ExecutorSpec": "executors",
    "RunDefaults": "executors",
    "TaskRun": "executors",
    "TaskRunner": "executors",
    "WorkerLostError": "errors",
    # the message model
    "LLMMessage": "messages",
    "ContentBlock": "messages",
    "TextBlock": "messages",
    "ImageBlock": "messages",
    "VideoBlock": "messages",
    "DocumentBlock": "messages",
    "AudioBlock": "messages",
    "ToolUseBlock": "messages",
    "ToolResultBlock": "messages",
    "ToolResultPart": "messages",
    "ReasoningBlock": "messages",
    "FilePart": "messages",
    "MediaSource": "messages",
    "Base64Source": "messages",
    "UrlSource": "messages",
    # middleware (the oma_run / oma_model_call / oma_tool_call hooks)
    "CallEvent": "calls",
    "RunEvents": "calls",
    "ModelCall": "calls",
    "RunContext": "calls",
    "ToolInvocation": "calls",
    "RunSettings": "settings",
    # toolsets (tools listed at run time, e.g. an MCP server's)
    "Toolset": "tools",
    "ToolsetSpec": "tools",
    "ToolOutput": "tools",
    # errors
    "OmaError": "errors",
    "ProviderError": "errors",
    "BackendError": "errors",
    "PluginError": "errors",
    "UnsupportedContentBlockError": "errors",
    "RunTimeoutError": "errors",
    # helpers
    "parse_retry_after": "retry",
    "REDACTED": "redaction",
    "redact_text": "redaction",
    # HTTP providers (httpx and httpx-sse load on first use)
    "HttpProvider": "_http_provider",
    "provider_settings": "resolution",
    "LineSplitter": "_ndjson",
    "line_json": "_ndjson",
    "ndjson_lines": "_ndjson",
    "aio_stream_ndjson": "_ndjson",
    "stream_ndjson": "_ndjson",
    "stream_end": "_replies",
    "HttpTimeouts": "_http",
    "http_client": "_http",
    "LoopLocalClient": "_http",
    "CLIENT_OPTIONS": "_http",
    "post_json": "_http",
    "encode_json": "_http",
    "error_fields": "_http",
    "error_from_response": "_http",
    "error_from_event": "_http",
    "error_from_streamed_response": "_http",
    "error_from_exception": "_http",
    "malformed_response": "_http",
    "retry_delay": "_http",
    "scrub": "_http",
    "request_secrets": "_http",
    "innermost_cause": "_http",
    "is_transport_error": "_http",
    "AioHttpClient": "_http",
    "aio_post_json": "_http",
    "StatusError": "_http",
    "DEFAULT_MAX_EVENT_BYTES": "_sse",
    "SSEMessage": "_sse",
    "SSEParser": "_sse",
    "aio_stream_sse": "_sse",
    "sse_events": "_sse",
    "event_json": "_sse",
    "assistant_response": "_replies",
    "JsonView": "_replies",
    "tool_call_events": "_replies",
    "chat_text": "_chat",
    "chat_tools": "_chat",
    "chat_usage": "_chat",
    "tool_result_text": "_replies",
    "media_url": "_replies",
    "missing_api_key": "_replies",
    "stream_sse": "_sse",
    "aio_read_body": "_http",
    "DEFAULT_MAX_RESPONSE_BYTES": "_bounded",
    "READ_OPTIONS": "_bounded",
    "ReadLimits": "_bounded",
    "BodyReader": "_bounded",
    "guard_hooks": "_bounded",
    "redirect_refused": "_bounded",
    "too_large": "_bounded",
    "invalid_utf8": "_bounded",
    "idle_timeout": "_bounded",
    "DEFAULT_FIRST_BYTE_TIMEOUT": "_bounded",
    "DEFAULT_IDLE_TIMEOUT": "_bounded",
    "timeout_error": "_http",
    "pool_size": "_http",
    "POOL_OPTION": "_http",
    "ToolCallAssembler": "_tool_calls",
    # child processes (POSIX), for backend plugins
    "ALLOWED_ENV": "processes",
    "CommandOptions": "processes",
    "StderrTail": "processes",
    "child_environment": "processes",
    "close_pipes": "processes",
    "configured_values": "processes",
    "describe_exit": "processes",
    "number_option": "processes",
    "prompt_fragments": "processes",
    "strip_terminal_controls": "processes",
    "redact": "processes",
    "stop_process_group": "processes",
    "wait_exit": "processes",
}

__all__ = [
    "ALLOWED_ENV",
    "AioHttpClient",
    "AudioBlock",
    "Backend",
    "BackendError",
    "BackendEvent",
    "BackendRequest",
    "BackendResult",
    "BackendSpec",
    "BackendToolCall",
    "BackendToolResult",
    "Base64Source",
    "BlockSupport",
    "BodyReader",
    "CLIENT_OPTIONS",
    "CallEvent",
    "Capabilities",
    "CommandOptions",
    "ContentBlock",
    "DEFAULT_FIRST_BYTE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DocumentBlock",
    "EXECUTOR_FEATURES",
    "ExecutionContext",
    "Executor",
    "ExecutorSpec",
    "FilePart",
    "HttpProvider",
    "HttpTimeouts",
    "IN_TOOL_RESULT",
    "ImageBlock",
    "JsonView",
    "LLMMessage",
    "LineSplitter",
    "LoopLocalClient",
    "MediaLimit",
    "MediaSource",
    "Mode",
    "ModelCall",
    "OmaError",
    "OptionSpec",
    "OutputRequest",
    "POOL_OPTION",
    "PluginError",
    "Provider",
    "ProviderError",
    "ProviderEvent",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ProviderSpec",
    "READ_OPTIONS",
    "REDACTED",
    "ReadLimits",
    "ReasoningBlock",
    "ReasoningDelta",
    "ResponseComplete",
    "RunContext",
    "RunDefaults",
    "RunEvents",
    "RunSettings",
    "RunTimeoutError",
    "SSEMessage",
    "SSEParser",
    "StatusError",
    "StderrTail",
    "TaskRun",
    "TaskRunner",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "ToolCallAssembler",
    "ToolCallDelta",
    "ToolDefinition",
    "ToolInvocation",
    "ToolOutput",
    "ToolResultBlock",
    "ToolResultPart",
    "ToolUseBlock",
    "Toolset",
    "ToolsetSpec",
    "UnsupportedContentBlockError",
    "UrlSource",
    "Usage",
    "VideoBlock",
    "WorkerLostError",
    "aio_post_json",
    "aio_read_body",
    "aio_stream_ndjson",
    "aio_stream_sse",
    "assistant_response",
    "chat_text",
    "chat_tools",
    "chat_usage",
    "child_environment",
    "close_pipes",
    "configured_values",
    "describe_exit",
    "encode_json",
    "error_fields",
    "error_from_event",
    "error_from_exception",
    "error_from_response",
    "error_from_streamed_response",
    "event_json",
    "guard_hooks",
    "hookimpl",
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
    "number_option",
    "parse_retry_after",
    "pool_size",
    "post_json",
    "prompt_fragments",
    "provider_settings",
    "redact",
    "redact_text",
    "redirect_refused",
    "request_secrets",
    "retry_delay",
    "scrub",
    "sse_events",
    "stop_process_group",
    "stream_end",
    "stream_ndjson",
    "stream_sse",
    "strip_terminal_controls",
    "timeout_error",
    "too_large",
    "tool_call_events",
    "tool_result_text",
    "wait_exit",
]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        from . import hookimpl

        value: Any = hookimpl
    else:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'oma_core.toolkit' has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __package__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from . import hookimpl
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
    from ._chat import chat_text, chat_tools, chat_usage
    from ._http import (
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
    from ._http_provider import HttpProvider
    from ._ndjson import (
        LineSplitter,
        aio_stream_ndjson,
        line_json,
        ndjson_lines,
        stream_ndjson,
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
    from ._tool_calls import ToolCallAssembler
    from .backends import (
        Backend,
        BackendEvent,
        BackendRequest,
        BackendResult,
        BackendToolCall,
        BackendToolResult,
    )
    from .calls import CallEvent, ModelCall, RunContext, RunEvents, ToolInvocation
    from .capabilities import (
        IN_TOOL_RESULT,
        BackendSpec,
        BlockSupport,
        Capabilities,
        MediaLimit,
        Mode,
        OptionSpec,
        ProviderSpec,
    )
    from .errors import (
        BackendError,
        OmaError,
        PluginError,
        ProviderError,
        RunTimeoutError,
        UnsupportedContentBlockError,
        WorkerLostError,
    )
    from .executors import (
        EXECUTOR_FEATURES,
        ExecutionContext,
        Executor,
        ExecutorSpec,
        RunDefaults,
        TaskRun,
        TaskRunner,
    )
    from .messages import (
        AudioBlock,
        Base64Source,
        ContentBlock,
        DocumentBlock,
        FilePart,
        ImageBlock,
        LLMMessage,
        MediaSource,
        ReasoningBlock,
        TextBlock,
        ToolResultBlock,
        ToolResultPart,
        ToolUseBlock,
        UrlSource,
        VideoBlock,
    )
    from .processes import (
        ALLOWED_ENV,
        CommandOptions,
        StderrTail,
        child_environment,
        close_pipes,
        configured_values,
        describe_exit,
        number_option,
        prompt_fragments,
        redact,
        stop_process_group,
        strip_terminal_controls,
        wait_exit,
    )
    from .providers import (
        OutputRequest,
        Provider,
        ProviderEvent,
        ProviderRequest,
        ProviderResponse,
        ProviderSettings,
        ReasoningDelta,
        ResponseComplete,
        TextDelta,
        ToolCall,
        ToolCallDelta,
        ToolDefinition,
        Usage,
    )
    from .redaction import REDACTED, redact_text
    from .resolution import provider_settings
    from .retry import parse_retry_after
    from .settings import RunSettings
    from .tools import ToolOutput, Toolset, ToolsetSpec
