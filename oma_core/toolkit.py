"""The plugin author's surface: everything a provider or backend plugin needs from the core.

An application imports from ``oma_core``; a plugin imports from here (and from
``oma_core.testing`` in its tests). Every bundled plugin takes what it uses from one of the
two, never from another module of the core. Names load on first access, like ``oma_core``'s,
so importing this module is cheap.

The groups:

- registration: ``hookimpl``, ``ProviderSpec``, ``BackendSpec``, ``Capabilities``,
  ``BlockSupport``, ``Mode``, ``IN_TOOL_RESULT``;
- the provider interface: ``Provider``, ``ProviderRequest``, ``ProviderResponse``,
  ``ProviderSettings``, its events (``TextDelta``, ``ReasoningDelta``, ``ToolCall``,
  ``ResponseComplete``), ``ToolDefinition``, ``Usage``;
- the backend interface: ``Backend``, ``BackendRequest``, its events and ``BackendResult``;
- call middleware: ``ModelCall``, ``ToolInvocation``, ``RunContext`` (with ``RunSettings``),
  ``CallEvent`` — what ``oma_model_call`` / ``oma_tool_call`` wrappers receive;
- the message model a mapping reads (``LLMMessage`` and its blocks and sources);
- errors to raise: ``ProviderError``, ``BackendError``, ``PluginError``,
  ``UnsupportedContentBlockError``, ``RunTimeoutError``;
- helpers: ``parse_retry_after``, redaction (``redact_text``, ``REDACTED``) and the POSIX
  child-process helpers backends share (``child_environment``, ``stop_process_group``, ...).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # registration
    "ProviderSpec": "capabilities",
    "BackendSpec": "capabilities",
    "Capabilities": "capabilities",
    "BlockSupport": "capabilities",
    "Mode": "capabilities",
    "IN_TOOL_RESULT": "capabilities",
    # the provider interface
    "Provider": "providers",
    "ProviderRequest": "providers",
    "ProviderResponse": "providers",
    "ProviderSettings": "providers",
    "ProviderEvent": "providers",
    "TextDelta": "providers",
    "ReasoningDelta": "providers",
    "ToolCall": "providers",
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
    # the message model
    "LLMMessage": "messages",
    "ContentBlock": "messages",
    "TextBlock": "messages",
    "ImageBlock": "messages",
    "VideoBlock": "messages",
    "ToolUseBlock": "messages",
    "ToolResultBlock": "messages",
    "ToolResultPart": "messages",
    "ReasoningBlock": "messages",
    "FilePart": "messages",
    "MediaSource": "messages",
    "Base64Source": "messages",
    "UrlSource": "messages",
    # call middleware (the oma_model_call / oma_tool_call hooks)
    "CallEvent": "calls",
    "ModelCall": "calls",
    "RunContext": "calls",
    "ToolInvocation": "calls",
    "RunSettings": "settings",
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
    "RunSettings",
    "ToolInvocation",
    "RunContext",
    "ModelCall",
    "CallEvent",
    "ALLOWED_ENV",
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
    "Capabilities",
    "CommandOptions",
    "ContentBlock",
    "FilePart",
    "IN_TOOL_RESULT",
    "ImageBlock",
    "LLMMessage",
    "MediaSource",
    "Mode",
    "OmaError",
    "PluginError",
    "Provider",
    "ProviderError",
    "ProviderEvent",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ProviderSpec",
    "REDACTED",
    "ReasoningBlock",
    "ReasoningDelta",
    "ResponseComplete",
    "RunTimeoutError",
    "StderrTail",
    "TextBlock",
    "TextDelta",
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolResultPart",
    "ToolUseBlock",
    "UnsupportedContentBlockError",
    "UrlSource",
    "Usage",
    "VideoBlock",
    "child_environment",
    "close_pipes",
    "configured_values",
    "describe_exit",
    "hookimpl",
    "number_option",
    "parse_retry_after",
    "prompt_fragments",
    "redact",
    "redact_text",
    "stop_process_group",
    "strip_terminal_controls",
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
    from .backends import (
        Backend,
        BackendEvent,
        BackendRequest,
        BackendResult,
        BackendToolCall,
        BackendToolResult,
    )
    from .calls import CallEvent, ModelCall, RunContext, ToolInvocation
    from .capabilities import (
        IN_TOOL_RESULT,
        BackendSpec,
        BlockSupport,
        Capabilities,
        Mode,
        ProviderSpec,
    )
    from .errors import (
        BackendError,
        OmaError,
        PluginError,
        ProviderError,
        RunTimeoutError,
        UnsupportedContentBlockError,
    )
    from .messages import (
        Base64Source,
        ContentBlock,
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
        Provider,
        ProviderEvent,
        ProviderRequest,
        ProviderResponse,
        ProviderSettings,
        ReasoningDelta,
        ResponseComplete,
        TextDelta,
        ToolCall,
        ToolDefinition,
        Usage,
    )
    from .redaction import REDACTED, redact_text
    from .retry import parse_retry_after
    from .settings import RunSettings
