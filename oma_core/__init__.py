"""oma: run LLM agents, alone or as teams, on structured multimodal input.

The public API is what this module re-exports: what a user of agents and teams needs most
(at most 60 names, ``tests/test_architecture.py``). Everything else public lives in the module
that defines it (the whole error tree in ``oma_core.errors``, every media helper in
``oma_core.media``, ...); a plugin author's interfaces are in ``oma_core.toolkit``, its HTTP
helpers in ``oma_core.http`` and its child-process helpers in ``oma_core.processes`` — no name
is in two of these. Names load on first access (PEP 562), so ``import oma_core`` stays cheap:
the agent, the orchestrator and the CLI's dependencies load only when a program touches them.
"""

from __future__ import annotations

from ._lazy import lazy_exports

# Not from typing: ``import oma_core`` loads neither typing nor pluggy (mypy reads this name).
TYPE_CHECKING = False

__version__ = "0.1.0"

# public name -> module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
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
    "Base64Source": "messages",
    "UrlSource": "messages",
    "load_messages": "validation",
    "dump_messages": "serialization",
    "estimate_tokens": "_tokens",
    # media helpers (the rest: ``oma_core.media``)
    "image_url": "media",
    "image_base64": "media",
    "image_file": "media",
    "video_url": "media",
    "video_base64": "media",
    "video_file": "media",
    "document_url": "media",
    "document_base64": "media",
    "document_file": "media",
    "audio_url": "media",
    "audio_base64": "media",
    "audio_file": "media",
    "IMAGE_MEDIA_TYPES": "media",
    # errors a caller catches most (the whole tree: ``oma_core.errors``)
    "OmaError": "errors",
    "InvalidMessageError": "errors",
    "UnsupportedContentBlockError": "errors",
    "ProviderError": "errors",
    "BudgetExceededError": "errors",
    "OutputValidationError": "errors",
    # the agent
    "Agent": "agent",
    "AgentConfig": "_config",
    "RunResult": "_results",
    "RunStatus": "_results",
    "StreamEvent": "_results",
    "RunSettings": "_settings",
    "Usage": "providers",
    "tool": "tools",
    "current_tool_call": "_tool_context",
    "resolve_model": "_resolution",
    # orchestration and teams
    "OpenMultiAgent": "orchestrator",
    "ProgressEvent": "progress",
    "OnlineEvaluationConfig": "evaluation",
    "EvalCase": "evaluation",
    "Score": "evaluation",
    "Budget": "budgets",
    "Team": "teams",
    "TaskSpec": "teams",
    "TaskResult": "teams",
    "TeamRunResult": "teams",
    "RunLog": "_run_log",
    # plugins (a plugin author's interfaces: ``oma_core.toolkit``)
    "hookimpl": "hookspecs",
    "PluginHost": "plugins",
    "ProviderSpec": "capabilities",
    "BackendSpec": "capabilities",
    "Capabilities": "capabilities",
}

__all__ = [
    "Agent",
    "AgentConfig",
    "AudioBlock",
    "BackendSpec",
    "Base64Source",
    "Budget",
    "BudgetExceededError",
    "Capabilities",
    "DocumentBlock",
    "EvalCase",
    "IMAGE_MEDIA_TYPES",
    "ImageBlock",
    "InvalidMessageError",
    "LLMMessage",
    "OmaError",
    "OnlineEvaluationConfig",
    "OpenMultiAgent",
    "OutputValidationError",
    "PluginHost",
    "ProgressEvent",
    "ProviderError",
    "ProviderSpec",
    "ReasoningBlock",
    "RunLog",
    "RunResult",
    "RunSettings",
    "RunStatus",
    "Score",
    "StreamEvent",
    "TaskResult",
    "TaskSpec",
    "Team",
    "TeamRunResult",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnsupportedContentBlockError",
    "UrlSource",
    "Usage",
    "VideoBlock",
    "__version__",
    "audio_base64",
    "audio_file",
    "audio_url",
    "current_tool_call",
    "document_base64",
    "document_file",
    "document_url",
    "dump_messages",
    "estimate_tokens",
    "hookimpl",
    "image_base64",
    "image_file",
    "image_url",
    "load_messages",
    "resolve_model",
    "tool",
    "video_base64",
    "video_file",
    "video_url",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from typing import Any

    from ._config import AgentConfig
    from ._resolution import resolve_model
    from ._results import RunResult, RunStatus, StreamEvent
    from ._run_log import RunLog
    from ._settings import RunSettings
    from ._tokens import estimate_tokens
    from ._tool_context import current_tool_call
    from .agent import Agent
    from .budgets import Budget
    from .capabilities import BackendSpec, Capabilities, ProviderSpec
    from .errors import (
        BudgetExceededError,
        InvalidMessageError,
        OmaError,
        OutputValidationError,
        ProviderError,
        UnsupportedContentBlockError,
    )
    from .evaluation import EvalCase, OnlineEvaluationConfig, Score
    from .hookspecs import hookimpl
    from .media import (
        IMAGE_MEDIA_TYPES,
        audio_base64,
        audio_file,
        audio_url,
        document_base64,
        document_file,
        document_url,
        image_base64,
        image_file,
        image_url,
        video_base64,
        video_file,
        video_url,
    )
    from .messages import (
        AudioBlock,
        Base64Source,
        DocumentBlock,
        ImageBlock,
        LLMMessage,
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
    from .providers import Usage
    from .serialization import dump_messages
    from .teams import TaskResult, TaskSpec, Team, TeamRunResult
    from .tools import tool
    from .validation import load_messages
