"""The plugin author's interfaces: what a provider, backend, executor or middleware implements.

An application imports from ``oma_core``; a plugin imports the names an application uses too
(``hookimpl``, ``ProviderSpec``, ``BackendSpec``, ``Capabilities``, the message classes,
``ProviderError``, ``Usage``, ...) from there, and from here the interfaces only it needs. Its
helpers are in two modules by audience: ``oma_core.http`` for providers speaking HTTP (or an
SDK over it), ``oma_core.processes`` for backends running child processes. Rarer names come
from the public module defining them (``oma_core.errors``, ``oma_core.messages``). No name is
in two of ``oma_core``, ``oma_core.toolkit``, ``oma_core.http`` and ``oma_core.processes``
(``tests/test_architecture.py``). Names load on first access, so importing this is cheap.

The groups:

- registration beyond ``ProviderSpec``: ``OptionSpec`` (a declared provider option),
  ``CLIENT_OPTION_TYPES`` (the HTTP client's options, typed, for a spec to declare),
  ``BlockSupport``, ``MediaLimit``, ``Mode``, ``IN_TOOL_RESULT`` (what ``Capabilities`` holds);
- the provider interface: ``Provider``, ``ProviderRequest`` (with ``OutputRequest``),
  ``ProviderResponse``, ``ProviderSettings``, its events (``TextDelta``, ``ReasoningDelta``,
  ``ToolCall``, ``ToolCallDelta``, ``ResponseComplete``, ``ProviderEvent``),
  ``ToolDefinition``, ``SchemaLimits`` (a service's documented limits on an output or tool schema),
  ``final_event_error`` (the error a stream's final event carries instead of a stop reason);
- the backend interface: ``Backend``, ``BackendRequest``, its events and ``BackendResult``;
- the executor interface: ``ExecutorSpec``, ``Executor``, ``ExecutionContext``, ``TaskRun``,
  ``TaskRunner``, ``RunDefaults``, ``EXECUTOR_FEATURES``;
- middleware: ``ModelCall``, ``ToolInvocation``, ``RunContext``, ``CallEvent``, ``RunEvents``
  — what ``oma_run`` / ``oma_model_call`` / ``oma_tool_call`` wrappers receive;
- toolsets: ``Toolset`` (tools listed at run time, e.g. an MCP server's), ``ToolsetSpec`` (a
  kind of toolset a plugin registers) and ``ToolOutput`` (a tool's error result or parts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # registration
    "OptionSpec": "capabilities",
    "CLIENT_OPTION_TYPES": "capabilities",
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
    "SchemaLimits": "_schema_limits",
    "final_event_error": "_final_event",
    # the backend interface
    "Backend": "backends",
    "BackendEvent": "backends",
    "BackendRequest": "backends",
    "BackendResult": "backends",
    "BackendToolCall": "backends",
    "BackendToolResult": "backends",
    # the executor interface
    "EXECUTOR_FEATURES": "_executors",
    "ExecutionContext": "_executors",
    "Executor": "_executors",
    "ExecutorSpec": "_executors",
    "RunDefaults": "_executors",
    "TaskRun": "_executors",
    "TaskRunner": "_executors",
    # middleware (the oma_run / oma_model_call / oma_tool_call hooks)
    "CallEvent": "_calls",
    "RunEvents": "_calls",
    "ModelCall": "_calls",
    "RunContext": "_calls",
    "ToolInvocation": "_calls",
    # toolsets (tools listed at run time, e.g. an MCP server's)
    "Toolset": "tools",
    "ToolsetSpec": "tools",
    "ToolOutput": "tools",
}

__all__ = [
    "CLIENT_OPTION_TYPES",
    "Backend",
    "BackendEvent",
    "BackendRequest",
    "BackendResult",
    "BackendToolCall",
    "BackendToolResult",
    "BlockSupport",
    "CallEvent",
    "EXECUTOR_FEATURES",
    "ExecutionContext",
    "Executor",
    "ExecutorSpec",
    "IN_TOOL_RESULT",
    "MediaLimit",
    "Mode",
    "ModelCall",
    "OptionSpec",
    "OutputRequest",
    "Provider",
    "ProviderEvent",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ReasoningDelta",
    "ResponseComplete",
    "RunContext",
    "RunDefaults",
    "RunEvents",
    "SchemaLimits",
    "TaskRun",
    "TaskRunner",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolDefinition",
    "ToolInvocation",
    "ToolOutput",
    "Toolset",
    "ToolsetSpec",
    "final_event_error",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from ._calls import (
        CallEvent,
        ModelCall,
        RunContext,
        RunEvents,
        ToolInvocation,
    )
    from ._executors import (
        EXECUTOR_FEATURES,
        ExecutionContext,
        Executor,
        ExecutorSpec,
        RunDefaults,
        TaskRun,
        TaskRunner,
    )
    from ._final_event import final_event_error
    from ._schema_limits import SchemaLimits
    from .backends import (
        Backend,
        BackendEvent,
        BackendRequest,
        BackendResult,
        BackendToolCall,
        BackendToolResult,
    )
    from .capabilities import (
        CLIENT_OPTION_TYPES,
        IN_TOOL_RESULT,
        BlockSupport,
        MediaLimit,
        Mode,
        OptionSpec,
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
    )
    from .tools import (
        ToolOutput,
        Toolset,
        ToolsetSpec,
    )
