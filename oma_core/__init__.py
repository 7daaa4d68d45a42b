"""oma: run LLM agents, alone or as teams, on structured multimodal input.

The public API is what this module re-exports. Names load on first access (PEP 562), so
``import oma_core`` stays cheap: the agent, the orchestrator and the CLI's dependencies load
only when a program touches them.
"""

from __future__ import annotations

import importlib

# Not from typing: ``import oma_core`` loads neither typing nor pluggy (mypy reads this name).
TYPE_CHECKING = False

__version__ = "0.1.0"

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # plugins: the marker for hook implementations (pluggy loads with it, not with oma_core)
    "hookimpl": "hookspecs",
    # the message model
    "LLMMessage": "messages",
    "TextBlock": "messages",
    "ImageBlock": "messages",
    "VideoBlock": "messages",
    "DocumentBlock": "messages",
    "AudioBlock": "messages",
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
    "document_url": "media",
    "document_base64": "media",
    "document_text": "media",
    "document_file": "media",
    "audio_url": "media",
    "audio_base64": "media",
    "audio_file": "media",
    "IMAGE_MEDIA_TYPES": "media",
    "MediaTypeMismatchError": "media",
    "image_file": "media",
    "video_file": "media",
    "media_file": "media",
    "image_bytes": "media",
    "video_bytes": "media",
    "media_bytes": "media",
    "RunLog": "run_log",
    "load_messages": "validation",
    "ValidationLimits": "validation",
    "dump_messages": "serialization",
    "estimate_tokens": "tokens",
    # errors
    "OmaError": "errors",
    "UsageError": "errors",
    "RunError": "errors",
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
    "OutputTypeError": "errors",
    "OutputValidationError": "errors",
    "WorkerLostError": "errors",
    "NotRegisteredError": "errors",
    "UnknownOptionError": "errors",
    "OptionTypeError": "errors",
    "MissingKeyError": "errors",
    "MissingProviderError": "errors",
    "MediaTooLargeError": "errors",
    # configuration: names, keys, provider:model
    "resolve_model": "resolution",
    "check_api_key": "resolution",
    # the agent
    "Agent": "agent",
    "AgentConfig": "config",
    "AgentStream": "results",
    "RunResult": "results",
    "RunStatus": "results",
    "StreamEvent": "results",
    "RunSettings": "settings",
    "BeforeRunContext": "config",
    "Usage": "providers",
    "tool": "tools",
    "Tool": "tools",
    # orchestration
    "OpenMultiAgent": "orchestrator",
    "ProgressEvent": "progress",
    "ProgressStats": "progress",
    "OnlineEvaluationConfig": "evaluation",
    "EvalCase": "evaluation",
    "EvalResult": "evaluation",
    "Score": "evaluation",
    "Budget": "budgets",
    "CostContext": "budgets",
    "RetryPolicy": "retry",
    "Team": "teams",
    "TaskSpec": "teams",
    "TaskResult": "teams",
    "TeamRunResult": "teams",
    # plugins (what a plugin author needs is in ``oma_core.toolkit``)
    "PluginHost": "plugins",
    "ProviderSpec": "capabilities",
    "BackendSpec": "capabilities",
    "Capabilities": "capabilities",
    "ExecutorSpec": "executors",
    "MediaLimit": "capabilities",
}

