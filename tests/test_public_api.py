"""The public names: what `oma_core` and `oma_core.testing` export."""

from __future__ import annotations

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
    "image_file",
    "video_file",
    "image_bytes",
    "video_bytes",
    "media_file",
    "media_bytes",
    "MediaTypeMismatchError",
    "RunLog",
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


EXECUTOR_APPLICATION_NAMES = ["ExecutorSpec", "WorkerLostError"]
EXECUTOR_TOOLKIT_NAMES = [
    "EXECUTOR_FEATURES",
    "ExecutionContext",
    "Executor",
    "ExecutorSpec",
    "RunDefaults",
    "TaskRun",
    "TaskRunner",
    "WorkerLostError",
]


CONFIGURATION_NAMES = [
    "NotRegisteredError",
    "UnknownOptionError",
    "MissingKeyError",
    "MissingProviderError",
    "MediaTooLargeError",
    "MediaLimit",
    "resolve_model",
    "check_api_key",
]


@pytest.mark.parametrize("name", EXECUTOR_APPLICATION_NAMES + CONFIGURATION_NAMES)
def test_the_executor_and_configuration_names_are_exported_from_oma_core(name: str) -> None:
    assert name in oma_core.__all__
    assert getattr(oma_core, name) is not None


@pytest.mark.parametrize("name", EXECUTOR_TOOLKIT_NAMES)
def test_the_executor_interface_is_in_the_plugin_authors_toolkit(name: str) -> None:
    import oma_core.toolkit

    assert name in oma_core.toolkit.__all__
    assert getattr(oma_core.toolkit, name) is not None


def test_media_limit_is_part_of_the_plugin_author_surface() -> None:
    from oma_core import toolkit

    assert "MediaLimit" in toolkit.__all__
    assert toolkit.MediaLimit is oma_core.MediaLimit
