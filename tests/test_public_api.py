"""The public names: what `oma_core`, its public modules and `oma_core.testing` export."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pluggy
import pytest

import oma_core
from oma_core import hookimpl
from oma_core.testing import Delayed, ScriptedProvider

SECTION_8_NAMES = [
    "Agent",
    "AgentConfig",
    "RunResult",
    "RunStatus",
    "Usage",
    "StreamEvent",
    "ProgressEvent",
    "OpenMultiAgent",
    "OnlineEvaluationConfig",
    "EvalCase",
    "Budget",
    "LLMMessage",
    "TextBlock",
    "ImageBlock",
    "VideoBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ReasoningBlock",
    "Base64Source",
    "UrlSource",
    "load_messages",
    "dump_messages",
    "estimate_tokens",
    "image_url",
    "image_base64",
    "video_url",
    "video_base64",
    "IMAGE_MEDIA_TYPES",
    "OmaError",
    "InvalidMessageError",
    "UnsupportedContentBlockError",
    "ProviderError",
    "BudgetExceededError",
    "hookimpl",
    "ProviderSpec",
    "BackendSpec",
    "Capabilities",
    "PluginHost",
    "Team",
    "TaskSpec",
    "TeamRunResult",
    "tool",
    # "oma_core (next)"
    "DocumentBlock",
    "AudioBlock",
    "document_file",
    "document_url",
    "document_base64",
    "audio_file",
    "audio_base64",
    "OutputValidationError",
    "current_tool_call",
]


def test_testing_names_are_importable() -> None:
    from oma_core.testing import Delayed, ScriptedProvider

    assert callable(ScriptedProvider) and callable(Delayed)


@pytest.mark.parametrize("name", SECTION_8_NAMES)
def test_every_section_8_name_is_exported_from_oma_core(name: str) -> None:
    assert name in oma_core.__all__
    assert getattr(oma_core, name) is not None


def test_testing_exports_scripted_provider_and_delayed() -> None:
    import oma_core.testing as testing

    assert testing.ScriptedProvider is ScriptedProvider
    assert testing.Delayed is Delayed


def test_hookimpl_is_pluggys_marker_for_the_oma_project() -> None:
    assert isinstance(hookimpl, pluggy.HookimplMarker)
    assert hookimpl.project_name == "oma"


#: What a user of agents and teams needs most, beside section 8's names.
USER_NAMES = [
    "RunSettings",
    "TaskResult",
    "Score",
    "image_file",
    "video_file",
    "audio_url",
    "RunLog",
    "resolve_model",
]


@pytest.mark.parametrize("name", USER_NAMES)
def test_the_names_a_user_needs_most_are_exported_from_oma_core(name: str) -> None:
    assert name in oma_core.__all__
    assert getattr(oma_core, name) is not None


#: Names that left ``oma_core`` (or the toolkit) for the public module that defines them, or
#: for the plugin author's module of their audience: each still importable from there.
MOVED = {
    "oma_core.errors": [
        "UsageError",
        "RunError",
        "BackendError",
        "RunTimeoutError",
        "MaxTurnsExceededError",
        "HookError",
        "ToolError",
        "PluginError",
        "PlanError",
        "OutputTypeError",
        "WorkerLostError",
        "NotRegisteredError",
        "UnknownOptionError",
        "OptionTypeError",
        "MissingKeyError",
        "MissingProviderError",
        "MediaTooLargeError",
    ],
    "oma_core.media": [
        "MediaTypeMismatchError",
        "document_text",
        "media_file",
        "image_bytes",
        "video_bytes",
        "media_bytes",
    ],
    "oma_core.messages": ["ContentBlock", "MediaSource", "FilePart", "ToolResultPart"],
    "oma_core.agent": ["AgentStream", "BeforeRunContext"],
    "oma_core.validation": ["ValidationLimits"],
    "oma_core.tools": ["Tool"],
    "oma_core.progress": ["ProgressStats", "report_tool_progress"],
    "oma_core.evaluation": ["EvalResult"],
    "oma_core.budgets": ["CostContext"],
    "oma_core.retry": ["RetryPolicy"],
    "oma_core.capabilities": ["MediaLimit"],
    "oma_core.toolkit": [
        "ExecutorSpec",
        "MediaLimit",
        "ModelCall",
        "Provider",
        "ProviderRequest",
        "Backend",
        "RunDefaults",
    ],
    "oma_core.http": ["HttpProvider", "provider_settings", "check_api_key", "parse_retry_after"],
    "oma_core.processes": ["child_environment", "stop_process_group", "StderrTail", "wait_exit"],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in MOVED.items() for name in names]
)
def test_a_name_outside_oma_core_is_imported_from_its_public_module(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None
    assert name not in oma_core.__all__
    with pytest.raises(AttributeError):
        getattr(oma_core, name)


EXECUTOR_TOOLKIT_NAMES = [
    "EXECUTOR_FEATURES",
    "ExecutionContext",
    "Executor",
    "ExecutorSpec",
    "RunDefaults",
    "TaskRun",
    "TaskRunner",
]


@pytest.mark.parametrize("name", EXECUTOR_TOOLKIT_NAMES)
def test_the_executor_interface_is_in_the_plugin_authors_toolkit(name: str) -> None:
    import oma_core.toolkit

    assert name in oma_core.toolkit.__all__
    assert getattr(oma_core.toolkit, name) is not None


def test_media_limit_is_the_capabilities_class_in_the_toolkit() -> None:
    from oma_core import capabilities, toolkit

    assert "MediaLimit" in toolkit.__all__
    assert toolkit.MediaLimit is capabilities.MediaLimit


# -- the docs name what exists ----------------------------------------------------------------

ROOT = Path(__file__).parent.parent
_DOTTED = re.compile(r"`(oma_core(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
#: a placeholder the docs use for "any private module"
_PLACEHOLDERS = frozenset({"oma_core._name"})


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_oma_core_name_the_docs_point_to_resolves() -> None:
    """A name that moved (``oma_core.ModelCall`` is ``oma_core.toolkit.ModelCall``) is not
    left behind in a page: ``oma_core.X`` in backticks, in the docs and the READMEs, loads."""
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    pages += sorted((ROOT / "plugins").glob("*/README.md"))
    broken = sorted(
        f"{page.relative_to(ROOT)}: {dotted}"
        for page in pages
        for dotted in set(_DOTTED.findall(page.read_text(encoding="utf-8")))
        if dotted not in _PLACEHOLDERS and not _resolves(dotted)
    )
    assert not broken, broken


def test_the_docs_name_check_finds_a_name_that_moved() -> None:
    assert _resolves("oma_core.toolkit.ModelCall")
    assert not _resolves("oma_core.ModelCall")