# Plugin-author names that ``oma_core`` still resolves for code written before
# ``oma_core.toolkit`` existed; they are not in ``__all__``: import them from the toolkit.
_TOOLKIT_ALIASES = frozenset(
    {
        "Backend",
        "BackendRequest",
        "BackendResult",
        "BackendToolCall",
        "BackendToolResult",
        "BlockSupport",
        "Mode",
        "Provider",
        "ProviderEvent",
        "ProviderRequest",
        "ProviderResponse",
        "ProviderSettings",
        "ReasoningDelta",
        "ResponseComplete",
        "TextDelta",
        "ToolCall",
        "ToolDefinition",
        "parse_retry_after",
    }
)

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentStream",
    "AudioBlock",
    "BackendError",
    "BackendSpec",
    "Base64Source",
    "BeforeRunContext",
    "Budget",
    "BudgetExceededError",
    "Capabilities",
    "ContentBlock",
    "CostContext",
    "DocumentBlock",
    "EvalCase",
    "EvalResult",
    "ExecutorSpec",
    "FilePart",
    "HookError",
    "IMAGE_MEDIA_TYPES",
    "ImageBlock",
    "InvalidMessageError",
    "LLMMessage",
    "MaxTurnsExceededError",
    "MediaLimit",
    "MediaSource",
    "MediaTooLargeError",
    "MediaTypeMismatchError",
    "MissingKeyError",
    "MissingProviderError",
    "NotRegisteredError",
    "OmaError",
    "OnlineEvaluationConfig",
    "OpenMultiAgent",
    "OptionTypeError",
    "OutputTypeError",
    "OutputValidationError",
    "PlanError",
    "PluginError",
    "PluginHost",
    "ProgressEvent",
    "ProgressStats",
    "ProviderError",
    "ProviderSpec",
    "ReasoningBlock",
    "RetryPolicy",
    "RunError",
    "RunLog",
    "RunResult",
    "RunSettings",
    "RunStatus",
    "RunTimeoutError",
    "Score",
    "StreamEvent",
    "TaskResult",
    "TaskSpec",
    "Team",
    "TeamRunResult",
    "TextBlock",
    "Tool",
    "ToolError",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownOptionError",
    "UnsupportedContentBlockError",
    "UrlSource",
    "Usage",
    "UsageError",
    "ValidationLimits",
    "VideoBlock",
    "WorkerLostError",
    "__version__",
    "audio_base64",
    "audio_file",
    "audio_url",
    "check_api_key",
    "document_base64",
    "document_file",
    "document_text",
    "document_url",
    "dump_messages",
    "estimate_tokens",
    "hookimpl",
    "image_base64",
    "image_bytes",
    "image_file",
    "image_url",
    "load_messages",
    "media_bytes",
    "media_file",
    "resolve_model",
    "tool",
    "video_base64",
    "video_bytes",
    "video_file",
    "video_url",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if name not in _TOOLKIT_ALIASES:
            raise AttributeError(f"module 'oma_core' has no attribute {name!r}")
        module = "toolkit"
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from typing import Any

    from .agent import Agent
    from .budgets import Budget, CostContext
    from .capabilities import BackendSpec, Capabilities, MediaLimit, ProviderSpec
    from .config import AgentConfig, BeforeRunContext
    from .errors import (
        BackendError,
        BudgetExceededError,
        HookError,
        InvalidMessageError,
        MaxTurnsExceededError,
        MediaTooLargeError,
        MissingKeyError,
        MissingProviderError,
        NotRegisteredError,
        OmaError,
        OptionTypeError,
        OutputTypeError,
        OutputValidationError,
        PlanError,
        PluginError,
        ProviderError,
        RunError,
        RunTimeoutError,
        ToolError,
        UnknownOptionError,
        UnsupportedContentBlockError,
        UsageError,
        WorkerLostError,
    )
    from .evaluation import EvalCase, EvalResult, OnlineEvaluationConfig, Score
    from .executors import ExecutorSpec
    from .hookspecs import hookimpl
    from .media import (
        IMAGE_MEDIA_TYPES,
        MediaTypeMismatchError,
        audio_base64,
        audio_file,
        audio_url,
        document_base64,
        document_file,
        document_text,
        document_url,
        image_base64,
        image_bytes,
        image_file,
        image_url,
        media_bytes,
        media_file,
        video_base64,
        video_bytes,
        video_file,
        video_url,
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
        ToolUseBlock,
        UrlSource,
        VideoBlock,
    )
    from .orchestrator import OpenMultiAgent
    from .plugins import PluginHost
    from .progress import ProgressEvent, ProgressStats
    from .providers import Usage
    from .resolution import check_api_key, resolve_model
    from .results import AgentStream, RunResult, RunStatus, StreamEvent
    from .retry import RetryPolicy
    from .run_log import RunLog
    from .serialization import dump_messages
    from .settings import RunSettings
    from .teams import TaskResult, TaskSpec, Team, TeamRunResult
    from .tokens import estimate_tokens
    from .tools import Tool, tool
    from .validation import ValidationLimits, load_messages
