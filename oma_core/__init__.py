"""oma: run LLM agents, alone or as teams, on structured multimodal input.

The public API is what this module re-exports. Names load on first access (PEP 562), so
``import oma_core`` stays cheap: the agent, the orchestrator and the CLI's dependencies load
only when a program touches them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import pluggy

__version__ = "0.1.0"

#: Marks a plugin's hook implementations: ``@hookimpl def oma_register_providers(): ...``
hookimpl = pluggy.HookimplMarker("oma")

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # the message model
    "LLMMessage": "messages",
    "TextBlock": "messages",
    "ImageBlock": "messages",
    "VideoBlock": "messages",
    "ToolUseBlock": "messages",
    "ToolResultBlock": "messages",
    "ReasoningBlock": "messages",
    "FilePart": "messages",
    "Base64Source": "messages",
    "UrlSource": "messages",
    "ContentBlock": "messages",
    "MediaSource": "messages",
    "image_url": "media",
    "image_base64": "media",
    "video_url": "media",
    "video_base64": "media",
    "IMAGE_MEDIA_TYPES": "media",
    "load_messages": "validation",
    "ValidationLimits": "validation",
    "dump_messages": "serialization",
    "estimate_tokens": "tokens",
    # errors
    "OmaError": "errors",
    "InvalidMessageError": "errors",
    "UnsupportedContentBlockError": "errors",
    "ProviderError": "errors",
    "BackendError": "errors",
    "BudgetExceededError": "errors",
    "RunTimeoutError": "errors",
    "MaxTurnsExceededError": "errors",
    "HookError": "errors",
    "ToolError": "errors",
    "PluginError": "errors",
    "PlanError": "errors",
    "TaskResult": "teams",
    # plugins and the interfaces they implement
    "PluginHost": "plugins",
    "ProviderSpec": "capabilities",
    "BackendSpec": "capabilities",
    "Capabilities": "capabilities",
    "BlockSupport": "capabilities",
    "Mode": "capabilities",
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
    "Backend": "backends",
    "BackendRequest": "backends",
    "BackendResult": "backends",
    "BackendToolCall": "backends",
    "BackendToolResult": "backends",
    # the agent
    "Agent": "agent",
    "AgentConfig": "agent",
    "RunResult": "agent",
    "RunStatus": "agent",
    "StreamEvent": "agent",
    "BeforeRunContext": "agent",
    "tool": "tools",
    "Tool": "tools",
    # orchestration
    "OpenMultiAgent": "orchestrator",
    "ProgressEvent": "progress",
    "OnlineEvaluationConfig": "evaluation",
    "EvalCase": "evaluation",
    "Score": "evaluation",
    "Budget": "budgets",
    "RetryPolicy": "retry",
    "parse_retry_after": "retry",
    "Team": "teams",
    "TaskSpec": "teams",
    "TeamRunResult": "teams",
}

__all__ = [
    "Agent",
    "AgentConfig",
    "Backend",
    "BackendError",
    "BackendRequest",
    "BackendResult",
    "BackendSpec",
    "BackendToolCall",
    "BackendToolResult",
    "Base64Source",
    "BeforeRunContext",
    "BlockSupport",
    "Budget",
    "BudgetExceededError",
    "Capabilities",
    "ContentBlock",
    "EvalCase",
    "FilePart",
    "HookError",
    "IMAGE_MEDIA_TYPES",
    "ImageBlock",
    "InvalidMessageError",
    "LLMMessage",
    "MaxTurnsExceededError",
    "MediaSource",
    "Mode",
    "OmaError",
    "OnlineEvaluationConfig",
    "OpenMultiAgent",
    "PlanError",
    "PluginError",
    "PluginHost",
    "ProgressEvent",
    "Provider",
    "ProviderError",
    "ProviderEvent",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "ProviderSpec",
    "ReasoningBlock",
    "ReasoningDelta",
    "ResponseComplete",
    "RetryPolicy",
    "RunResult",
    "RunStatus",
    "RunTimeoutError",
    "Score",
    "StreamEvent",
    "TaskResult",
    "TaskSpec",
    "Team",
    "TeamRunResult",
    "TextBlock",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolDefinition",
    "ToolError",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnsupportedContentBlockError",
    "UrlSource",
    "Usage",
    "ValidationLimits",
    "VideoBlock",
    "__version__",
    "dump_messages",
    "estimate_tokens",
    "hookimpl",
    "image_base64",
    "image_url",
    "load_messages",
    "parse_retry_after",
    "tool",
    "video_base64",
    "video_url",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oma_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .agent import Agent, AgentConfig, BeforeRunContext, RunResult, RunStatus, StreamEvent
    from .backends import (
        Backend,
        BackendRequest,
        BackendResult,
        BackendToolCall,
        BackendToolResult,
    )
    from .budgets import Budget
    from .capabilities import BackendSpec, BlockSupport, Capabilities, Mode, ProviderSpec
    from .errors import (
        BackendError,
        BudgetExceededError,
        HookError,
        InvalidMessageError,
        MaxTurnsExceededError,
        OmaError,
        PlanError,
        PluginError,
        ProviderError,
        RunTimeoutError,
        ToolError,
        UnsupportedContentBlockError,
    )
    from .evaluation import EvalCase, OnlineEvaluationConfig, Score
    from .media import IMAGE_MEDIA_TYPES, image_base64, image_url, video_base64, video_url
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
        ToolUseBlock,
        UrlSource,
        VideoBlock,
    )
    from .orchestrator import OpenMultiAgent
    from .plugins import PluginHost
    from .progress import ProgressEvent
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
    from .retry import RetryPolicy, parse_retry_after
    from .serialization import dump_messages
    from .teams import TaskResult, TaskSpec, Team, TeamRunResult
    from .tokens import estimate_tokens
    from .tools import Tool, tool
    from .validation import ValidationLimits, load_messages
